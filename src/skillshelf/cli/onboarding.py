"""Setting a library up and checking it: ``init``, ``sync``, ``doctor``, ``rebuild``, ``config``,
``version`` and ``demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from . import common
from .common import _config, _json, _lib, _styled, _table, _version_line, out
from .progress import vectors_said

commands = typer.Typer()


@commands.command()
def init(samples: bool = typer.Option(True, "--samples/--no-samples", help="write the three sample skills")) -> None:
    """Create the home, the database and three sample skills."""
    lib = _lib(creates=True, samples=samples)
    rep = lib.sync()
    out.print(f"home      {lib.config.home}")
    out.print(f"workspace {lib.config.workspace}")
    out.print(f"database  {lib.config.db_path}")
    n = lib.count()
    out.print(f"{n} skills indexed ({rep.added} new). " + ("Try: skillshelf search \"fix a CORS error\"" if n else
              "Add a collection: skillshelf roots add PATH && skillshelf sync"))


def _again(command: str) -> str:
    """The command line to run ``command`` again with the --home and --root given before it (the
    roots of this run are only its own unless saved)."""
    import shlex

    st = common.state
    opts = ([f"--home {shlex.quote(str(st.home))}"] if st.home else []) \
        + [f"--root {shlex.quote(str(r))}" for r in st.roots]
    return " ".join(["skillshelf", *opts, command])


@commands.command()
def sync(json_out: bool = typer.Option(False, "--json", help="print the counts as JSON")) -> None:
    """Bring the index up to date with the files (only what changed is read)."""
    import time

    from ..library import Library

    lib = _lib()
    t0 = time.perf_counter()
    if json_out:
        rep = lib.sync()
        d = rep.as_dict()
        d["seconds"] = round(time.perf_counter() - t0, 3)   # the whole sync, embedding included
        _json(d)
        return
    # common.err, looked up now: a test puts a console of its own there
    try:
        with common._shown(lib) as (on_files, on_texts):
            rep = lib.sync(progress=on_files, embed_progress=on_texts)
    except Library.Interrupted as exc:      # Ctrl-C: the work done is committed; say what was kept
        r = exc.report
        common.err.print(f"stopped: kept {r.added} added, {r.updated} updated, {r.removed} removed skills and "
                         f"{r.embedded} vectors; run `{_again('sync')}` to finish"
                         + (" (with the same --root: a sync without it leaves that folder's skills out; "
                            "`skillshelf roots add PATH` saves a root)" if common.state.roots else ""))
        raise typer.Exit(130) from None
    elapsed = time.perf_counter() - t0
    out.print(f"added {rep.added} · updated {rep.updated} · removed {rep.removed} · unchanged {rep.unchanged}"
              f" · invalid {len(rep.invalid)} · embedded {rep.embedded}{vectors_said(rep, lib.team)} ({elapsed:.1f}s)")
    # what changed is named; invalid files the last sync reported already are only counted
    for inv in rep.new_invalid:
        line = f":{inv.line}" if inv.line else ""
        out.print(f"  invalid {inv.path}{line}: {inv.message}")
    old = len(rep.invalid) - len(rep.new_invalid)
    if old:
        out.print(f"  {old} invalid file{'s' if old != 1 else ''} unchanged since the last sync "
                  "(`skillshelf doctor --verbose` lists them)")
    for path in rep.cleared_invalid:
        out.print(f"  no longer invalid: {path}")
    for note in rep.notes:
        out.print(f"  note: {note}")


CLASH_EXAMPLES = 5
INVALID_EXAMPLES = 20


@commands.command()
def doctor(json_out: bool = typer.Option(False, "--json"),
           verbose: bool = typer.Option(False, "--verbose", "-v",
                                        help="list every name clash and invalid file")) -> None:
    """Check configuration, roots, index, invalid files, name clashes and the embedder."""
    from ..errors import StoreError
    from ..library import Library

    rep: Any
    try:
        lib = _lib(warn_missing=False)   # doctor reports a missing root as a failed check
    except StoreError as exc:            # the team store did not open: the checks that need none, and its line
        lib, rep = None, Library.doctor_without_store(_config(), exc)
    else:
        rep = lib.doctor()
    supply = lib.supply.status() if lib is not None else None     # the team's decisions are in its store
    if json_out:
        _json({**rep.as_dict(), "supply": supply})
        if not rep.ok:
            raise typer.Exit(1)
        return
    marks = {"ok": ("ok  ", "green"), "warn": ("warn", "yellow"), "fail": ("FAIL", "red")}
    for c in rep.checks:
        out.print(_styled(marks[c.status], f" {c.name}: {c.detail}"))
    if supply is not None:
        out.print(_styled(marks["warn" if supply["held"] or supply["hidden"] else "ok"], f" supply chain: {_supply(supply)}"))
        if supply["hidden"]:
            from .trust import print_held
            print_held(lib)
    out.print("\nroots:")
    for r in rep.roots:
        out.print(f"  {r['label']:20} {r['kind']:9} {'rw' if r['writable'] else 'ro'} {r['skill_files']:6} {r['path']}")
    if rep.invalid_files:
        shown_invalid = rep.invalid_files if verbose else rep.invalid_files[:INVALID_EXAMPLES]
        out.print(f"\ninvalid files (skipped): {len(rep.invalid_files)}")
        for i in shown_invalid:
            out.print(f"  {i['path']}{':' + str(i['line']) if i['line'] else ''}: {i['message']}")
        if len(shown_invalid) < len(rep.invalid_files):
            out.print(f"  … and {len(rep.invalid_files) - len(shown_invalid)} more: "
                      "`skillshelf doctor --verbose` lists them all")
    if rep.clashes:
        # a large collection has hundreds: a count and a few examples, all of them on request
        shown = rep.clashes if verbose else rep.clashes[:CLASH_EXAMPLES]
        out.print(f"\nname clashes: {len(rep.clashes)} names are used by more than one skill; the first id wins"
                  f" a lookup by name{'' if verbose else ', for example'}:")
        for c in shown:
            out.print(f"  {c.name}: {c.winner}  (also: {', '.join(c.others[:3])}"
                      f"{' …' if len(c.others) > 3 else ''})")
        if len(shown) < len(rep.clashes):
            out.print(f"  … and {len(rep.clashes) - len(shown)} more: `skillshelf doctor --verbose` lists them all")
    if not rep.ok:
        raise typer.Exit(1)


def _supply(st: dict) -> str:
    """The supply-chain line of doctor: skills by audit risk, held and hidden, pinned roots."""
    risks = ", ".join(f"{st.get(r, 0)} {r}" for r in ("high", "medium", "low"))
    pinned = ", ".join(p["root"] for p in st.get("pinned") or []) or "none (`skillshelf pin LABEL`)"
    line = (f"skills by audit risk: {risks} ({st.get('trusted', 0)} trusted); {st['held']} held, {st['hidden']} "
            f"hidden from agents; pinned roots: {pinned}")
    if st["held"] or st["hidden"]:
        line += " — `skillshelf trust` lists them, `skillshelf trust NAME` shows what changed and allows one"
    return line


@commands.command()
def rebuild(yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Index the files into a new database; the old file is moved aside (named damaged or old, for
    what it is) and its usage history and your decisions (pins, held and trusted skills, overlays)
    are carried into the new one."""
    from types import SimpleNamespace

    from ..library import Library

    cfg = _config()
    if not yes and not typer.confirm(f"Move {cfg.db_path} aside and index the skill files into a new database? "
                                     "Its usage history and your decisions are carried over "
                                     "(if the file can still be read)."):
        common.err.print("nothing changed")
        raise typer.Exit(1)
    try:
        with common._shown(SimpleNamespace(config=cfg)) as (on_files, on_texts):
            lib, moved = Library.rebuild(config=cfg, progress=on_files, embed_progress=on_texts)
    except KeyboardInterrupt:       # Ctrl-C (during the sync too): the rebuild is undone
        common.err.print(f"stopped: nothing changed; the old database is back at {cfg.db_path}")
        raise typer.Exit(130) from None
    done = lib.rebuilt
    if moved is not None:
        out.print(f"moved the old database (healthy) to {moved}" if done.healthy else
                  f"moved the damaged database to {moved} (SQLite's check: {done.problem[:200]})")
    if done.carried and not done.left_behind:
        c = done.carried
        parts = [f"{c.get('queries', 0)} queries", f"{c.get('outcomes', 0)} reports"] \
            + [f"{c[k]} {what}" for k, what in (("learned", "learned from"), ("judge_log", "judged searches"))
               if c.get(k)]
        out.print(f"carried the usage history over: {', '.join(parts)}")
    if done.left_behind:
        out.print(f"the usage history stays in the old file ({done.left_behind.split(': ', 1)[-1]}); "
                  "the new database starts without it")
    for line in _decisions(done):
        out.print(line)
    out.print(f"indexed {lib.count()} skills into {cfg.db_path}")


