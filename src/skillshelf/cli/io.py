"""Moving skills in and out: ``export`` (folders or an archive, with a manifest) and ``import``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import _config, _json, _lib, _usage_error, err, out

commands = typer.Typer()


@commands.command("export")
def export_(
    ctx: typer.Context,
    names: Optional[list[str]] = typer.Argument(None, metavar="[NAMES]...", help="skill names or ids"),
    all_: bool = typer.Option(False, "--all", help="every skill (by name: the one a lookup by name finds)"),
    to: Optional[Path] = typer.Option(None, "--to", metavar="DIR|FILE.zip|FILE.tar.gz",
                                      help="a new (or empty) folder, or an archive file to create"),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="no line per skill: only what was left out and the summary"),
    include_held: bool = typer.Option(False, "--include-held",
                                      help="export skills held back from agents too (marked held in the manifest)"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Export skills (SKILL.md and their other files) with a manifest.json of names, ids,
    versions and the sha256 of every file. Every skill is kept: several of one name, or a name
    no folder can have, each go into a folder of their own named from the id. Exits 1 when a
    skill had to be left out (its files cannot be read): the archive is then incomplete.
    Skills held back from agents (changed since a pin, or blocked by the audit) are left out
    and named, unless --include-held: elsewhere no pin would hold them."""
    if to is None:
        raise _usage_error(ctx, "say where to: --to DIR, --to FILE.zip or --to FILE.tar.gz")
    if names and all_:
        raise _usage_error(ctx, "pass skill names or --all, not both")
    if not names and not all_:
        raise _usage_error(ctx, "name the skills to export, or pass --all")
    rep = _lib().export_skills(names or [], all_skills=all_, to=to, include_held=include_held)
    if json_out:
        _json(rep.as_dict())
        if rep.skipped:
            raise typer.Exit(1)
        return
    if not quiet:
        for s in rep.skills:
            moved = f" → {s['folder']}" if "/" in s["folder"] else ""
            out.print(f"  {s['name']:40} v{s['version']}  {s['files']} file{'s' if s['files'] != 1 else ''}  "
                      f"({s['id']}){moved}" + ("  [held: marked in the manifest]" if s.get("held") else ""))
    for sk in rep.skipped:
        out.print(f"  skipped {sk['id']}: {sk['reason']}" + (f" ({sk['detail']})" if sk.get("detail") else ""))
    for n in rep.notes:
        out.print(f"  note: {n}")
    left_held = [h for h in rep.held if not include_held]
    if left_held:
        shown = ", ".join(h["name"] for h in left_held[:10]) + (" …" if len(left_held) > 10 else "")
        out.print(f"note: {len(left_held)} held skill{'s' * (len(left_held) != 1)} left out ({shown}): held back "
                  f"from agents here, nothing would hold {'them' if len(left_held) != 1 else 'it'} where the export "
                  f"is imported; `skillshelf trust {left_held[0]['name']}` reviews what changed, or pass "
                  "--include-held")
    total = len(rep.skills) + len(rep.skipped) + len(left_held)
    left = ""
    if rep.skipped:
        left = f"; {len(rep.skipped)} left out: " + ", ".join(f"{r} ({c})" for r, c in rep.reasons.items())
    out.print(f"exported {len(rep.skills)} of {total} skill{'s' if total != 1 else ''} ({rep.bytes:,} bytes) "
              f"to {rep.target} ({rep.kind}, with manifest.json){left}")
    if rep.skipped:
        err.print("error: the export is incomplete: the skills above could not be read; run `skillshelf sync` "
                  "and `skillshelf doctor`, then export again")
        raise typer.Exit(1)


@commands.command("import")
def import_(
    ctx: typer.Context,
    source: Path = typer.Argument(..., metavar="PATH|ARCHIVE", help="a folder of skills, a .zip or a .tar.gz"),
    as_root: bool = typer.Option(False, "--as-root", help="register it as a read-only root (an archive is "
                                                          "unpacked under <home>/imports/ first)"),
    copy: bool = typer.Option(False, "--copy", help="copy the skills into the workspace (the default)"),
    replace: bool = typer.Option(False, "--replace", help="a name already taken: make the imported text a new "
                                                          "version of that skill (FIX) instead of skipping it"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list what would change; write nothing"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="list only the skills that were not taken in"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Import skills: each is validated and checked against the manifest's sha256; a name
    already in the library is skipped and reported (never overwritten silently). Unsafe
    archives (paths out of the folder, absolute paths, links, devices, too big) are refused."""
    if as_root and copy:
        raise _usage_error(ctx, "--as-root and --copy exclude each other: pass one")
    if as_root and replace:
        raise _usage_error(ctx, "--replace applies to --copy only")
    mode = "root" if as_root else "copy"
    cfg = _config()
    if dry_run and not cfg.db_path.exists():    # a dry run creates nothing, not even the home
        from ..library import Library

        rep = Library.preview_import(source, config=cfg, mode=mode, replace=replace)
    else:
        rep = _lib().import_skills(source, mode=mode, replace=replace, dry_run=dry_run)
    if json_out:
        _json(rep.as_dict())
    else:
        would = {"new": "would import", "replace": "would replace", "root": "would register"}
        shown = {"new": "imported", "replace": "replaced", "root": "in root"}
        for c in rep.skills:
            if quiet and c.status not in ("clash", "invalid", "refused", "error"):
                continue
            status = (would if rep.dry_run else shown).get(c.status, c.status)
            moved = f" → {c.dest}" if c.dest and c.dest != c.name else ""
            out.print(f"  {status:14} {c.name}{moved}" + (f"  — {c.message}" if c.message else ""))
        for note in rep.notes:
            out.print(f"  note: {note}")
        if rep.with_findings:
            kinds = ", ".join(f"{k} {v:,}" for k, v in rep.with_findings.items())
            n_f = sum(rep.with_findings.values())
            # a dry run wrote nothing: the findings are in the skills of the source
            listed = f"`skillshelf validate {rep.source}`" if rep.dry_run else f"`skillshelf validate {cfg.workspace}`"
            out.print(f"note: {n_f:,} finding{'s' * (n_f != 1)} in the "
                      f"{'skills to import' if rep.dry_run else 'imported skills'}, the same sync reports, kept as "
                      f"they are ({kinds}); {listed} lists them")
        counts = ", ".join(f"{v} {k}" for k, v in rep.counts.items())
        where = f"; root {rep.root}" if rep.root else ""
        n = len(rep.skills)
        out.print(f"{'dry run: ' if rep.dry_run else ''}{n} skill{'s' if n != 1 else ''} in {rep.source} "
                  f"({rep.kind}): {counts}{where}" + ("; nothing was written" if rep.dry_run else ""))
        if not rep.ok:
            err.print(f"error: some skills {'would not be' if rep.dry_run else 'were not'} imported (see above): fix "
                      "or rename them, or pass --replace for names already taken")
    if not rep.ok:
        raise typer.Exit(1)
