import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from conftest import write_skill
from mcp import Client

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server

# each tool's parameters, in order, with their JSON types (the contract agents are written against)
EXPECTED_PARAMS = {
    "search_skills": {"query": "string", "limit": "integer", "mode": "string", "repo_scope": "string",
                      "current_repo": "string", "tags": "string", "skill_type": "string", "judge": "boolean"},
    "get_skill": {"name": "string", "section": "string", "offset": "integer"},
    "save_skill": {"action": "string", "name": "string", "description": "string", "body": "string",
                   "skill_type": "string", "lesson": "string", "repo_name": "string", "tags": "string",
                   "reason": "string", "target_skill_name": "string", "source_skill_names": "string",
                   "ttl_days": "integer", "display_name": "string", "author": "string"},
    "report_outcome": {"skill": "string", "worked": "boolean", "note": "string", "query_id": "integer"},
    "skill_stats": {},
    "reindex": {},
}


def _json_type(schema: dict) -> str:
    """The type of a property; an optional one (anyOf [T, null]) counts as T."""
    if "type" in schema:
        return schema["type"]
    types = [s.get("type") for s in schema.get("anyOf", []) if s.get("type") != "null"]
    return types[0] if len(types) == 1 else repr(schema)


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "h"
    Library.init(h, embedder="none", auto_sync=False).sync()
    for i in range(6):
        write_skill(h / "skills", f"docker-tip-{i}", description=f"Docker build tip number {i} - cache layers, "
                    "multi-stage builds, small images, non-root users and pinned base images for CI pipelines")
    Library(h, auto_sync=False).sync()  # indexed (and embedded with the bundled model) before serving
    return h


def server_for(home, policy="open", embedder=None):
    return build_server(lambda: Library(home, write_policy=policy, embedder=embedder or FakeEmbedder()))


def run(coro):
    return anyio.run(coro)


def test_tools_contract_order_annotations_and_size(home):
    async def main():
        async with Client(server_for(home)) as c:
            return (await c.list_tools()).tools

    tools = run(main)
    assert [t.name for t in tools] == list(EXPECTED_PARAMS)
    for t in tools:
        props = t.input_schema["properties"]
        assert {k: _json_type(v) for k, v in props.items()} == EXPECTED_PARAMS[t.name], t.name
        assert list(props) == list(EXPECTED_PARAMS[t.name]), t.name
        assert t.title and t.description and t.output_schema
        a = t.annotations
        assert None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
    # what search_skills returns as query_id is what report_outcome takes: an integer both ways
    search = next(t for t in tools if t.name == "search_skills")
    assert _json_type(search.output_schema["properties"]["query_id"]) == "integer"
    ro = {t.name for t in tools if t.annotations.read_only_hint}
    assert ro == {"search_skills", "get_skill", "skill_stats"}
    # what every client holds in its context: the whole tools/list answer, as JSON with the
    # default separators (the measure that found it at 6,002 characters)
    answer = {"jsonrpc": "2.0", "id": 1,
              "result": {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}}
    size = len(json.dumps(answer))
    assert size <= 6000, size


def test_every_tool_in_process(home):
    async def main():
        async with Client(server_for(home)) as c:
            r = await c.call_tool("search_skills", {"query": "docker build cache layers", "limit": 5})
            assert not r.is_error
            sc = r.structured_content
            assert set(sc) >= {"hits", "confident", "query_id"} and len(sc["hits"]) == 5
            assert all("body" not in h for h in sc["hits"])  # metadata only
            assert len(r.content[0].text) <= 1400
            qid = sc["query_id"]
            name = sc["hits"][0]["name"]

            g = await c.call_tool("get_skill", {"name": "cors-fix-nextjs-api", "section": "Solution"})
            assert not g.is_error and "\n\n## Solution" in g.content[0].text
            assert "body" not in g.structured_content  # the body is sent once, as the text
            bad = await c.call_tool("get_skill", {"name": "cors-fix"})
            assert bad.is_error and "cors-fix-nextjs-api" in bad.content[0].text
            nosec = await c.call_tool("get_skill", {"name": "cors-fix-nextjs-api", "section": "Nope"})
            assert nosec.is_error and "Solution" in nosec.content[0].text

            rep = await c.call_tool("report_outcome", {"skill": name, "worked": True, "note": "ok", "query_id": qid})
            assert not rep.is_error and rep.structured_content["reports"] == 1

            s = await c.call_tool("save_skill", {"action": "ARCHIVE", "name": "redis-eviction",
                                                 "description": "Pick a Redis eviction policy", "body": "## Solution\n\nallkeys-lru\n",
                                                 "lesson": "volatile-* does nothing without TTLs"})
            assert not s.is_error and s.structured_content["version"] == 1
            f = await c.call_tool("save_skill", {"action": "FIX", "target_skill_name": "redis-eviction", "lesson": "watch evicted_keys"})
            assert f.structured_content["version"] == 2 and f.structured_content["changelog"]["from_version"] == 1
            evil = await c.call_tool("save_skill", {"action": "ARCHIVE", "name": "../../etc", "description": "x", "body": "y"})
            assert evil.is_error and "path" in evil.content[0].text

            st = await c.call_tool("skill_stats", {})
            assert not st.is_error and st.structured_content["reports"] == 1
            ri = await c.call_tool("reindex", {})
            assert not ri.is_error and "added" in ri.structured_content

            # bad arguments never kill the server
            for args in ({"query": ""}, {"query": "x", "mode": "nope"}, {"query": "x", "limit": 0}, {}):
                r = await c.call_tool("search_skills", args)
                assert r.is_error
            assert not (await c.call_tool("search_skills", {"query": "docker"})).is_error
    run(main)


