"""What the MCP tools say: the text block of each result (what a model reads) and the
one-line error for any failure. Formatting over what ``Library`` returned (the one exception,
the supply chain's section: each skill's risk, the refusal of a hidden skill's resources and
the listings without them, asked of ``Library.supply``), and nothing heavier than the
standard library at import time (``serve`` starts before numpy loads)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..text import trim

# Names of a skill's files shown by get_skill (the rest are counted; resources/list has all).
FILES_SHOWN_CHARS = 3_000


def message(exc: BaseException, doing: str = "") -> str:
    """One line naming the problem and the fix, for any exception."""
    import sqlite3

    from ..errors import NotFoundError, SkillshelfError, cannot_write_error
    from ..library import explain

    if isinstance(exc, SkillshelfError):
        msg, fix = exc.message, exc.fix
        if not fix:   # the model needs a next step even where the library gave none
            fix = ("use a name or id that search_skills returned" if isinstance(exc, NotFoundError)
                   else "check the arguments against the tool's description")
    elif isinstance(exc, (OSError, sqlite3.Error)) and (refused := cannot_write_error(exc, "the library folder")):
        msg, fix = refused.message, refused.fix
    elif isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        msg = f"{exc.strerror or type(exc).__name__}{where}"
        fix = "check that file or folder (it may be missing, unreadable or on a full disk), then try again"
    else:
        msg = f"{type(exc).__name__}: {str(exc).split(' with text ', 1)[0]}"
        if (known := explain(exc)) is not None:
            fix = known.fix
        elif isinstance(exc, sqlite3.Error):
            fix = ("run `skillshelf doctor`; if it reports the database damaged, `skillshelf rebuild` re-indexes"
                   " the files")
        else:
            fix = "try again; if it keeps failing, run `skillshelf doctor` and read the server's log (stderr)"
    msg = " ".join(str(msg).split())[:500]
    if doing:
        msg = f"{doing}: {msg}"
    return f"{msg.rstrip('.')}. Fix: {fix}" if fix else msg


# --- team stores: who is asking -----------------------------------------------------------------

MAKE_TOKEN = "skillshelf tokens add NAME --role reader|agent|curator|admin"
OWN_TOKEN_FIX = ("set SKILLSHELF_TOKEN in this server's environment (the `env` of its entry in your client's MCP "
                 f"configuration) to your own token, then restart it; an admin makes one with `{MAKE_TOKEN}`")
# how a refusal names what was asked (``Library.authorize``'s ``what``), by action
WHAT = {"search": "searching skills", "read": "reading a skill", "save_skill": "saving a skill",
        "report_outcome": "reporting an outcome", "stats": "the usage statistics",
        "reindex": "reindexing this server's folders", "resources": "reading the skill files as resources"}


def not_a_token() -> Exception:
    """The refusal of a SKILLSHELF_TOKEN the team store does not know."""
    from ..errors import ConfigError

    return ConfigError("SKILLSHELF_TOKEN is not a token of this team store (wrong, or revoked)", fix=OWN_TOKEN_FIX)


def no_token() -> Exception:
    """The refusal of a team store's request whose caller is not known."""
    from ..errors import ForbiddenError

    return ForbiddenError("this team library needs a token of your own", needed="reader",
                          fix="send 'Authorization: Bearer <token>' over HTTP, or " + OWN_TOKEN_FIX)


# --- search_skills ------------------------------------------------------------------------------

