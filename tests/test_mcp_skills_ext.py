"""The Skills Extension (SEP-2640) and MCP 2026-07-28 as written, checked with the official
Python SDK's client: in process (``mcp.Client(server)``) and against ``skillshelf serve`` as a
subprocess (stdio and Streamable HTTP). One test per item the issue found by hand:

1. each file of an entry carries ``digest: "sha256:<hex>"`` and ``size`` -- of the bytes served;
2. ``frontmatter`` is the file's, verbatim (``license`` and every other key);
3. skills/list and skills/get carry ``ttlMs`` and ``cacheScope`` on 2026-07-28;
4. ``resources`` is complete: no cap at 200, a nested skill's files in the enclosing entry;
5. skills/get of a supporting file's URI is -32602;
6. an unknown prompt is -32602; 7. an unknown tool is -32602 (a protocol error, not a result);
8. a subscribed client hears of an edit, and of a new skill, within 2 s, on both wires;
9. resources/directory/read, declared with ``directoryRead``.
And the SHOULD-level ones: -32020, -32600, no made-up session ids, every version in
``supportedVersions``, -32002 on a 2025-11-25 session, whole descriptions, no server path in an
error, a priming event on SSE responses."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from mcp import Client, MCPError, StdioServerParameters
from mcp_types import Request
from pydantic import TypeAdapter

from skillshelf import Library
from skillshelf.mcp.server import build_server

LONG = ("Extract text and tables from PDF files, fill PDF forms and assemble documents. Use when a task reads, "
        "fills, merges or splits PDFs, or when a form must be filled field by field from structured data that "
        "arrives as JSON, CSV or a spreadsheet export.")
assert len(LONG) > 200
SKILL = f"""---
name: pdf-processing
description: {LONG}
license: Apache-2.0
compatibility: needs python3
allowed-tools: Bash(python3:*) Read
metadata:
  version: "2.1.0"
  author: tests
---

# PDF processing

