"""How a write the database refused reaches the services: as the library's ``StoreError``.

A full disk, a read-only database or file system, an I/O error or a lock held too long are
not bugs: the caller gets one error naming the problem and the fix
(``errors.cannot_write_error``), with SQLite's own error kept as its cause (so
``errors.write_failure`` still recognises it)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from ..errors import cannot_write_error
from .sqlite import Store


@contextlib.contextmanager
def refused_as_store_error(store: Store) -> Iterator[None]:
    """Run a write; a write the disk or a lock refused leaves as ``StoreError``."""
    try:
        yield
    except sqlite3.Error as exc:
        # a COMMIT that fails (disk full, I/O error) may leave the transaction open on this
        # thread's connection, which would then read an old snapshot and refuse the next BEGIN
        db = store.db
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        err = cannot_write_error(exc, store.path.parent)
        if err is None:
            raise
        raise err from exc


def rowid(cur: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made (SQLite always sets it after a successful INSERT)."""
    if cur.lastrowid is None:
        raise RuntimeError("an INSERT returned no rowid")
    return int(cur.lastrowid)