def test_search_text_says_what_outcomes_did(home):
    """An agent reads the text block: a hit that similar requests reported on says so there
    (what the reports said and how far the hit moved), not only in the structured content."""
    async def main():
        async with Client(server_for(home)) as c:
            q = {"query": "docker build cache layers", "limit": 5}
            # a search is logged (has a query_id to report on) once the server's first sync is done
            for _ in range(300):
                r = await c.call_tool("search_skills", q)
                if r.structured_content["query_id"] is not None and not r.structured_content.get("degraded"):
                    break
                await anyio.sleep(0.1)
            hits = r.structured_content["hits"]
            assert not any("learned" in h for h in hits) and "outcomes:" not in r.content[0].text
            second = hits[1]["name"]
            await c.call_tool("report_outcome", {"skill": second, "worked": True, "note": "ok",
                                                 "query_id": r.structured_content["query_id"]})
            r = await c.call_tool("search_skills", q)
            at, hit = next((i, h) for i, h in enumerate(r.structured_content["hits"], 1) if h["name"] == second)
            assert hit["learned"].startswith("worked for 1 similar request (")
            line = next(ln for ln in r.content[0].text.splitlines() if ln.startswith(f"{at}. {second}"))
            assert line.endswith(f" (outcomes: {hit['learned']})")
    run(main)


def test_files_changed_while_down_show_up_soon_after_start(home):
    write_skill(home / "skills", "walrus-care", description="Polish walrus tusks safely")

    async def main():
        async with Client(server_for(home)) as c:
            for _ in range(50):
                r = await c.call_tool("search_skills", {"query": "walrus tusks"})
                if r.structured_content["hits"] and r.structured_content["hits"][0]["name"] == "walrus-care":
                    return True
                await anyio.sleep(0.2)
            return False
    assert run(main)


def test_write_policy_read_only_and_propose(home):
    async def main(policy):
        async with Client(server_for(home, policy)) as c:
            return await c.call_tool("save_skill", {"action": "ARCHIVE", "name": "new-thing", "description": "d",
                                                    "body": "## Solution\n\nb\n"})
    r = run(lambda: main("read-only"))
    assert r.is_error and "read-only" in r.content[0].text
    r = run(lambda: main("propose"))
    assert not r.is_error and r.structured_content["status"] == "draft"
    assert [d["name"] for d in Library(home, embedder="none").review.list()] == ["new-thing"]


