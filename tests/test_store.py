import sqlite3

import pytest

from skillshelf.store import Store
from skillshelf.store.migrations import MIGRATIONS


def test_migrations_from_empty_database(tmp_path):
    s = Store(tmp_path / "db.sqlite")
    assert s.applied_migrations() == [name for name, _ in MIGRATIONS]
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in s.db.execute("SELECT name FROM sqlite_master WHERE type IN ('table','trigger')")}
    assert {"skills", "lex_docs", "lex_main", "lex_delta", "embeddings", "queries", "recommendations", "outcomes",
            "queries_no_update"} <= tables
    # idempotent: reopening applies nothing
    s.close()
    assert Store(tmp_path / "db.sqlite").migrate() == []


def test_migration_names_are_ordered_and_unique():
    names = [n for n, _ in MIGRATIONS]
    assert names == sorted(names) and len(set(names)) == len(names)


def test_corrupt_database_gives_clear_error(tmp_path):
    p = tmp_path / "db.sqlite"
    p.write_bytes(b"this is not a database" * 100)
    from skillshelf.errors import StoreError

    with pytest.raises(StoreError) as exc:
        Store(p)
    assert "rebuild" in str(exc.value)


def test_usage_logs_are_append_only(tmp_path):
    s = Store(tmp_path / "db.sqlite")
    s.db.execute("INSERT INTO queries (at, text, text_hash, mode, confident, n_hits, latency_ms)"
                 " VALUES ('2026-01-01', 'q', 'h', 'find', 1, 0, 1.0)")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        s.db.execute("UPDATE queries SET text = 'x'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        s.db.execute("DELETE FROM queries")


def test_a_failed_transaction_reports_its_own_error_and_is_closed(tmp_path):
    import sqlite3

    import pytest

    from skillshelf.store import Store

    st = Store(tmp_path / "db.sqlite")
    pages = st.db.execute("PRAGMA page_count").fetchone()[0]
    st.db.execute(f"PRAGMA max_page_count={pages + 2}")     # a full disk, as SQLite sees one
    with pytest.raises(sqlite3.OperationalError, match="full"):
        with st.tx() as tx:
            for _ in range(50):
                tx.execute("INSERT INTO meta VALUES (hex(randomblob(16)), hex(randomblob(20000)))")
    assert not st.db.in_transaction
    st.db.execute("PRAGMA max_page_count=1073741823")
    with st.tx() as tx:
        st.set_meta("after", "ok")
    assert st.get_meta("after") == "ok"


def test_a_write_right_after_rebuild_moved_the_database_aside_lands_in_the_new_one(tmp_path):
    """`skillshelf rebuild` moves the database aside under a running server: the server's next
    write (a usage log, an outcome) must go to the new database, not to the moved-aside file, and
    a database deleted under an open store is made again on the next read."""
    import sqlite3 as _sqlite3

    from skillshelf.onboarding.rebuild import move_aside

    path = tmp_path / "db.sqlite"
    server = Store(path)
    server.set_meta("x", "before")
    moved = move_aside(path, "old")
    fresh = Store(path)
    server.set_meta("written_by_server", "1")
    assert fresh.get_meta("written_by_server") == "1"
    assert _sqlite3.connect(moved).execute("SELECT value FROM meta WHERE key='written_by_server'").fetchone() is None
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"db.sqlite{suffix}").unlink(missing_ok=True)
    assert server.get_meta("written_by_server") is None
    assert path.exists() and server.applied_migrations() == [name for name, _ in MIGRATIONS]
