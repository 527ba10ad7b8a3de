import sqlite3

import pytest

from skillshelf.migrations import MIGRATIONS
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
