"""``sources``: collections fetched from git or archives (``add``, ``list``, ``update``, ``remove``,
``restore``), ``add`` as a command of its own, and ``lock --check``."""

from __future__ import annotations

import contextlib
import datetime as _dt
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import ValidationError
from .common import _clean, _cli_words, _json, _lib, _usage_error, err, out

commands = typer.Typer()
sources_app = typer.Typer(help="Collections fetched from git or archives, locked in skillshelf.lock.",
                          no_args_is_help=True)

_SOURCE_HELP = ("a git URL (https://, ssh://, git@host:owner/repo, file://), GitHub shorthand "
                "owner/repo[/subdir][@ref], a folder, or a .zip / .tar.gz file or URL")


def _ask(question: str, yes: bool, refused: str) -> None:
    """Ask; without a terminal a question cannot be answered: say --yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        err.print(f"error: {refused}: there is no terminal to ask on ({_clean(question)}) — pass --yes to do it")
        raise typer.Exit(1)
    if not typer.confirm(_clean(question)):
        err.print(refused)
        raise typer.Exit(1)


@contextlib.contextmanager
def _indexing(lib: Any, quiet: bool, moved: Any = None) -> Iterator[dict | None]:
    """The sync's progress on stderr while a source is indexed; Ctrl-C during it keeps the source (in
    place and locked) and says how to finish the index. ``moved``: asked after a Ctrl-C elsewhere
    (fetching, putting files in place), whether the lock moved (None: what was done is not known)."""
    from . import common

    try:
        if quiet:
            yield None
            return
        with common._shown(lib) as (on_files, on_texts):
            yield {"progress": on_files, "embed_progress": on_texts}
    except KeyboardInterrupt as exc:
        done = moved() if moved is not None else True if isinstance(exc, lib.Interrupted) else None
        common.err.print("stopped while indexing: the source is in place and locked; run `skillshelf sync` to "
                         "finish the index" if done else "stopped: nothing was changed" if done is False else
                         "stopped: `skillshelf sources list` shows what is in place, `skillshelf doctor` what is "
                         "left to index")
        raise typer.Exit(130) from None


def _moved(lib: Any, plan: Any, quiet: bool) -> Any:
    """Asked after a Ctrl-C while ``plan`` is applied: whether the lock moved; if it did, where a
    person's files went is said too (the update's report is not reached)."""
    def moved() -> bool:
        if lib.sources.entry(plan.label).commit != plan.new.commit:
            return False
        for line in [] if quiet else (_kept_lines(plan.label, [k.as_dict() for k in plan.kept], True)
                                      + _unlisted_lines(plan.label, plan.unlisted)):
            out.print(line)
        return True
    return moved


def _unreadable_lines(bad: list[str], folder: str, indent: str = "") -> list[str]:
    """The skills that could not be read, each named with its error and what to do."""
    if not bad:
        return []
    lines = [f"{indent}{len(bad)} skill{'s' * (len(bad) != 1)} could not be read (left out of the library):"]
    lines += [f"{indent}  {_clean(b)}" for b in bad[:10]]
    first = bad[0].split(": ", 1)[0]
    lines.append(f"{indent}  fix {'it' if len(bad) == 1 else 'them'} upstream, or see "
                 f"`skillshelf validate {_clean(str(Path(folder) / first))}`")
    return lines


def _when(iso: str | None) -> str:
    """When a look at upstream was taken, in local time (the date too when not today)."""
    try:
        at = _dt.datetime.fromisoformat(str(iso)).astimezone()
    except ValueError:
        return "an earlier look"
    return at.strftime("%H:%M" if at.date() == _dt.datetime.now().astimezone().date() else "%Y-%m-%d %H:%M")


def _findings_line(findings: list[dict[str, Any]]) -> str:
    by = {s: sum(1 for f in findings if f.get("severity") == s) for s in ("high", "medium")}
    return ", ".join(f"{n} {s}" for s, n in by.items() if n) or "nothing medium or high"


def _add(ctx: typer.Context, source: str, name: Optional[str], ref: Optional[str], path: Optional[str], pin: bool,
         json_out: bool, submodules: bool = False) -> None:
    lib = _lib()
    try:       # a malformed SOURCE, --name, --ref or --path is a usage error (exit 2)
        lib.sources.spec(source, label=name, ref=ref or "", path=path or "")
    except ValidationError as exc:
        raise _usage_error(ctx, _cli_words(str(exc))) from None
    with _indexing(lib, json_out) as progress:
        res = lib.sources.add(source, label=name, ref=ref or "", path=path or "", pin=pin, submodules=submodules,
                              progress=progress)
    if json_out:
        _json(res)
        return
    at = res["commit"][:12] if res["kind"] == "git" else "sha256 " + res["commit"][:12]
    bad = f" ({len(res['unreadable'])} cannot be read)" if res["unreadable"] else ""
    out.print(f"added {res['label']}: {res['skills']} skill{'s' * (res['skills'] != 1)}{bad} from {_clean(res['url'])}"
              + (f" ({_clean(res['path'])})" if res["path"] else "") + f" at {at}"
              + (" — pinned: a skill that changes is held until `skillshelf trust NAME`" if res["pinned"] else ""))
    shown = ", ".join(_clean(n) for n in res["names"][:12])
    out.print(f"skills: {shown}" + (f" … and {len(res['names']) - 12} more (`skillshelf list --root {res['root']}`)"
                                    if len(res["names"]) > 12 else ""))
    for line in _unreadable_lines(res["unreadable"], str(lib.sources.folder(res["label"]))):
        out.print(line)
    out.print(f"audit: {_findings_line(res['findings'])}"
              + (f" — see `skillshelf audit --root {res['root']}`" if res["findings"] else ""))
    for note in res["notes"][:10]:
        out.print(f"note: {_clean(note)}")
    out.print(f"locked in the team store (every server fetches it; exported to {lib.sources.lock_path})"
              if lib.sources.team else f"locked in {lib.sources.lock_path}")


@sources_app.command("add")
def sources_add(ctx: typer.Context, source: str = typer.Argument(..., metavar="SOURCE", help=_SOURCE_HELP),
                name: Optional[str] = typer.Option(None, "--name", metavar="LABEL",
                                                   help="the source's label (default: from the repository's name)"),
                ref: Optional[str] = typer.Option(None, "--ref", metavar="REF",
                                                  help="a branch, tag or commit (default: the default branch)"),
                path: Optional[str] = typer.Option(None, "--path", metavar="SUBDIR",
                                                   help="the folder inside the source that holds the skills"),
                pin: bool = typer.Option(False, "--pin", help="pin it: a skill that changes upstream is held from "
                                                              "agents until `skillshelf trust NAME`"),
                submodules: bool = typer.Option(False, "--submodules", help="also fetch the repository's submodules "
                                                                            "(left out by default)"),
                json_out: bool = typer.Option(False, "--json")) -> None:
    """Fetch a collection into the home at an exact commit, lock it, index and audit it."""
    _add(ctx, source, name, ref, path, pin, json_out, submodules)


@commands.command("add")
def add(ctx: typer.Context, source: str = typer.Argument(..., metavar="SOURCE", help=_SOURCE_HELP),
        name: Optional[str] = typer.Option(None, "--name", metavar="LABEL", help="the source's label"),
        ref: Optional[str] = typer.Option(None, "--ref", metavar="REF", help="a branch, tag or commit"),
        path: Optional[str] = typer.Option(None, "--path", metavar="SUBDIR", help="the folder that holds the skills"),
        pin: bool = typer.Option(False, "--pin", help="hold skills that change upstream until trusted"),
        submodules: bool = typer.Option(False, "--submodules", help="also fetch the repository's submodules"),
        json_out: bool = typer.Option(False, "--json")) -> None:
    """Add a collection from git or an archive (`skillshelf sources add`)."""
    _add(ctx, source, name, ref, path, pin, json_out, submodules)


@sources_app.command("list")
def sources_list(json_out: bool = typer.Option(False, "--json")) -> None:
    """Each source: label, where from, ref asked, commit locked, skills, pinned, behind upstream, last update."""
    lib = _lib()
    rows = lib.sources.list()
    if json_out:
        _json(rows)
        return
    if not rows:
        out.print("no sources; add one with `skillshelf sources add SOURCE`")
        return
    for r in rows:
        behind = "" if r["behind"] is None else (f"   {r['behind']} commit{'s' * (r['behind'] != 1)} behind upstream "
                                                 f"(as of {_when(r['checked'])}; `skillshelf sources update "
                                                 f"--dry-run` looks again)")
        out.print(f"{r['label']}  {_clean(r['url'])}" + (f"  ({_clean(r['path'])})" if r["path"] else ""))
        held = f"   {r['held']} held" if r["held"] else ""
        ref = r["ref"] or ("(default branch)" if r["kind"] == "git" else "-")
        bad = f" ({len(r['unreadable'])} cannot be read)" if r["unreadable"] else ""
        out.print(f"    ref {ref}   {r['kind']} {r['commit'][:12]}   {r['skills']} skills{bad}"
                  f"{'   pinned' if r['pinned'] else ''}{held}{behind}   updated {r['updated'] or '-'}")
        for line in _unreadable_lines(r["unreadable"], str(lib.sources.folder(r["label"])), "    "):
            out.print(line)


def _kept_lines(label: str, kept: list[dict[str, Any]], done: bool) -> list[str]:
    """What becomes (or became) of a person's edits in the source's folder, skill by skill."""
    lines = []
    for k in kept:
        where = f"sources/{label}" + ("" if k["skill"] == "." else f"/{_clean(k['skill'])}")
        files = ", ".join(f"{_clean(f)} {p}" for f, p in sorted(k["files"].items())[:5])
        if k["action"] == "copy":
            what = (f"is now the workspace copy {_clean(k['name'])}" if done else
                    f"becomes the workspace copy {_clean(k['name'])}")
            what += " (the locked upstream text is kept as its base: updates merge into it)"
        elif k["action"] == "aside":
            what = (f"copied to {_clean(k['kept'])}" if done and k["kept"] else
                    f"is copied to sources/.kept/{label}/ before the folder is put back")
        else:
            what = "upstream's file is put back (a removed file is not kept)"
        lines.append(f"  your edit of {where} ({files}): {what}" + (f" — {_clean(k['note'])}" if k["note"] else ""))
    return lines


def _unlisted_lines(label: str, unlisted: list[dict[str, Any]], done: bool = True) -> list[str]:
    """A person's files the update did not make workspace copies of (ones the lock does not list: hidden,
    dependency folders, over the size bound; ones written while it ran): where each went (``done``),
    or where each goes when the update is applied."""
    lines = []
    for u in unlisted[:20]:
        if done:
            what = f"copied to {_clean(u['kept'])}" if u["kept"] else "carried into the new files"
        else:
            what = f"will be copied under {_clean(u['kept'])}" if u["kept"] else "will be carried into the new files"
        lines.append(f"  your file sources/{label}/{_clean(u['file'])} ({u['why']}, {u['problem']}): {what}")
    if len(unlisted) > 20:
        lines.append(f"  … and {len(unlisted) - 20} more of your files (see --json)")
    return lines


def _print_plan(p: dict[str, Any], folder: str) -> None:
    frm, to = p["from"][:12], p["to"][:12]
    head = f"{p['label']}: {frm} → {to}" if frm != to else f"{p['label']}: at {to}"
    drift = (f"; {len(p['drift'])} file(s) on disk differ from the lock (e.g. {_clean(p['drift'][0]['file'])}): "
             "your edits are kept, then the source's files are put back") if p["drift"] else ""
    if not p["changes"]:
        out.print(head + (drift or " — up to date"))
        for line in _kept_lines(p["label"], p.get("kept") or [], False) + _unlisted_lines(p["label"], p["unlisted"],
                                                                                          False):
            out.print(line)
        for note in p["notes"][:10]:
            out.print(f"  note: {_clean(note)}")
        return
    out.print(head + drift)
    for line in _kept_lines(p["label"], p.get("kept") or [], False) + _unlisted_lines(p["label"], p["unlisted"], False):
        out.print(line)
    for c in p["changes"]:
        line = f"  {c['change']:8} {_clean(c['path'])}"
        if c.get("moved_from"):
            line += f"  (from {_clean(c['moved_from'])})"
        if c["change"] in ("changed", "moved") and c["files"]:
            line += f"  ({', '.join(_clean(f) for f in c['files'][:5])}{' …' if len(c['files']) > 5 else ''})"
        if c["findings"]:
            line += f"  audit: {_findings_line(c['findings'])}"
        out.print(line)
        for f in c["findings"][:3]:
            out.print(f"      {f.get('severity')}  {f.get('rule')}  {_clean(f.get('file'))}:{f.get('line') or '-'}  "
                      f"{_clean(f.get('message'))}")
        if c["edit"]:
            what = {"merged": f"your copy {c['copy']}: upstream's change merged into it",
                    "conflict": f"your copy {c['copy']}: CONFLICT — it is left as it is and goes to the review queue",
                    "review": f"your copy {c['copy']}: the merge goes to the review queue (pinned source)",
                    "kept": f"your copy {c['copy']}: kept",
                    "failed": f"your copy {c['copy']}: left as it is — the merge could not be saved"}[c["edit"]]
            out.print(f"      {what}" + (f" ({_clean(c['note'])})" if c["note"] else ""))
        for fe in c.get("file_edits") or []:
            what = {"merged": "upstream's change merged into it", "kept": "kept",
                    "conflict": "CONFLICT — your file is left as it is", "pinned": "left as it is (pinned source)",
                    "failed": "left as it is — the merge could not be written"}[fe["edit"]]
            out.print(f"      your copy {c['copy']}: {_clean(fe['file'])}: {what}"
                      + (f" ({_clean(fe['note'])})" if fe["note"] else ""))
    for note in p["notes"][:10]:
        out.print(f"  note: {_clean(note)}")
    for line in _unreadable_lines(p.get("unreadable") or [], folder, "  "):
        out.print(line)


def _held_line(d: dict) -> str:
    """The skills this update held (those it added or changed), and the source's others held from before."""
    touched = {c["path"] for c in d["changes"] if c["change"] != "removed" and not c.get("untaken")}
    now = [h for h in d["held"] if h.split(":", 1)[-1] in touched]
    before = len(d["held"]) - len(now)
    return ((f"; {len(now)} skill(s) it changed held until `skillshelf trust NAME`" if now else "")
            + (f"; {before} other skill(s) of it still held from before" if before else ""))