Use `scripts/extract.py`; pick a template from `templates/`.
"""
NESTED = "---\nname: regional\ndescription: Regional invoice templates for EU and UK customers\n---\n\n# Regional\n"
REFS = 260


class Raw(Request):
    """Any request: the extension's methods have no typed wrapper in the SDK's client."""

    method: str
    params: dict[str, Any] | None = None


async def call(c: Client, method: str, **params: Any) -> dict[str, Any]:
    return await c.session.send_request(Raw(method=method, params=params), TypeAdapter(dict))


def make_shelf(folder: Path) -> tuple[Path, Path]:
    """(the home, the skill folder): one skill with a licence, scripts, 260 references, a
    template folder and a nested skill inside it."""
    skill = folder / "skills" / "pdf-processing"
    (skill / "scripts").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "templates" / "regional").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (skill / "scripts" / "extract.py").write_text("print('x')\n")
    (skill / "templates" / "invoice.md").write_text("# Invoice\n")
    for i in range(REFS):
        (skill / "references" / f"form-{i:03d}.md").write_text(f"# Form {i}\n")
    (skill / "templates" / "regional" / "SKILL.md").write_text(NESTED, encoding="utf-8")
    (skill / "templates" / "regional" / "eu-invoice.md").write_text("# EU invoice\n")
    home = folder / "home"
    lib = Library.init(home, samples=False, embedder="none", auto_sync=False)
    lib.add_root(folder / "skills")
    lib.close()
    with Library(home, embedder="none", auto_sync=False) as lib:     # opened again: with the new root
        lib.sync()
    return home, skill


@pytest.fixture(scope="module")
def shelf(tmp_path_factory):
    return make_shelf(tmp_path_factory.mktemp("ext"))


def _server(home: Path):
    return build_server(lambda: Library(home, embedder="none", auto_sync=False))


URI = "skill://skills/pdf-processing/SKILL.md"
NESTED_URI = "skill://skills/pdf-processing/templates/regional/SKILL.md"


def test_an_entry_is_the_files_as_served_with_the_frontmatter_verbatim(shelf):
    home, skill = shelf

    async def main():
        async with Client(_server(home)) as c:
            assert c.protocol_version == "2026-07-28"
            listed = await call(c, "skills/list")
            got = await call(c, "skills/get", uri=URI)
            entry = next(s for s in listed["skills"] if s["uri"] == URI)
            reads = {}
            for r in entry["resources"][:5] + entry["resources"][-3:]:
                res = await c.read_resource(r["uri"])
                reads[r["uri"]] = res.contents[0].text.encode("utf-8")
            return listed, got, entry, reads

    listed, got, entry, reads = anyio.run(main)
    # 3. the caching hints on both results
    for result in (listed, got):
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0 and result["cacheScope"] in ("public",
                                                                                                      "private")
    assert got["skill"] == entry
    # 2. the frontmatter verbatim: every key the author wrote
    head = SKILL.split("---\n")[1]
    assert entry["frontmatter"] == yaml.safe_load(head)
    assert entry["frontmatter"]["license"] == "Apache-2.0" and entry["frontmatter"]["allowed-tools"]
    # 4. complete: every file once, the SKILL.md's entry first, the nested skill's files too
    uris = [r["uri"] for r in entry["resources"]]
    assert len(uris) == len(set(uris)) == 1 + 1 + 1 + REFS + 2
    assert uris[0] == URI and NESTED_URI in uris and "skill://skills/pdf-processing/references/form-259.md" in uris
    nested = next(s for s in listed["skills"] if s["uri"] == NESTED_URI)
    assert [r["uri"] for r in nested["resources"]] == [NESTED_URI,
                                                       "skill://skills/pdf-processing/templates/regional/eu-invoice.md"]
    # 1. sha256: digests and sizes of the bytes on disk, which are the bytes a read serves
    for r in entry["resources"]:
        data = (skill / r["uri"].removeprefix("skill://skills/pdf-processing/")).read_bytes()
        assert r["digest"] == "sha256:" + hashlib.sha256(data).hexdigest() and r["size"] == len(data), r
    for r in entry["resources"]:
        if r["uri"] in reads:
            assert r["digest"] == "sha256:" + hashlib.sha256(reads[r["uri"]]).hexdigest()


def test_resources_list_has_every_file_and_whole_descriptions(shelf):
    home, _ = shelf

    async def main():
        async with Client(_server(home)) as c:
            out, cursor = [], None
            while True:
                page = await c.list_resources(cursor=cursor, cache_mode="bypass")
                out += page.resources
                if (cursor := page.next_cursor) is None:
                    return out

    resources = anyio.run(main)
    uris = [str(r.uri) for r in resources]
    mine = [u for u in uris if u.startswith("skill://skills/pdf-processing/") and "/regional/" not in u]
    assert len(mine) == 1 + 1 + 1 + REFS          # was capped at 201
    assert "skill://skills/pdf-processing/templates/regional/eu-invoice.md" in uris   # under the nested skill
    top = next(r for r in resources if str(r.uri) == URI)
    assert top.description == LONG and top.mime_type == "text/markdown"    # was cut at 200 characters


def test_skills_get_takes_only_a_skills_own_uri(shelf):
    home, _ = shelf

    async def main():
        codes = {}
        async with Client(_server(home)) as c:
            for uri in ("skill://skills/pdf-processing/references/form-001.md",     # 5. was the whole skill
                        "skill://skills/pdf-processing/templates/invoice.md",
                        "skill://skills/nope/SKILL.md", "https://example.com/SKILL.md"):
                with pytest.raises(MCPError) as err:
                    await call(c, "skills/get", uri=uri)
                codes[uri] = (err.value.code, err.value.message)
            nested = await call(c, "skills/get", uri=NESTED_URI)
        return codes, nested

    codes, nested = anyio.run(main)
    assert {c for c, _ in codes.values()} == {-32602}, codes
    assert "not a skill" in codes["skill://skills/pdf-processing/references/form-001.md"][1]
    assert nested["skill"]["frontmatter"]["name"] == "regional"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_unknown_prompt_or_tool_is_invalid_params(shelf, mode):
    home, _ = shelf

    async def main():
        async with Client(_server(home), mode=mode) as c:
            with pytest.raises(MCPError) as prompt:
                await c.get_prompt("no-such-prompt")
            with pytest.raises(MCPError) as tool:
                await c.call_tool("no_such_tool", {})
            ok = await c.get_prompt("use-skills", {"task": "fill a form"})
        return prompt.value, tool.value, ok

    prompt, tool, ok = anyio.run(main)
    assert prompt.code == -32602 and "use-skills" in prompt.message          # 6. was 0 / -32603
    assert tool.code == -32602 and "search_skills" in tool.message           # 7. was an isError result
    assert ok.messages


def test_directory_read_lists_a_skill_folder_level_by_level(shelf, tmp_path_factory):
    home, _ = shelf
    root = "skill://skills/pdf-processing"

    async def main():
        async with Client(_server(home)) as c:
            caps = c.server_capabilities.extensions["io.modelcontextprotocol/skills"]
            top = await call(c, "resources/directory/read", uri=root)
            templates = await call(c, "resources/directory/read", uri=f"{root}/templates")
            refs, cursor = [], None
            while True:
                page = await call(c, "resources/directory/read", uri=f"{root}/references",
                                  **({"cursor": cursor} if cursor else {}))
                refs += page["resources"]
                if (cursor := page.get("nextCursor")) is None:
                    break
            errors = {}
            for uri in (f"{root}/SKILL.md", f"{root}/nope", f"{root}/../pdf-processing", "skill://skills",
                        f"{root}/templates/"):
                with pytest.raises(MCPError) as err:
                    await call(c, "resources/directory/read", uri=uri)
                errors[uri] = err.value
            with pytest.raises(MCPError) as as_file:     # a folder read as a file
                await c.read_resource(f"{root}/templates")
        return caps, top, templates, refs, errors, as_file.value

    caps, top, templates, refs, errors, as_file = anyio.run(main)
    assert caps == {"directoryRead": True}
    kinds = {r["name"]: r["mimeType"] for r in top["resources"]}
    assert kinds == {"SKILL.md": "text/markdown", "references": "inode/directory", "scripts": "inode/directory",
                     "templates": "inode/directory"}
    assert {r["uri"] for r in top["resources"]} >= {f"{root}/SKILL.md", f"{root}/templates"}
    assert {r["name"]: r["mimeType"] for r in templates["resources"]} == {"invoice.md": "text/markdown",
                                                                          "regional": "inode/directory"}
    assert len(refs) == REFS and len({r["uri"] for r in refs}) == REFS
    assert {e.code for e in errors.values()} == {-32602}, errors
    server_path = str(home.parent)
    assert not any(server_path in e.message for e in [*errors.values(), as_file])
    assert as_file.code == -32602 and "folder" in as_file.message


def test_an_unknown_resource_is_32002_on_a_2025_session_and_32602_on_2026(shelf):
    home, _ = shelf

    async def main():
        codes = {}
        for mode in ("legacy", "auto"):
            async with Client(_server(home), mode=mode) as c:
                with pytest.raises(MCPError) as err:
                    await c.read_resource("skill://skills/pdf-processing/no-such-file.md")
                codes[c.protocol_version] = err.value.code
        return codes

    assert anyio.run(main) == {"2025-11-25": -32002, "2026-07-28": -32602}


# --- against `skillshelf serve` -------------------------------------------------------------------

def _exe() -> str:
    return shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "SKILLSHELF_HOME": str(home), "SKILLSHELF_EMBEDDER": "none"}
    env.pop("SKILLSHELF_HTTP_TOKEN", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path):
    home, skill = make_shelf(tmp_path)
    port = _free_port()
    proc = subprocess.Popen([_exe(), "serve", "--http", "--port", str(port)], env=_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode()) from None
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp", skill
    proc.terminate()
    proc.wait(10)


def _edit(p: Path) -> None:
    p.write_text(p.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")


def _new_skill(skill: Path) -> None:
    new = skill.parent / "merge-pdfs"
    new.mkdir()
    (new / "SKILL.md").write_text("---\nname: merge-pdfs\ndescription: Merge PDF files in order\n---\n\n# Merge\n",
                                  encoding="utf-8")


def test_a_listening_client_hears_of_an_edit_and_a_new_skill_within_2s_over_http(http_server):
    url, skill = http_server
    ref = "skill://skills/pdf-processing/references/form-007.md"

    async def main():
        async with Client(url) as c:
            assert c.protocol_version == "2026-07-28"
            async with c.listen(resource_subscriptions=[URI, ref], resources_list_changed=True) as sub:
                await anyio.sleep(0.3)
                heard: list[tuple[str, float]] = []
                t0 = time.monotonic()
                _edit(skill / "references" / "form-007.md")
                with anyio.fail_after(2):
                    async for event in sub:
                        heard.append((type(event).__name__ + ":" + getattr(event, "uri", ""), time.monotonic() - t0))
                        break
                t0 = time.monotonic()
                _new_skill(skill)
                with anyio.fail_after(2):
                    async for event in sub:
                        heard.append((type(event).__name__, time.monotonic() - t0))
                        if type(event).__name__ == "ResourcesListChanged":
                            break
                return heard

    heard = anyio.run(main)
    assert heard[0][0] == f"ResourceUpdated:{ref}" and heard[0][1] < 2
    assert heard[-1][0] == "ResourcesListChanged" and heard[-1][1] < 2


def test_a_subscribed_2025_session_hears_of_an_edit_and_a_new_skill_within_2s_over_stdio(tmp_path):
    home, skill = make_shelf(tmp_path)
    heard: list[tuple[str, str, float]] = []
    t0 = [0.0]

    async def handler(message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", "")
        if method.startswith("notifications/resources/"):
            uri = str(getattr(getattr(root, "params", None), "uri", "") or "")
            heard.append((method, uri, time.monotonic() - t0[0]))

    async def until(method: str) -> None:
        with anyio.fail_after(2):
            while not any(h[0] == method for h in heard):
                await anyio.sleep(0.05)

    async def main():
        params = StdioServerParameters(command=_exe(), args=["serve"], env=_env(home))
        async with Client(params, mode="legacy", message_handler=handler) as c:
            assert c.server_capabilities.resources.subscribe and c.server_capabilities.resources.list_changed
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await c.subscribe_resource(URI)
            await c.list_resources()
            await anyio.sleep(0.3)
            t0[0] = time.monotonic()
            _edit(skill / "SKILL.md")
            await until("notifications/resources/updated")
            t0[0] = time.monotonic()
            _new_skill(skill)
            await until("notifications/resources/list_changed")

    anyio.run(main)
    updated = [h for h in heard if h[0] == "notifications/resources/updated"]
    assert updated[0][1] == URI and updated[0][2] < 2
    assert next(h for h in heard if h[0] == "notifications/resources/list_changed")[2] < 2


# --- the SHOULD-level items, on the wire ---------------------------------------------------------

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _init(url: str) -> str:
    r = httpx.post(url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, timeout=10)
    sid = r.headers["mcp-session-id"]
    httpx.post(url, headers={**ACCEPT, "mcp-session-id": sid, "MCP-Protocol-Version": "2025-11-25"},
               json={"jsonrpc": "2.0", "method": "notifications/initialized"}, timeout=10)
    return sid


def _json_of(r: httpx.Response) -> dict:
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:") and line[5:].strip()]
        return json.loads(data[-1])
    return r.json()


def test_the_http_wire_says_what_the_spec_says(http_server):
    url, _ = http_server
    sid = _init(url)
    legacy = {**ACCEPT, "mcp-session-id": sid, "MCP-Protocol-Version": "2025-11-25"}
    # a 2025 header with a 2026 _meta: HeaderMismatch (was -32600)
    r = httpx.post(url, headers=legacy, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020 and r.json()["id"] == 2
    # JSON that is not JSON-RPC: Invalid Request (was -32602 with pydantic's report)
    r = httpx.post(url, headers=legacy, json={"jsonrpc": "2.0", "id": 3}, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600 and "\n" not in r.json()["error"]["message"]
    # a refused request names no session that was never made (it named a new one each time)
    for body in ({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, "{not json"):
        r = httpx.post(url, headers=ACCEPT, content=body if isinstance(body, str) else json.dumps(body), timeout=10)
        assert r.status_code >= 400 and "mcp-session-id" not in r.headers, r.headers
    r = httpx.post(url, headers=legacy, json={"jsonrpc": "2.0", "id": 3}, timeout=10)
    assert r.headers.get("mcp-session-id") == sid         # its own session is still named
    # every SSE response opens with a priming event: an id, empty data and a retry
    r = httpx.post(url, headers=legacy, json={"jsonrpc": "2.0", "id": 5, "method": "ping"}, timeout=10)
    first = r.text.split("\n\n")[0].splitlines()
    assert any(x.startswith("id:") for x in first) and "data: " in [x.rstrip() + " " for x in first] or \
        any(x.strip() == "data:" for x in first)
    assert any(x.startswith("retry:") for x in first)
    assert _json_of(r)["result"] == {}
    # server/discover lists every version it negotiates
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    r = httpx.post(url, headers={**ACCEPT, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
                   json={"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {"_meta": meta}}, timeout=10)
    versions = _json_of(r)["result"]["supportedVersions"]
    assert versions[0] == "2026-07-28" and "2025-11-25" in versions and "2025-06-18" in versions


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
def test_the_extension_is_declared_in_initialize_on_the_stdio_wire(tmp_path, version):
    """SEP-2640, "Capability Declaration": servers declare the extension in their initialize response
    (capabilities.extensions). The SDK declared it, then dropped it from a 2025-11-25 result (that
    version's schema has no such key): a host could not learn that skills/list is served."""
    home = tmp_path / "h"
    Library.init(home, embedder="none", auto_sync=False).close()
    proc = subprocess.Popen([_exe(), "serve"], env=_env(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {"extensions": {"io.modelcontextprotocol/skills": {}}},
            "clientInfo": {"name": "t", "version": "1"}}}).encode() + b"\n")
        proc.stdin.flush()
        result = json.loads(proc.stdout.readline())["result"]
    finally:
        proc.kill()
        proc.wait(10)
    assert result["protocolVersion"] == version
    assert result["capabilities"]["extensions"] == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
    assert {"tools", "resources", "prompts"} <= set(result["capabilities"])


