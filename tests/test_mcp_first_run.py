"""The first MCP call on a new library: the server indexes in the background and answers
from what is indexed, with a note saying how far it is; no request waits for the sync."""

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server
from skillshelf.search import sync as indexmod
from skillshelf.search.indexer import Indexer

WORDS = ("docker build cache layer image python test fixture cors header api route deploy kubernetes helm "
         "chart git commit rebase merge sql index query migration react hook state redux css grid").split()


def generate(root: Path, n: int) -> None:
    """``n`` skills with a few hundred words each, in 20 folders."""
    for i in range(n):
        w = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(6)]
        name = f"gen-{w[0]}-{w[1]}-{i}"
        d = root / f"c{i % 20}" / name
        d.mkdir(parents=True)
        body = "\n".join(f"## Step {k}\n\n" + " ".join(WORDS[(i + k * j) % len(WORDS)] for j in range(60)) + "\n"
                         for k in range(5))
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: How to {' '.join(w)} in a project\n---\n\n"
                                    f"# {name}\n\n{body}", encoding="utf-8")


def _corpus() -> Path | None:
    env = os.environ.get("SKILLSHELF_CORPUS")
    if not env:
        return None
    p = Path(env)
    p = p / "skills" if (p / "skills").is_dir() else p
    return p if p.is_dir() else None


def _first_search_over_stdio(home: Path, root: Path) -> tuple[float, object]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    env = {**os.environ, "SKILLSHELF_HOME": str(home)}
    params = StdioServerParameters(command=exe, args=["--root", str(root), "serve"], env=env)

    async def main():
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                t0 = time.perf_counter()
                res = await s.call_tool("search_skills", {"query": "docker build cache layers"})
                return time.perf_counter() - t0, res
    return anyio.run(main)


def _check_first_answer(seconds: float, res) -> None:
    assert not res.is_error, res.content[0].text
    # before: the request waited for the whole first sync and embedding (minutes on the corpus)
    assert seconds < 6.0, seconds
    degraded = res.structured_content["degraded"] or ""
    assert "index" in degraded and "partial" in degraded, degraded
    assert "degraded: " in res.content[0].text


def test_first_search_over_stdio_answers_while_a_new_library_indexes(tmp_path):
    root = tmp_path / "root"
    generate(root, 1500)
    seconds, res = _first_search_over_stdio(tmp_path / "home", root)
    _check_first_answer(seconds, res)


@pytest.mark.skipif(_corpus() is None, reason="set SKILLSHELF_CORPUS to the corpus (its skills/ folder) to run")
def test_first_search_over_stdio_on_the_corpus(tmp_path):
    seconds, res = _first_search_over_stdio(tmp_path / "home", _corpus())
    _check_first_answer(seconds, res)


# --- in process: a sync that commits everything in one long transaction ----------------------

@pytest.fixture
def slow_sync(monkeypatch):
    """``index.sync`` holding the write transaction until ``release`` is set (as a first
    sync that commits once at its end does), after reporting progress."""
    release = threading.Event()
    started = threading.Event()
    real = indexmod.sync

    def sync(store, roots, *, progress=None, **kw):
        # only this test's library (other tests' watcher threads may still be syncing theirs)
        if not started.is_set() and any(r.path.name == "slow-root" for r in roots):
            with store.tx():
                if progress:
                    progress(120, 5327)
                started.set()
                release.wait(30)
        return real(store, roots, progress=progress, **kw)

    monkeypatch.setattr(indexmod, "sync", sync)
    yield started, release
    release.set()


def test_requests_do_not_wait_for_a_long_index_transaction(tmp_path, slow_sync, monkeypatch):
    from conftest import write_skill

    monkeypatch.setattr(Indexer, "WRITE_WAIT", 0.5)

    started, release = slow_sync
    root = tmp_path / "slow-root"
    write_skill(root, "walrus-care", description="Polish walrus tusks safely")
    home = tmp_path / "home"
    server = build_server(lambda: Library(home, roots=[root], embedder=FakeEmbedder()))

    async def main():
        async with Client(server) as c:
            assert started.wait(10)
            t0 = time.perf_counter()
            r = await c.call_tool("search_skills", {"query": "walrus tusks"})
            assert time.perf_counter() - t0 < 4.0, time.perf_counter() - t0
            assert not r.is_error
            sc = r.structured_content
            assert sc["hits"] == [] and sc["query_id"] is None   # nothing committed, nothing logged
            assert "indexing 120 of 5,327 skills" in sc["degraded"] and "sync" not in sc["degraded"]
            assert "query not logged" in r.content[0].text

            # writes refuse at once, naming the progress and the fix, instead of hanging
            for name, args in (("report_outcome", {"skill": "walrus-care", "worked": True}),
                               ("save_skill", {"action": "ARCHIVE", "name": "x-y", "description": "d", "body": "b"}),
                               ("reindex", {})):
                t0 = time.perf_counter()
                w = await c.call_tool(name, args)
                assert time.perf_counter() - t0 < 4.0, name
                assert w.is_error and "try again in a minute" in w.content[0].text, (name, w.content[0].text)

            release.set()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                r = await c.call_tool("search_skills", {"query": "walrus tusks"})
                if r.structured_content["hits"] and r.structured_content["degraded"] is None:
                    break
                await anyio.sleep(0.1)
            sc = r.structured_content
            assert sc["hits"][0]["name"] == "walrus-care" and isinstance(sc["query_id"], int)
            assert sc["degraded"] is None
            rep = await c.call_tool("report_outcome", {"skill": "walrus-care", "worked": True,
                                                       "query_id": sc["query_id"]})
            assert not rep.is_error
    anyio.run(main)


def test_indexing_progress_and_note_on_the_library(tmp_path):
    from conftest import write_skill

    root = tmp_path / "root"
    for i in range(30):
        write_skill(root, f"skill-{i}", description=f"skill number {i} about tusks")
    lib = Library(tmp_path / "home", roots=[root], embedder=FakeEmbedder())
    assert lib.indexing_status()["state"] == "ready" and lib.indexing_note() is None
    seen: list[str] = []
    real = lib.indexer.sync

    def spy(**kw):
        def progress(done, total):
            kw["progress"](done, total)
            seen.append(lib.indexing_note() or "")
        return real(progress=progress, embed_progress=kw.get("embed_progress"))

    lib.indexer.sync = spy
    lib.start_indexing()
    for _ in range(200):
        if lib.indexing_status()["state"] == "ready" and lib.count() == 30:
            break
        time.sleep(0.05)
    assert lib.count() == 30 and lib.indexing_note() is None
    assert any(s.startswith("indexing 0 of 30 skills") for s in seen), seen
    res = lib.search_nowait("tusks", limit=3)
    assert res.hits and res.query_id is not None and res.degraded is None
    lib.close()