@sources_app.command("update")
def sources_update(labels: Optional[list[str]] = typer.Argument(None, metavar="[LABEL]...",
                                                                help="the sources to update (default: all)"),
                   dry_run: bool = typer.Option(False, "--dry-run", help="say what would change; change nothing"),
                   yes: bool = typer.Option(False, "--yes", help="apply without asking"),
                   to: Optional[str] = typer.Option(None, "--to", metavar="REF",
                                                    help="move to this ref or commit (also how an update is undone)"),
                   json_out: bool = typer.Option(False, "--json")) -> None:
    """Fetch; per skill say added / removed / changed with the audit of the new text; apply and move
    the lock. Your edits of a source's skills are merged; a conflict goes to the review queue."""
    lib = _lib()
    results = []
    failed = 0
    try:
        with lib.sources.planning(labels or (), to=to) as plans:
            for plan in plans:
                d = plan.as_dict()
                if plan.error:            # this source could not be fetched: the others are still updated
                    failed += 1
                    err.print(f"error: {plan.label}: {_clean(plan.error)}")
                    results.append(d)
                    continue
                if not json_out:
                    _print_plan(d, str(lib.sources.folder(plan.label)))
                if dry_run or not plan.moved:
                    results.append(d)
                    continue
                if not json_out:
                    _ask(f"apply the update of {plan.label}?", yes, f"{plan.label} not updated")
                elif not yes:
                    err.print("error: --json applies only with --yes (or --dry-run)")
                    raise typer.Exit(2)
                with _indexing(lib, json_out, _moved(lib, plan, json_out)) as progress:
                    d = lib.sources.apply(plan, progress=progress).as_dict()
                results.append(d)
                if not json_out and d["from"] == d["to"] and not d["changes"]:      # the same commit: nothing moved
                    out.print(f"{plan.label}: up to date at {d['to'][:12]}"
                              + ("; the source's files on disk are put back as locked" if d["drift"] else ""))
                    for line in _kept_lines(plan.label, d["kept"], True) + _unlisted_lines(plan.label, d["unlisted"]):
                        out.print(line)
                elif not json_out:
                    out.print((f"{plan.label}: at {d['to'][:12]} (the lock stays)" if d["from"] == d["to"]
                               else f"{plan.label}: updated to {d['to'][:12]}; "
                               + ("the team's lock moved: every server fetches it" if lib.sources.team else
                                  "lock moved"))
                              + _held_line(d))
                    for line in _kept_lines(plan.label, d["kept"], True) + _unlisted_lines(plan.label, d["unlisted"]):
                        out.print(line)
                    for c in d["changes"]:
                        if c["edit"] == "conflict":
                            out.print(f"  conflict: {c['copy']} kept as you left it; the merge of upstream "
                                      f"{d['to'][:7]} waits in the review queue ({_clean(c['note'])})")
                        elif c["edit"] in ("review", "failed"):
                            out.print(f"  {c['copy']}: {_clean(c['note'])}")
                        for fe in c["file_edits"]:
                            if fe["edit"] in ("conflict", "failed"):
                                out.print(f"  conflict: {c['copy']}/{_clean(fe['file'])} kept as you left it "
                                          f"({_clean(fe['note'])})")
    except KeyboardInterrupt:       # (fetching, or at a plan: one being applied says what it did itself)
        done = [r['label'] for r in results if r.get('applied')]
        err.print("stopped: " + (f"{', '.join(done)} updated, the others not" if done else "nothing was changed"))
        raise typer.Exit(130) from None
    if json_out:
        _json(results)
    elif dry_run and len(results) > failed:
        out.print("dry run: nothing was changed (apply with `skillshelf sources update"
                  + "".join(f" {shlex.quote(lb)}" for lb in labels or ()) + (f" --to {shlex.quote(to)}" if to else "")
                  + " --yes`)")
    if failed:
        raise typer.Exit(1)


