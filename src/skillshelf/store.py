"""The SQLite connection: WAL, busy timeout, migrations. The database is an index of
the files plus the usage logs; deleting it loses nothing but usage history."""

from __future__ import annotations

import datetime as _dt
import sqlite3
import threading
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path

from .errors import StoreError
from .migrations import MIGRATIONS


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class Store:
    """One connection per thread to one database file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open database {self.path}: {exc}",
                             fix="move the file aside and run `skillshelf sync` to rebuild it") from None
        except OSError as exc:
            raise StoreError(f"cannot create database {self.path}: {exc.strerror}",
                             fix="check the home folder's permissions or pass --home") from None

    @property
    def db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE: writers queue instead of failing)."""
        with self._write_lock:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            else:
                db.execute("COMMIT")

    def migrate(self) -> list[str]:
        db = self.db
        db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        done = {r[0] for r in db.execute("SELECT name FROM schema_migrations")}
        applied = []
        for name, fn in MIGRATIONS:
            if name in done:
                continue
            with self.tx():
                # re-check inside the lock: another process may have migrated meanwhile
                if db.execute("SELECT 1 FROM schema_migrations WHERE name=?", (name,)).fetchone():
                    continue
                fn(db)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, now()))
            applied.append(name)
        return applied

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM schema_migrations ORDER BY name")]

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                        (key, value))