def test_resources_prompt_and_skills_extension(home):
    ref = home / "skills" / "cors-fix-nextjs-api" / "references"
    ref.mkdir()
    (ref / "headers.md").write_text("# Headers\n")

    async def main():
        async with Client(server_for(home)) as c:
            res = (await c.list_resources()).resources
            uris = {str(r.uri) for r in res}
            assert "skill://workspace/cors-fix-nextjs-api/SKILL.md" in uris
            assert "skill://workspace/cors-fix-nextjs-api/references/headers.md" in uris
            md = [r for r in res if str(r.uri).endswith("cors-fix-nextjs-api/SKILL.md")][0]
            assert md.mime_type == "text/markdown"
            body = await c.read_resource("skill://workspace/cors-fix-nextjs-api/SKILL.md")
            assert body.contents[0].text.startswith("---\nname: cors-fix-nextjs-api")
            with pytest.raises(Exception):
                await c.read_resource("skill://workspace/cors-fix-nextjs-api/../../skillshelf.db")
            tpl = (await c.list_resource_templates()).resource_templates
            assert tpl and tpl[0].uri_template.startswith("skill://")
            prompts = (await c.list_prompts()).prompts
            assert prompts[0].name == "use-skills"
            p = await c.get_prompt("use-skills", {"task": "fix CORS"})
            assert "report_outcome" in p.messages[0].content.text
    run(main)

    # the SEP-2640 listing: frontmatter plus per-file sha256
    import hashlib

    from skillshelf.mcp.server import LibraryHandle, SkillsExtension

    h = LibraryHandle(lambda: Library(home, embedder="none"))
    ext = SkillsExtension(h)
    assert ext.identifier == "io.modelcontextprotocol/skills"

    async def listing():
        from skillshelf.mcp.server import _ListParams
        return await ext._list(None, _ListParams())
    data = run(listing)
    entry = [s for s in data["skills"] if s["frontmatter"]["name"] == "cors-fix-nextjs-api"][0]
    files = {r["uri"]: r["digest"].removeprefix("sha256:") for r in entry["resources"]}
    skill_md = home / "skills" / "cors-fix-nextjs-api" / "SKILL.md"
    assert files["skill://workspace/cors-fix-nextjs-api/SKILL.md"] == hashlib.sha256(skill_md.read_bytes()).hexdigest()


def _env(home):
    env = dict(os.environ)
    env["SKILLSHELF_HOME"] = str(home)
    env["SKILLSHELF_WRITE_POLICY"] = "open"
    return env


def test_stdio_subprocess_with_real_model(home):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    params = StdioServerParameters(command=exe, args=["serve"], env=_env(home))

    async def main():
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                tools = await s.list_tools()
                assert len(tools.tools) == 6
                res = await s.call_tool("search_skills", {"query": "browser fetch to Next.js API blocked by CORS"})
                assert not res.is_error
                assert res.structured_content["hits"][0]["name"] == "cors-fix-nextjs-api"
                assert res.structured_content["degraded"] is None  # the bundled model is in use
    run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_http_transport_over_loopback_validates_origin(home):
    import httpx

    port = _free_port()
    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    proc = subprocess.Popen([exe, "serve", "--http", "--port", str(port)], env=_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(100):
            try:
                httpx.get(url, timeout=0.5)
                break
            except httpx.HTTPError:
                time.sleep(0.1)

        async def main():
            async with Client(url) as c:
                tools = await c.list_tools()
                assert [t.name for t in tools.tools][0] == "search_skills"
                r = await c.call_tool("search_skills", {"query": "docker image too big"})
                assert not r.is_error
        run(main)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}
        bad = httpx.post(url, json=init, headers={"Origin": "http://evil.example",
                                                  "Accept": "application/json, text/event-stream"})
        assert bad.status_code in (400, 403)
    finally:
        proc.terminate()
        proc.wait(10)


