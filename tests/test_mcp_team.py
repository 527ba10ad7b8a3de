"""The MCP server on a team store (a real PostgreSQL), spoken to by the mcp SDK's clients: over
Streamable HTTP every request needs a token of its own, on loopback too, checked against the
store each time (a missing, wrong or revoked token is 401; a store that cannot check it lets
nobody in, 503, and answers again once it can); each tool needs its role (``access.NEEDS``)
and a refusal is an ``isError`` naming the role needed; what is logged and saved carries the
token's name, whatever the client calls itself. A stdio server serves one token,
``SKILLSHELF_TOKEN``, and does not start without a valid one."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest
from conftest import write_skill
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation

from skillshelf import Library
from skillshelf.mcp.server import build_server

EXE = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
PEOPLE = {"reader": "rita", "agent": "ci-agent", "curator": "alice", "admin": "ops"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SPOOF = Implementation(name="someone-else", version="1")     # what a client may call itself


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def team(tmp_path, pg_url):
    """A team store with one skill in a read-only root (indexed in the servers' home, so a
    search finds it from the first request), and a token per role."""
    root = tmp_path / "root"
    write_skill(root, "web/cors-fix", description="Fix CORS errors in Next.js API routes and preflight OPTIONS",
                body="## Solution\n\nAdd Access-Control-Allow-Origin headers.\n")
    with Library(home=tmp_path / "server", roots=[root], embedder="none", auto_sync=False, store=pg_url) as lib:
        assert lib.team
        lib.sync()
        tokens = {role: lib.add_token(name, role) for role, name in PEOPLE.items()}
    return {"url": pg_url, "root": root, "tokens": tokens, "tmp": tmp_path}


def _env(team: dict, **extra: str) -> dict[str, str]:
    env = {**os.environ, "SKILLSHELF_STORE": team["url"], "SKILLSHELF_EMBEDDER": "none",
           "SKILLSHELF_HOME": str(team["tmp"] / "server")}
    for key in ("SKILLSHELF_HTTP_TOKEN", "SKILLSHELF_TOKEN", "SKILLSHELF_WRITE_POLICY"):
        env.pop(key, None)
    return env | extra


class Server:
    """``skillshelf --root ROOT serve --http`` on the team store, on a free port."""

    def __init__(self, team: dict, *args: str, store_flag: bool = False, **env: str):
        """The store is SKILLSHELF_STORE, or with ``store_flag`` serve's ``--store URL``."""
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.home = team["tmp"] / "server"
        self.err: str | None = None
        environ = _env(team, **env)
        if store_flag:
            args = (*args, "--store", environ.pop("SKILLSHELF_STORE"))
        self.proc = subprocess.Popen([EXE, "--root", str(team["root"]), "serve", "--http", "--port", str(self.port),
                                      *args], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url, timeout=1)
                return
            except httpx.HTTPError:
                if self.proc.poll() is not None:
                    raise AssertionError(self.proc.stderr.read().decode())
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("the server did not answer within 60 s")
                time.sleep(0.1)

    def post(self, body: dict, *auth: str, **headers: str) -> httpx.Response:
        h = [*HEADERS.items(), *headers.items(), *(("Authorization", a) for a in auth)]
        return httpx.post(self.url, content=json.dumps(body), headers=h, timeout=30)

    def stop(self) -> str:
        """Stop the server (SIGTERM); what it said on stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.err is None:
            self.err = self.proc.stderr.read().decode(errors="replace")
        return self.err

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def session(url: str, token: str | None):
    """An SDK client over Streamable HTTP, sending ``token`` (if any) and a name of its own choosing."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    class _Session:
        async def __aenter__(self):
            self.http = await create_mcp_http_client(headers=headers).__aenter__()
            self.client = Client(streamable_http_client(url, http_client=self.http), client_info=SPOOF)
            try:
                return await self.client.__aenter__()
            except BaseException:
                await self.http.__aexit__(None, None, None)
                raise

        async def __aexit__(self, *exc):
            try:
                await self.client.__aexit__(*exc)
            finally:
                await self.http.__aexit__(None, None, None)

    return _Session()


def run(fn, *args):
    return anyio.run(fn, *args)


def text(result) -> str:
    return " ".join(c.text for c in result.content if getattr(c, "text", None))


# --- HTTP: who may come in ---------------------------------------------------------------------

