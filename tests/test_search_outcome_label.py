"""Outcomes of similar requests overrule the likely-match model for ``confident``; the label an
agent reads agrees with it: a hit reported failing is weak, and its outcomes line says why."""

import anyio
from conftest import write_skill
from mcp import Client

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server


def test_a_likely_hit_reported_failing_is_not_labelled_likely_beside_no_confident_match(tmp_path):
    root = tmp_path / "root"
    for rel, desc in {"db/sql-index": "Speed up slow SQL queries with the right indexes",
                      "db/migrations": "Write safe database schema migrations with rollbacks",
                      "ops/docker-build": "Multi-stage Docker builds with cached layers for small images",
                      "web/cors-fix": "Fix CORS errors in Next.js API routes and preflight OPTIONS requests",
                      "docs/readme": "Write a clear README with install and usage sections"}.items():
        write_skill(root, rel, description=desc, body=f"## Solution\n\n{desc}.\n")
    home = tmp_path / "home"
    lib = Library(home, roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.close()
    server = build_server(lambda: Library(home, roots=[root], embedder=FakeEmbedder(), auto_sync=False))
    q = "speed up slow sql queries with an index"

    async def main():
        async with Client(server) as c:
            r = await c.call_tool("search_skills", {"query": q})
            sc = r.structured_content
            likely = [h["name"] for h in sc["hits"][:3] if h["match"] == "likely"]
            assert sc["confident"] and likely, sc
            for name in likely:
                for _ in range(2):
                    got = await c.call_tool("search_skills", {"query": q})
                    rep = await c.call_tool("report_outcome", {"skill": name, "worked": False,
                                                               "query_id": got.structured_content["query_id"]})
                    assert not rep.is_error, rep.content[0].text
            r = await c.call_tool("search_skills", {"query": q})
            sc, text = r.structured_content, r.content[0].text
            failed = [h for h in sc["hits"] if "failed for 2 similar requests" in (h.get("learned") or "")]
            assert failed, sc["hits"]
            assert all(h["match"] == "weak" for h in failed), failed
            assert sc["confident"] is False and "no confident match" in text
            assert sc["confident"] == any(h["match"] == "likely" for h in sc["hits"][:3])
            for h in failed:
                line = next(x for x in text.splitlines() if f". {h['name']} [" in x)
                assert f"{h['name']} [weak" in line and "(outcomes: failed for 2 similar requests" in line, line
    anyio.run(main)
