"""The SQLite connection: WAL, busy timeout, migrations. The database is an index of
the files plus the usage logs; deleting it loses nothing but usage history."""

from __future__ import annotations

import contextlib
import datetime as _dt
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import StoreError
from .migrations import MIGRATIONS


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# SQLite's "the file is damaged" and "this is not a database": no retry helps, the files
# can rebuild the index (usage history in it is what would be lost).
_DAMAGED = {11, 26}   # SQLITE_CORRUPT, SQLITE_NOTADB


def damaged(exc: BaseException) -> bool:
    # skillshelf writes only str to its text columns: bytes there that are not UTF-8 were
    # damaged on disk (quick_check does not read the values, so only the read finds them)
    return isinstance(exc, sqlite3.DatabaseError) and (
        getattr(exc, "sqlite_errorcode", None) in _DAMAGED
        or "malformed" in str(exc) or "not a database" in str(exc) or "Could not decode to UTF-8" in str(exc))


def damaged_error(path: Path, exc: BaseException) -> StoreError:
    what = str(exc).split(" with text ", 1)[0]   # not the damaged value itself (a whole body, say)
    return StoreError(f"the index database {path} is damaged ({what})",
                      fix="run `skillshelf rebuild`: it moves the damaged file aside and rebuilds the index "
                          "from the skill files (usage history is kept only if the old file can be read)")


class _Connection(sqlite3.Connection):
    """A connection whose "database is damaged" errors name the file and the fix."""

    store_path: Path

    def execute(self, *args, **kw):  # type: ignore[override]
        try:
            return super().execute(*args, **kw)
        except sqlite3.DatabaseError as exc:
            if damaged(exc):
                raise damaged_error(self.store_path, exc) from None
            raise

    def executemany(self, *args, **kw):  # type: ignore[override]
        try:
            return super().executemany(*args, **kw)
        except sqlite3.DatabaseError as exc:
            if damaged(exc):
                raise damaged_error(self.store_path, exc) from None
            raise


class Store:
    """One connection per thread to one database file. A database file deleted under a
    running process is noticed at the next use and created again (the files re-fill it)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._uri: str | None = None          # set when the database is open read-only
        self.read_only: str | None = None     # why it is, when it is
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.migrate()
        except sqlite3.DatabaseError as exc:
            if damaged(exc):
                raise damaged_error(self.path, exc) from None
            self._older_schema = False
            if self._open_read_only(exc):
                return
            if self._older_schema:
                raise StoreError(f"the database {self.path} was made by an older skillshelf and cannot be updated"
                                 f" here ({exc})", fix="open it once where it can be written (free disk space, a"
                                 " writable folder), or run an older skillshelf to read it") from None
            raise StoreError(f"cannot open database {self.path}: {exc}",
                             fix="check that the disk has free space and the folder is writable; if the file "
                                 "itself is bad, `skillshelf rebuild` moves it aside and re-indexes the files") from None
        except OSError as exc:
            raise StoreError(f"cannot create database {self.path}: {exc.strerror}",
                             fix="check the home folder's permissions or pass --home") from None

    def _open_read_only(self, exc: BaseException) -> bool:
        """A database that exists but cannot be written (a read-only mount, a full disk, no
        write permission) is opened for reading, if its schema is current: searches and
        reads work, writes fail and say so. ``mode=ro`` first; ``immutable=1`` where SQLite
        cannot even create its shared-memory file beside it (a read-only folder), which
        reads what the file holds (a write-ahead log left beside it is not read)."""
        if not self.path.is_file():
            return False
        self.close()
        base = self.path.resolve().as_uri()
        for uri in (f"{base}?mode=ro", f"{base}?immutable=1"):
            self._uri = uri
            try:
                done = {r[0] for r in self._connect().execute("SELECT name FROM schema_migrations")}
            except sqlite3.DatabaseError:
                self.close()
                continue
            if {name for name, _ in MIGRATIONS} - done:   # an older schema needs a write to update
                self._older_schema = True
                break
            self.read_only = " ".join(str(exc).split())
            wal = Path(str(self.path) + "-wal")
            if "immutable" in uri and wal.is_file() and wal.stat().st_size:
                # SQLite could not attach the log: what it holds (recent changes) is not read
                self.read_only += (f"; {wal.stat().st_size:,} bytes of recent changes in {wal.name} are not read"
                                   " until the library can be written")
            return True
        self.close()
        self._uri = None
        return False

    @property
    def db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._uri is None and not self._still_there():
            # deleted or replaced under us: this connection talks to a file nobody else sees
            self.close()
            conn = None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh = self._connect()
            self.migrate()
            return fresh
        if conn is None:
            conn = self._connect()
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri or self.path, timeout=30, isolation_level=None, check_same_thread=False,
                               factory=_Connection, uri=self._uri is not None)
        conn.store_path = self.path
        conn.row_factory = sqlite3.Row
        self._local.conn = conn
        try:
            if self._uri is None:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            self.close()
            raise
        self._local.ino = self._inode()
        return conn

    def _inode(self) -> int | None:
        try:
            return self.path.stat().st_ino
        except OSError:
            return None

    def _still_there(self) -> bool:
        return self._inode() == getattr(self._local, "ino", None)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def cannot_write(self) -> str | None:
        """Why the database cannot take a write now, or None. Takes the write lock and gives
        it back at once, waiting at most 0.2 s: a library another process is writing can be
        written, one on a read-only or full disk cannot (SQLite may open such a file normally
        when its shared-memory file is already there)."""
        if self.read_only:
            return self.read_only
        from ..errors import write_failure

        with self._write_lock:
            db = self.db
            try:
                db.execute("PRAGMA busy_timeout=200")
                db.execute("BEGIN IMMEDIATE")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('write-probe', '')")   # rolled back below
                db.execute("ROLLBACK")
            except sqlite3.OperationalError as exc:
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                reason = write_failure(exc)
                return None if reason is None or "locked" in reason else reason
            finally:
                db.execute("PRAGMA busy_timeout=30000")
        return None

    def quick_check(self) -> str:
        """'ok', or what SQLite's quick_check found wrong."""
        try:
            rows = [r[0] for r in self.db.execute("PRAGMA quick_check(5)").fetchall()]
        except (sqlite3.DatabaseError, StoreError) as exc:
            return str(getattr(exc, "message", exc))
        return "ok" if rows == ["ok"] else "; ".join(rows)

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE: writers queue instead of failing)."""
        with self._write_lock:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                # SQLite may have rolled back already (a full disk does): a second ROLLBACK
                # would raise and hide the real error. A failed COMMIT is rolled back here,
                # never left open.
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise

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


def fold_log(db_path: Path) -> None:
    """Write what a database's log (``-wal``) holds into the file and empty the log, so the file
    alone holds everything and moves in one step: a process opening the database between the
    file's move and its log's would take the old log for its own, and the moved file would lose its
    recent changes. Waits for readers as any write does; a file SQLite cannot read is left as it is."""
    if not db_path.is_file():
        return
    try:
        conn = sqlite3.connect(db_path, timeout=30)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        pass


def put_back(moved: Path, db_path: Path) -> None:
    """Undo ``onboarding.rebuild.move_aside``: the new files go, the old ones return (a rebuild that failed)."""
    import os

    for suffix in ("", "-wal", "-shm"):
        new, old = Path(str(db_path) + suffix), Path(str(moved) + suffix)
        with contextlib.suppress(OSError):
            new.unlink()
        if old.exists():
            os.replace(old, new)