def test_without_a_token_or_with_a_wrong_one_nothing_answers(team):
    """Loopback too: no token, a wrong or revoked one, another scheme, the old shared token,
    an oversized one -- 401 with WWW-Authenticate: Bearer and the fix; a token of the store is
    let in from any Host (the token is the protection)."""
    agent = team["tokens"]["agent"]
    shared = "a-shared-token-of-the-single-user-mode"
    with Server(team, "--host", "127.0.0.1", store_flag=True, SKILLSHELF_HTTP_TOKEN=shared) as srv:
        for auth in [(), ("Bearer wrong-token",), (f"Basic {agent}",), (f"Bearer {shared}",), ("Bearer " + "x" * 600,),
                     (f"Bearer {agent}x",)]:
            r = srv.post(INIT, *auth)
            assert r.status_code == 401, (auth, r.status_code, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
            assert "tokens add NAME --role" in r.text and "Authorization: Bearer <token>" in r.text
        assert "of your own" in srv.post(INIT).text
        assert srv.post(INIT, f"Bearer {agent}", f"Bearer {agent}").status_code == 400
        # the query string is no way in either
        r = httpx.post(srv.url + f"?token={agent}", content=json.dumps(INIT), headers=HEADERS, timeout=30)
        assert r.status_code == 401
        # any Host a client uses to reach the server, with a token of the store
        assert srv.post(INIT, f"Bearer {agent}", Host=f"skills.example.com:{srv.port}").status_code == 200
        assert srv.post(INIT, f"bearer  {agent}").status_code == 200

        async def sdk():
            with pytest.raises(Exception):      # the SDK's client cannot even connect
                async with session(srv.url, None) as c:
                    await c.list_tools()
            with pytest.raises(Exception):
                async with session(srv.url, "not-a-token-of-this-store") as c:
                    await c.list_tools()
            async with session(srv.url, agent) as c:
                assert (await c.list_tools()).tools
        run(sdk)
    err = srv.stop()
    assert "SKILLSHELF_HTTP_TOKEN plays no part" in err


def test_a_token_is_checked_on_every_request_so_revoking_it_shuts_the_door_at_once(team):
    """A session opened with a token is not a pass: each request is checked against the store,
    so a revoked token is refused on its next request, with no restart. (Bound beyond
    loopback without SKILLSHELF_HTTP_TOKEN: each client's token is the protection.)"""
    with Server(team, "--host", "0.0.0.0") as srv:
        init = srv.post(INIT, f"Bearer {team['tokens']['reader']}")
        assert init.status_code == 200
        sid = init.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        with_session = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        assert srv.post(listing, **with_session).status_code == 401      # the session alone is no token
        assert srv.post(listing, f"Bearer {team['tokens']['reader']}", **with_session).status_code == 200
        with Library(home=team["tmp"] / "admin", embedder="none", auto_sync=False, store=team["url"]) as lib:
            lib.revoke_token("rita")
        assert srv.post(listing, f"Bearer {team['tokens']['reader']}", **with_session).status_code == 401


def test_a_store_that_cannot_check_tokens_lets_nobody_in_until_it_can(team):
    """The store failing (here: its tokens table gone) is a 503 naming the store and the
    fix, never a request let in; once it is back the same server answers again."""
    agent = team["tokens"]["agent"]
    with Server(team) as srv:
        assert srv.post(INIT, f"Bearer {agent}").status_code == 200
        rows(team["url"], "ALTER TABLE tokens RENAME TO tokens_away")
        try:
            r = srv.post(INIT, f"Bearer {agent}")
            assert r.status_code == 503, r.text
            assert "cannot check the token" in r.text and "team store" in r.text and "Fix:" in r.text
            assert "127.0.0.1" in r.text
        finally:
            rows(team["url"], "ALTER TABLE tokens_away RENAME TO tokens")
        assert srv.post(INIT, f"Bearer {agent}").status_code == 200


# --- HTTP: roles and attribution ---------------------------------------------------------------

def test_a_reader_searches_but_its_outcomes_and_saves_are_refused_naming_the_agent_role(team):
    with Server(team, "--write-policy", "open") as srv:
        async def main():
            async with session(srv.url, team["tokens"]["reader"]) as c:
                found = await c.call_tool("search_skills", {"query": "CORS error in a Next.js API route"})
                assert not found.is_error, text(found)
                assert found.structured_content["hits"][0]["name"] == "cors-fix"
                assert not (await c.call_tool("get_skill", {"name": "cors-fix"})).is_error
                assert not (await c.call_tool("skill_stats", {})).is_error
                res = await c.call_tool("report_outcome", {"skill": "cors-fix", "worked": True})
                assert res.is_error
                assert "needs the agent role" in text(res) and "reader" in text(res)
                assert "tokens add NAME --role agent" in text(res)
                res = await c.call_tool("save_skill", {"action": "ARCHIVE", "name": "reader-skill",
                                                       "description": "should not be saved", "body": "# x\n"})
                assert res.is_error and "needs the agent role" in text(res)
                res = await c.call_tool("reindex", {})
                assert res.is_error and "needs the curator role" in text(res)
        run(main)
    assert rows(team["url"], "SELECT count(*) FROM outcomes") == [(0,)]
    assert not (srv.home / "team").exists() or not list((srv.home).rglob("reader-skill"))


def test_an_agents_searches_and_outcomes_carry_the_tokens_name_not_the_clients(team):
    """clientInfo says "someone-else": the usage rows say ci-agent (the token's name), so
    learning's per-client cap counts by token."""
    with Server(team) as srv:
        async def main():
            async with session(srv.url, team["tokens"]["agent"]) as c:
                found = await c.call_tool("search_skills", {"query": "CORS error in a Next.js API route"})
                qid = found.structured_content["query_id"]
                assert qid is not None, text(found)
                res = await c.call_tool("report_outcome", {"skill": "cors-fix", "worked": True, "query_id": qid,
                                                           "note": "headers added"})
                assert not res.is_error, text(res)
                return qid
        qid = run(main)
    assert rows(team["url"], "SELECT client FROM queries WHERE id = %s", (qid,)) == [("ci-agent",)]
    assert rows(team["url"], "SELECT name, worked, client, query_id FROM outcomes") == [("cors-fix", 1, "ci-agent", qid)]


def test_a_save_is_recorded_under_the_tokens_name_whatever_author_it_sends(team):
    with Server(team, "--write-policy", "open") as srv:
        async def main():
            async with session(srv.url, team["tokens"]["agent"]) as c:
                res = await c.call_tool("save_skill", {
                    "action": "ARCHIVE", "name": "deploy-previews", "description": "Preview apps per pull request",
                    "body": "## Solution\n\nfly deploy --app pr-$PR\n", "author": "someone-else"})
                assert not res.is_error, text(res)
                assert res.structured_content["status"] == "saved"
        run(main)
    srv.stop()
    with Library(home=srv.home, roots=[team["root"]], embedder="none", auto_sync=False, store=team["url"]) as lib:
        entries = lib.history("deploy-previews")["changelog"]
    assert [e["author"] for e in entries] == ["ci-agent"]


def test_an_agents_save_under_the_propose_policy_is_a_draft_by_the_token(team):
    with Server(team, "--write-policy", "propose") as srv:
        async def main():
            async with session(srv.url, team["tokens"]["curator"]) as c:    # a curator's agent too: a draft
                res = await c.call_tool("save_skill", {
                    "action": "FIX", "target_skill_name": "cors-fix", "lesson": "OPTIONS needs a 204",
                    "author": "someone-else"})
                assert not res.is_error, text(res)
                assert res.structured_content["status"] == "draft", res.structured_content
        run(main)
    srv.stop()
    with Library(home=srv.home, roots=[team["root"]], embedder="none", auto_sync=False, store=team["url"]) as lib:
        drafts = lib.review.list()
    assert [d.get("author") for d in drafts] == ["alice"], drafts


def test_resources_need_a_token_and_a_reader_may_list_and_read_them(team):
    with Server(team) as srv:
        listing = {"jsonrpc": "2.0", "id": 2, "method": "resources/list"}
        assert srv.post(listing).status_code == 401

        async def main():
            async with session(srv.url, team["tokens"]["reader"]) as c:
                res = await c.list_resources()
                uris = [str(r.uri) for r in res.resources]
                assert any(u.endswith("/SKILL.md") for u in uris), uris
                body = await c.read_resource(next(u for u in uris if u.endswith("/SKILL.md")))
                assert "Access-Control-Allow-Origin" in body.contents[0].text
        run(main)


def test_a_team_servers_outcomes_do_not_queue_behind_its_local_index_writer(team):
    """A team store's outcomes are written to PostgreSQL, which takes many writers at once:
    they no longer wait for this server's local database writer (held by an index
    transaction, or by every other report of the server in turn) and are not refused as
    "the index is being written" after 2 s."""
    lib = Library(home=team["tmp"] / "server", roots=[team["root"]], embedder="none", auto_sync=False,
                  store=team["url"])
    server = build_server(lambda: lib, team=True, token=team["tokens"]["agent"])
    held, release = threading.Event(), threading.Event()

    def index_transaction():
        with lib.writer(what="a long index write"):
            held.set()
            release.wait(20)

    writer = threading.Thread(target=index_transaction)
    try:
        assert server.handle.opened() is None
        # a running server's first read catches up with the store through its index writer (as
        # ``indexer.start()`` does at once): done here first, so what is timed is the report alone
        assert lib.get("cors-fix").name == "cors-fix"
        writer.start()
        assert held.wait(10)

        async def main():
            async with Client(server) as c:
                t0 = time.monotonic()
                res = await c.call_tool("report_outcome", {"skill": "cors-fix", "worked": True})
                assert not res.is_error, text(res)
                assert time.monotonic() - t0 < 1.5
        run(main)
    finally:
        release.set()
        if writer.is_alive():
            writer.join()
        server.handle.close(5)
    assert rows(team["url"], "SELECT client FROM outcomes") == [("ci-agent",)]


# --- stdio: one person's server ------------------------------------------------------------------

def _stdio(team: dict, token: str | None) -> StdioServerParameters:
    env = _env(team) | ({"SKILLSHELF_TOKEN": token} if token is not None else {})
    return StdioServerParameters(command=EXE, args=["--root", str(team["root"]), "serve"], env=env)


@pytest.mark.parametrize("token, said", [(None, "SKILLSHELF_TOKEN is not set"),
                                         ("", "SKILLSHELF_TOKEN is not set"),
                                         ("not-a-token-of-this-store", "not a token of this team store")])
def test_a_stdio_server_on_a_team_store_does_not_start_without_a_valid_token(team, token, said):
    env = _env(team) | ({"SKILLSHELF_TOKEN": token} if token is not None else {})
    p = subprocess.run([EXE, "--root", str(team["root"]), "serve"], env=env, input="", capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert said in lines[0] and "SKILLSHELF_TOKEN" in lines[0] and "tokens add NAME" in lines[0]
    assert p.stdout == ""


def test_a_stdio_server_acts_as_its_token(team):
    async def main():
        async with Client(_stdio(team, team["tokens"]["reader"]), client_info=SPOOF) as c:
            assert not (await c.call_tool("search_skills", {"query": "CORS preflight"})).is_error
            res = await c.call_tool("report_outcome", {"skill": "cors-fix", "worked": False})
            assert res.is_error and "needs the agent role" in text(res)
        async with Client(_stdio(team, team["tokens"]["agent"]), client_info=SPOOF) as c:
            found = await c.call_tool("search_skills", {"query": "CORS preflight"})
            res = await c.call_tool("report_outcome", {"skill": "cors-fix", "worked": False,
                                                       "query_id": found.structured_content["query_id"]})
            assert not res.is_error, text(res)
            # revoked while the server runs: its next call is refused
            with Library(home=team["tmp"] / "admin", embedder="none", auto_sync=False, store=team["url"]) as lib:
                lib.revoke_token("ci-agent")
            res = await c.call_tool("search_skills", {"query": "CORS preflight"})
            assert res.is_error and "not a token of this team store" in text(res)
            with pytest.raises(MCPError):
                await c.list_resources()
    run(main)
    assert rows(team["url"], "SELECT client FROM queries ORDER BY id") == [("rita",), ("ci-agent",)]
    assert rows(team["url"], "SELECT client, worked FROM outcomes") == [("ci-agent", 0)]


# --- a store that cannot be reached at start -----------------------------------------------------

@pytest.mark.parametrize("transport", [["serve", "--http", "--port", "0"], ["serve"]])
def test_a_team_store_that_cannot_be_reached_at_start_is_one_line_and_exit_1(tmp_path, transport):
    """Instead of a server answering every request with the same failure: one line naming
    the store (without its password) and the fix, before anything says it is listening."""
    if "--port" in transport:
        transport[-1] = str(_free_port())
    with socket.socket() as s:          # a port where no PostgreSQL listens
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    env = {**os.environ, "SKILLSHELF_HOME": str(tmp_path / "h"), "SKILLSHELF_EMBEDDER": "none",
           "SKILLSHELF_STORE": f"postgresql://team:s3cret-pw@127.0.0.1:{dead}/skills", "SKILLSHELF_TOKEN": "t" * 43}
    p = subprocess.run([EXE, *transport], env=env, input="", capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("error: ") and f"cannot reach the team store at postgresql://team:***@127.0.0.1:{dead}" \
        in lines[0] and "Fix:" in lines[0]
    assert "s3cret-pw" not in p.stderr and "http://" not in p.stderr and p.stdout == ""