def hit_line(i: int, h: dict[str, Any]) -> str:
    """One hit of a search: rank, name, match, flags and description (and the judge's word)."""
    extra = f" ×{h['copies']}" if h.get("copies", 1) > 1 else ""
    flags = "".join(f" [{f}]" for f in ("expired",) if h.get(f))
    # when the name would resolve to another same-named skill, say which one to get
    get = f" (get_skill: {h['ref']})" if h.get("ref") and h["ref"] != h["name"] else ""
    desc = trim(h["description"], 100) if get else h["description"]  # keep 5 hits under ~1.4k chars
    j = h.get("judge") or {}
    said = ""
    if j:
        said = f" (judge: fit {j.get('fit', '?')}" + (f" — {trim(str(j['why']), 120)}" if j.get("why") else "") + ")"
    # the audit's risk of the skill (low|medium|high), in the text only where there is one: the
    # structured content carries it on every hit ("none" included)
    risk = f", risk {h['risk']}" if h.get("risk") not in (None, "none") else ""
    # what outcomes of similar requests said (the ranker's own reasons stay in the structured
    # content: they cost tokens and an agent cannot act on them)
    learned = f" (outcomes: {h['learned']})" if h.get("learned") else ""
    return f"{i}. {h['name']}{extra} [{h['match']}{risk}]{flags}{get} — {desc}{said}{learned}"


def next_step(*, confident: bool, any_hits: bool, query_id: int | None, read_only: bool,
              partial: bool = False) -> str:
    """The closing line of a search: the confidence, the query id, and what to do next. With
    no confident match the model is told not to force a skill (as the using-skillshelf
    skill teaches) rather than to read one; ``partial`` (the library is being indexed): not
    a gap yet, so it is asked to search again later rather than to write a new skill."""
    qid = (f"query_id={query_id}" if query_id is not None
           else "query not logged (the library is read-only: outcomes cannot be recorded)" if read_only
           else "query not logged (see degraded): report_outcome without query_id")
    if confident:
        return f"confident match; {qid}. Next: get_skill(name)" + ("." if read_only else ", then report_outcome.")
    if partial:
        line = (f"no confident match in what is indexed so far (the library is being indexed, see degraded: not a "
                f"gap); {qid}. ")
    else:
        line = f"no confident match (possible gap); {qid}. "
    if any_hits:
        line += ("None of these fits confidently: do not force one; open a weak hit only if its description "
                 "clearly covers your case" + ("" if read_only else " (then report_outcome)") + ". Otherwise ")
    else:
        line += "No skill fits: "
    if partial:
        return line + "search again in a minute, once indexing is done, before writing a new skill."
    return line + ("do the task yourself." if read_only else
                   "do the task yourself, then save what you learned with save_skill(action='ARCHIVE').")


# --- get_skill ----------------------------------------------------------------------------------

def page_of(body: str, offset: int, budget: int) -> tuple[str, int | None]:
    """``body[offset:]`` up to ``budget`` characters and the offset the next page starts at
    (None: this is the end). A page that does not reach the end is cut after a line where
    one ends in its second half, else after a space, so no word is split between two pages
    (only a single "word" longer than half the budget is)."""
    end = offset + max(budget, 1)
    if end >= len(body):
        return body[offset:], None
    floor = offset + max(budget, 1) // 2
    cut = body.rfind("\n", floor, end)
    if cut < 0:
        cut = max(body.rfind(" ", floor, end), body.rfind("\t", floor, end))
    if cut >= floor:
        end = cut + 1
    return body[offset:end], end


def files_line(uri_of: Any, files: list[str], more: int) -> tuple[list[str], int, str]:
    """(names shown, names left out, the text line) within ``FILES_SHOWN_CHARS``;
    ``uri_of(file)`` is the resource URI of one of the skill's files."""
    shown: list[str] = []
    used = 0
    for f in files:
        if used + len(f) + 2 > FILES_SHOWN_CHARS:
            break
        shown.append(f)
        used += len(f) + 2
    left = len(files) - len(shown) + more
    if not shown:
        return shown, left, (f"files: {left} (list them with resources/list)" if left else "")
    line = "files: " + ", ".join(shown) + (f", … ({left} more: resources/list)" if left else "")
    return shown, left, line + f"  (read as resources: {uri_of(shown[0])})"