def _decisions(done) -> list[str]:
    """What a rebuild did with the owner's decisions (``onboarding.rebuild.Rebuilt``), a line each."""
    c, lines = done.carried, []
    kept = [f"{c[k]} {what}{'' if c[k] == 1 else 's'}" for k, what in (
        ("pinned_roots", "pinned root"), ("pinned_skills", "pinned skill"), ("pin_held", "held skill"),
        ("audit_trust", "trusted skill"), ("overlay", "overlay")) if c.get(k)]
    if kept:
        lines.append(f"carried the owner's decisions over: {', '.join(kept)}")
    what = {"overlays": "overlays (deprecations, expiry dates)",
            "trusted": "trusted skills (trust them again)", "pins": "pins", "holds": "held skills"}
    if done.decisions_left:
        lines.append("cannot read, so they stay in the old file: "
                     + ", ".join(what[k] for k in done.decisions_left))
    if "holds" in done.decisions_left:
        lines.append("skills held on import are held no more (but in the roots held whole): review them with "
                     "`skillshelf audit`")
    if done.roots_unread:
        lines.append("which roots were pinned cannot be read: every root but the workspace is held whole")
    if done.held_whole:
        lines.append(f"held whole (every skill held as new until you pin the root again with `skillshelf pin "
                     f"LABEL`): {', '.join(done.held_whole)}")
    return lines