def test_a_deeply_nested_stdio_request_gets_an_error_and_the_server_goes_on(tmp_path):
    home = tmp_path / "h"
    Library.init(home, embedder="none", auto_sync=False).close()
    proc = subprocess.Popen([_exe(), "serve"], env=_env(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()

    send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    send("[" * 6000)                                                               # 6 KB of '['
    send('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":' + "[" * 300 + "]" * 300 + "}}")
    send('{"jsonrpc":"2.0","id":8,"method":"ping","params":' + "[" * 6000 + "]" * 6000 + "}")
    send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    time.sleep(1.5)
    alive = proc.poll() is None
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.close()
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(10)
    answers = [json.loads(line) for line in (first + out).decode().splitlines()]
    assert alive, err.decode()[-2000:]
    assert b"RecursionError" not in err and b"Traceback" not in err, err.decode()[-2000:]
    by_id = {a.get("id"): a for a in answers[1:]}
    assert 2 in by_id, answers
    assert by_id[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}           # it went on
    assert by_id[7]["error"]["code"] == -32600
    nulls = [a for a in answers if a.get("id") is None]
    assert len(nulls) == 2 and {a["error"]["code"] for a in nulls} == {-32700}
    assert all("[[[" not in a["error"]["message"] for a in nulls)


def test_a_file_that_cannot_be_read_is_refused_without_the_servers_path(tmp_path, monkeypatch):
    """A read that fails (permissions, I/O) names the URI, never the server's path."""
    import errno

    import skillshelf.files as files

    home, skill = make_shelf(tmp_path)
    real = files.read_bounded

    def refuse(path, limit=files.MAX_SKILL_BYTES):
        if str(path).endswith("form-003.md"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, limit)

    monkeypatch.setattr(files, "read_bounded", refuse)

    async def main():
        async with Client(_server(home)) as c:
            with pytest.raises(MCPError) as err:
                await c.read_resource("skill://skills/pdf-processing/references/form-003.md")
        return err.value

    err = anyio.run(main)
    assert str(tmp_path) not in err.message and "form-003.md" in err.message and "Permission denied" in err.message


def test_a_skill_whose_folder_is_not_its_name_is_not_an_extension_entry(tmp_path):
    """SEP-2640: an entry's URI ends in the skill's name. A skill in a folder named otherwise (real
    collections have them) is left out of skills/list and refused by skills/get; it is still
    read as resources."""
    home, skill = make_shelf(tmp_path)
    odd = skill.parent / "PDF Tools"
    odd.mkdir()
    (odd / "SKILL.md").write_text("---\nname: pdf-tools\ndescription: Small PDF tools\n---\n\n# Tools\n",
                                  encoding="utf-8")
    with Library(home, embedder="none", auto_sync=False) as lib:
        lib.sync()
        uri = lib.skill_uri(lib.get("pdf-tools").id)

    async def main():
        async with Client(_server(home)) as c:
            listed = await call(c, "skills/list")
            with pytest.raises(MCPError) as err:
                await call(c, "skills/get", uri=uri)
            read = await c.read_resource(uri)
        return listed, err.value, read

    listed, err, read = anyio.run(main)
    assert uri not in [s["uri"] for s in listed["skills"]] and URI in [s["uri"] for s in listed["skills"]]
    for entry in listed["skills"]:
        assert entry["uri"].rsplit("/", 2)[-2] == entry["frontmatter"]["name"]
    assert err.code == -32602 and "folder" in err.message
    assert "# Tools" in read.contents[0].text
    # the owner is told which skills hosts reading the extension do not see, and why
    with Library(home, embedder="none", auto_sync=False) as lib:
        line = next(c for c in lib.doctor().checks if c.name == "skills extension")
    assert line.status == "warn" and "pdf-tools (folder PDF Tools)" in line.detail and "rename" in line.detail
