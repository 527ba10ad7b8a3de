"""No stale reads: a server of a team serves agents only what the store holds now. A server
started after a change it missed catches up before it answers (or says "catching up, retry";
never old text), and ``doctor`` says how far behind the store it is."""

from __future__ import annotations

import anyio
from mcp import Client
from teamlib import BODY, close, review, team_library

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server


def _text(result) -> str:
    return " ".join(c.text for c in result.content if getattr(c, "text", None))


def test_a_fix_approved_while_a_server_was_stopped_is_its_first_answer(tmp_path, pg_url):
    a = team_library(tmp_path / "a", pg_url)
    try:
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
        token = a.add_token("ci-agent", "agent")
        b = team_library(tmp_path / "b", pg_url)      # B indexes v1, then stops
        assert b.get("cors-fix").version == 1
        close(b)
        review(a).propose({"action": "FIX", "target_skill_name": "cors-fix",
                           "lesson": "Answer the preflight OPTIONS request with 204"})
        assert review(a).approve("cors-fix", reviewer="ann").version == 2

        def library() -> Library:     # B started again, as a server starts it
            return Library(home=tmp_path / "b", store=pg_url, embedder=FakeEmbedder(), auto_sync=False)

        async def first_answer() -> tuple[str, dict]:
            async with Client(build_server(library, team=True, token=token)) as c:
                res = await c.call_tool("get_skill", {"name": "cors-fix"})
                return _text(res), res.structured_content

        text, data = anyio.run(first_answer)
        assert data["version"] == 2, text[:300]
        assert "preflight OPTIONS request with 204" in text
    finally:
        close(a)


def test_doctor_says_how_far_behind_the_store_a_server_is(tmp_path, pg_url):
    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url, follow=False)     # a server that does not read the stream
    try:
        line = next(c for c in b.doctor().checks if c.name == "store").detail
        assert "up to date with the store" in line
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
        a.save("FIX", target_skill_name="cors-fix", lesson="Send Vary: Origin")
        line = next(c for c in b.doctor().checks if c.name == "store").detail
        assert "2 change(s) behind the store" in line
    finally:
        close(b)
        close(a)


def test_until_it_has_caught_up_a_server_says_so_where_people_look(tmp_path, pg_url):
    a = team_library(tmp_path / "a", pg_url)
    try:
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
        close(team_library(tmp_path / "b", pg_url))
        a.save("FIX", target_skill_name="cors-fix", lesson="Send Vary: Origin")
        b = Library(home=tmp_path / "b", store=pg_url, embedder=FakeEmbedder(), auto_sync=False)
        try:
            # the dashboard's banner and a search's ``degraded`` read the indexing note
            assert "catching up with the team store (1 skill(s) changed while it was away)" in b.indexing_note()
            rec, body = b.read("cors-fix")          # the first read catches up, then answers
            assert rec.version == 2 and "Send Vary: Origin" in body
            assert b.indexing_note() is None
        finally:
            b.close()
    finally:
        close(a)