@commands.command()
def config(json_out: bool = typer.Option(False, "--json")) -> None:
    """Print every setting: its value, where it came from (default, file, environment, flag)
    and the reason for its default."""
    from ..config import describe

    cfg = _config()
    rows = describe(cfg)
    if json_out:
        _json({k: {"value": v, "source": origin, "why": why} for k, v, why, origin in rows})
        return
    out.print(f"config file: {cfg.config_path}{'' if cfg.config_path.exists() else ' (absent)'}")
    table = _table("setting", "value", "source", "why")
    for k, v, why, origin in rows:
        shown = ", ".join(map(str, v)) or "-" if isinstance(v, list) else str(v) if v != "" else "-"
        table.add_row(k, shown, origin, why)
    out.print(table)


@commands.command()
def version() -> None:
    """Print the version."""
    out.print(_version_line())


@commands.command()
def demo(query: str = typer.Argument("my fetch to the Next.js API fails with a CORS error"),
         corpus: Optional[Path] = typer.Option(None, help="also index this folder of skills")) -> None:
    """The whole loop an agent runs, on the sample skills: a search, a read by section, a
    report, a draft saved and approved, stats; each step as the agent sees it (the MCP tool,
    its arguments, its result). In a temporary library unless --home names one."""
    from .demo import run_demo

    run_demo(query, corpus)
