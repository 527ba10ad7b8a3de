"""The supply chain: ``audit`` (what a skill asks an agent to do that is risky), ``trust`` (allow
a skill or a pinned collection after reading what changed), ``pin`` and ``unpin`` (hold back a
collection's skills that change until a person has looked)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import NotFoundError
from ..text import visible
from .common import _choice, _clean, _json, _lib, _styled, _usage_error, _write, err, out

commands = typer.Typer()

_MARKS = {"high": ("high  ", "red"), "medium": ("medium", "yellow"), "low": ("low   ", "cyan")}
EXCERPT_MAX = 160


def _excerpt(text: Any) -> str:
    """One line of a finding's excerpt, control characters visible, cut to a readable width."""
    s = visible(_clean(text)).replace("\n", "⏎").replace("\t", " ").strip()
    return s if len(s) <= EXCERPT_MAX else s[:EXCERPT_MAX - 1] + "…"


def print_finding(f: dict[str, Any], indent: str = "  ", why: bool = True) -> None:
    """A finding as three short lines: severity, rule, where and what; the excerpt; why it matters."""
    where = f"{f.get('file') or '?'}" + (f":{f['line']}" if f.get("line") else "")
    sev = f.get("severity") or "low"
    out.print(_styled(indent, _MARKS.get(sev, (sev, "")), f" {f.get('rule')}  {where}  {f.get('message') or ''}"))
    if f.get("excerpt"):
        out.print(f"{indent}    > {_excerpt(f['excerpt'])}")
    if why and f.get("why"):
        out.print(f"{indent}    why: {f['why']}")


def _counts(findings: list[dict[str, Any]]) -> str:
    by = {s: sum(1 for f in findings if f["severity"] == s) for s in ("high", "medium", "low")}
    return ", ".join(f"{n} {s}" for s, n in by.items() if n) or "none"


@commands.command()
def audit(
    refs: Optional[list[str]] = typer.Argument(None, metavar="[NAME|ID|PATH]...",
                                               help="skills to audit (names, ids, skill folders outside the "
                                                    "library, or folders that hold them); default: the whole "
                                                    "library"),
    root: Optional[str] = typer.Option(None, "--root", metavar="LABEL", help="only the skills of this root"),
    min_severity: str = typer.Option("low", "--min-severity", metavar="low|medium|high",
                                     callback=_choice("low", "medium", "high"),
                                     help="leave out findings below this severity"),
    json_out: bool = typer.Option(False, "--json", help="a list of findings (skill, id, file, line, rule, "
                                                       "severity, message, excerpt, why)"),
) -> None:
    """What a skill asks an agent to do that is risky: fetch-and-run, secrets sent out, text
    hidden from the reader, destructive commands, a shell granted; exit 1 on a high finding."""
    lib = _lib()
    rep = lib.supply.audit_report(refs or (), root=root, min_severity=min_severity)
    findings, checked = rep["findings"], rep["skills"]
    high = any(f["severity"] == "high" for f in findings)
    if json_out:
        _json(findings)
    else:
        by_skill: dict[str, list[dict[str, Any]]] = {}
        names: dict[str, str] = {}
        for f in findings:
            by_skill.setdefault(f["id"], []).append(f)
            names[f["id"]] = f["skill"]
        for sid, fs in by_skill.items():
            out.print(_styled((names[sid], "bold"), f"  ({sid}) — {_counts(fs)}"))
            for f in fs:
                print_finding(f)
        what = "" if min_severity == "low" else f" at or above {min_severity}"
        of = f"{checked} skill{'s' * (checked != 1)} checked"
        if findings:
            out.print(f"{len(findings)} finding{'s' * (len(findings) != 1)}{what} in {len(by_skill)} of {of}: "
                      f"{_counts(findings)}")
        else:
            out.print(f"no findings{what} in {of}")
    if high:
        raise typer.Exit(1)


