"""Copying a local library into a team store (``Library.migrate_store``, ``skillshelf
migrate-store``) against a real PostgreSQL: every kind of shared state arrives with its
relations (a recommendation with its query, an outcome and a learned report with the copy of
their query), a second run copies nothing twice, a dry run writes nothing, nothing in the
team store is overwritten, and an export from the team store gives the same bytes as the
local export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.store.judge import JudgeLog

BODY = "## When to Use\n\nWhen a browser blocks an API call.\n\n## Solution\n\nSend the CORS headers.\n"


def rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def one(url: str, sql: str, params: tuple = ()):
    return rows(url, sql, params)[0][0]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    write_skill(r, "py/pytest-fixtures", description="Write pytest fixtures and parametrized tests in Python",
                body="## Solution\n\nUse conftest.py.\n")
    write_skill(r, "ops/docker-build", description="Multi-stage Docker builds with cached layers",
                body="## Solution\n\nCopy the lock file first.\n")
    return r


def local_library(home: Path, root: Path, **kw) -> Library:
    kw.setdefault("write_policy", "open")
    lib = Library(home=home, roots=[root], embedder=FakeEmbedder(), auto_sync=False, **kw)
    lib.sync()
    return lib


def fill(lib: Library) -> dict:
    """A library with something of every kind a team shares; returns what the checks need."""
    lib.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY, by="person",
             author="ann")
    lib.save("FIX", name="cors-fix", lesson="Preflight OPTIONS needs the headers too.", by="person", author="ann")
    folder = lib.config.workspace / "cors-fix"
    (folder / "references").mkdir()
    (folder / "references" / "notes.md").write_bytes(b"# Notes\r\nCRLF kept, bytes kept \xc3\xa9\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "check.sh").write_bytes(b"#!/bin/sh\ncurl -I \"$1\"\n")
    # a skill written by hand: no version of it is kept yet
    write_skill(lib.config.workspace, "hand-made", description="Written in an editor, never saved through skillshelf",
                body="## Steps\n\nDo the thing.\n")
    lib.sync()
    # drafts: one waiting, one rejected
    lib.review.propose({"action": "ARCHIVE", "name": "retry-http", "description": "Retry HTTP calls with backoff",
                        "body": "## Solution\n\nExponential backoff with jitter.\n"})
    lib.review.propose({"action": "ARCHIVE", "name": "bad-idea", "description": "Disable TLS checks",
                        "body": "## Solution\n\nverify=False everywhere.\n"})
    lib.review.reject("bad-idea", "turns off certificate checks")
    # an overlay on a skill of a read-only root
    lib.deprecate("docker-build", "the CI image builds it now")
    # usage: searches, outcomes on them (learned), one outcome without a query, a judged search
    qids = []
    for q in ("fix CORS errors in my API routes", "pytest fixtures for a database", "CORS preflight fails"):
        res = lib.search(q, client="agent-a")
        qids.append(res.query_id)
    lib.report_outcome("cors-fix", True, query_id=qids[0], client="agent-a", note="headers added")
    lib.report_outcome("pytest-fixtures", False, query_id=qids[1], client="agent-b")
    lib.report_outcome("cors-fix", True, client="cli")
    JudgeLog(lib.store).add(at="2026-01-02T03:04:05+00:00", query_id=qids[2], mode="rerank", backend="ollama",
                            model="m", status="ok", latency_ms=12.5, candidates=3, invented=0, pick="cors-fix",
                            verdicts=[{"name": "cors-fix", "score": 9}])
    return {"qids": qids}


def local_count(lib: Library, table: str) -> int:
    return lib.store.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


# --- everything arrives, once ------------------------------------------------------------------

def test_every_kind_arrives_with_its_relations_and_a_second_run_copies_nothing(tmp_path, root, pg_url):
    lib = local_library(tmp_path / "a", root)
    try:
        fill(lib)
        first = lib.migrate_store(pg_url)
        again = lib.migrate_store(pg_url)
        n_recs = local_count(lib, "recommendations")
        n_learned = local_count(lib, "learned")
        local_vectors = [bytes(r[0]) for r in lib.store.db.execute("SELECT vector FROM learned ORDER BY id")]
    finally:
        lib.close()
    c = first.copied
    assert first.left_out == [], first.left_out
    assert c["skills"] == 2 and c["drafts"] == 1 and c["rejected drafts"] == 1 and c["overlays"] == 1
    assert c["queries"] == 3 and c["recommendations"] == n_recs > 0 and c["outcomes"] == 3
    assert c["learned reports"] == n_learned == 2 and c["judged searches"] == 1
    # cors-fix: v1, v2 and their changelog; hand-made: its text kept as the version it claims
    assert rows(pg_url, "SELECT name, version FROM history ORDER BY name, version") == \
        [("cors-fix", 1), ("cors-fix", 2), ("hand-made", 1)]
    log = [json.loads(e) for (e,) in rows(pg_url, "SELECT entry FROM changelog WHERE name = 'cors-fix' ORDER BY id")]
    assert [(e["action"], e["to_version"], e["author"]) for e in log] == [("ARCHIVE", 1, "ann"), ("FIX", 2, "ann")]
    found = json.loads(one(pg_url, "SELECT entry FROM changelog WHERE name = 'hand-made'"))
    assert found["action"] == "FOUND" and found["to_version"] == 1
    assert one(pg_url, "SELECT version FROM skills WHERE name = 'cors-fix'") == 2
    assert bytes(one(pg_url, "SELECT content FROM skill_files WHERE name = 'cors-fix' AND path = "
                             "'references/notes.md'")) == b"# Notes\r\nCRLF kept, bytes kept \xc3\xa9\n"
    # the change stream names every skill, draft and overlay copied, so running servers pick them up
    assert {(k, key) for k, key in rows(pg_url, "SELECT kind, key FROM changes WHERE kind <> 'learning'")} == \
        {("skill", "cors-fix"), ("skill", "hand-made"), ("draft", "retry-http"), ("overlay", "root:ops/docker-build")}
    # relations: each outcome's and learned report's query is the copy of its own query
    pairs = rows(pg_url, "SELECT o.name, q.text FROM outcomes o LEFT JOIN queries q ON q.id = o.query_id ORDER BY o.id")
    assert pairs == [("cors-fix", "fix CORS errors in my API routes"),
                     ("pytest-fixtures", "pytest fixtures for a database"), ("cors-fix", None)]
    learned = rows(pg_url, "SELECT o.name, o.note, q.text, l.vector FROM learned l JOIN outcomes o ON o.id = "
                           "l.outcome_id JOIN queries q ON q.id = l.query_id ORDER BY l.id")
    assert [(n, note, t) for n, note, t, _ in learned] == [("cors-fix", "headers added", "fix CORS errors in my API routes"),
                                                          ("pytest-fixtures", "", "pytest fixtures for a database")]
    assert [bytes(v) for *_, v in learned] == local_vectors
    assert one(pg_url, "SELECT q.text FROM judge_log j JOIN queries q ON q.id = j.query_id") == "CORS preflight fails"
    assert one(pg_url, "SELECT COUNT(*) FROM recommendations r JOIN queries q ON q.id = r.query_id") == n_recs
    # the second run: everything is there already, nothing was copied twice
    assert set(again.copied.values()) == {0}, again.copied
    assert again.already["queries"] == 3 and again.already["learned reports"] == 2 and again.already["skills"] == 2
    for table, n in (("queries", 3), ("recommendations", n_recs), ("outcomes", 3), ("learned", 2), ("judge_log", 1),
                     ("skills", 2), ("history", 3), ("changelog", 3), ("drafts", 1), ("draft_rejections", 1),
                     ("overlay", 1)):
        assert one(pg_url, f"SELECT COUNT(*) FROM {table}") == n, table


def test_learned_reports_reach_a_servers_learning_memory(tmp_path, root, pg_url):
    from skillshelf.store.pg_learning import PgLearningMemory
    from skillshelf.store.postgres import PgStore

    lib = local_library(tmp_path / "a", root)
    try:
        fill(lib)
        pg = PgStore(pg_url)
        try:
            memory = PgLearningMemory(pg)
            before = memory.state()
            lib.migrate_store(pg_url)
            after = memory.state()
            got = memory.reports_after(lib.model.state()[0].model_id, 0)
        finally:
            pg.close()
    finally:
        lib.close()
    assert after[0] != before[0] and after[1] == before[1]     # more reports; none forgotten
    assert [(r["name_key"], r["worked"], r["client"]) for r in got] == [("corsfix", True, "agent-a"),
                                                                      ("pytestfixtures", False, "agent-b")]


def test_a_dry_run_writes_nothing_and_counts_what_a_run_copies(tmp_path, root, pg_empty_url):
    lib = local_library(tmp_path / "a", root)
    try:
        fill(lib)
        dry = lib.migrate_store(pg_empty_url, dry_run=True)
        assert one(pg_empty_url, "SELECT to_regclass('schema_migrations')") is None     # not even the schema
        assert dry.pending and not dry.applied
        real = lib.migrate_store(pg_empty_url)
        assert real.applied == dry.pending
        assert dry.copied == real.copied
        # and a dry run against the store it was copied into: nothing left to copy
        again = lib.migrate_store(pg_empty_url, dry_run=True)
    finally:
        lib.close()
    assert set(again.copied.values()) == {0} and again.already == real.copied | {
        k: again.already[k] for k in ("versions", "changelog entries")}


def test_a_run_cut_short_goes_on_where_it_stopped(tmp_path, root, pg_url, monkeypatch):
    from skillshelf.store import pg_migrate

    lib = local_library(tmp_path / "a", root)
    try:
        fill(lib)
        for i in range(40):
            lib.search(f"request number {i}", client="agent-c")
        monkeypatch.setattr(pg_migrate.LocalRows, "PAGE", 10)
        calls = {"n": 0}
        real_copy = pg_migrate.TeamCopy.copy_queries

        def failing(self, queries, recs):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt
            return real_copy(self, queries, recs)

        monkeypatch.setattr(pg_migrate.TeamCopy, "copy_queries", failing)
        with pytest.raises(KeyboardInterrupt):
            lib.migrate_store(pg_url)
        assert one(pg_url, "SELECT COUNT(*) FROM queries") == 20          # two pages committed
        monkeypatch.setattr(pg_migrate.TeamCopy, "copy_queries", real_copy)
        rest = lib.migrate_store(pg_url)
        n_recs = local_count(lib, "recommendations")
    finally:
        lib.close()
    assert rest.copied["queries"] == 23 and rest.already["queries"] == 20
    assert one(pg_url, "SELECT COUNT(*) FROM queries") == 43
    assert one(pg_url, "SELECT COUNT(*) FROM recommendations") == n_recs
    assert one(pg_url, "SELECT COUNT(DISTINCT origin) FROM queries") == 43


# --- what the team store has is never overwritten -----------------------------------------------

def test_two_peoples_libraries_share_one_store_without_taking_each_others_rows(tmp_path, root, pg_url):
    a, b = local_library(tmp_path / "a", root), local_library(tmp_path / "b", root)
    try:
        a.search("fix CORS errors", client="ann")
        qb = b.search("pytest fixtures", client="bob").query_id
        b.report_outcome("pytest-fixtures", True, query_id=qb, client="bob")
        # both have query id 1: each arrives, and bob's outcome points at bob's query
        assert a.migrate_store(pg_url).copied["queries"] == 1
        assert b.migrate_store(pg_url).copied["queries"] == 1
    finally:
        a.close()
        b.close()
    assert one(pg_url, "SELECT COUNT(*) FROM queries") == 2
    assert one(pg_url, "SELECT q.client FROM outcomes o JOIN queries q ON q.id = o.query_id") == "bob"


def test_a_different_skill_of_the_same_name_is_left_out_never_overwritten(tmp_path, root, pg_url):
    a, b = local_library(tmp_path / "a", root), local_library(tmp_path / "b", root)
    try:
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY, by="person")
        b.save("ARCHIVE", name="cors-fix", description="Another team's CORS notes", body=BODY, by="person")
        a.save("ARCHIVE", name="shared-one", description="The same text in both libraries", body=BODY, by="person")
        text = (a.config.workspace / "shared-one" / "SKILL.md").read_bytes()
        (b.config.workspace / "shared-one").mkdir()
        (b.config.workspace / "shared-one" / "SKILL.md").write_bytes(text)
        assert a.migrate_store(pg_url).left_out == []
        rep = b.migrate_store(pg_url)
    finally:
        a.close()
        b.close()
    assert [(i["kind"], i["name"]) for i in rep.left_out] == [("skills", "cors-fix")]
    assert "different skill of this name" in rep.left_out[0]["why"]
    assert rep.already["skills"] == 1 and rep.copied["skills"] == 0
    assert b"Fix CORS errors in API routes" in bytes(one(pg_url, "SELECT text FROM skills WHERE name = 'cors-fix'"))
    assert one(pg_url, "SELECT COUNT(*) FROM history WHERE name = 'cors-fix'") == 1


def test_folders_a_team_store_cannot_keep_are_named(tmp_path, root, pg_url):
    lib = local_library(tmp_path / "a", root)
    try:
        ws = lib.config.workspace
        write_skill(ws, "Bad_Name", description="A folder name the spec does not allow")
        write_skill(ws, "group/inner-skill", description="A skill one level down")
        (ws / "lower").mkdir()
        (ws / "lower" / "skill.md").write_text("---\nname: lower\ndescription: x\n---\n", encoding="utf-8")
        rep = lib.migrate_store(pg_url)
    finally:
        lib.close()
    why = {i["name"]: i["why"] for i in rep.left_out}
    assert set(why) == {"Bad_Name", "group", "lower"}
    assert "plain skill name" in why["Bad_Name"] and "subfolders" in why["group"] and "SKILL.md" in why["lower"]
    assert one(pg_url, "SELECT COUNT(*) FROM skills") == 0


# --- the team store gives back the same bytes ------------------------------------------------------

def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.json"}


def test_an_export_from_the_team_store_gives_the_local_exports_bytes(tmp_path, root, pg_url):
    from teamlib import close, team_library

    lib = local_library(tmp_path / "a", root)
    try:
        fill(lib)
        assert lib.migrate_store(pg_url).left_out == []
        names = ["cors-fix", "hand-made"]
        local = lib.export_skills(names, to=tmp_path / "local-export")
    finally:
        lib.close()
    team = team_library(tmp_path / "server", pg_url, roots=[root])
    try:
        exported = team.export_skills(names, to=tmp_path / "team-export")
        assert team.history("cors-fix")["changelog"][-1]["action"] == "FIX"
    finally:
        close(team)
    assert local.skipped == [] and exported.skipped == [] and len(exported.skills) == len(local.skills) == 2
    mine, theirs = _files(tmp_path / "local-export"), _files(tmp_path / "team-export")
    assert sorted(mine) == sorted(theirs) and len(mine) >= 4
    assert mine == theirs
    man = [json.loads((tmp_path / d / "manifest.json").read_text(encoding="utf-8")) for d in
           ("local-export", "team-export")]
    shas = [{s["name"]: (s["version"], s["files"]) for s in m["skills"]} for m in man]
    assert shas[0] == shas[1]


def test_upgrade_applies_the_missing_migrations_and_says_which(pg_empty_url):
    import psycopg

    from skillshelf.store.pg_migrations import MIGRATIONS

    with psycopg.connect(pg_empty_url, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL"
                     " DEFAULT now())")
        for name, fn in MIGRATIONS[:2]:
            fn(conn)
            conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
    res = Library.upgrade_store(pg_empty_url)
    assert res["applied"] == [name for name, _ in MIGRATIONS[2:]]
    assert res["schema"] == MIGRATIONS[-1][0]
    assert Library.upgrade_store(pg_empty_url)["applied"] == []


def test_a_library_on_a_team_store_is_not_a_source(tmp_path, pg_url):
    from skillshelf.errors import ConfigError

    lib = Library(home=tmp_path / "h", embedder="none", auto_sync=False, store=pg_url)
    try:
        with pytest.raises(ConfigError) as e:
            lib.migrate_store(pg_url)
    finally:
        lib.close()
    assert "--home" in e.value.fix and "--to" in e.value.fix
