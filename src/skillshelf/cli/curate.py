"""Curating the library: a skill's ``history`` and ``diff``, ``rollback``, ``extend-ttl``,
``deprecate`` and ``restore``, ``delete``, and the ``review`` queue of drafts."""

from __future__ import annotations

import typer

from ..text import visible
from .common import _clean, _counts, _json, _lib, _positive, _write, err, out
from .evals import version_cell, worse_line

commands = typer.Typer()


@commands.command()
def history(name: str, json_out: bool = typer.Option(False, "--json")) -> None:
    """Versions and changelog of a skill, with the outcomes reported for each version."""
    lib = _lib()
    h = lib.history(name)
    per = lib.evals.versions(name)      # reports per version, each with a 95% Wilson interval
    if json_out:
        _json(h | {"outcomes": per})
        return
    out.print(f"{h['name']} — current v{h['current_version']}; versions kept: "
              f"{', '.join('v' + str(v) for v in h['versions']) or 'none'}")
    if h["lineage"]:
        out.print("lineage: " + " → ".join(h["lineage"] + [h["name"]]))
    for e in h["changelog"]:
        frm = f"v{e['from_version']}" if e["from_version"] else "new"
        by = f" by {e['by']}:" if e.get("by") else ""      # who made the change (an agent's name, a person)
        out.print(f"  {e['at']}  {e['action']:8} {frm} → v{e['to_version']}  [{e['trigger']}]{by} {e['reason']}")
    if per["versions"]:
        out.print("outcomes: " + "; ".join(version_cell(v) for v in per["versions"]))
    if per["worse"]:
        out.print(f"worse: {worse_line(per['worse'])}")


@commands.command(cls=_counts("version numbers"))
def diff(name: str = typer.Argument(..., help="skill name or id"),
         v1: int = typer.Argument(..., callback=_positive("version numbers"), metavar="V1"),
         v2: int = typer.Argument(..., callback=_positive("version numbers"), metavar="V2"),
         json_out: bool = typer.Option(False, "--json", help="name, v1, v2 and the unified diff as JSON")) -> None:
    """Unified diff between two versions of a skill."""
    text = _lib().diff(name, v1, v2)
    if json_out:
        _json({"name": name, "v1": v1, "v2": v2, "unified": text})
        return
    _write(visible(text) or "(no differences)\n")    # invisible characters as <U+200B>


@commands.command(cls=_counts("the version number"))
def rollback(name: str = typer.Argument(..., help="skill name or id"),
             version: int = typer.Argument(..., callback=_positive("the version number"), metavar="VERSION"))\
        -> None:
    """Make the text of VERSION current again (as a new version)."""
    out.print(_lib().rollback(name, version).message)


@commands.command("extend-ttl", cls=_counts("the number of days"))
def extend_ttl(name: str = typer.Argument(..., help="skill id, or name (every copy that expires)"),
               days: int = typer.Argument(..., callback=_positive("the number of days"), metavar="DAYS")) -> None:
    """Push a skill's expiry date DAYS further."""
    res = _lib().extend_ttl(name, days)
    out.print(res["message"])


@commands.command()
def deprecate(name: str = typer.Argument(..., help="skill id (that one), or name (every copy of it)"),
              reason: str = typer.Option(..., help="why it should no longer be used")) -> None:
    """Mark a skill inactive (kept on disk, hidden from search). By name every copy of it, by
    id that one."""
    res = _lib().deprecate(name, reason)
    out.print(res["message"])


@commands.command()
def restore(name: str = typer.Argument(..., help="skill id, or name (every deprecated copy)"),
            reason: str = typer.Option("", help="why it is back (kept in its changelog)")) -> None:
    """Undo a deprecation: the skill is active again and found by search (a skill of a
    read-only root: the deprecation kept in the library is cleared; its file is untouched)."""
    res = _lib().restore(name, reason=reason)
    out.print(res["message"])


