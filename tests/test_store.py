import sqlite3

import pytest

from skillshelf.store.migrations import MIGRATIONS
from skillshelf.store import Store


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


def test_a_database_deleted_under_an_open_store_is_noticed_and_made_again(tmp_path, monkeypatch):
    """The file is checked once per CHECK_EVERY (a stat on every read cost a fifth of a warm
    search on some file systems), and a deleted database is still noticed: the next read after
    the interval opens a new, migrated file instead of talking to the unlinked one."""
    import time

    monkeypatch.setattr(Store, "CHECK_EVERY", 0.2)
    path = tmp_path / "db.sqlite"
    s = Store(path)
    s.db.execute("INSERT INTO meta (key, value) VALUES ('probe', '1')")
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"db.sqlite{suffix}").unlink(missing_ok=True)
    time.sleep(0.25)
    assert s.db.execute("SELECT value FROM meta WHERE key='probe'").fetchone() is None
    assert path.exists() and s.applied_migrations() == [name for name, _ in MIGRATIONS]
