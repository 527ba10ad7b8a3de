"""The command line: a thin layer that builds a ``Library``, calls one method and prints.

Domain errors become one line on stderr (problem — fix) and exit code 1."""

from __future__ import annotations

import json
import sqlite3
import os
import re
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperCommand
from rich.console import Console
from rich.progress import ProgressColumn
from rich.table import Table
from rich.text import Text

from .version import __version__
from .errors import SkillshelfError

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="skillshelf: a local-first librarian for agent skills.")
# C0 controls except tab and newline, DEL, and C1 controls (ESC starts every terminal escape
# sequence; C1 CSI/OSC do the same on some terminals). Each is shown as a visible stand-in.
_CONTROL = {c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)}
_CONTROL[0x7F] = "\u2421"
_CONTROL.update({c: "\ufffd" for c in range(0x80, 0xA0)})


def _clean(text: Any) -> str:
    """Text safe to print on a terminal: control characters (C0 but tab and newline, DEL, C1)
    become visible stand-ins (ESC -> ␛); CRLF line ends become LF. The consoles print with
    markup and emoji codes off, so "[/bold]" or ":x:" in a skill stay literal text."""
    s = "" if text is None else str(text)
    if "\r\n" in s:
        s = s.replace("\r\n", "\n")
    return s.translate(_CONTROL)


class _SafeConsole(Console):
    """Skill text comes from strangers: every string printed goes through ``_clean``, and Rich
    markup is off (a description holding "[/bold]" would otherwise crash the print). Our own
    styling is a ``Text`` built with ``_styled``."""

    def __init__(self, **kw: Any):
        super().__init__(highlight=False, markup=False, emoji=False, **kw)

    def print(self, *objects: Any, **kw: Any) -> None:
        super().print(*(_clean(o) if isinstance(o, str) else o for o in objects), **kw)


class _SafeTable(Table):
    def add_row(self, *cells: Any, **kw: Any) -> None:
        super().add_row(*(_clean(c) if isinstance(c, str) else c for c in cells), **kw)


def _table(*columns: str, **kw: Any) -> Table:
    return _SafeTable(*columns, box=None, **kw)


def _styled(*parts: str | tuple[str, str]) -> Text:
    """A line of plain strings and (text, style) pairs, every text cleaned."""
    return Text.assemble(*((_clean(p[0]), p[1]) if isinstance(p, tuple) else _clean(p) for p in parts))


def _write(text: str) -> None:
    """Raw text to stdout (reports, diffs), control characters made visible."""
    sys.stdout.write(_clean(text))


out = _SafeConsole(soft_wrap=True)
err = _SafeConsole(stderr=True, soft_wrap=True)   # a message is one line, however long
if not out.is_terminal and not os.environ.get("COLUMNS"):
    # piped or redirected: Rich would cut tables to 80 columns ("workspace:cors-…"); a pipe
    # gets whole ids and names instead
    out.width = 400


class State:
    home: Optional[Path] = None
    roots: list[Path] = []
    client_roots: Optional[bool] = None


state = State()


def _version_line() -> str:
    return f"skillshelf {__version__}"


def _print_version(value: bool) -> None:
    """``skillshelf --version``: the same line as ``skillshelf version``."""
    if value:
        out.print(_version_line())
        raise typer.Exit()


@app.callback()
def _global(
    # SKILLSHELF_HOME is read by the configuration itself, so `skillshelf config` can say
    # whether the home came from the flag or the environment
    home: Optional[Path] = typer.Option(None, "--home", metavar="PATH",
                                        help="library home (workspace + database); default: SKILLSHELF_HOME,"
                                             " else the platform data dir"),
    root: list[Path] = typer.Option([], "--root", metavar="PATH",
                                    help="extra read-only skill root for this command (repeatable; "
                                         "`skillshelf roots add` saves one)"),
    client_roots: Optional[bool] = typer.Option(None, "--client-roots/--no-client-roots",
                                                help="also scan ~/.claude/skills, .agents/skills and friends"),
    _version: bool = typer.Option(False, "--version", is_eager=True, expose_value=False, callback=_print_version,
                                  help="print the version and exit (as `skillshelf version`)"),
) -> None:
    state.home = home
    state.roots = list(root)
    state.client_roots = client_roots


def _config(**overrides: Any):
    from .config import load

    return load(state.home, roots=[str(r) for r in state.roots] or None, client_roots=state.client_roots,
                **overrides)