@sources_app.command("remove")
def sources_remove(label: str = typer.Argument(..., metavar="LABEL"),
                   yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Forget a source: its folder, its root and its lock entry (your workspace copies stay; your edits
    and files in its folder are copied to sources/.kept/ first)."""
    lib = _lib()
    e = lib.sources.entry(label)
    _ask(f"remove {label} ({len(e.skills)} skills from {e.summary()['url']}; your edits in its folder, if any, are "
         f"copied to sources/.kept/{label}/ first)?", yes, f"{label} not removed")
    res = lib.sources.remove(label)
    out.print(f"removed {label}" + (f"; {res['kept_files']} file(s) of yours from its folder kept in {res['kept']}"
                                    if res["kept"] else ""))


def _hold_lines(s: dict[str, Any]) -> list[str]:
    """What a restore kept of this home's pin and holds (a restore never releases a hold)."""
    out = []
    if s.get("kept_pin"):
        out.append(f"  {s['label']}: kept pinned here (the lock says it is not pinned; `skillshelf unpin "
                   f"{s['label']}` unpins it)")
    held = s.get("held") or []
    if held:
        out.append(f"  {s['label']}: held from agents: {', '.join(held)} (`skillshelf trust NAME` shows what "
                   "changed and allows it)")
    return out


@sources_app.command("restore")
def sources_restore(lockfile: Path = typer.Argument(..., metavar="LOCKFILE", help="a skillshelf.lock"),
                    json_out: bool = typer.Option(False, "--json")) -> None:
    """Fetch every source of a lock file at its locked commit and verify every file's digest (exit 1
    naming the file on a mismatch; nothing is written then). A source the home has already is
    moved to the locked commit, as `sources update LABEL --to COMMIT` would (your edits kept)."""
    lib = _lib()
    with _indexing(lib, json_out) as progress:
        res = lib.sources.restore(lockfile, progress=progress)
    if json_out:
        _json(res)
        return
    if res.get("set_aside"):
        out.print(f"this home's {lib.sources.lock_path.name} could not be read: kept aside as "
                  f"{_clean(res['set_aside']['lock'])}")
        for f in res["set_aside"]["folders"]:
            out.print(f"  {f['label']}: its folder is kept in {_clean(f['kept'])} (your edits, if any, are there)")
        for f in res["set_aside"].get("gone") or []:
            out.print(f"  {f['label']}: not in {_clean(str(lockfile))}: its folder is kept in {_clean(f['kept'])} and "
                      f"it is no longer a source or root here (`skillshelf sources add URL --name {f['label']}` "
                      "brings it back)")
    for s in res["sources"]:
        out.print(f"restored {s['label']}: {s['skills']} skills at {s['commit'][:12]}")
        for line in _hold_lines(s):
            out.print(line)
    for m in res.get("moved") or []:
        if not m["moved"]:
            out.print(f"{m['label']}: already at {m['commit'][:12]}")
            for line in _hold_lines(m):
                out.print(line)
            continue
        out.print(f"moved {m['label']} from {m['from'][:12]} to {m['commit'][:12]}, as `skillshelf sources update "
                  f"{m['label']} --to {m['commit'][:12]}` would (your edits kept)")
        for line in _kept_lines(m["label"], m["kept"], True) + _unlisted_lines(m["label"], m.get("unlisted") or []):
            out.print(line)
        for name in m["conflicts"]:
            out.print(f"  conflict: {name} kept as you left it; upstream's text waits in the review queue "
                      f"(`skillshelf review show {name}`)")
        for line in _hold_lines(m):
            out.print(line)
    out.print(f"{res['files_verified']} files verified against {_clean(str(lockfile))}")


@commands.command("lock")
def lock(check: bool = typer.Option(False, "--check", help="compare the sources' files with skillshelf.lock"),
         json_out: bool = typer.Option(False, "--json")) -> None:
    """`lock --check`: every file of every source that differs from skillshelf.lock (exit 1 if any)."""
    lib = _lib()
    if not check:
        out.print(str(lib.sources.lock_path))
        return
    drift = [d.as_dict() for d in lib.sources.check()]
    if json_out:
        _json({"ok": not drift, "drifted": drift})
    else:
        for d in drift:
            out.print(f"{d['problem']:8} {d['source']}/{_clean(d['file'])}")
        n = len(lib.sources.entries())
        out.print(f"{len(drift)} file(s) differ from the lock" if drift else
                  f"every file of {n} source{'s' * (n != 1)} matches the lock")
    if drift:
        raise typer.Exit(1)
