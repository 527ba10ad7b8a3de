"""Every tool failure is a result with isError and one line naming the problem and the
fix: domain errors, unexpected ones (an OSError, a damaged database), a library that cannot
be opened. Never a traceback, never the SDK's bare "Error executing tool <name>"."""

import errno
import sqlite3

import anyio
import pytest
from mcp import Client

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import StoreError
from skillshelf.mcp.server import build_server


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "h"
    Library.init(h, embedder=FakeEmbedder(), auto_sync=False).sync()
    return h


def _one_line_with_fix(result) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    assert "Fix: " in text, text   # not the SDK's bare "Error executing tool <name>" of a crash
    return text.split(": ", 1)[1] if text.startswith("Error executing tool") else text


def test_unexpected_exceptions_become_one_line_errors(home, monkeypatch):
    def full_disk(self, *a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(home / "skillshelf.db"))

    def damaged(self, *a, **kw):
        raise sqlite3.DatabaseError("database disk image is malformed")

    def bug(self, *a, **kw):
        raise KeyError("oops")

    monkeypatch.setattr(Library, "stats", full_disk)
    monkeypatch.setattr(Library, "sync", damaged)
    monkeypatch.setattr(Library, "read", bug)

    async def main():
        async with Client(build_server(lambda: Library(home, embedder=FakeEmbedder(), auto_sync=False))) as c:
            t = _one_line_with_fix(await c.call_tool("skill_stats", {}))
            assert "cannot be written now (the disk is full)" in t and "free disk space" in t
            t = _one_line_with_fix(await c.call_tool("reindex", {}))
            assert "malformed" in t and "skillshelf rebuild" in t
            t = _one_line_with_fix(await c.call_tool("get_skill", {"name": "cors-fix-nextjs-api"}))
            assert t.startswith("KeyError: 'oops'")
            # domain errors keep their own fix
            t = _one_line_with_fix(await c.call_tool("report_outcome", {"skill": "no-such-skill", "worked": True}))
            assert "no skill named 'no-such-skill'" in t
            t = _one_line_with_fix(await c.call_tool("report_outcome", {"skill": "cors-fix-nextjs-api",
                                                                        "worked": True, "query_id": 999999}))
            assert "no query with id 999999" in t
            t = _one_line_with_fix(await c.call_tool("search_skills", {"query": "x", "mode": "nope"}))
            assert "unknown mode" in t
            # arguments the SDK refuses before the tool runs: one line too, not pydantic's report
            t = _one_line_with_fix(await c.call_tool("search_skills", {}))
            assert t == "invalid arguments for search_skills: query is missing. Fix: pass query as text"
            t = _one_line_with_fix(await c.call_tool("get_skill", {"name": "x", "offset": "abc"}))
            assert t.startswith("invalid arguments for get_skill: offset must be a whole number") and "pydantic" not in t
            # an unknown tool is a protocol error (invalid params), naming the tools there are
            from mcp import MCPError

            with pytest.raises(MCPError) as err:
                await c.call_tool("no_such_tool", {})
            assert err.value.code == -32602 and "search_skills" in err.value.message and "Fix:" in err.value.message
    anyio.run(main)


def test_a_library_that_cannot_be_opened_is_reported_by_every_tool(tmp_path):
    def factory():
        raise StoreError("cannot open database /x/skillshelf.db: file is not a database",
                         fix="move the file aside and run `skillshelf sync` to rebuild it")

    async def main():
        async with Client(build_server(factory)) as c:
            for name, args in (("search_skills", {"query": "x"}), ("skill_stats", {}), ("reindex", {}),
                               ("get_skill", {"name": "x"})):
                t = _one_line_with_fix(await c.call_tool(name, args))
                assert "could not be opened" in t and "rebuild" in t
    anyio.run(main)