def _lib(*, warn_missing: bool = True, creates: bool = False, samples: bool | None = None):
    """Open the library for one command. A home without a library is created, and said so on
    stderr (unless the command is there to create one): a typo in --home would otherwise
    look like an empty library. Saved roots that have gone are named once, on stderr."""
    from .config import ensure_home
    from .library import Library

    cfg = _config()
    new = ensure_home(cfg) and not creates
    lib = Library.init(config=cfg, samples=samples) if samples is not None else Library(config=cfg)
    if new:   # said once the library exists (a home that cannot be written creates nothing)
        err.print(f"note: there was no library at {cfg.home}; created a new, empty one"
                  " (check --home / SKILLSHELF_HOME if you meant another)")
    if warn_missing:
        for m in lib.missing_roots:
            err.print(f"warning: {m.message}; left out — {m.fix}")
    return lib


def _json(data: Any) -> None:
    """JSON on stdout. JSON escapes C0 controls itself; C1 controls (which some terminals
    obey) are written as \\u escapes too, so the data is unchanged and safe to print."""
    _write_json_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _write_json_text(text: str) -> None:
    sys.stdout.write(_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


_C1 = re.compile("[\x7f-\x9f]")


# --- setup ----------------------------------------------------------------------------

@app.command()
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


@app.command()
def sync(json_out: bool = typer.Option(False, "--json", help="print the counts as JSON")) -> None:
    """Bring the index up to date with the files (only what changed is read)."""
    import time

    lib = _lib()
    t0 = time.perf_counter()
    if json_out:
        rep = lib.sync()
        d = rep.as_dict()
        d["seconds"] = round(time.perf_counter() - t0, 3)   # the whole sync, embedding included
        _json(d)
        return
    with _SyncProgress(embedding=lib.config.embedder != "none") as prog:
        rep = lib.sync(progress=prog.on_files, embed_progress=prog.on_texts)
    elapsed = time.perf_counter() - t0
    out.print(f"added {rep.added} · updated {rep.updated} · removed {rep.removed} · unchanged {rep.unchanged}"
              f" · invalid {len(rep.invalid)} · embedded {rep.embedded} ({elapsed:.1f}s)")
    for inv in rep.invalid:
        line = f":{inv.line}" if inv.line else ""
        out.print(f"  invalid {inv.path}{line}: {inv.message}")
    for note in rep.notes:
        out.print(f"  note: {note}")


class _SyncProgress:
    """A sync's phases on stderr, one line each: finding the files, reading them into the
    lexical index (files done of total, files/s, time left), and embedding (texts done of
    total, texts/s, time left). The model embeds changed skills while they are read; what is
    left after the last file shows as "embedding (finishing)" until the library reports
    counts. Transient: the summary line replaces it. Only on an interactive terminal."""

    def __init__(self, *, embedding: bool):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.embedding = embedding
        self.prog = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                             _RateColumn(), TimeElapsedColumn(), _LeftColumn(), console=err, transient=True,
                             # where stderr is no terminal (a pipe, a log, CI) nothing is drawn, and Rich
                             # would end the display with an empty line ahead of the summary
                             disable=not err.is_interactive)
        self.scan = self.prog.add_task("finding skill files", total=None)
        self.read = self.prog.add_task("reading · lexical index", total=None, visible=False, unit="files")
        self.embed = self.prog.add_task("embedding", total=None, visible=False, unit="texts")
        self.counting = False

    def __enter__(self) -> "_SyncProgress":
        self.prog.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.prog.__exit__(*exc)

    def on_files(self, done: int, total: int) -> None:
        p = self.prog
        if not p.tasks[self.read].visible:
            p.update(self.scan, total=1, completed=1, visible=False)
            p.update(self.read, visible=True)
            p.reset(self.read, total=total, completed=done, visible=True)
            if self.embedding and total:
                p.update(self.embed, description="embedding (beside reading)", visible=True)
        p.update(self.read, completed=done, total=total)
        if total and done >= total and self.embedding and not self.counting:
            p.update(self.embed, description="embedding (finishing)", visible=True)

    def on_texts(self, done: int, total: int) -> None:
        p = self.prog
        if not self.counting:
            self.counting = True
            p.reset(self.embed, total=total, completed=0, visible=True, description="embedding")
        p.update(self.embed, completed=done, total=total)


class _RateColumn(ProgressColumn):
    """Items per second of a counted task ("212 texts/s")."""

    def render(self, task: Any) -> Text:
        unit = task.fields.get("unit")
        if not unit or task.total is None or not task.speed:
            return Text("")
        return Text(f"{task.speed:,.0f} {unit}/s")


class _LeftColumn(ProgressColumn):
    """Time left, once a counted task has a speed."""

    def render(self, task: Any) -> Text:
        if task.total is None or task.finished or task.time_remaining is None:
            return Text("")
        left = int(task.time_remaining)
        return Text(f"~{left // 60}:{left % 60:02d} left")


# --- reading --------------------------------------------------------------------------

