"""Onboarding commands on the CLI: ``install`` / ``uninstall`` (our server entry and the
teaching skill in an agent client), ``export`` / ``import`` (skill folders and archives),
``pick`` (the few skills worth installing directly for a project) and the ``demo`` loop.

Registered on :data:`skillshelf.cli.app` by importing this module. Like the rest of the
CLI, each command calls the library (or :mod:`skillshelf.clients`) and prints the result.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from .cli import _clean, _config, _json, _lib, _usage_error, _write, app, err, out, state

if TYPE_CHECKING:   # pragma: no cover
    from . import clients as cl

# the clients of skillshelf.clients.CLIENTS (a test keeps them equal): that module is loaded
# only by the commands that use it, not by every command line
CLIENT_NAMES = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini", "goose")
ClientName = enum.Enum("ClientName", {n.replace("-", "_"): n for n in CLIENT_NAMES}, type=str)  # type: ignore[misc]


class Scope(str, enum.Enum):
    user = "user"
    project = "project"


_CLIENT_HELP = "one of: " + ", ".join(CLIENT_NAMES)


def _project(project: Optional[Path]) -> Path:
    p = (project or Path.cwd()).expanduser().absolute()
    if project is not None and not p.is_dir():
        from .errors import NotFoundError

        raise NotFoundError(f"the project folder {p} does not exist", fix="pass an existing folder to --project")
    return p


def _server_env(write_policy: Optional[str]) -> dict[str, str]:
    """What the client must pass to the server: the home when it is not the default (the client
    does not see this shell's --home or SKILLSHELF_HOME), and a write policy when one is asked for."""
    from .config import WRITE_POLICIES
    from .errors import ValidationError

    cfg = _config()
    env: dict[str, str] = {}
    if cfg.origin("home") in ("flag", "environment"):
        env["SKILLSHELF_HOME"] = str(cfg.home)
    if write_policy is not None:
        if write_policy not in WRITE_POLICIES:
            raise ValidationError(f"unknown write policy {write_policy!r}",
                                  fix=f"use one of {', '.join(WRITE_POLICIES)}")
        env["SKILLSHELF_WRITE_POLICY"] = write_policy
    return env


def _show_config_change(ch: "cl.ConfigChange", dry_run: bool) -> None:
    c = ch.client
    out.print(f"{c.title} ({ch.scope} scope): {ch.path}")
    if dry_run and ch.changed:
        _write(ch.diff())
    words = {"add": "added the skillshelf server", "update": "updated the skillshelf server entry",
             "unchanged": "the skillshelf entry is already there: nothing to change",
             "remove": "removed the skillshelf server entry (other servers and settings are kept)",
             "absent": "no skillshelf entry there: nothing to remove"}
    would = {"add": "would add the skillshelf server", "update": "would update the skillshelf server entry",
             "remove": "would remove the skillshelf server entry (other servers and settings are kept)"}
    verb = would[ch.action] if dry_run and ch.changed else words[ch.action]
    out.print(f"  {verb}")
    if ch.entry is not None and ch.action in ("add", "update", "unchanged"):
        cmd = ch.entry.get("command") or ch.entry.get("cmd")
        args = ch.entry.get("args") or []
        out.print(f"  command: {' '.join([str(cmd), *map(str, args)])}")
        env = ch.entry.get("env") or ch.entry.get("envs") or {}
        if env:
            out.print("  env: " + " ".join(f"{k}={v}" for k, v in env.items()))
    if ch.backup is not None:
        out.print(f"  backup of the previous file: {ch.backup}")
    for n in ch.notes:
        out.print(f"  note: {n}")


def _show_skill_change(sk: "cl.SkillChange", dry_run: bool) -> None:
    from . import clients as cl

    if sk.dest is None:
        out.print(f"teaching skill: {sk.hint}")
        return
    if dry_run and sk.action == "update":   # a new or removed file is the packaged skill: named, not printed
        _write(sk.diff())
    words = {"create": "installed", "update": "updated (the previous one is kept as a backup)",
             "unchanged": "already installed", "remove": "removed", "absent": "not installed: nothing to remove",
             "keep": "left in place"}
    what = words.get(sk.action, sk.action)
    if dry_run and sk.action in ("create", "update", "remove"):
        what = f"would be {what.split(' (')[0]}"
    out.print(f"teaching skill {cl.TEACHING_SKILL}: {what} — {sk.dest}")
    if sk.backup is not None:
        out.print(f"  backup: {sk.backup}")
    if sk.hint:
        out.print(f"  note: {sk.hint}")


def _change_dict(ch: "cl.ConfigChange", sk: "cl.SkillChange | None", dry_run: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"client": ch.client.name, "scope": ch.scope, "config": str(ch.path), "action": ch.action,
                         "changed": ch.changed, "dry_run": dry_run, "entry": ch.entry,
                         "backup": str(ch.backup) if ch.backup else None, "notes": ch.notes}
    if dry_run:
        d["diff"] = ch.diff()
    if sk is not None:
        d["skill"] = {"path": str(sk.dest) if sk.dest else None, "action": sk.action, "hint": sk.hint or None,
                      "backup": str(sk.backup) if sk.backup else None}
    return d


@app.command()
def install(
    client: ClientName = typer.Argument(..., metavar="CLIENT", help=_CLIENT_HELP),  # type: ignore[valid-type]
    scope: Scope = typer.Option(Scope.user, "--scope", help="user: the client's own settings (every project); "
                                                           "project: the project folder's settings"),
    project: Optional[Path] = typer.Option(None, "--project", metavar="DIR",
                                           help="the project folder for --scope project (default: this folder)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the changes as a diff and write nothing"),
    no_skill: bool = typer.Option(False, "--no-skill", help="do not install the teaching skill using-skillshelf"),
    write_policy: Optional[str] = typer.Option(None, "--write-policy", metavar="POLICY",
                                               help="read-only | propose | open, set for this client's server "
                                                    "(default: the library's setting)"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Add the skillshelf MCP server to an agent client's configuration (merged into the file,
    other servers kept, a backup written first) and put the teaching skill in its skills folder."""
    from . import clients as cl

    c = cl.get_client(client.value)
    proj = _project(project)
    env = _server_env(write_policy)
    command, prefix = cl.server_command()
    where = cl.Where.current()
    ch = cl.plan_install(c, scope.value, where=where, project=proj, command=command, args=[*prefix, "serve"],
                         env=env)
    sk = None if no_skill else cl.plan_skill(c, scope.value, where=where, project=proj)
    if not dry_run:
        cl.apply(ch)
        if sk is not None:
            cl.apply_skill(sk)
    if json_out:
        _json(_change_dict(ch, sk, dry_run))
        return
    _show_config_change(ch, dry_run)
    if sk is not None:
        _show_skill_change(sk, dry_run)
    if state.roots:
        err.print("note: --root applies to one command; the server will not see it: save roots with "
                  "`skillshelf roots add PATH`")
    if dry_run:
        out.print("dry run: nothing was written")
    elif ch.changed or (sk is not None and sk.action in ("create", "update")):
        out.print(f"next: {c.reload}")


@app.command()
def uninstall(
    client: ClientName = typer.Argument(..., metavar="CLIENT", help=_CLIENT_HELP),  # type: ignore[valid-type]
    scope: Scope = typer.Option(Scope.user, "--scope", help="user | project (as it was installed)"),
    project: Optional[Path] = typer.Option(None, "--project", metavar="DIR",
                                           help="the project folder for --scope project (default: this folder)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the changes as a diff and write nothing"),
    keep_skill: bool = typer.Option(False, "--keep-skill", help="leave the teaching skill installed"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Remove only the skillshelf entry from a client's configuration (a backup is written
    first), and the teaching skill skillshelf installed (unless it was edited)."""
    from . import clients as cl

    c = cl.get_client(client.value)
    proj = _project(project)
    where = cl.Where.current()
    ch = cl.plan_uninstall(c, scope.value, where=where, project=proj)
    sk = None if keep_skill else cl.plan_skill(c, scope.value, where=where, project=proj, remove=True)
    if not dry_run:
        cl.apply(ch)
        if sk is not None:
            cl.apply_skill(sk)
    if json_out:
        _json(_change_dict(ch, sk, dry_run))
        return
    _show_config_change(ch, dry_run)
    if sk is not None and sk.dest is not None:
        _show_skill_change(sk, dry_run)
    if dry_run:
        out.print("dry run: nothing was written")
    elif ch.changed:
        out.print(f"next: {c.reload}")


# --- export / import ---------------------------------------------------------------------------

@app.command("export")
def export_(
    ctx: typer.Context,
    names: Optional[list[str]] = typer.Argument(None, metavar="[NAMES]...", help="skill names or ids"),
    all_: bool = typer.Option(False, "--all", help="every skill (by name: the one a lookup by name finds)"),
    to: Optional[Path] = typer.Option(None, "--to", metavar="DIR|FILE.zip|FILE.tar.gz",
                                      help="a new (or empty) folder, or an archive file to create"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Export skills (SKILL.md and their other files) with a manifest.json of names, ids,
    versions and the sha256 of every file."""
    if to is None:
        raise _usage_error(ctx, "say where to: --to DIR, --to FILE.zip or --to FILE.tar.gz")
    if names and all_:
        raise _usage_error(ctx, "pass skill names or --all, not both")
    if not names and not all_:
        raise _usage_error(ctx, "name the skills to export, or pass --all")
    rep = _lib().export_skills(names or [], all_skills=all_, to=to)
    if json_out:
        _json(rep.as_dict())
        return
    for s in rep.skills:
        out.print(f"  {s['name']:40} v{s['version']}  {s['files']} file{'s' if s['files'] != 1 else ''}  ({s['id']})")
    for n in rep.notes:
        out.print(f"  note: {n}")
    out.print(f"exported {len(rep.skills)} skill{'s' if len(rep.skills) != 1 else ''} ({rep.bytes:,} bytes) "
              f"to {rep.target} ({rep.kind}, with manifest.json)")


@app.command("import")
def import_(
    ctx: typer.Context,
    source: Path = typer.Argument(..., metavar="PATH|ARCHIVE", help="a folder of skills, a .zip or a .tar.gz"),
    as_root: bool = typer.Option(False, "--as-root", help="register it as a read-only root (an archive is "
                                                          "unpacked under <home>/imports/ first)"),
    copy: bool = typer.Option(False, "--copy", help="copy the skills into the workspace (the default)"),
    replace: bool = typer.Option(False, "--replace", help="a name already taken: make the imported text a new "
                                                          "version of that skill (FIX) instead of skipping it"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list what would change; write nothing"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Import skills: each is validated and checked against the manifest's sha256; a name
    already in the library is skipped and reported (never overwritten silently). Unsafe
    archives (paths out of the folder, absolute paths, links, devices, too big) are refused."""
    if as_root and copy:
        raise _usage_error(ctx, "--as-root and --copy exclude each other: pass one")
    if as_root and replace:
        raise _usage_error(ctx, "--replace applies to --copy only")
    rep = _lib().import_skills(source, mode="root" if as_root else "copy", replace=replace, dry_run=dry_run)
    if json_out:
        _json(rep.as_dict())
    else:
        would = {"new": "would import", "replace": "would replace", "root": "would register"}
        shown = {"new": "imported", "replace": "replaced", "root": "in root"}
        for c in rep.skills:
            status = (would if rep.dry_run else shown).get(c.status, c.status)
            out.print(f"  {status:14} {c.name}" + (f"  — {c.message}" if c.message else ""))
        for n in rep.notes:
            out.print(f"  note: {n}")
        counts = ", ".join(f"{v} {k}" for k, v in rep.counts.items())
        where = f"; root {rep.root}" if rep.root else ""
        n = len(rep.skills)
        out.print(f"{'dry run: ' if rep.dry_run else ''}{n} skill{'s' if n != 1 else ''} in {rep.source} "
                  f"({rep.kind}): {counts}{where}" + ("; nothing was written" if rep.dry_run else ""))
        if not rep.ok:
            err.print("error: some skills were not imported (see above): fix or rename them, or pass --replace "
                      "for names already taken")
    if not rep.ok:
        raise typer.Exit(1)


# --- pick -------------------------------------------------------------------------------------------

@app.command()
def pick(
    for_: Optional[Path] = typer.Option(None, "--for", metavar="PATH", help="the project folder (default: this one)"),
    n: int = typer.Option(8, "-n", "--limit", min=1, max=50, help="how many skills at most (8 is the advice)"),
    install: Optional[ClientName] = typer.Option(None, "--install", metavar="CLIENT",  # type: ignore[valid-type]
                                                 help="copy the picks into this client's skills folder"),
    scope: Scope = typer.Option(Scope.project, "--scope", help="with --install: project (the project's folder) "
                                                              "or user (the client's own)"),
    yes: bool = typer.Option(False, "--yes", help="install without asking"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Propose the few skills worth installing directly in a client for a project, from its
    languages, frameworks and tool files and from the usage log; --install copies them."""
    from . import clients as cl

    project = (for_ or Path.cwd()).expanduser().absolute()
    lib = _lib()
    res = lib.pick(project, limit=n)
    dest = None
    c = None
    if install is not None:
        c = cl.get_client(install.value)
        dest = c.skills_dir(scope.value, cl.Where.current(), project)
        if dest is None:
            from .errors import ValidationError

            raise ValidationError(f"{c.title} has no {scope.value} skills folder",
                                  fix="install into another client, or upload the skills in its settings")
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
            out.print(f"{len(res.picks)} skill{'s' if len(res.picks) != 1 else ''} proposed; install them with "
                      "`skillshelf pick --install CLIENT` (the rest stay one search away)")
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
    payload = []
    for p in res.picks:
        _rec, sf = lib.skill_folder(p.id)
        payload.append((p.name, sf.files, sf.executable))
    results = cl.copy_skill_folders(dest, payload)
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


# --- demo --------------------------------------------------------------------------------------------

_LESSONS = {
    "cors-fix-nextjs-api": "Exclude OPTIONS from auth middleware matchers, or the preflight gets a 307 redirect",
    "docker-multi-stage-build": "Add a .dockerignore with node_modules and .git, or the build context is huge",
    "git-conventional-commits": "Use `git commit --fixup` and autosquash to keep the history in this format",
}
_SHOWN_LINES = 16


def run_demo(query: str, corpus: Optional[Path]) -> None:
    """The loop an agent runs, on the sample skills, through the real MCP tools in process:
    search, read a section, report, save a draft; a person approves it; stats. In a temporary
    library (deleted at the end) unless ``--home`` names one."""
    import shutil
    import tempfile
    import time

    from .config import load
    from .library import Library

    t0 = time.perf_counter()
    # the MCP SDK takes ~1 s to import: on the other core, while the library is made and indexed
    import threading

    threading.Thread(target=_import_mcp, name="skillshelf-demo-import", daemon=True).start()
    explicit = state.home is not None
    home = Path(state.home).expanduser() if explicit else Path(tempfile.mkdtemp(prefix="skillshelf-demo-"))
    lib = None
    try:
        cfg = load(home, roots=[str(corpus)] if corpus else None, write_policy="propose", auto_sync=False,
                   client_roots=False, embedder_precision=None if explicit else _demo_precision())
        if explicit:
            out.print(f"demo library: {cfg.home} (from --home: the demo's draft is approved there)")
        else:
            out.print(f"demo library: {cfg.home} (temporary, deleted at the end; run `skillshelf --home DIR demo`"
                      " to keep one)")
        lib = Library.init(config=cfg, client="mcp")
        rep = lib.sync()
        out.print(f"indexed {lib.count()} skills ({rep.added} new); write policy for agents: propose\n")
        import anyio

        failed = anyio.run(_agent_session, lib, query)
        if failed:
            steps = ", ".join(map(str, failed))
            err.print(f"error: the demo failed at step{'s' * (len(failed) > 1)} {steps} (see above) — fix what "
                      "the error names and run the demo again")
            raise typer.Exit(1)
        out.print(f"\nthe whole loop took {time.perf_counter() - t0:.1f}s. Connect a real agent: "
                  "skillshelf install claude-code (or cursor, vscode, codex, gemini, goose, claude-desktop)")
    finally:
        if lib is not None:
            lib.close()
        if not explicit:
            shutil.rmtree(home, ignore_errors=True)


def _demo_precision() -> str | None:
    """float32 for the demo's throwaway library while the 8-bit model has not been derived yet:
    deriving it takes seconds, once, and the first real command does it anyway."""
    import os

    if os.environ.get("SKILLSHELF_EMBEDDER", "minilm") != "minilm" or os.environ.get("SKILLSHELF_EMBEDDER_PATH"):
        return None
    try:
        from .embeddings.minilm import MODEL_SHA256
        from .embeddings.quantize import derived_path

        return None if derived_path(MODEL_SHA256).is_file() else "float32"
    except Exception:   # the model's own load says what is wrong
        return None


def _import_mcp() -> None:
    try:
        import mcp  # noqa: F401
        from . import mcp_server  # noqa: F401
    except Exception:   # the session imports them again and reports the problem itself
        pass


def _step(n: int, total: int, what: str) -> None:
    out.print(f"[{n}/{total}] {what}")


def _call_line(tool: str, args: dict[str, Any]) -> None:
    out.print(f"  → {tool} {json.dumps(args, ensure_ascii=False)}")


def _result_lines(text: str) -> None:
    lines = text.splitlines() or [""]
    shown = lines[:_SHOWN_LINES]
    for i, line in enumerate(shown):
        out.print(("  ← " if i == 0 else "    ") + line)
    if len(lines) > len(shown):
        out.print(f"    … {len(lines) - len(shown)} more lines (the agent receives them all)")


def _quiet_sdk_log() -> None:
    """The demo prints every tool result itself. The MCP SDK also logs each failed tool call
    at INFO, through a Rich handler it puts on the root logger when there is none: the SDK's
    loggers say only warnings and worse, and the root logger gets plain lines on stderr first
    (as ``serve`` does), so the errors skillshelf logs itself still show."""
    import logging
    import sys

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    logging.getLogger("mcp").setLevel(logging.WARNING)


def _lesson_recorded(lib: Any, name: str, lesson: str) -> bool:
    """Whether the skill's Lessons Learned already hold ``lesson`` (the demo ran on this
    library before): saving it again would change nothing, and the save says so as an error."""
    from .errors import SkillshelfError
    from .evolve import lesson_lines

    try:
        body = lib.read(name)[1]
    except SkillshelfError:
        return False       # the save names the problem itself
    want = " ".join(lesson.split()).lower()
    return any(want in " ".join(line.split()).lower() for line in lesson_lines(body))


async def _agent_session(lib: Any, query: str) -> list[int]:
    """Run the six steps; the numbers of the steps that failed (empty: all went well)."""
    from mcp import Client

    from .errors import SkillshelfError
    from .mcp_server import build_server

    total = 6
    failed: list[int] = []
    _quiet_sdk_log()
    server = build_server(lambda: lib)

    async def call(c: Any, tool: str, args: dict[str, Any], step: int | None = None) -> Any:
        _call_line(tool, args)
        r = await c.call_tool(tool, args)
        text = "\n".join(getattr(b, "text", "") for b in r.content)
        _result_lines(("error: " if r.is_error else "") + text)
        if r.is_error and step is not None and step not in failed:
            failed.append(step)
        return r

    async with Client(server) as c:
        _step(1, total, "the agent describes its task and searches")
        r = await call(c, "search_skills", {"query": query, "limit": 3}, 1)
        sc = r.structured_content or {}
        hits = sc.get("hits") or []
        qid = sc.get("query_id")
        name = (hits[0].get("ref") or hits[0]["name"]) if hits else "cors-fix-nextjs-api"

        _step(2, total, "it reads only the section it needs")
        g = await call(c, "get_skill", {"name": name, "section": "Solution"})
        if g.is_error:   # no such section: the whole skill
            g = await call(c, "get_skill", {"name": name}, 2)
        skill_name = (g.structured_content or {}).get("name") or name

        _step(3, total, "it uses the skill, then reports the outcome with the query_id")
        args: dict[str, Any] = {"skill": skill_name, "worked": True,
                                "note": "fixed it as described; the preflight also needed the auth middleware to skip "
                                        "OPTIONS" if skill_name == "cors-fix-nextjs-api" else "worked as written"}
        if qid is not None:
            args["query_id"] = qid
        await call(c, "report_outcome", args, 3)

        _step(4, total, "it saves what it learned: under 'propose' this becomes a draft")
        lesson = _LESSONS.get(skill_name, "Worked as written; check the versions named in the skill first")
        s = None
        if _lesson_recorded(lib, skill_name, lesson):
            out.print(f"  (skipped: {skill_name} already holds this lesson: an earlier demo run in this library "
                      "saved it, and saving it again would change nothing)")
        else:
            s = await call(c, "save_skill", {"action": "FIX", "target_skill_name": skill_name, "lesson": lesson,
                                             "reason": "a step the skill was missing"}, 4)

        _step(5, total, "a person reviews the draft and approves it")
        if s is None:
            out.print("  (skipped: no new draft; the lesson was approved in an earlier run)")
        elif s.is_error:
            out.print("  (no draft to approve: step 4 failed)")
        else:
            draft = (s.structured_content or {}).get("name") or skill_name
            out.print(f"  $ skillshelf review approve {draft}")
            try:
                res = lib.review.approve(draft, reviewer="demo")
                out.print(f"    {res.message}")
            except SkillshelfError as exc:
                out.print(f"    error: {_clean(str(exc))}")
                failed.append(5)

        _step(6, total, "the owner (or an agent) looks at the usage")
        await call(c, "skill_stats", {}, 6)
    return failed