def read_on(*, shown_to: int, total: int, ref: str, section: str, next_offset: int, heads: list[str]) -> str:
    """The footer of a page of a long body: how much was shown and how to read on."""
    out = (f"\n\n[shown {shown_to:,} of {total:,} characters; read on with "
           f"get_skill(name={ref!r}{f', section={section!r}' if section else ''}, offset={next_offset})")
    if heads:
        out += ", or one section: " + ", ".join(trim(h, 60) for h in heads)
    return out + "]"


# --- skill_stats and the prompt -------------------------------------------------------------------

def stats(st: Any) -> tuple[str, dict[str, Any]]:
    """(the text, the structured result) of skill_stats for ``Library.stats()``."""
    data = {"queries": st.queries, "reports": st.reports, "report_rate": round(st.report_rate, 3),
            "most_used": [u.as_dict() for u in st.most_used[:10]],
            "low_success": [u.as_dict() for u in st.low_success[:10]],
            "gaps": [g.as_dict() for g in st.gaps[:10]],
            "never_surfaced": len(st.never_surfaced),
            "never_surfaced_sample": [x["name"] for x in st.never_surfaced[:10]]}
    lines = [f"{st.queries} queries, {st.reports} reports (report rate {st.report_rate:.0%})",
             "most used: " + (", ".join(f"{u.name} ({u.worked}/{u.reports})" for u in st.most_used[:5]) or "-"),
             "low success: " + (", ".join(f"{u.name} ({u.worked}/{u.reports})" for u in st.low_success[:5]) or "-"),
             "gaps: " + ("; ".join(f"{g.query} ×{g.count}" for g in st.gaps[:5]) or "-"),
             f"never surfaced: {len(st.never_surfaced)} skills"]
    return "\n".join(lines), data


def use_skills(task: str) -> str:
    """The use-skills prompt, with the task (one line) when one is given."""
    task = " ".join(task.split())
    t = f" The task: {task}" + ("" if task.endswith((".", "!", "?")) else ".") if task else ""
    return ("Before you start, call search_skills with the task in your own words." + t +
            " If a hit fits (match 'likely'), read it with get_skill and follow it. When done, call "
            "report_outcome with worked=true or false and a one-line note on what happened, passing the "
            "query_id. If nothing fits ('no confident match') and you solve it yourself, consider "
            "save_skill(action='ARCHIVE') with what you learned; if a skill was wrong, save_skill("
            "action='FIX', target_skill_name=..., lesson=...).")


# --- the supply chain: what is asked of ``Library.supply`` (the audit, the pins) ----------------

RISKS = ("none", "low", "medium", "high")


def risks_of(lib: Any, items: Iterable[Any]) -> dict[str, str]:
    """Skill id -> its audit risk (none|low|medium|high) for search hits or records: the
    item's own ``risk`` where it carries one, else the library's audit (none when the skill
    has not been audited)."""
    got = {x.id: getattr(x, "risk", None) for x in items}
    missing = [sid for sid, r in got.items() if r not in RISKS]
    if missing:
        got |= lib.supply.risks(missing)
    return {sid: r if r in RISKS else "none" for sid, r in got.items()}


# --- tool schemas -------------------------------------------------------------------------------

