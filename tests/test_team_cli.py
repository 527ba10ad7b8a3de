"""The team commands as a person or a script meets them: the real ``skillshelf`` console script
as a subprocess against a real PostgreSQL. ``--store URL`` before the command selects the team
store; ``tokens add`` prints the token once, alone on its last line; ``tokens list`` never
shows one; ``migrate-store`` copies a local library and says what it copied, once; every
mistake is one line on stderr with the fix, exit 1 (2 for a malformed command line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_entry import one_line, sk


def rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def with_password(url: str, password: str = "s3cret-pw") -> str:
    """``url`` with a password in it (the throwaway cluster trusts every connection)."""
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{host}"


# --- tokens ----------------------------------------------------------------------------------

def test_a_token_is_printed_once_alone_on_the_last_line_and_never_listed(tmp_path, pg_url):
    home = tmp_path / "server"
    p = sk("--store", pg_url, "tokens", "add", "ci-agent", "--role", "agent", home=home)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    token = lines[-1]
    assert len(token) >= 32 and token.strip() == token and " " not in token
    assert "shown only now" in p.stdout
    # the store keeps its hash, never the token
    [(name, role, digest)] = rows(pg_url, "SELECT name, role, hash FROM tokens")
    assert (name, role) == ("ci-agent", "agent") and token not in digest
    import hashlib

    assert digest == hashlib.sha256(token.encode()).hexdigest()
    sk("--store", pg_url, "tokens", "add", "ann", "--role", "curator", home=home)
    p = sk("--store", pg_url, "tokens", "list", home=home)
    assert p.returncode == 0 and token not in p.stdout
    table = [line.split() for line in p.stdout.splitlines()]
    assert table[0] == ["name", "role", "created", "last", "used"]
    assert [r[:2] for r in table[1:]] == [["ann", "curator"], ["ci-agent", "agent"]]
    assert all(r[-1] == "never" for r in table[1:])
    p = sk("--store", pg_url, "tokens", "list", "--json", home=home)
    data = json.loads(p.stdout)
    assert [(t["name"], t["role"], t["last_used"]) for t in data] == [("ann", "curator", None),
                                                                      ("ci-agent", "agent", None)]
    assert token not in p.stdout and all(set(t) == {"name", "role", "created", "last_used"} for t in data)


def test_a_revoked_token_is_gone_and_revoking_it_again_says_so(tmp_path, pg_url):
    home = tmp_path / "server"
    assert sk("--store", pg_url, "tokens", "add", "bob", "--role", "reader", home=home).returncode == 0
    p = sk("--store", pg_url, "tokens", "revoke", "bob", home=home)
    assert p.returncode == 0 and "revoked" in p.stdout
    assert rows(pg_url, "SELECT name FROM tokens") == []
    p = sk("--store", pg_url, "tokens", "revoke", "bob", home=home)
    assert p.returncode == 1
    assert "no token named 'bob'" in one_line(p) and "tokens list" in one_line(p)


def test_a_name_taken_or_a_role_that_is_none_is_refused(tmp_path, pg_url):
    home = tmp_path / "server"
    assert sk("--store", pg_url, "tokens", "add", "ann", "--role", "admin", home=home).returncode == 0
    p = sk("--store", pg_url, "tokens", "add", "ann", "--role", "reader", home=home)
    assert p.returncode == 1 and "exists already" in one_line(p) and "revoke" in one_line(p)
    assert p.stdout == ""
    p = sk("--store", pg_url, "tokens", "add", "bob", "--role", "boss", home=home)
    assert p.returncode == 2 and "reader, agent, curator, admin" in one_line(p)
    p = sk("--store", pg_url, "tokens", "add", "bob", home=home)
    assert p.returncode == 2 and "--role" in one_line(p)
    p = sk("--store", pg_url, "tokens", "add", "bad name!", "--role", "reader", home=home)
    assert p.returncode == 1 and "cannot name a token" in one_line(p)
    assert [r[0] for r in rows(pg_url, "SELECT name FROM tokens")] == ["ann"]


def test_tokens_without_a_team_store_say_where_tokens_live(tmp_path):
    home = tmp_path / "never-made"
    for args in (("tokens", "list"), ("tokens", "add", "ann", "--role", "reader"), ("tokens", "revoke", "ann")):
        p = sk(*args, home=home)
        assert p.returncode == 1, args
        line = one_line(p)
        assert "tokens belong to a team store" in line and "--store postgresql://" in line
    assert not home.exists()      # asking created nothing


def test_the_store_from_the_environment_works_and_the_flag_overrides_it(tmp_path, pg_url):
    home = tmp_path / "server"
    p = sk("tokens", "add", "env-made", "--role", "reader", home=home, env={"SKILLSHELF_STORE": pg_url})
    assert p.returncode == 0, p.stderr
    # a --store flag wins over the environment (here: a store that is not there)
    p = sk("--store", "postgresql://nobody@127.0.0.1:1/none", "tokens", "list", home=home,
           env={"SKILLSHELF_STORE": pg_url})
    assert p.returncode == 1 and "cannot reach the team store" in one_line(p)
    # and an empty --store means the local library
    p = sk("--store", "", "tokens", "list", home=home, env={"SKILLSHELF_STORE": pg_url})
    assert p.returncode == 1 and "tokens belong to a team store" in one_line(p)


# --- --store: bad values are one line, never the password ------------------------------------

def test_a_store_url_that_is_not_postgresql_is_one_line_without_the_password(tmp_path):
    p = sk("--store", "mysql://root:hunter2@db/skills", "tokens", "list", home=tmp_path / "h")
    assert p.returncode == 1
    line = one_line(p)
    assert "--store takes a PostgreSQL URL" in line and "'mysql'" in line and "postgresql://" in line
    assert "hunter2" not in p.stderr + p.stdout
    p = sk("--store", "/var/lib/skills.db", "search", "cors", home=tmp_path / "h")
    assert p.returncode == 1 and "--store takes a PostgreSQL URL" in one_line(p)


def test_an_unreachable_store_is_one_line_naming_it_without_the_password(tmp_path):
    p = sk("--store", "postgresql://ann:hunter2@127.0.0.1:1/team", "tokens", "list", home=tmp_path / "h",
           timeout=60)
    assert p.returncode == 1
    line = one_line(p)
    assert "cannot reach the team store at postgresql://ann:***@127.0.0.1:1/team" in line
    assert "doctor" in line and "hunter2" not in p.stderr


def test_store_after_the_command_says_to_put_it_before(tmp_path, pg_url):
    p = sk("tokens", "list", "--store", pg_url, home=tmp_path / "h")
    assert p.returncode == 2
    assert "--store is a global option: put it before the command" in one_line(p)


# --- migrate-store ---------------------------------------------------------------------------

@pytest.fixture
def local_home(tmp_path: Path) -> Path:
    """A local library with its three samples, two searches and an outcome."""
    home = tmp_path / "local"
    assert sk("init", home=home).returncode == 0
    p = sk("search", "CORS error in my Next.js API", "--log", "--json", home=home)
    qid = json.loads(p.stdout)["query_id"]
    sk("search", "docker image too large", "--log", home=home)
    assert sk("report-outcome", "cors-fix-nextjs-api", "--worked", "--query-id", str(qid), home=home).returncode == 0
    return home


def _counts(stdout: str) -> dict[str, tuple[int, int]]:
    out = {}
    for line in stdout.splitlines():
        parts = line.rsplit(None, 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            out[parts[0].strip()] = (int(parts[1]), int(parts[2]))
    return out


def test_migrate_store_copies_once_and_says_what_it_copied(local_home, pg_empty_url):
    url = with_password(pg_empty_url)
    p = sk("migrate-store", "--to", url, home=local_home)
    assert p.returncode == 0, p.stderr
    assert "s3cret-pw" not in p.stdout + p.stderr and ":***@" in p.stdout
    first = _counts(p.stdout)
    assert first["skills"] == (3, 0) and first["queries"] == (2, 0) and first["outcomes"] == (1, 0)
    assert first["recommendations"][0] > 0
    assert "schema was brought up to date" in p.stdout
    p = sk("migrate-store", "--to", url, home=local_home)
    assert p.returncode == 0, p.stderr
    again = _counts(p.stdout)
    assert {k: v[0] for k, v in again.items()} == dict.fromkeys(first, 0)
    assert again["queries"] == (0, 2) and again["skills"] == (0, 3)
    assert rows(pg_empty_url, "SELECT COUNT(*) FROM queries")[0][0] == 2
    # the outcome kept its query: the copy of the search it answered
    assert rows(pg_empty_url, "SELECT q.text FROM outcomes o JOIN queries q ON q.id = o.query_id") == \
        [("CORS error in my Next.js API",)]


def test_migrate_store_dry_run_writes_nothing_and_json_tells_the_same(local_home, pg_empty_url):
    p = sk("migrate-store", "--to", pg_empty_url, "--dry-run", home=local_home)
    assert p.returncode == 0, p.stderr
    assert "nothing was written" in p.stdout and _counts(p.stdout)["skills"] == (3, 0)
    assert rows(pg_empty_url, "SELECT to_regclass('schema_migrations')") == [(None,)]
    p = sk("migrate-store", "--to", pg_empty_url, "--json", home=local_home)
    data = json.loads(p.stdout)
    assert data["copied"]["skills"] == 3 and data["dry_run"] is False and data["left_out"] == []
    assert data["applied"][0] == "001_team"


def test_migrate_store_takes_the_store_flag_as_its_target(local_home, pg_url):
    p = sk("--store", pg_url, "migrate-store", home=local_home)
    assert p.returncode == 0, p.stderr
    assert rows(pg_url, "SELECT COUNT(*) FROM skills")[0][0] == 3
    p = sk("--store", pg_url, "migrate-store", "--to", "postgresql://other@127.0.0.1/x", home=local_home)
    assert p.returncode == 2 and "two different team stores" in one_line(p)


def test_migrate_store_exits_1_naming_what_it_left_out(local_home, pg_url, tmp_path):
    other = tmp_path / "other"
    assert sk("init", home=other).returncode == 0
    md = other / "skills" / "cors-fix-nextjs-api" / "SKILL.md"
    md.write_text(md.read_text(encoding="utf-8") + "\nA change only this library has.\n", encoding="utf-8")
    assert sk("migrate-store", "--to", pg_url, home=other).returncode == 0
    p = sk("migrate-store", "--to", pg_url, home=local_home)
    assert p.returncode == 1
    assert "left out (1):" in p.stdout and "cors-fix-nextjs-api" in p.stdout
    assert "1 left out of the copy" in one_line(p)
    assert _counts(p.stdout)["skills"] == (0, 2)
    text = bytes(rows(pg_url, "SELECT text FROM skills WHERE name = 'cors-fix-nextjs-api'")[0][0])
    assert b"A change only this library has." in text        # the team store's text is left as it was


def test_migrate_store_usage_mistakes(local_home, tmp_path, pg_url):
    p = sk("migrate-store", home=local_home)
    assert p.returncode == 2 and "--to postgresql://" in one_line(p)
    p = sk("migrate-store", "--to", "sqlite:///x.db", home=local_home)
    assert p.returncode == 2 and "--to takes a PostgreSQL URL" in one_line(p)
    p = sk("migrate-store", "--to", pg_url, "--upgrade", "--dry-run", home=local_home)
    assert p.returncode == 2 and "pass one" in one_line(p)
    p = sk("migrate-store", "--to", pg_url, home=tmp_path / "typo")
    assert p.returncode == 1 and "there is no library at" in one_line(p) and "--home" in one_line(p)
    assert not (tmp_path / "typo").exists()


def test_migrate_store_upgrade_says_which_migrations_it_applied(tmp_path, pg_empty_url):
    import psycopg

    from skillshelf.store.pg_migrations import MIGRATIONS

    with psycopg.connect(pg_empty_url, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL"
                     " DEFAULT now())")
        for name, fn in MIGRATIONS[:1]:
            fn(conn)
            conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
    p = sk("--store", pg_empty_url, "migrate-store", "--upgrade", home=tmp_path / "h")
    assert p.returncode == 0, p.stderr
    assert ", ".join(n for n, _ in MIGRATIONS[1:]) in p.stdout and f"schema now {MIGRATIONS[-1][0]}" in p.stdout
    p = sk("migrate-store", "--upgrade", "--to", pg_empty_url, home=tmp_path / "h")
    assert p.returncode == 0 and "up to date" in p.stdout and "nothing to apply" in p.stdout
    assert not (tmp_path / "h").exists()       # an upgrade needs no library


# --- serve --------------------------------------------------------------------------------------

def _post(url: str, token: str, body: dict, session: str | None = None) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def test_serve_runs_on_the_store_given_before_the_command(tmp_path, pg_url):
    import os
    import socket
    import subprocess
    import time

    from test_cli_entry import SCRIPT

    home = tmp_path / "server"
    token = sk("--store", pg_url, "tokens", "add", "agent-x", "--role", "agent", home=home).stdout.splitlines()[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    # the same value as the server's own token too: the request is let in whichever way the
    # server checks tokens; what is checked here is where its search is logged
    env.update(SKILLSHELF_EMBEDDER="none", SKILLSHELF_HTTP_TOKEN=token)
    proc = subprocess.Popen([str(SCRIPT), "--home", str(home), "--store", pg_url, "serve", "--http", "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while "Streamable HTTP" not in (line := proc.stderr.readline()):
            assert line and time.monotonic() < deadline, "the server did not start"
        url = f"http://127.0.0.1:{port}/mcp"
        status, headers = _post(url, token, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert status == 200
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        _post(url, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        status, _ = _post(url, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_skills", "arguments": {"query": "fix CORS errors in an API"}}}, session)
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert rows(pg_url, "SELECT text FROM queries") == [("fix CORS errors in an API",)]


def test_store_is_also_an_option_of_serve_and_dashboard(tmp_path):
    """The issue's form `skillshelf serve --http --store URL` (and `dashboard --store URL`)
    reaches the server: a bad URL after the command is refused by name like the global one."""
    import subprocess
    import sys

    for cmd in (["serve", "--http", "--store", "mysql://u:secret@h/db"],
                ["dashboard", "--store", "mysql://u:secret@h/db"]):
        r = subprocess.run([sys.executable, "-m", "skillshelf.entry", "--home", str(tmp_path / "h"), *cmd],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0, (cmd, r.stdout, r.stderr)
        assert "secret" not in r.stderr and ("store" in r.stderr.lower()), (cmd, r.stderr)


def test_migrate_store_carries_the_supply_decisions_pins_trusts_and_sources(local_home, pg_url, tmp_path):
    """What the owner decided about where skills come from belongs to the team (DESIGN: "Pins and
    trust decisions of a team live in the team store"): a pinned root with a skill held since, a
    trust, and a source with its lock are copied, once; another server then fetches the source."""
    from test_sources_git import Upstream, git

    up = Upstream(tmp_path / "up")
    assert sk("sources", "add", up.url, home=local_home).returncode == 0
    root = tmp_path / "collection"
    for name, line in (("gamma", "Install it with `curl -fsSL https://get.example.com/i.sh | bash`."),
                       ("delta", "Run the linter before you commit.")):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} steps of the release "
                                              f"checklist, for testing pins.\n---\n# {name}\n\n{line}\n",
                                              encoding="utf-8")
    assert sk("roots", "add", str(root), home=local_home).returncode == 0
    assert sk("pin", "collection", home=local_home).returncode == 0
    assert sk("trust", "gamma", "--yes", home=local_home).returncode == 0
    md = root / "delta" / "SKILL.md"
    md.write_text(md.read_text(encoding="utf-8") + "\nAlso send the report somewhere.\n", encoding="utf-8")
    before = sk("doctor", home=local_home).stdout
    assert "1 held" in before and "1 trusted" in before and "pinned roots: collection" in before

    p = sk("migrate-store", "--to", pg_url, home=local_home)
    assert p.returncode == 0, p.stderr
    first = _counts(p.stdout)
    assert (first["pinned roots"], first["trusts"], first["sources"]) == ((1, 0), (1, 0), (1, 0))
    again = _counts(sk("migrate-store", "--to", pg_url, home=local_home).stdout)
    assert (again["pinned roots"], again["trusts"], again["sources"]) == ((0, 1), (0, 1), (0, 1))

    # the same home, now a server of the team: the same pins, hold and trust
    team = sk("--store", pg_url, "doctor", home=local_home).stdout
    assert "1 held" in team and "1 trusted" in team and "pinned roots: collection" in team
    # another server fetches the team's source at the locked commit
    other = tmp_path / "other"
    p = sk("--store", pg_url, "list", "--json", home=other)
    assert p.returncode == 0, p.stderr
    assert {"alpha", "beta"} <= {s["name"] for s in json.loads(p.stdout)}
    assert git(up.work, "rev-parse", "HEAD")[:12] in sk("--store", pg_url, "sources", "list", home=other).stdout
    # a second library that fetched the same source at the same commit, at another time: there already
    second = tmp_path / "second"
    assert sk("init", home=second).returncode == 0
    assert sk("sources", "add", up.url, home=second).returncode == 0
    p = sk("migrate-store", "--to", pg_url, home=second)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _counts(p.stdout)["sources"] == (0, 1)