def _confirm(question: str, yes: bool) -> None:
    """Ask before trusting; without a terminal a question cannot be answered: say --yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        err.print("error: nothing trusted: there is no terminal to confirm on — read the above, then pass --yes")
        raise typer.Exit(1)
    if not typer.confirm(_clean(question)):
        err.print("nothing trusted")
        raise typer.Exit(1)


def _print_diff(d: dict[str, Any]) -> None:
    """A pinned skill's changes: the files added, removed and changed, then the SKILL.md diff."""
    head = {"changed": "changed since it was pinned", "added": "new in a pinned root (never reviewed)",
            "removed": "removed since it was pinned", "unchanged": "unchanged since it was pinned",
            "imported": "imported from an archive that marked it held (never reviewed here)"}
    out.print(f"{d['skill_id']}: {head.get(d['reason'], d['reason'])}"
              + (f" on {d['pinned_at']}" if d.get("pinned_at") else ""))
    for label in ("added", "removed", "changed"):
        names = d.get(label) or []
        if names:
            out.print(f"  files {label}: " + ", ".join(visible(n) for n in names[:50])
                      + (f" … ({len(names)})" if len(names) > 50 else ""))
    for name, text in (d.get("added_text") or {}).items():     # what an added script does, not only its name
        out.print(f"\n  {visible(name)} (added):")
        _write("".join(f"  + {line}\n" for line in _clean(text).splitlines()))
    if d.get("new_findings"):
        out.print("  new audit findings since the pin:")
        for f in d["new_findings"]:
            print_finding(f, indent="    ", why=False)
    if d.get("skill_md_diff"):      # what got it held may be invisible: shown as <U+200B>
        out.print("")
        _write(visible(_clean(d["skill_md_diff"])).rstrip("\n") + "\n")


@commands.command()
def trust(
    ctx: typer.Context,
    name: Optional[str] = typer.Argument(None, metavar="NAME", help="the skill to allow (name, id or path)"),
    root: Optional[str] = typer.Option(None, "--root", metavar="LABEL",
                                       help="accept a pinned root's current content as a whole (re-pins it)"),
    yes: bool = typer.Option(False, "--yes", help="do not ask"),
    note: str = typer.Option("", "--note", help="why it is allowed (kept with the trust)"),
) -> None:
    """Show what changed in a held skill (or a pinned root) and its audit now, then, once
    confirmed, allow it: its pin takes this content and agents see it again. With neither NAME
    nor --root: list every skill held or blocked from agents, with why."""
    if name is not None and root is not None:
        raise _usage_error(ctx, "give a skill NAME or --root LABEL (one of them)")
    lib = _lib()
    if name is None and root is None:
        held_list(lib)
        return
    if name is not None:
        rev = lib.supply.review(name)
        if rev.get("diff"):
            _print_diff(rev["diff"])
        if rev.get("hidden"):
            out.print(f"hidden from agents: {rev['hidden']}")
        findings = rev.get("findings") or []
        out.print(f"audit now: {rev.get('risk', 'none')} risk" + (":" if findings else " (no findings)"))
        for f in findings:
            print_finding(f, why=False)
        _confirm(f"Trust {name} as it is now?", yes)
        res = lib.supply.trust(name, note=note)
        done = [w for w, on in (("pinned this content", res.get("pinned")), ("trusted its audit", res.get("trusted")),
                                ("released the import's hold", res.get("released"))) if on]
        out.print(f"{res['skill_id']}: " + ("; ".join(done) if done else "allowed (nothing to pin or trust)"))
        return
    assert root is not None
    # the root as the library knows it (a label, or the path it was added by): an unknown one is
    # refused before anything is shown or asked
    where = str(Path(root).expanduser().resolve())
    known = [r for r in lib.roots if r.label == root or str(r.path) == where]
    if not known:
        raise NotFoundError(f"no root {root!r} in this library",
                            fix="use a root's label or path (`skillshelf doctor` lists them)")
    label = known[0].label
    pinned = {p["root"]: p for p in lib.supply.pinned_roots()}
    held = {sid: h for sid, h in lib.supply.held().items() if h.get("root") == label}
    if label not in pinned and not held:
        out.print(f"{label} is not pinned yet: trusting it pins its current content")
    for sid in sorted(held):
        _print_diff(lib.supply.held_diff(sid))
        out.print("")
    if label in pinned:
        out.print(f"{len(held)} held skill{'s' * (len(held) != 1)} in {label}" if held else
                  f"no held skills in {label}: re-pinning records its content as it is now")
    _confirm(f"Pin {label} as it is now{f' ({len(held)} held skills released)' if held else ''}?", yes)
    _print_pin(lib.supply.trust_root(label))


