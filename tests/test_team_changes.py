"""The change stream's retention against a real PostgreSQL: old rows of ``changes`` are pruned
(older than the retention and not among the newest), servers pruning at once delete each row
once, a following server prunes on its own, and a server whose last seen change is below the
pruned part reads everything again and ends with what a fresh server has, never silently
missing a change."""

from __future__ import annotations

import threading

import pytest
from conftest import write_skill
from teamlib import BODY, close, team_library, until

from skillshelf.store import pg_changes
from skillshelf.store.postgres import PgStore


def sql(url: str, query: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def add_changes(url: str, n: int, *, days_old: float) -> None:
    sql(url, "INSERT INTO changes (kind, key, at) SELECT 'learning', 'k' || g, now() - make_interval(days => %s)"
             " FROM generate_series(1, %s) g", (days_old, n))


def seqs(url: str) -> list[int]:
    return [r[0] for r in sql(url, "SELECT seq FROM changes ORDER BY seq")]


def pruned_through(url: str) -> int:
    got = sql(url, "SELECT value FROM meta WHERE key = %s", (pg_changes.HORIZON,))
    return int(got[0][0]) if got else 0


@pytest.fixture
def pg(pg_url):
    store = PgStore(pg_url)
    yield store
    store.close()


def test_prune_deletes_old_rows_and_keeps_recent_ones_and_the_newest(pg, pg_url):
    add_changes(pg_url, 30, days_old=8)
    add_changes(pg_url, 5, days_old=1)
    every = seqs(pg_url)
    # the defaults: a week and the newest 10,000 rows, so nothing goes from 35 rows
    assert pg_changes.prune(pg).deleted == 0
    assert seqs(pg_url) == every and pruned_through(pg_url) == 0
    # the newest 10 are kept whatever their age (5 recent, 5 old); the rest of the old ones go,
    # a few rows per transaction and a few transactions per call (``more``: call again)
    assert pg_changes.prune(pg, keep=10, batch=7, rounds=2) == (14, True)
    assert pruned_through(pg_url) == every[13]
    assert pg_changes.prune(pg, keep=10, batch=7, rounds=10) == (11, False)
    assert seqs(pg_url) == every[25:]
    assert pruned_through(pg_url) == every[24]
    # rows younger than the retention are kept whatever the count
    assert pg_changes.prune(pg, keep=1).deleted == 5
    assert seqs(pg_url) == every[30:]
    assert pg_changes.prune(pg, keep=1).deleted == 0 and pruned_through(pg_url) == every[29]
    with pytest.raises(ValueError):
        pg_changes.prune(pg, keep=0)


def test_servers_pruning_at_once_delete_each_row_once(pg, pg_url):
    add_changes(pg_url, 3000, days_old=8)
    every = seqs(pg_url)
    deleted: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(20):
                deleted.append(pg_changes.prune(pg, keep=100, batch=50, rounds=3).deleted)
        except BaseException as exc:  # noqa: BLE001 -- collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    while (n := pg_changes.prune(pg, keep=100, batch=50).deleted):   # what the threads left, if any
        deleted.append(n)
    # what every call deleted adds up to the rows gone: none deleted (or counted) twice
    assert sum(deleted) == 2900
    assert seqs(pg_url) == every[-100:]
    assert pruned_through(pg_url) == every[-101]


def test_a_following_server_prunes_the_stream_on_its_own(tmp_path, pg_url):
    PgStore(pg_url).close()                       # the schema
    # more old rows than one call deletes (a store from before pruning): the next passes go on
    add_changes(pg_url, 10_000 + pg_changes.BATCH * pg_changes.ROUNDS + 50, days_old=8)
    add_changes(pg_url, 3, days_old=0)
    newest = seqs(pg_url)[-10_000:]
    a = team_library(tmp_path / "a", pg_url)
    try:
        assert until(lambda: len(seqs(pg_url)) <= 10_000, timeout=10) is not None, "the server never pruned the stream"
        assert seqs(pg_url) == newest                 # the newest 10,000 kept, the recent ones among them
        assert pruned_through(pg_url) == newest[0] - 1
        assert a._team.mirror.resyncs == 0            # its own prune is no gap of its own
    finally:
        close(a)


def test_a_server_behind_the_pruned_part_reads_everything_again(tmp_path, pg_url):
    """B stops reading the stream (down, or far behind); meanwhile A saves, deletes and
    deprecates, and those changes are pruned. B cannot know what it missed: at its next pass
    it brings everything in again and ends with exactly what a fresh server C has."""
    root = tmp_path / "checkout"
    write_skill(root, "web/cors-root", description="Fix CORS errors in API routes", body=BODY)
    a = team_library(tmp_path / "a", pg_url, roots=[root])
    a.save("ARCHIVE", name="old-skill", description="Something retired later", body=BODY)
    a.save("ARCHIVE", name="kept-skill", description="Rotate TLS certificates", body=BODY)
    b = team_library(tmp_path / "b", pg_url, roots=[root], follow=False)   # B reads the stream when told
    c = None
    try:
        bws = b.config.workspace
        assert sorted(p.name for p in bws.iterdir()) == ["kept-skill", "old-skill"]
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API gateways", body=BODY)
        a.save("FIX", target_skill_name="kept-skill", lesson="drain the old certificate first")
        a.delete("old-skill")
        a.deprecate("cors-root", "the gateway answers CORS now")
        # a week later, those changes are pruned; one more comes after the prune
        sql(pg_url, "UPDATE changes SET at = now() - interval '8 days'")
        assert pg_changes.prune(a._shared.team, keep=1).deleted > 0
        a.save("ARCHIVE", name="after-prune", description="Made after the prune", body=BODY)

        b._team.mirror.wake()
        c = team_library(tmp_path / "c", pg_url, roots=[root])        # a fresh server, for comparison
        cws = c.config.workspace
        names = sorted(p.name for p in cws.iterdir())
        assert names == ["after-prune", "cors-fix", "kept-skill"]
        assert sorted(p.name for p in bws.iterdir()) == names
        for name in names:
            assert (bws / name / "SKILL.md").read_bytes() == (cws / name / "SKILL.md").read_bytes()
        assert "drain the old certificate first" in (bws / "kept-skill" / "SKILL.md").read_text()
        listed = {(r.name, r.active) for r in c.list()}
        assert {(r.name, r.active) for r in b.list()} == listed
        assert ("cors-root", False) in listed          # the overlay, read again whole
        assert b._team.mirror.resyncs == 1
        assert b._team.status()["resyncs"] == 1
        store_line = next(c for c in b.doctor().checks if c.name == "store")
        assert "read the whole store again 1 time(s)" in store_line.detail
        # it follows on from there like any server: no second resync, the next change arrives
        a.save("ARCHIVE", name="next-one", description="After the resync", body=BODY)
        b._team.mirror.wake()
        assert (bws / "next-one" / "SKILL.md").is_file()
        assert b._team.mirror.resyncs == 1
        assert c._team.mirror.resyncs == 0             # a server started after a prune has no gap
    finally:
        for lib in (a, b, c):
            if lib is not None:
                close(lib)


def test_a_change_awaited_below_the_pruned_part_is_not_missed(tmp_path, pg_url):
    """A number taken by a transaction that had not committed yet is awaited (``also``). If
    that transaction commits and its row is pruned before the server reads it (an old row:
    the prune only sees its age), the server has a gap there too and reads everything again."""
    import hashlib

    import psycopg

    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url, follow=False)
    text = b"---\nname: late-skill\ndescription: Committed after a later change\n---\n\n# Late\n"
    slow = psycopg.connect(pg_url)
    try:
        slow.execute("INSERT INTO skills (name, text, version, sha256) VALUES ('late-skill', %s, 1, %s)",
                     (text, hashlib.sha256(text).hexdigest()))
        slow.execute("INSERT INTO history (name, version, text) VALUES ('late-skill', 1, %s)", (text,))
        slow.execute("INSERT INTO changes (kind, key, at) VALUES ('skill', 'late-skill', now() - interval '8 days')")
        a.save("ARCHIVE", name="early-skill", description="Committed first with a later number", body=BODY)
        b._team.mirror.wake()                                   # reads past the open transaction's number
        assert (b.config.workspace / "early-skill").is_dir()
        assert b._team.mirror._missing, "the open transaction's number is awaited"
        slow.commit()
        sql(pg_url, "UPDATE changes SET at = now() - interval '8 days'")
        assert pg_changes.prune(a._shared.team, keep=1).deleted == 1    # the late row goes before B reads it
        b._team.mirror.wake()
        assert (b.config.workspace / "late-skill" / "SKILL.md").read_bytes() == text
        assert b._team.mirror.resyncs == 1
    finally:
        slow.close()
        close(a)
        close(b)
