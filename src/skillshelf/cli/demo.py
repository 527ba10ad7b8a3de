"""``skillshelf demo``: the loop an agent runs, on the sample skills, through the real MCP
tools in process: search, read a section, report, save a draft; a person approves it; stats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from .common import _clean, err, out, state

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

    from ..config import load
    from ..library import Library

    t0 = time.perf_counter()
    # the MCP SDK takes ~1 s to import: on the other core, while the library is made and indexed
    import threading

    threading.Thread(target=_import_mcp, name="skillshelf-demo-import", daemon=True).start()
    explicit = state.home is not None
    home = Path(state.home).expanduser() if state.home is not None else \
        Path(tempfile.mkdtemp(prefix="skillshelf-demo-"))
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
        from ..library import Library

        return None if Library.quantized_model_ready() else "float32"
    except Exception:   # the model's own load says what is wrong
        return None


def _import_mcp() -> None:
    try:
        import mcp  # noqa: F401

        from ..mcp import server as mcp_server  # noqa: F401
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
    from ..errors import SkillshelfError
    from ..library import Library

    try:
        body = lib.read(name)[1]
    except SkillshelfError:
        return False       # the save names the problem itself
    want = " ".join(lesson.split()).lower()
    return any(want in " ".join(line.split()).lower() for line in Library.lesson_lines(body))


async def _agent_session(lib: Any, query: str) -> list[int]:
    """Run the six steps; the numbers of the steps that failed (empty: all went well)."""
    from mcp import Client

    from ..errors import SkillshelfError
    from ..mcp.server import build_server

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