REASONS = {"changed": "changed since the pin", "added": "new in a pinned root", "imported": "held on import",
           "removed": "removed since the pin", "blocked": "blocked by the audit"}


def held_lines(lib: Any, most: Optional[int] = None) -> tuple[list[str], int]:
    """Lines naming the skills hidden from agents (at most ``most``), each with why and the
    command that reviews it; and how many there are in all."""
    rows = lib.supply.hidden_list()
    lines = []
    for h in rows[:most]:
        why = ", ".join(REASONS.get(r, r) for r in h["reasons"])
        lines.append(f"{visible(h['name'])}  ({visible(h['id'])}) — {why}: `{visible(h['review'])}`")
    return lines, len(rows)


HELD_EXAMPLES = 5


def print_held(lib: Any, most: int = HELD_EXAMPLES, indent: str = "  ") -> None:
    """``doctor``'s names of the skills hidden from agents: a few, then how many more."""
    lines, n = held_lines(lib, most)
    for line in lines:
        out.print(indent + line)
    if n > len(lines):
        out.print(f"{indent}… and {n - len(lines)} more: `skillshelf trust` lists them all")


def held_list(lib: Any) -> None:
    """Every skill held or blocked from agents, with why and the command that reviews it."""
    lines, n = held_lines(lib)
    if not n:
        out.print("no skills are held or blocked from agents")
        return
    for line in lines:
        out.print(line)
    out.print(f"{n} skill{'s' * (n != 1)} hidden from agents; `skillshelf trust NAME` shows what changed and "
              "allows one, `skillshelf trust --root LABEL` a pinned root's as a whole")


def _print_pin(rep: dict[str, Any]) -> None:
    out.print(f"pinned {rep['root']}: {rep['skills']} skill{'s' * (rep['skills'] != 1)}, {rep['files']} "
              f"file{'s' * (rep['files'] != 1)}; a skill whose files change is held from agents until "
              f"`skillshelf trust NAME`")
    for f in rep.get("findings") or []:
        print_finding(f, why=False)
    for n in rep.get("notes") or []:
        out.print(f"  note: {n}")


def pin_root(label: str) -> None:
    """Pin a root of the library (also used by `roots add --pin`)."""
    _print_pin(_lib().supply.pin(label))


@commands.command()
def pin(label: str = typer.Argument(..., metavar="LABEL", help="a root's label or path (`skillshelf doctor`)")) \
        -> None:
    """Pin a root: record the sha256 of every file of its skills and each SKILL.md's text; a
    skill that changes afterwards is held from agents until `skillshelf trust`."""
    pin_root(label)


@commands.command()
def unpin(label: str = typer.Argument(..., metavar="LABEL", help="a pinned root's label or path"),
          yes: bool = typer.Option(False, "--yes", help="do not ask (a team store's pin is the whole team's)")) -> None:
    """Forget a root's pin: its skills are no longer held when they change. On a team store the
    pin is the team's: unpinning asks first, and applies on every server."""
    lib = _lib()
    where = str(Path(label).expanduser().resolve())
    named = {r.label for r in lib.roots if r.label == label or str(r.path) == where}
    if lib.team and any(p["root"] in named for p in lib.supply.pinned_roots()):
        out.print(f"{label} is pinned for the whole team: unpinning it releases, on every server, the skills held "
                  "because they changed, and a later change is no longer held")
        if not yes:
            if not sys.stdin.isatty():
                err.print(f"error: {label} not unpinned: there is no terminal to ask on — pass --yes to unpin it "
                          "for the whole team")
                raise typer.Exit(1)
            if not typer.confirm(_clean(f"Unpin {label} for the whole team?")):
                err.print(f"{label} not unpinned")
                raise typer.Exit(1)
    if lib.supply.unpin(label):
        out.print(f"unpinned {label}" + (" for the whole team" if lib.team else ""))
    else:
        out.print(f"{label} was not pinned")
