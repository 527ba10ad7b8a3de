"""A search answered while the library is being indexed says so, and is not a gap: a root
registered since the last whole sync (its scan comes after the server's first answer) and
another process's sync of the same library (a `skillshelf sync` in a terminal) are named in
``degraded``, the reply asks to search again instead of writing a new skill, and the request
stays out of the gap list."""

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from conftest import write_skill
from mcp import Client

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server
from skillshelf.search.progress import FILE, SharedProgress

QUERY = "polish walrus tusks safely before a show"


def _two_roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    home, old, new = tmp_path / "home", tmp_path / "old-root", tmp_path / "new-root"
    write_skill(old, "docker-build", description="Multi-stage Docker builds with cached layers")
    write_skill(old, "cors-fix", description="Fix CORS errors in Next.js API routes")
    write_skill(new, "walrus-care", description="Polish walrus tusks safely before a show",
                body="## Steps\n\nPolish the walrus tusks with a soft cloth.\n")
    return home, old, new


def test_a_root_not_indexed_yet_is_said_and_its_request_is_no_gap(tmp_path):
    home, old, new = _two_roots(tmp_path)
    lib = Library(home, roots=[old], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.close()
    # the new root is registered after that sync: the server's rescan indexes it after its first answer
    server = build_server(lambda: Library(home, roots=[old, new], embedder=FakeEmbedder()))

    async def main():
        async with Client(server) as c:
            r = await c.call_tool("search_skills", {"query": QUERY})
            assert not r.is_error, r.content[0].text
            sc, text = r.structured_content, r.content[0].text
            assert sc["confident"] is False
            assert "partial" in (sc["degraded"] or ""), sc["degraded"]
            assert "possible gap" not in text and "save_skill" not in text, text
            assert "search again" in text and "not a gap" in text, text
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                r = await c.call_tool("search_skills", {"query": QUERY})
                if r.structured_content["degraded"] is None:
                    break
                await anyio.sleep(0.1)
            sc = r.structured_content
            assert sc["degraded"] is None and sc["hits"][0]["name"] == "walrus-care"
            st = await c.call_tool("skill_stats", {})
            assert st.structured_content["gaps"] == [], st.structured_content["gaps"]
    anyio.run(main)


def test_an_unchanged_library_is_not_said_partial_before_its_rescan(tmp_path):
    home, old, new = _two_roots(tmp_path)
    lib = Library(home, roots=[old, new], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.close()
    lib = Library(home, roots=[old, new], embedder=FakeEmbedder())
    try:
        lib.start_indexing(first_answer=lambda: time.sleep(30))   # the rescan waits: it is pending
        res = lib.search_nowait(QUERY, limit=3)
        assert res.degraded is None and not res.partial and res.hits[0].name == "walrus-care"
    finally:
        lib.close(timeout=0.5)


OTHER = """
import sys, time
from skillshelf.search.progress import SharedProgress
SharedProgress(sys.argv[1]).write("indexing", 546, 4226)
print("written", flush=True)
time.sleep(60)
"""


def test_another_process_indexing_is_said_and_its_request_is_no_gap(tmp_path):
    home, old, new = _two_roots(tmp_path)
    lib = Library(home, roots=[old, new], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.close()
    other = subprocess.Popen([sys.executable, "-c", OTHER, str(home)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "written"
        server = build_server(lambda: Library(home, roots=[old, new], embedder=FakeEmbedder()))

        async def main():
            async with Client(server) as c:
                r = await c.call_tool("search_skills", {"query": "kubernetes helm chart rollback"})
                sc, text = r.structured_content, r.content[0].text
                assert not r.is_error, text
                assert sc["degraded"].startswith(f"another process (pid {other.pid}) is indexing this library: "
                                                 "546 of 4,226 skills read"), sc["degraded"]
                assert sc["query_id"] is None and "save_skill" not in text, text
                other.kill()
                other.wait()
                r = await c.call_tool("search_skills", {"query": "kubernetes helm chart rollback"})
                assert r.structured_content["degraded"] is None       # a dead process's file is not believed
                st = await c.call_tool("skill_stats", {})
                assert [g["query"] for g in st.structured_content["gaps"]] == ["kubernetes helm chart rollback"]
                assert st.structured_content["queries"] == 1          # the first one was not logged
        anyio.run(main)
    finally:
        other.kill()
        other.wait()


def test_a_sync_writes_its_progress_for_the_others_and_removes_it(tmp_path):
    home, old, new = _two_roots(tmp_path)
    for i in range(12):
        write_skill(new, f"more-{i}", description=f"skill number {i} about tusks")
    lib = Library(home, roots=[old, new], embedder=FakeEmbedder(), auto_sync=False)
    seen: list[dict] = []
    path = home / FILE

    def progress(done, total):
        if path.exists():
            seen.append(SharedProgress(home)._read() or {})

    try:
        lib.sync(progress=progress)
        assert seen and seen[0]["pid"] == os.getpid() and seen[0]["phase"] == "indexing"
        assert seen[0]["total"] == 15, seen[0]
        assert SharedProgress(home).other() is None          # this process's own is not "another's"
        assert not path.exists()
        seen.clear()
        lib.sync(progress=progress)    # nothing changed: nothing written
        assert seen == [] and not path.exists()
    finally:
        lib.close()



def test_a_forged_or_stray_progress_file_is_not_believed_and_breaks_no_search(tmp_path):
    """indexing.json is text in the home: too big, not a file, nested, with a word where a number goes, from the
    future, or naming pid 0 (which os.kill takes as this process group), it is not another process's sync, and
    a search goes on, answered whole and logged."""
    import json as _json
    home = tmp_path / "h"
    home.mkdir()
    now = time.time()
    good = {"pid": 1, "host": "elsewhere", "at": now, "phase": "indexing", "done": 5, "total": 9}
    forged = [
        "x" * 10_000,                                             # over the bound
        "[" * 100_000 + "]" * 100_000,                            # nested past the parser's depth
        _json.dumps({**good, "done": "x"}),
        _json.dumps({**good, "total": 10 ** 400}),
        _json.dumps({**good, "done": True}),
        _json.dumps({**good, "at": now + 3600}),                  # a file from the future never goes stale
        _json.dumps({**good, "pid": 0}),
        _json.dumps({**good, "pid": -1}),
    ]
    progress = SharedProgress(home)
    assert progress.note() is None                # no file yet
    (home / FILE).write_text(_json.dumps(good))
    assert "another process (pid 1)" in (progress.note() or "")   # a well-formed file is believed
    for text in forged:
        (home / FILE).write_text(text)
        assert progress.note() is None, text[:80]
    (home / FILE).unlink()
    (home / FILE).mkdir()                                         # not a file at all
    assert progress.note() is None
    root = tmp_path / "r"
    write_skill(root, "walrus-care", description="Polish walrus tusks safely before a show")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    env["SKILLSHELF_EMBEDDER"] = "none"
    script = Path(sys.executable).with_name("skillshelf")
    p = subprocess.run([str(script), "--home", str(home), "--root", str(root), "search", QUERY, "--json"],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "another process" not in p.stdout