@commands.command()
def delete(name: str = typer.Argument(..., help="skill id, or a name only one skill has"),
           yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Delete a workspace skill: its folder, its history and its index rows."""
    lib = _lib()
    rec = lib.evolver.lifecycle.one(name, "delete")     # a name with several copies is refused
    if not yes and not typer.confirm(_clean(f"Delete {rec.name} ({rec.path}) and its history?")):
        err.print("nothing deleted")
        raise typer.Exit(1)
    res = lib.delete(rec.id)
    out.print(f"deleted {res['name']}")
    for d in lib.review.waiting_on(res["name"]):     # drafts of changes that read it: what becomes of each
        out.print(f"  {_clean(d['then'])}")


review_app = typer.Typer(help="The review queue: drafts agents proposed under the 'propose' policy.",
                         no_args_is_help=True)


@review_app.command("list")
def review_list(json_out: bool = typer.Option(False, "--json")) -> None:
    """Drafts waiting for a person."""
    drafts = _lib().review.list()
    if json_out:
        _json(drafts)
        return
    if not drafts:
        out.print("no drafts waiting")
    for d in drafts:
        out.print(f"{d['name']:32} {d['action']:8} {d['proposed_at']}  {d['reason']}")


@review_app.command("show")
def review_show(name: str, full: bool = typer.Option(False, "--full", help="the whole SKILL.md the draft would "
                                                                           "write, not the diff"),
                json_out: bool = typer.Option(False, "--json", help="the draft, its text, the diff, the audit's "
                                                                    "findings and findability as JSON")) -> None:
    """What the draft would change: a diff against the skill it replaces (as the dashboard
    shows it); a new skill, or --full, prints the whole SKILL.md it would write."""
    lib = _lib()
    d = lib.draft_review(name, reader=lib.PERSON)      # the reviewer sees a held base with its diff
    if json_out:
        base = {k: d["base"][k] for k in ("id", "name", "version")} if d["base"] else None
        _json({k: d.get(k) for k in ("name", "action", "args", "proposed_at", "text", "note", "unified",
                                     "findability", "findings")} | {"base": base})
        return
    out.print(f"draft {d['name']} ({str(d['args'].get('action', '')).upper()}, proposed {d['proposed_at']}"
              + (_clean(f" by {d['args']['author']}") if d["args"].get("author") else "") + ")"
              + (f" against {d['base']['id']} v{d['base']['version']}" if d["base"] and not full else "") + "\n")
    for p in d["args"].get("parts") or []:     # lessons other agents added to this draft, each with its author
        out.print(_clean(f"added {p.get('proposed_at')} by {p.get('author') or 'an agent'}: {p.get('lesson')}"
                         + (f" ({p['reason']})" if p.get("reason") else "")))
    if d["args"].get("parts"):
        out.print()
    if d.get("note"):            # the skill moved on since the draft, or approving would be refused now
        out.print(f"note: {_clean(d['note'])}\n")
    if d.get("findability"):     # the skill's evals searched with the draft's text in place of the current one
        f = d["findability"]
        out.print(f"{f['line']} on its {f['source']} evals" + "".join(f"\n  lost: {m['query']!r} (first: "
                  f"{', '.join(m['first']) or 'nothing'})" for m in f["lost"]))
        if f.get("warning"):     # more than one query lost
            out.print(f"  {f['dropped']} should-trigger queries lost: under evolution.findability = \"block\" "
                      "approving it is refused")
        out.print()
    if d.get("findings"):        # what the audit reads in the text to approve (an upstream change, an agent's FIX)
        out.print("the audit of this text (medium or above: read it before you approve):")
        for f in d["findings"]:
            out.print(f"  {f['severity']:6} {f['rule']}  line {f.get('line') or '-'}  {visible(_clean(f['message']))}")
        out.print()
    if d["base"] and not full:
        _write(d["unified"] or "(no differences)\n")
    else:
        out.print(visible(_clean(d["text"])))
    up = d["args"].get("upstream")
    if isinstance(up, dict) and up.get("merged"):      # `sources update`: upstream's change conflicts with your copy
        out.print(f"\nupstream {str(up.get('commit', ''))[:7]} of {up.get('source')} against your copy "
                  "(the base between ||||||| and =======):\n")
        out.print(up["merged"])


@review_app.command("approve")
def review_approve(name: str) -> None:
    """Apply the draft to the library."""
    res = _lib().review.approve(name, reviewer="cli")
    out.print(res.message)
    for d in res.duplicates:
        out.print(f"  similar: {d['name']} ({d['similarity']}) — {d['suggestion']}")


@review_app.command("reject")
def review_reject(name: str, reason: str = typer.Option(..., help="why")) -> None:
    """Discard the draft (the reason is kept in drafts/rejected.jsonl)."""
    _lib().review.reject(name, reason)
    out.print(f"rejected {name}")