@app.command("list")
def list_(
    root: Optional[str] = typer.Option(None, metavar="LABEL|PATH",
                                       help="only skills of this root (its label, or the path given to roots add)"),
    skill_type: Optional[str] = typer.Option(None, "--type", help="IMPLEMENTATION | WORKFLOW | TROUBLESHOOTING | ..."),
    tag: Optional[str] = typer.Option(None, help="only skills with this tag"),
    name: Optional[str] = typer.Option(None, help="name contains"),
    invalid: bool = typer.Option(False, "--invalid", help="only skills with spec errors"),
    limit: Optional[int] = typer.Option(None, help="at most this many"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """List skills (every match with --json unless --limit is given)."""
    lib = _lib()
    recs = lib.list(root=root, skill_type=skill_type, tag=tag, name_contains=name, invalid_only=invalid,
                    limit=limit if limit is not None or json_out else 200)
    if json_out:
        _json([r.as_dict(body=False) for r in recs])
        return
    table = _table("name", "type", "version", "tags", "id")
    for r in recs:
        flag = "" if r.active else " (inactive)"
        flag += " (expired)" if r.expired else ""
        table.add_row(r.name + flag, r.skill_type or "", str(r.version), ",".join(r.tags[:4]), r.id)
    if recs:
        out.print(table)
    filtered = any(x is not None and x is not False for x in (root, skill_type, tag, name, invalid or None))
    if len(recs) < recs.matched:
        out.print(f"{len(recs)} shown of {recs.matched}{' matching' if filtered else ''}; "
                  "use --limit N or --json for all")
    elif not recs:
        out.print("no skills match these filters" if filtered else
                  "no skills indexed yet: add a collection with `skillshelf roots add PATH`, then `skillshelf sync`")


@app.command()
def show(name: str = typer.Argument(..., help="skill name, id or path"),
         section: Optional[str] = typer.Option(None, help="only this section, e.g. 'Solution'"),
         json_out: bool = typer.Option(False, "--json")) -> None:
    """Show one skill: metadata, findings and body."""
    lib = _lib()
    rec, body = lib.read(name, section)
    if json_out:
        d = rec.as_dict()
        d["body"] = body
        d["files"] = rec.files()
        _json(d)
        return
    out.print(_styled((rec.display_name, "bold"), f"  ({rec.id})"))
    out.print(f"path     {rec.path}")
    out.print(f"type     {rec.skill_type or '-'}   version {rec.version}   tags {', '.join(rec.tags) or '-'}")
    if rec.lineage:
        out.print(f"lineage  {' → '.join(rec.lineage)}")
    ov = rec.overlay or {}
    if ov.get("status") == "deprecated":
        out.print(f"status   deprecated by you: {ov.get('reason') or '-'} (kept in the library; the file is untouched)")
    elif not rec.active:
        out.print("status   inactive")
    if rec.expired:
        out.print(f"expired  {rec.expires_on}")
    elif rec.expires_on:
        out.print(f"expires  {rec.expires_on}" + (" (set by you in the library)" if ov.get("expires_on") else ""))
    if ov.get("file_changed_since"):
        out.print("note     the file has changed since you decided this: review it")
    learned = lib.learned(rec.id)
    if learned["reports"]:
        out.print(f"learned  worked for {learned['worked']} request{'s' * (learned['worked'] != 1)}, failed for "
                  f"{learned['failed']} ({learned['clients']} client{'s' * (learned['clients'] != 1)}); similar "
                  "requests rank it accordingly (`skillshelf usage forget` undoes it)")
    out.print(f"\n{rec.description}\n")
    for f in rec.findings:
        out.print(f"  {f['severity']:7} {f['rule']}: {f['message']}")
    files = rec.files()
    if files:
        out.print("files    " + ", ".join(files))
    out.print("")
    out.print(body)


@app.command()
def search(
    query: str = typer.Argument(..., help="what you are trying to do, in your own words"),
    limit: int = typer.Option(10, "--limit", "-n"),
    mode: str = typer.Option("find", help="find | brainstorm"),
    repo_scope: str = typer.Option("all", help="all | current"),
    current_repo: Optional[str] = typer.Option(None, help="repo name for --repo-scope current"),
    tags: Optional[str] = typer.Option(None, help="comma-separated tags"),
    skill_type: Optional[str] = typer.Option(None, "--type"),
    include_inactive: bool = typer.Option(False, "--include-inactive"),
    include_expired: bool = typer.Option(False, "--include-expired"),
    no_log: bool = typer.Option(False, "--no-log", help="leave no trace in the usage log"),
    judge: bool = typer.Option(False, "--judge", help="let the configured model judge rerank the hits, with why /"
                                                      " why not and a pick (README: \"Model judge\")"),
    judge_mode: Optional[str] = typer.Option(None, "--judge-mode", metavar="rerank|filter|both",
                                             help="what the judge does (implies --judge): rerank, filter (mark the"
                                                  " top hits likely / weak) or both"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Search the library (hybrid BM25 + embeddings)."""
    lib = _lib()
    kw = dict(limit=limit, mode=mode, repo_scope=repo_scope, current_repo=current_repo, tags=tags,
              skill_type=skill_type, include_inactive=include_inactive, include_expired=include_expired,
              log=not no_log, client="cli")
    if judge or judge_mode:
        res = lib.judged_search(query, judge=judge_mode or "rerank", **kw)
    else:
        res = lib.search(query, **kw)
    if json_out:
        _json(res.as_dict())
        return
    if res.degraded:
        err.print(f"degraded: {res.degraded}")
    if not res.hits:
        out.print("no skills matched")
        return
    judged = getattr(res, "verdicts", None) is not None
    if judged:
        table = _table("#", "name", "match", "score", "judge", "description")
    else:
        table = _table("#", "name", "match", "score", "description")
    for i, h in enumerate(res.hits, 1):
        name = h.name + (f" ×{h.copies}" if h.copies > 1 else "") + (" (wildcard)" if h.wildcard else "")
        if judged:
            v = res.hit_extra(h).get("judge", {})
            mark = " ".join(x for x in (f"fit {v['fit']}" if "fit" in v else "", v.get("verdict", ""),
                                        f"{v['score']:.2f}" if "score" in v else "") if x)
            table.add_row(str(i), name, h.match, f"{h.score:.2f}", mark or "-", h.description)
        else:
            table.add_row(str(i), name, h.match, f"{h.score:.2f}", h.description)
    out.print(table)
    if judged:
        for i, h in enumerate(res.hits, 1):
            v = res.hit_extra(h).get("judge", {})
            if v.get("why") or v.get("why_not"):
                out.print(f"  {i}. {h.name}: why: {v.get('why') or '-'}; why not: {v.get('why_not') or '-'}")
        line = f"judge: {res.judge} ({res.judge_model}, {res.judge_latency_ms / 1000:.1f}s)"
        if res.judge == "ok":
            out.print(line + (f"; pick: {res.pick}" if res.pick else ""))
        else:
            err.print(line + ("" if res.judge.startswith("skipped") else ": the plain order is shown"))
    out.print("confident match" if res.confident else "no confident match: this may be a gap in the library")


@app.command()
def validate(paths: list[Path] = typer.Argument(..., help="SKILL.md files or folders"),
             json_out: bool = typer.Option(False, "--json")) -> None:
    """Check SKILL.md files against the Agent Skills spec; exit 1 on errors."""
    from .library import Library

    results = Library.validate_paths(paths)
    # a folder with no SKILL.md under it is a mistake (a CI job pointed at the wrong folder
    # must not pass with "0 of 0")
    empty = [p for p in paths if p.is_dir() and not any(Path(f).is_relative_to(p) for f, _ in results)]
    bad = 0
    if json_out:
        _json([{"path": p, "valid": not any(f.severity in ("fatal", "error") for f in fs),
                "findings": [f.as_dict() for f in fs]} for p, fs in results])
    for p, fs in results:
        errors = [f for f in fs if f.severity in ("fatal", "error")]
        bad += bool(errors)
        if json_out:
            continue
        out.print(f"{'FAIL' if errors else 'ok  '} {p}")
        for f in fs:
            where = f":{f.line}" if f.line else ""
            out.print(f"  {f.severity:7} {f.rule}{where}: {f.message}")
    if not json_out and results:
        out.print(f"{len(results) - bad} valid, {bad} invalid of {len(results)} files")
    for p in empty:
        err.print(f"error: no SKILL.md found under {p} — pass a skill's folder, a folder of skill folders or a "
                  "SKILL.md file")
    if bad or empty:
        raise typer.Exit(1)


CLASH_EXAMPLES = 5
INVALID_EXAMPLES = 20


@app.command()
def doctor(json_out: bool = typer.Option(False, "--json"),
           verbose: bool = typer.Option(False, "--verbose", "-v",
                                        help="list every name clash and invalid file")) -> None:
    """Check configuration, roots, index, invalid files, name clashes and the embedder."""
    lib = _lib(warn_missing=False)   # doctor reports a missing root as a failed check
    rep = lib.doctor()
    if json_out:
        _json(rep.as_dict())
        if not rep.ok:
            raise typer.Exit(1)
        return
    marks = {"ok": ("ok  ", "green"), "warn": ("warn", "yellow"), "fail": ("FAIL", "red")}
    for c in rep.checks:
        out.print(_styled(marks[c.status], f" {c.name}: {c.detail}"))
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


@app.command()
def rebuild(yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Index the files into a new database; the old file is moved aside (for a damaged one)."""
    from .library import Library

    cfg = _config()
    if not yes and not typer.confirm(f"Move {cfg.db_path} aside and re-index the skill files? Usage history stays "
                                     "in the moved file."):
        err.print("nothing changed")
        raise typer.Exit(1)
    lib, moved = Library.rebuild(config=cfg)
    if moved is not None:
        out.print(f"moved the old database to {moved}")
    out.print(f"indexed {lib.count()} skills into {cfg.db_path}")


@app.command()
def config(json_out: bool = typer.Option(False, "--json")) -> None:
    """Print every setting: its value, where it came from (default, file, environment, flag)
    and the reason for its default."""
    from .config import describe

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


@app.command()
def version() -> None:
    """Print the version."""
    out.print(_version_line())


@app.command()
def demo(query: str = typer.Argument("my fetch to the Next.js API fails with a CORS error"),
         corpus: Optional[Path] = typer.Option(None, help="also index this folder of skills")) -> None:
    """The whole loop an agent runs, on the sample skills: a search, a read by section, a
    report, a draft saved and approved, stats; each step as the agent sees it (the MCP tool,
    its arguments, its result). In a temporary library unless --home names one."""
    from .cli_onboarding import run_demo

    run_demo(query, corpus)


# --- usage ----------------------------------------------------------------------------

@app.command("report-outcome")
def report_outcome(ctx: typer.Context, skill: str = typer.Argument(..., help="skill name or id"),
                   worked: bool = typer.Option(False, "--worked", help="the skill worked"),
                   failed: bool = typer.Option(False, "--failed", help="the skill did not work"),
                   note: str = typer.Option("", help="what happened"),
                   query_id: Optional[int] = typer.Option(None, help="the query_id a search printed with --json"))\
        -> None:
    """Record whether a skill worked (append-only): --worked or --failed."""
    if worked and failed:   # recording either would be a guess
        raise _usage_error(ctx, "--worked and --failed contradict each other: pass one of them")
    if not worked and not failed:
        raise _usage_error(ctx, "say how it went: pass --worked or --failed")
    res = _lib().report_outcome(skill, worked, note=note, query_id=query_id, client="cli")
    out.print(f"recorded: {res['skill']} {'worked' if worked else 'failed'} ({res['reports']} reports)")


def _usage_error(ctx: typer.Context, message: str) -> Exception:
    """A usage error (exit 2) of the click copy typer runs on, for arguments that parse one by
    one but not together."""
    kind = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    return kind(message, ctx=ctx)


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _date(value: Optional[str]) -> Optional[str]:
    """An option that takes a calendar date: refused at parse time unless YYYY-MM-DD and real."""
    import datetime as dt

    if value is None:
        return None
    try:
        if not _DATE.fullmatch(value.strip()):
            raise ValueError(value)
        dt.date.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date: use YYYY-MM-DD, e.g. 2026-01-31") from None
    return value.strip()


@app.command()
def stats(since: Optional[str] = typer.Option(None, callback=_date, metavar="YYYY-MM-DD",
                                             help="only usage from this day on"),
          json_out: bool = typer.Option(False, "--json")) -> None:
    """Curation statistics: most used, low success, never surfaced, gaps."""
    lib = _lib()
    st = lib.stats(since=since)
    js = lib.judge_stats(since=since)
    if json_out:
        _json(st.as_dict() | {"judge": js})
        return
    out.print(f"{st.queries} queries ({st.finds} finds), {st.reports} reports, report rate {st.report_rate:.0%}, "
              f"confident {st.confident_rate:.0%}")
    out.print(_judge_line(js))
    t = _table("most used", "reports", "success", "times shown", "last used", title="most used (by reported uses)")
    for u in st.most_used[:15]:
        t.add_row(u.name, str(u.reports), "-" if u.success_rate is None else f"{u.success_rate:.0%}",
                  str(u.times_shown), u.last_used or "-")
    out.print(t)
    t = _table("skill", "worked", "reports", "rate", title="low success (rewrite candidates)")
    for u in st.low_success[:15]:
        t.add_row(u.name, str(u.worked), str(u.reports), f"{(u.success_rate or 0):.0%}")
    out.print(t)
    t = _table("request", "times", "last seen", title="gaps (no confident match)")
    for g in st.gaps[:15]:
        t.add_row(g.query, str(g.count), g.last_seen[:10])
    out.print(t)
    out.print(f"never surfaced (kill candidates): {len(st.never_surfaced)} skills"
              + (": " + ", ".join(x['name'] for x in st.never_surfaced[:10]) if st.never_surfaced else ""))


def _judge_line(js: dict) -> str:
    """The judge's line in ``stats``: how many searches it judged and how that went."""
    if not js["judged"]:
        return "judge: " + ("configured (" + js["backend"] + "), no judged searches yet" if js["configured"]
                            else "off (no judge.backend configured)")
    models = ", ".join(f"{m} ×{n}" for m, n in js["models"].items())
    line = (f"judge: {js['judged']} judged searches ({models}): {js['ok']} answered, {js['timeouts']} timed out, "
            f"{js['errors']} failed")
    if js["p50_ms"] is not None:
        line += f"; latency p50 {js['p50_ms'] / 1000:.1f}s, p95 {js['p95_ms'] / 1000:.1f}s"
    if js["invented_dropped"]:
        line += f"; {js['invented_dropped']} invented names dropped"
    if js["likely"] or js["weak"]:
        line += f"; soft filter: {js['likely']} likely, {js['weak']} weak"
    return line


@app.command()
def report(since: Optional[str] = typer.Option(None, callback=_date, metavar="YYYY-MM-DD",
                                              help="only usage from this day on"),
           fmt: str = typer.Option("md", "--format", help="md | json")) -> None:
    """A usage report: what worked, the rewrite list, the kill list, the gaps."""
    text = _lib().usage_report(since=since, fmt=fmt)
    _write_json_text(text) if fmt == "json" else _write(text)


@app.command("prune-usage")
def prune_usage(before: str = typer.Option(..., callback=_date, metavar="YYYY-MM-DD",
                                           help="delete usage rows older than this day"),
                yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Delete old usage rows (the only way usage rows are ever deleted)."""
    if not yes and not typer.confirm(f"Delete all usage rows before {_clean(before)}?"):
        err.print("nothing deleted")
        raise typer.Exit(1)
    n = _lib().prune_usage(before)
    out.print(f"deleted {n} rows")


# --- server -------------------------------------------------------------------------

@app.command()
def serve(
    http: bool = typer.Option(False, "--http", help="Streamable HTTP instead of stdio"),
    host: str = typer.Option("127.0.0.1", help="HTTP bind address (non-loopback needs SKILLSHELF_HTTP_TOKEN)"),
    port: int = typer.Option(8765, help="HTTP port"),
    write_policy: Optional[str] = typer.Option(None, "--write-policy", help="read-only | propose | open"),
) -> None:
    """Run the MCP server (stdio by default; logs go to stderr)."""
    import argparse

    from .entry import _serve

    _serve(argparse.Namespace(home=state.home, root=[str(r) for r in state.roots], client_roots=state.client_roots,
                              http=http, host=host, port=port, write_policy=write_policy))


# --- roots ----------------------------------------------------------------------------

roots_app = typer.Typer(help="Read-only skill roots saved in config.toml (used by every command and the server).",
                        no_args_is_help=True)
app.add_typer(roots_app, name="roots")


@roots_app.command("add")
def roots_add(path: Path = typer.Argument(..., metavar="PATH", help="a folder of skill folders")) -> None:
    """Save a root; run `skillshelf sync` to index it."""
    roots = _lib().add_root(path)
    out.print("roots: " + ", ".join(roots))


@roots_app.command("remove")
def roots_remove(path: str = typer.Argument(..., metavar="PATH", help="the saved path (or its label)")) -> None:
    """Forget a root (its skills leave the index at the next sync; files are untouched)."""
    roots = _lib(warn_missing=False).remove_root(path)
    out.print("roots: " + (", ".join(roots) or "none"))


@roots_app.command("list")
def roots_list(json_out: bool = typer.Option(False, "--json")) -> None:
    """The saved roots."""
    lib = _lib(warn_missing=False)
    roots = lib.configured_roots()
    if json_out:
        _json(roots)
        return
    if not roots:
        out.print("no roots saved; add one with `skillshelf roots add PATH`")
    missing = {str(m.path): m for m in lib.missing_roots}
    for r in roots:
        m = missing.get(str(Path(r).expanduser()))
        out.print(f"{r}  ({m.problem}: {m.fix})" if m else r)


# --- evolution ------------------------------------------------------------------------

@app.command()
def history(name: str, json_out: bool = typer.Option(False, "--json")) -> None:
    """Versions and changelog of a skill."""
    h = _lib().history(name)
    if json_out:
        _json(h)
        return
    out.print(f"{h['name']} — current v{h['current_version']}; versions kept: "
              f"{', '.join('v' + str(v) for v in h['versions']) or 'none'}")
    if h["lineage"]:
        out.print("lineage: " + " → ".join(h["lineage"] + [h["name"]]))
    for e in h["changelog"]:
        frm = f"v{e['from_version']}" if e["from_version"] else "new"
        out.print(f"  {e['at']}  {e['action']:8} {frm} → v{e['to_version']}  [{e['trigger']}] {e['reason']}")


class _CountArguments(TyperCommand):
    """A command whose number arguments count something (days, versions): "-5" there is a
    wrong number, not an unknown option ("No such option: -5")."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for a in args:
            if a == "--":
                break
            if _NEGATIVE.fullmatch(a):
                raise _usage_error(ctx, f"{a} is negative: {ctx.command.what} must be positive")
        return super().parse_args(ctx, args)


_NEGATIVE = re.compile(r"-\d[\d_]*(\.\d*)?")


def _counts(what: str) -> type:
    return type("CountArguments", (_CountArguments,), {"what": what})


def _positive(what: str):
    def check(value: int) -> int:
        if value is not None and value < 1:
            raise typer.BadParameter(f"{value}: {what} must be positive")
        return value
    return check


@app.command(cls=_counts("version numbers"))
def diff(name: str = typer.Argument(..., help="skill name or id"),
         v1: int = typer.Argument(..., callback=_positive("version numbers"), metavar="V1"),
         v2: int = typer.Argument(..., callback=_positive("version numbers"), metavar="V2")) -> None:
    """Unified diff between two versions of a skill."""
    _write(_lib().diff(name, v1, v2) or "(no differences)\n")


@app.command(cls=_counts("the version number"))
def rollback(name: str = typer.Argument(..., help="skill name or id"),
             version: int = typer.Argument(..., callback=_positive("the version number"), metavar="VERSION"))\
        -> None:
    """Make the text of VERSION current again (as a new version)."""
    out.print(_lib().rollback(name, version).message)


@app.command("extend-ttl", cls=_counts("the number of days"))
def extend_ttl(name: str = typer.Argument(..., help="skill name or id"),
               days: int = typer.Argument(..., callback=_positive("the number of days"), metavar="DAYS")) -> None:
    """Push a skill's expiry date DAYS further."""
    res = _lib().extend_ttl(name, days)
    out.print(res["message"])


@app.command()
def deprecate(name: str, reason: str = typer.Option(..., help="why it should no longer be used")) -> None:
    """Mark a skill inactive (kept on disk, hidden from search)."""
    res = _lib().deprecate(name, reason)
    out.print(res["message"])


@app.command()
def delete(name: str, yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Delete a workspace skill: its folder, its history and its index rows."""
    lib = _lib()
    rec = lib.get(name)
    if not yes and not typer.confirm(_clean(f"Delete {rec.name} ({rec.path}) and its history?")):
        err.print("nothing deleted")
        raise typer.Exit(1)
    res = lib.delete(rec.id)
    out.print(f"deleted {res['name']}")


review_app = typer.Typer(help="The review queue: drafts agents proposed under the 'propose' policy.",
                         no_args_is_help=True)
app.add_typer(review_app, name="review")


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
def review_show(name: str) -> None:
    """The draft's SKILL.md as it would be written."""
    d = _lib().review.show(name)
    out.print(f"draft {d['name']} ({str(d['args'].get('action', '')).upper()}, proposed {d['proposed_at']})\n")
    out.print(d["text"])


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


@app.command()
def dashboard(host: str = typer.Option("127.0.0.1", help="bind address (non-loopback needs SKILLSHELF_HTTP_TOKEN)"),
              port: int = typer.Option(7788, help="port"),
              open_browser: bool = typer.Option(False, "--open", help="open the dashboard in a browser")) -> None:
    """The web dashboard: browse, search, review and curate the library."""
    from . import web   # the web stack is imported only here, and only if installed

    web.require()
    web.serve(_lib(), host=host, port=port, open_browser=open_browser)


# --- learning from outcomes ---------------------------------------------------------------

usage_app = typer.Typer(help="What ranking learned from outcome reports.", no_args_is_help=True)
app.add_typer(usage_app, name="usage")


@usage_app.command("forget")
def usage_forget(skill: Optional[str] = typer.Argument(None, help="forget what was learned about this skill"),
                 client: Optional[str] = typer.Option(None, help="only what this client reported"),
                 before: Optional[str] = typer.Option(None, callback=_date, metavar="YYYY-MM-DD",
                                                      help="only reports before this day"),
                 everything: bool = typer.Option(False, "--all", help="forget everything learned")) -> None:
    """Undo learning from outcomes (the usage log itself is kept: `prune-usage` deletes that)."""
    n = _lib().forget_learning(skill=skill, client=client, before=before, everything=everything)
    out.print(f"forgot {n} learned report{'s' * (n != 1)}")


def main(argv: list[str] | None = None) -> None:
    """The console script's entry: run the command and exit with its code (0 ok, 1 error,
    2 usage error). ``standalone_mode=False`` lets this function print domain errors as one
    line; click then *returns* the code of a ``typer.Exit`` instead of exiting, so it is
    passed on here (ignoring it made every failure exit 0)."""
    sys.exit(run(argv))


def run(argv: list[str] | None = None) -> int:
    """Run one command line and return its exit code (errors are printed, never raised)."""
    # bytes in an argument that are not UTF-8 arrive as lone surrogates, which nothing can
    # store or print: they become U+FFFD, so a request with a stray byte is still a request
    argv = [a.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            for a in (sys.argv[1:] if argv is None else argv)]
    try:
        rv = app(args=argv, prog_name="skillshelf", standalone_mode=False)
    except SkillshelfError as exc:
        err.print(f"error: {_cli_words(_with_fix(exc))}")
        return 1
    except sqlite3.DatabaseError as exc:   # a damaged index read through a path the store did not wrap,
        refused = _cannot_write(exc)         # a full disk, a read-only file system
        if refused is None:
            raise
        err.print(f"error: {refused}")
        return 1
    except OSError as exc:         # a file write refused by the disk, or a file that cannot be read
        where = f" ({_clean(str(exc.filename))})" if exc.filename else ""
        refused = _cannot_write(exc)
        err.print(f"error: {refused}" if refused is not None else
                  f"error: {exc.strerror or exc}{where} — check that file or folder, then try again")
        return 1
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        err.print("aborted")
        return 1
    except _usage_errors() as exc:   # unknown option, missing argument, bad value
        if type(exc).__name__ == "NoArgsIsHelpError":   # `skillshelf` alone: the help
            exc.show()
        else:
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "skillshelf"
            fix = f"see `{where} --help`"
            if getattr(exc, "option_name", None) in _GLOBAL_OPTIONS and where != "skillshelf":
                fix = f"{exc.option_name} is a global option: put it before the command (skillshelf " \
                      f"{exc.option_name} ... {where.split(' ', 1)[-1]} ...)"
            err.print(f"error: {_clean(exc.format_message())} — {fix}")
        return exc.exit_code
    # a command returns None; click returns the code of a typer.Exit (or Ctrl-C's 130)
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


def _cannot_write(exc: BaseException) -> str | None:
    """The one line for a write the disk or the lock refused; None for other errors."""
    from .library import explain

    try:
        cfg = _config()
        home, db_path = _clean(str(cfg.home)), cfg.db_path
    except Exception:   # noqa: BLE001 -- the message must not fail on a bad config
        home, db_path = "the library folder", None
    refused = explain(exc, db_path=db_path, home=home)
    return None if refused is None else _clean(str(refused))


def _with_fix(exc: SkillshelfError) -> str:
    """The error's line, with the command-line way out: a skill name that matches nothing
    close gets where the names are (the library offers "did you mean" itself when a name is
    close, and a fix in its own words to the other adapters)."""
    from .errors import NotFoundError

    if isinstance(exc, NotFoundError) and not exc.suggestions and exc.message.startswith("no skill named "):
        words = " ".join(re.findall(r"[^\W_]+", exc.message[len("no skill named "):]))[:80].strip()
        return (f"{exc.message} — see `skillshelf list` for the names, or search by what it does: "
                f"`skillshelf search \"{words or 'WHAT IT DOES'}\"`")
    return str(exc)


_GLOBAL_OPTIONS = ("--home", "--root", "--client-roots", "--no-client-roots")

# The library names its parameters as the Python and MCP APIs spell them; the command line
# spells them as options. Quoted values are left alone.
_OPTION_NAMES = {"skill_type": "--type", "current_repo": "--current-repo", "repo_scope": "--repo-scope",
                 "query_id": "--query-id", "include_inactive": "--include-inactive",
                 "include_expired": "--include-expired", "name_contains": "--name", "write_policy": "--write-policy"}
_OPTION_RE = re.compile(r"'[^']*'|\b(" + "|".join(_OPTION_NAMES) + r")\b")


def _cli_words(message: str) -> str:
    """A library message with API parameter names as CLI options, made safe to print."""
    return _clean(_OPTION_RE.sub(lambda m: _OPTION_NAMES[m.group(1)] if m.group(1) else m.group(0), message))


def _usage_errors() -> tuple[type[BaseException], ...]:
    """Click's usage error classes: typer >= 0.2x carries its own copy of click (its errors
    derive from ``typer.exceptions.TyperException``); older typer uses click itself."""
    kinds: list[type[BaseException]] = []
    try:
        from typer.exceptions import TyperException

        kinds.append(TyperException)
    except ImportError:
        pass
    try:
        import click

        kinds.append(click.ClickException)
    except ImportError:
        pass
    return tuple(kinds)


from . import cli_onboarding  # noqa: E402,F401  (registers install, uninstall, export, import, pick)

if __name__ == "__main__":
    main()