def test_non_loopback_bind_requires_token(home):
    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    env = _env(home)
    env.pop("SKILLSHELF_HTTP_TOKEN", None)
    p = subprocess.run([exe, "serve", "--http", "--host", "0.0.0.0", "--port", str(_free_port())], env=env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "SKILLSHELF_HTTP_TOKEN" in p.stderr


@pytest.mark.skipif(shutil.which("npx") is None, reason="needs Node's npx")
def test_mcp_inspector_cli(home):
    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    base = ["npx", "-y", "@modelcontextprotocol/inspector@0.15.0", "--cli", exe, "serve"]
    env = _env(home)

    def call(*args):
        p = subprocess.run(base + list(args), env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads(p.stdout)

    tools = call("--method", "tools/list")
    assert [t["name"] for t in tools["tools"]][:2] == ["search_skills", "get_skill"]
    res = call("--method", "tools/call", "--tool-name", "search_skills", "--tool-arg", "query=docker multi-stage")
    assert res["structuredContent"]["hits"]
    body = call("--method", "resources/read", "--uri", "skill://workspace/cors-fix-nextjs-api/SKILL.md")
    assert "cors-fix-nextjs-api" in body["contents"][0]["text"]


def test_no_confident_match_says_not_to_force_a_skill(home):
    """The teaching skill says not to force a skill onto a gap: the result says so too, instead
    of 'Next: get_skill(name), then report_outcome'."""
    async def main():
        # the model the fixture embedded with: no re-embedding under way to move the confidence
        async with Client(build_server(lambda: Library(home))) as c:
            gap = await c.call_tool("search_skills", {"query": "quantum pastry lamination schedule"})
            weak = await c.call_tool("search_skills", {"query": "zzqx vvbn"})
            fits = await c.call_tool("search_skills", {"query": "fix a CORS error in a Next.js API route"})
            return gap, weak, fits

    gap, weak, fits = run(main)
    for r in (gap, weak):
        assert not r.is_error and r.structured_content["confident"] is False
        last = [ln for ln in r.content[0].text.splitlines() if not ln.startswith("degraded:")][-1]
        assert last.startswith("no confident match (possible gap); query_id=")
        assert "Next: get_skill" not in last and "save_skill(action='ARCHIVE')" in last, last
        if r.structured_content["hits"]:
            assert "do not force one; open a weak hit only if its description clearly covers your case" in last
        else:
            assert "No skill fits: do the task yourself" in last
    assert fits.structured_content["confident"] is True
    assert "confident match; query_id=" in fits.content[0].text
    assert "Next: get_skill(name), then report_outcome." in fits.content[0].text


def test_the_closing_line_of_a_search():
    from skillshelf.mcp.replies import next_step

    line = next_step(confident=False, any_hits=True, query_id=4, read_only=False)
    assert line.startswith("no confident match (possible gap); query_id=4. None of these fits confidently: "
                           "do not force one") and line.endswith("save_skill(action='ARCHIVE').")
    assert "(then report_outcome)" in line
    line = next_step(confident=False, any_hits=False, query_id=4, read_only=False)
    assert "No skill fits: do the task yourself, then save what you learned" in line and "weak" not in line
    line = next_step(confident=False, any_hits=True, query_id=None, read_only=True)
    assert "read-only" in line and "save_skill" not in line and "report_outcome" not in line
    assert next_step(confident=True, any_hits=True, query_id=9, read_only=False) == \
        "confident match; query_id=9. Next: get_skill(name), then report_outcome."


@pytest.mark.parametrize("uri", ["skill://workspace/cors-fix-nextjs-api/%00",
                                 "skill://workspace/cors-fix-nextjs-api/a%00b.md",
                                 "skill://workspace%00/cors-fix-nextjs-api/SKILL.md",
                                 "skill://workspace/cors-fix-nextjs-api/%1b%5b2J"])
def test_a_resource_uri_with_a_control_character_is_invalid_params(home, uri, caplog):
    """A NUL byte reached Path.resolve and came back as {"code": 0, "message": "embedded null
    byte"} with a traceback in the log: it is a bad URI like any other (-32602)."""
    from mcp import MCPError

    from skillshelf.mcp.server import LibraryHandle, SkillsExtension, _GetParams

    async def main():
        async with Client(server_for(home)) as c:
            with pytest.raises(MCPError) as err:
                await c.read_resource(uri)
        # the Skills Extension's skills/get resolves a URI the same way
        ext = SkillsExtension(LibraryHandle(lambda: Library(home, embedder="none")))
        with pytest.raises(MCPError) as err2:
            await ext._get(None, _GetParams(uri=uri))
        return err.value, err2.value

    with caplog.at_level("INFO"):
        got = run(main)
    for e in got:
        assert e.code == -32602, (e.code, e.message)
        assert "bad skill URI" in e.message and "Fix: " in e.message
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


def test_a_skill_merged_away_says_into_which_when_an_agent_reads_it(home):
    async def main():
        async with Client(server_for(home)) as c:
            m = await c.call_tool("save_skill", {"action": "MERGE", "name": "docker-tips",
                                                 "description": "Docker build tips: cache layers, multi-stage builds",
                                                 "body": "## Tips\n\nCache the dependency layer.\n",
                                                 "source_skill_names": "docker-tip-0, docker-tip-1"})
            assert not m.is_error, m.content[0].text
            g = await c.call_tool("get_skill", {"name": "docker-tip-0"})
            assert not g.is_error
            assert "Note: this skill is merged into docker-tips: read docker-tips instead." in g.content[0].text
            assert g.structured_content["metadata"]["status"] == "merged into docker-tips: read docker-tips instead"
            live = await c.call_tool("get_skill", {"name": "docker-tips"})
            assert "Note: this skill is" not in live.content[0].text
            assert live.structured_content["metadata"]["status"] is None
    run(main)
