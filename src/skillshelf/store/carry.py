"""Rows carried from an old database file into a new one: a rebuild's usage history.

A rebuild indexes the files into a new database; the usage logs (queries, recommendations,
outcomes, the judge log) and what learning kept of them are not in the files, so they are
copied from the file the rebuild moved aside, row for row with their ids (the references
between them hold). All of it or none: a file too damaged to read leaves the new database
without history and the error says so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import StoreError
from .sqlite import Store

# the usage history, in the order its references need (recommendations point at queries)
USAGE_TABLES = ("queries", "recommendations", "outcomes", "judge_log", "learned")


def _columns(db: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in db.execute(f"PRAGMA {schema}.table_info({table})")]


def carry_usage(store: Store, old: Path) -> dict[str, int]:
    """Copy the usage history of the database file ``old`` into ``store`` (a new one, whose usage
    tables are empty) in one transaction: the rows copied per table. The columns both files have
    are copied (an older file lacks later ones: they stay empty). Raises ``StoreError`` naming
    the old file when it cannot be read; nothing is copied then."""
    db = store.db
    copied: dict[str, int] = {}
    try:
        db.execute("ATTACH DATABASE ? AS old", (str(old),))
    except (sqlite3.Error, StoreError) as exc:
        why = "the file is damaged" if isinstance(exc, StoreError) else str(exc)
        raise StoreError(f"cannot read the usage history in {old}: {why}",
                         fix="it stays in that file; nothing else is lost") from None
    try:
        have = {r[0] for r in db.execute("SELECT name FROM old.sqlite_master WHERE type = 'table'")}
        with store.tx():
            for table in USAGE_TABLES:
                if table not in have:
                    continue
                cols = [c for c in _columns(db, "main", table) if c in set(_columns(db, "old", table))]
                names = ", ".join(f'"{c}"' for c in cols)
                cur = db.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM old.{table} ORDER BY id")
                copied[table] = cur.rowcount
    except (sqlite3.Error, StoreError) as exc:     # (the connection names a damaged file as its own)
        why = "the file is damaged" if isinstance(exc, StoreError) else str(exc)
        raise StoreError(f"cannot read the usage history in {old}: {why}",
                         fix="it stays in that file; nothing else is lost") from None
    finally:
        try:
            db.execute("DETACH DATABASE old")
        except sqlite3.Error:
            pass
    return copied