def untitled(schema: Any) -> Any:
    """A JSON schema without pydantic's generated ``title`` keys (they repeat the property
    names and cost ~1 KB of every client's context in tools/list)."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "title" and isinstance(v, str):
                continue
            if k == "properties" and isinstance(v, dict):
                out[k] = {name: untitled(sub) for name, sub in v.items()}
            else:
                out[k] = untitled(v)
        return out
    if isinstance(schema, list):
        return [untitled(x) for x in schema]
    return schema


# What an argument of each JSON type must be, in words, for an argument the input schema refuses.
_KINDS = {"integer": "a whole number", "number": "a number", "boolean": "true or false", "string": "text",
          "array": "a list", "object": "an object"}
# pydantic's error types, by the JSON type their argument was declared with
_TYPE_ERRORS = {"int_parsing": "integer", "int_type": "integer", "int_from_float": "integer",
                "float_parsing": "number", "float_type": "number", "bool_parsing": "boolean",
                "bool_type": "boolean", "string_type": "string", "string_unicode": "string",
                "list_type": "array", "dict_type": "object"}


def bad_arguments(tool: str, errors: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]) -> str:
    """One line for arguments that ``tool``'s input ``schema`` refuses (pydantic's ``errors``):
    each argument named with what it must be, what was sent, and the fix (its kind, its default)."""
    props = schema.get("properties") or {}
    problems: list[str] = []
    fixes: list[str] = []
    for e in errors[:4]:
        loc = e.get("loc") or ()
        arg = str(loc[0]) if loc else ""
        kind = _kind(props.get(arg) or {}) or _TYPE_ERRORS.get(str(e.get("type")))
        want = _KINDS.get(kind or "", "")
        if not arg or arg not in props:
            problems.append(f"the arguments are not accepted ({_plain(e)})")
            fixes.append(f"pass an object with {', '.join(props) or 'no arguments'}")
            continue
        if e.get("type") == "missing":
            problems.append(f"{arg} is missing")
        else:
            shown = trim(_json(e.get("input")), 40)
            problems.append(f"{arg} must be {want} (got {shown})" if want else
                            f"{arg} is not accepted ({_plain(e)}; got {shown})")
        fix = f"pass {arg} as {want or 'its input schema says'}"
        if arg not in (schema.get("required") or ()):
            default = props[arg].get("default")
            fix += ", or leave it out" + (f" (default {_json(default)})" if default not in (None, "") else "")
        fixes.append(fix)
    return f"invalid arguments for {tool}: {'; '.join(problems)}. Fix: {'; '.join(dict.fromkeys(fixes))}"


def unknown_arguments(tool: str, arguments: Any, schema: Mapping[str, Any]) -> str | None:
    """One line for arguments ``tool`` does not take (its advertised schema says additionalProperties
    false), each named with the one meant when close, and the ones it takes; None when there are none."""
    import difflib

    known = list(schema.get("properties") or {})
    unknown = [str(k) for k in arguments if k not in known] if isinstance(arguments, dict) else []
    if not unknown:
        return None
    said = []
    for arg in unknown[:4]:
        near = difflib.get_close_matches(arg, known, n=1, cutoff=0.6)
        said.append(f"{trim(arg, 40)!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    more = f" and {len(unknown) - 4} more" if len(unknown) > 4 else ""
    return (f"invalid arguments for {tool}: {tool} does not take {', '.join(said)}{more}. "
            f"Fix: pass only {', '.join(known) or 'no arguments'}")


def advertised(input_schema: Any, output_schema: Any) -> dict[str, Any]:
    """A tool's schemas as tools/list sends them: without pydantic's generated titles ("Target Skill
    Name" repeats the property name; ~1 KB of every client's context) and the output models'
    docstrings (written for the code's readers); the input schema takes no other argument
    (``unknown_arguments`` refuses one)."""
    out = untitled(output_schema) if output_schema else None
    return {"input_schema": {**untitled(input_schema), "additionalProperties": False},
            "output_schema": {k: v for k, v in out.items() if k != "description"} if out else None}


def _kind(prop: Mapping[str, Any]) -> str | None:
    """The JSON type an argument's schema names (the one other than null of an ``anyOf``)."""
    if isinstance(prop.get("type"), str):
        return str(prop["type"])
    kinds = [p.get("type") for p in prop.get("anyOf") or () if isinstance(p, dict) and p.get("type") != "null"]
    return str(kinds[0]) if len(kinds) == 1 and isinstance(kinds[0], str) else None


def _plain(e: Mapping[str, Any]) -> str:
    """pydantic's message, its first clause, without its documentation link."""
    return str(e.get("msg") or "invalid").split(",")[0].split("\n")[0][:80].lower()


def _json(value: Any) -> str:
    """A value as JSON (as the client sent it), else as Python shows it."""
    import json

    try:
        return json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        return repr(value)
