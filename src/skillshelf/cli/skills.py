"""Finding and reading skills: ``list``, ``show``, ``search``, ``validate`` and ``pick``."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer

from ..errors import ValidationError
from ..text import visible
from .common import _bad_option, _choice, _clean, _in_range, _json, _lib, _styled, _table, err, out
from .evals import version_cell, worse_line
from .install import ClientName, Scope

commands = typer.Typer()

SEARCH_MAX = 100


def _unknown_type(exc: ValidationError, skill_type: Optional[str]) -> bool:
    """Whether the library refused the value of --type (its list of types is the standard
    ones and those the library's files use)."""
    return skill_type is not None and "type" in exc.message and repr(skill_type) in exc.message


@commands.command("list")
def list_(
    ctx: typer.Context,
    root: Optional[str] = typer.Option(None, metavar="LABEL|PATH",
                                       help="only skills of this root (its label, or the path given to roots add)"),
    skill_type: Optional[str] = typer.Option(None, "--type", help="IMPLEMENTATION | WORKFLOW | TROUBLESHOOTING | ..."),
    tag: Optional[str] = typer.Option(None, help="only skills with this tag"),
    name: Optional[str] = typer.Option(None, help="name contains"),
    invalid: bool = typer.Option(False, "--invalid", help="only skills with spec errors"),
    limit: Optional[int] = typer.Option(None, callback=_in_range(1, None, "the number of skills listed"),
                                        help="at most this many"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """List skills (every match with --json unless --limit is given)."""
    lib = _lib()
    try:
        recs = lib.list(root=root, skill_type=skill_type, tag=tag, name_contains=name, invalid_only=invalid,
                        limit=limit if limit is not None or json_out else 200)
    except ValidationError as exc:
        if _unknown_type(exc, skill_type):
            raise _bad_option(ctx, "--type", exc) from None
        raise
    hidden = lib.supply.hidden()         # why agents do not see a skill (held, or blocked by the audit)
    if json_out:
        _json([{**r.as_dict(body=False), "hidden": hidden.get(r.id)} for r in recs])
        return
    table = _table("name", "type", "version", "tags", "id")
    for r in recs:
        flag = "" if r.active else " (inactive)"
        flag += " (expired)" if r.expired else ""
        flag += " (held)" if r.id in hidden else ""
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


@commands.command()
def show(name: str = typer.Argument(..., help="skill name, id or path (one that starts with '-' goes after --)"),
         section: Optional[str] = typer.Option(None, help="only this section, e.g. 'Solution'"),
         json_out: bool = typer.Option(False, "--json")) -> None:
    """Show one skill: metadata, findings and body."""
    lib = _lib()
    rec, body = lib.read(name, section, reader=lib.PERSON)   # the owner at the CLI: held skills shown, marked
    audit = lib.supply.audit_of(rec.id)
    hidden = lib.supply.hidden().get(rec.id)
    if json_out:
        d = rec.as_dict()
        d["body"] = body
        d["files"] = rec.files()
        d["audit"] = audit
        d["hidden"] = hidden
        d["source"] = lib.sources.of(rec)
        d["outcomes"] = lib.evals.versions(rec.id)       # per version, with a Wilson interval
        _json(d)
        return
    out.print(_styled((rec.display_name, "bold"), f"  ({rec.id})"))
    out.print(f"path     {rec.path}")
    if src := lib.sources.of(rec):     # fetched by `skillshelf sources add`: where from, at which commit
        out.print(f"source   {src['label']} at {src['commit'][:12]} ({src['url']})"
                  + (f", your copy of {src['copy_of']}" if src["copy_of"] else ""))
    if gone := (rec.metadata or {}).get("origin-gone"):     # upstream renamed or removed what it is a copy of
        out.print(f"origin   {(rec.metadata or {}).get('origin') or '-'}: {gone}")
    out.print(f"type     {rec.skill_type or '-'}   version {rec.version}   tags {', '.join(rec.tags) or '-'}")
    if rec.lineage:
        out.print(f"lineage  {' → '.join(rec.lineage)}")
    ov = rec.overlay or {}
    if ov.get("status") == "deprecated":
        out.print(f"status   deprecated by you: {ov.get('reason') or '-'} (kept in the library; the file is untouched)")
    elif not rec.active:
        out.print(f"status   {rec.status_note}")
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
    per = lib.evals.versions(rec.id)
    if per["versions"]:
        out.print("outcomes " + "; ".join(version_cell(v) for v in per["versions"]))
    if per["worse"]:
        out.print(f"worse    {worse_line(per['worse'])}")
    # a person reads what an agent would: every invisible character is shown (`<U+200B>`)
    out.print(f"\n{visible(_clean(rec.description))}\n")
    for f in rec.findings:
        out.print(f"  {f['severity']:7} {f['rule']}: {f['message']}")
    if audit is not None:
        _print_audit(rec.name, audit, hidden)
    files = rec.files()
    if files:
        out.print("files    " + ", ".join(files))
    out.print("")
    out.print(visible(_clean(body)))      # controls as ␛ (as everywhere), the other invisibles as <U+200B>


def _print_audit(name: str, audit: dict, hidden: Optional[str]) -> None:
    """The skill's audit under its description: its risk, then each finding (`skillshelf audit
    NAME` says why each matters)."""
    trusted = " (trusted by you as it is now)" if audit.get("trusted") else ""
    found = audit.get("findings") or []
    out.print(f"audit    {audit['risk']} risk{trusted}" + (f"; `skillshelf audit {name}` says why each matters"
                                                            if found else ""))
    if hidden:
        out.print(f"hidden   from agents: {hidden}; `skillshelf trust {name}` shows what changed and allows it")
    for f in found:
        where = f"{f.get('file') or '?'}" + (f":{f['line']}" if f.get("line") else "")
        out.print(f"  {f['severity']:7} {f['rule']}  {where}  {f['message']}")


@commands.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="what you are trying to do, in your own words"),
    limit: int = typer.Option(10, "--limit", "-n", callback=_in_range(1, SEARCH_MAX, "the number of hits"),
                              help=f"at most this many hits (1 to {SEARCH_MAX})"),
    mode: str = typer.Option("find", callback=_choice("find", "brainstorm"), help="find | brainstorm"),
    repo_scope: str = typer.Option("all", callback=_choice("all", "current"), help="all | current"),
    current_repo: Optional[str] = typer.Option(None, help="repo name for --repo-scope current"),
    tags: Optional[str] = typer.Option(None, help="comma-separated tags"),
    skill_type: Optional[str] = typer.Option(None, "--type"),
    include_inactive: bool = typer.Option(False, "--include-inactive"),
    include_expired: bool = typer.Option(False, "--include-expired"),
    log: bool = typer.Option(False, "--log/--no-log",
                             help="log it as an agent's request awaiting a report (its --json query_id is for "
                                  "`report-outcome --query-id`); a person's search is not logged"),
    judge: bool = typer.Option(False, "--judge", help="let the configured model judge rerank the hits, with why /"
                                                      " why not and a pick (README: \"Model judge\")"),
    judge_mode: Optional[str] = typer.Option(None, "--judge-mode", metavar="rerank|filter|both",
                                             callback=_choice("rerank", "filter", "both"),
                                             help="what the judge does (implies --judge): rerank, filter (mark the"
                                                  " top hits likely / weak) or both"),
    why: bool = typer.Option(False, "--why", help="say why each hit is there: its strongest signals, and what"
                                                  " outcomes of similar requests did to it"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Search the library (hybrid BM25 + embeddings, ordered by the fitted ranker)."""
    lib = _lib()
    kw = dict(limit=limit, mode=mode, repo_scope=repo_scope, current_repo=current_repo, tags=tags,
              skill_type=skill_type, include_inactive=include_inactive, include_expired=include_expired,
              # a person's search: held skills shown, marked; not logged (as the dashboard's), so stats, gaps and
              # the recency of recommendations stay about agents' requests, unless --log says it is one
              log=log, client="cli", for_agents=False)
    try:
        if judge or judge_mode:
            res = lib.judged_search(query, judge=judge_mode or "rerank", **kw)
        else:
            res = lib.search(query, **kw)
    except ValidationError as exc:
        if _unknown_type(exc, skill_type):
            raise _bad_option(ctx, "--type", exc) from None
        raise
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
        if getattr(h, "risk", None) in ("medium", "high"):
            name += f" [{h.risk} risk]"
        if getattr(h, "hidden", None):
            name += " [held from agents]"
        if judged:
            v = res.hit_extra(h).get("judge", {})
            mark = " ".join(x for x in (f"fit {v['fit']}" if "fit" in v else "", v.get("verdict", ""),
                                        f"{v['score']:.2f}" if "score" in v else "") if x)
            table.add_row(str(i), name, h.match, f"{h.score:.2f}", mark or "-", h.description)
        else:
            table.add_row(str(i), name, h.match, f"{h.score:.2f}", h.description)
    out.print(table)
    if why:
        for i, h in enumerate(res.hits, 1):
            out.print(f"  {i}. {h.name}: {h.why or '-'}")
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


@commands.command()
def validate(paths: list[Path] = typer.Argument(..., help="SKILL.md files or folders"),
             json_out: bool = typer.Option(False, "--json")) -> None:
    """Check SKILL.md files against the Agent Skills spec; exit 1 on errors."""
    from ..library import Library

    results = Library.validate_paths([*paths])   # (a new list: it takes text paths too)
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
    for folder in empty:
        err.print(f"error: no SKILL.md found under {folder} — pass a skill's folder, a folder of skill folders or a "
                  "SKILL.md file")
    if bad or empty:
        raise typer.Exit(1)


@commands.command()
def pick(
    for_: Optional[Path] = typer.Option(None, "--for", metavar="PATH", help="the project folder (default: this one)"),
    n: int = typer.Option(8, "-n", "--limit", callback=_in_range(1, 50, "the number of skills picked"),
                          help="how many skills at most (8 is the advice)"),
    install: Optional[ClientName] = typer.Option(None, "--install", metavar="CLIENT",  # type: ignore[valid-type]
                                                 help="copy the picks into this client's skills folder"),
    scope: Scope = typer.Option(Scope.project, "--scope", help="with --install: project (the project's folder) "
                                                              "or user (the client's own)"),
    yes: bool = typer.Option(False, "--yes", help="install without asking"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Propose the few skills worth installing directly in a client for a project, from its
    languages, frameworks and tool files and from the usage log; --install copies them."""
    project = (for_ or Path.cwd()).expanduser().absolute()
    lib = _lib()
    res = lib.pick(project, limit=n)
    dest = None
    c = None
    if install is not None:
        c, dest = lib.client_skills_folder(install.value, scope.value, project)
    if json_out and install is None:
        _json(res.as_dict())
        return
    if not json_out:
        out.print(f"project: {res.project}")
        if res.signals:
            out.print("signals: " + ", ".join(f"{s.label} ({s.evidence})" for s in res.signals[:12]))
        for i, p in enumerate(res.picks, 1):
            out.print(f"{i:2}. {p.name} — {p.reason}")
        for note in res.notes:
            out.print(f"note: {note}")
        if res.picks and install is None:
            where = f" --for {shlex.quote(str(project))}" if for_ is not None else ""
            out.print(f"{len(res.picks)} skill{'s' if len(res.picks) != 1 else ''} proposed; install them with "
                      f"`skillshelf pick{where} --install CLIENT` (the rest stay one search away)")
    if install is None:
        return
    if not res.picks:
        if json_out:
            _json(res.as_dict() | {"installed": []})
        else:
            out.print("nothing to install")
        return
    assert c is not None and dest is not None
    if not yes and not typer.confirm(_clean(f"Copy these {len(res.picks)} skills into {dest}?")):
        err.print("nothing installed")
        raise typer.Exit(1)
    results = lib.install_skills([p.id for p in res.picks], dest)
    if json_out:
        _json(res.as_dict() | {"installed": [{"name": r.name, "path": str(r.dest), "action": r.action,
                                               "detail": r.detail} for r in results]})
    else:
        words = {"create": "installed", "unchanged": "already there", "differs": "left as is", "error": "failed"}
        for r in results:
            out.print(f"  {words[r.action]:14} {r.name} → {r.dest}" + (f"  ({r.detail})" if r.detail else ""))
        if any(r.action == "create" for r in results):
            out.print(f"next: start a new {c.title} session so it loads the new skills")
    if any(r.action == "error" for r in results):
        raise typer.Exit(1)
