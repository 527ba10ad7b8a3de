"""search_skills(judge=true) over a real MCP client: the owner's judge reranks; without one,
the plain order comes back, said so."""

from __future__ import annotations

import anyio
from mcp import Client
from test_judge import QUERY, chat, make_lib, plain_names  # noqa: F401  (chat is a fixture)

from skillshelf.mcp.server import build_server


def _call(lib, args):
    async def main():
        async with Client(build_server(lambda: lib)) as c:
            return await c.call_tool("search_skills", args)

    return anyio.run(main)


def test_search_skills_with_the_judge(tmp_path, chat):
    lib = make_lib(tmp_path, chat)
    plain = plain_names(lib, limit=5)
    r = _call(lib, {"query": QUERY, "limit": 5, "judge": True})
    assert not r.is_error, r.content[0].text
    sc = r.structured_content
    assert sc["judge"] == "ok" and sc["pick"] == plain[-1]
    assert [h["name"] for h in sc["hits"]] == list(reversed(plain))
    assert sc["hits"][0]["judge"]["why"] == f"why {plain[-1]}"
    assert "judge: ok" in r.content[0].text and "(judge: fit 10" in r.content[0].text


def test_search_skills_judge_without_a_judge_is_the_plain_order(tmp_path):
    lib = make_lib(tmp_path, None)
    plain = plain_names(lib, limit=5)
    r = _call(lib, {"query": QUERY, "limit": 5, "judge": True})
    assert not r.is_error
    sc = r.structured_content
    assert [h["name"] for h in sc["hits"]] == plain and sc["judge"].startswith("off")


def test_usage_rows_name_the_connected_client(tmp_path):
    """Learning caps are per client: each MCP client is logged under its own clientInfo name."""
    lib = make_lib(tmp_path, None)
    r = _call(lib, {"query": QUERY, "limit": 3})
    assert not r.is_error
    clients = {row[0] for row in lib.store.db.execute("SELECT client FROM queries")}
    assert len(clients) == 1
    (client,) = clients
    assert client.startswith("mcp")
    assert client != "mcp", "the client's name from its clientInfo is kept"
