"""The team store: one PostgreSQL database shared by several skillshelf servers.

It holds what a team shares — the team workspace's skills with their files, versions and
changelog, overlays, drafts, usage logs, learning memory, the judge log and the tokens — while
each server keeps the search index it needs in its own local SQLite file, rebuilt from here.
A change committed by one server is announced on the ``skillshelf_changes`` channel
(LISTEN/NOTIFY) and recorded in ``changes`` with a sequence number, so a server that missed a
notification (a restart, a dropped connection) catches up from the last number it saw; the
stream's old rows are pruned (``pg_changes``), and a server behind the pruned part reads
everything again instead.

Only imported when a ``postgresql://`` store is configured: psycopg is not needed otherwise.
The schema is a list of ordered, named migrations like the SQLite one (``pg_migrations``)."""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import StoreError
from ..net import check_store_url
from .pg_migrations import MIGRATIONS
from .pg_writes import lost, redact, refusal, unreachable

CHANNEL = "skillshelf_changes"


# The pool logs each failed attempt to connect. Without a handler of its own those warnings
# would reach stderr through logging's last resort, before the library's one line with the fix;
# a server that configures logging still gets them.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


FULL_CHECK_AFTER = 10.0   # seconds a pooled connection may sit idle before its check is a round trip


def _readable(fd: int) -> bool:
    """Whether the socket has bytes waiting, an end of file or an error, without waiting.
    ``poll`` where there is one: ``select`` refuses a descriptor of 1024 or more, which a busy
    server reaches."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])


def check_idle(conn: Any) -> None:
    """The pool's check of a connection it is about to lend. psycopg's own check sends an
    empty query: a round trip on every request (six per logged team search). An idle
    autocommit connection has nothing to read, so its socket says whether it is gone without
    asking: a server that restarted or died sent its goodbye (readable) or closed it (EOF,
    readable too), and then the full check runs and the pool replaces it. A connection idle
    longer than ``FULL_CHECK_AFTER`` seconds is asked in full anyway (a silent network)."""
    from psycopg_pool import ConnectionPool

    used = getattr(conn, "_skillshelf_checked", 0.0)
    now = time.monotonic()
    if conn.closed or conn.broken or now - used > FULL_CHECK_AFTER or _readable(conn.fileno()):
        ConnectionPool.check_connection(conn)
    conn._skillshelf_checked = now   # type: ignore[attr-defined]


def _psycopg():
    try:
        import psycopg
        import psycopg_pool
    except ImportError:  # pragma: no cover - they are dependencies; a broken install says so
        raise StoreError("the PostgreSQL driver is not installed (a postgresql:// store needs it)",
                         fix="pip install 'skillshelf[team]' (from a clone: pip install -e '.[team]')") from None
    return psycopg, psycopg_pool


class PgStore:
    """A pool of connections to the team database. ``tx()`` is one transaction; a connection
    that the server dropped (a PostgreSQL restart) is discarded by the pool's check and the
    next request gets a new one."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 5.0,
                 migrate: bool = True, create: bool = False):
        check_store_url(url)
        psycopg, pool_mod = _psycopg()
        self.url = url
        self.create = create    # a database without the schema gets one (migrate-store); else refused
        self._psycopg = psycopg
        self._closed = False
        self.pool = pool_mod.ConnectionPool(
            url, min_size=min_size, max_size=max_size, open=False, timeout=timeout,
            check=check_idle, name="skillshelf",
            kwargs={"autocommit": True, "connect_timeout": max(1, int(timeout))})
        try:
            self.pool.open(wait=True, timeout=timeout)
        except Exception as exc:  # PoolTimeout says only that it timed out: one direct try names the cause
            self.pool.close()
            cause: BaseException = exc
            try:
                psycopg.connect(url, connect_timeout=max(1, int(timeout))).close()
            except Exception as direct:  # refused, a wrong password, no such database ...
                cause = direct
            raise unreachable(url, cause) from None
        try:
            if migrate:
                self.migrate()
            self.check_schema()
        except BaseException:
            self.pool.close()
            raise

    # --- transactions -------------------------------------------------------------------
    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        """One transaction on a pooled connection; psycopg's connection errors leave as
        ``StoreError`` naming the store and the fix (the request can be retried)."""
        psycopg = self._psycopg
        try:
            with self.pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as exc:
            err = refusal(self.url, exc)
            if err is None:
                raise
            raise err from None
        except Exception as exc:
            if type(exc).__name__ == "PoolTimeout":
                raise lost(self.url, exc) from None
            raise

    def fetchone(self, sql: str, params: tuple | list = ()) -> tuple | None:
        with self.tx() as conn:
            return conn.execute(sql, params).fetchone()

    def fetchall(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self.tx() as conn:
            return conn.execute(sql, params).fetchall()

    def execute(self, sql: str, params: tuple | list = ()) -> int:
        """Run one statement in its own transaction; the number of rows it touched."""
        with self.tx() as conn:
            return conn.execute(sql, params).rowcount

    # --- schema ---------------------------------------------------------------------------
    def applied_migrations(self) -> list[str]:
        with self.tx() as conn:
            exists = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0]
            if exists is None:
                return []
            return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]

    def migrate(self) -> list[str]:
        """Apply the migrations this database lacks, each in its own transaction, under an
        advisory lock (two servers starting at once do not both apply one)."""
        done: list[str] = []
        applied = set(self.applied_migrations())
        if not applied and not self.create and not self.has_schema():
            raise self._no_schema()
        if applied and not [name for name, _ in MIGRATIONS if name not in applied]:
            self._refuse_newer(applied)
            return done       # nothing to apply: a role that cannot create tables starts too
        with self.tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(7402212)")
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY,"
                         " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            have = {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}
            self._refuse_newer(have)
            for name, fn in MIGRATIONS:
                if name in have:
                    continue
                fn(conn)
                conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
                done.append(name)
        return done

    def _refuse_newer(self, have: set[str]) -> None:
        newer = sorted(have - {name for name, _ in MIGRATIONS})
        if newer:
            raise StoreError(f"the team store at {redact(self.url)} has a newer schema ({newer[-1]}) than this "
                             "skillshelf knows",
                             fix="upgrade skillshelf on this server to the version the other servers run")

    def has_schema(self) -> bool:
        """Whether skillshelf's schema was ever made here (its table of migrations exists)."""
        row = self.fetchone("SELECT to_regclass('schema_migrations')")
        return bool(row and row[0] is not None)

    def _no_schema(self) -> StoreError:
        """A database without skillshelf's schema: a typo in the URL, most often. Only the command
        that makes a team store (``migrate-store``) creates the schema."""
        return StoreError(f"the database at {redact(self.url)} holds no skillshelf team store (no schema)",
                          fix="check the database name in the URL; to make a new team store there, run "
                              f"`skillshelf --store {redact(self.url)} migrate-store --upgrade` once, with the "
                              "owner's password")

    def check_schema(self) -> None:
        applied = set(self.applied_migrations())
        if not applied and not self.has_schema():
            raise self._no_schema()
        missing = [name for name, _ in MIGRATIONS if name not in applied]
        if missing:
            raise StoreError(f"the team store at {redact(self.url)} has an older schema (missing {missing[0]})",
                             fix=f"run `skillshelf --store {redact(self.url)} migrate-store --upgrade` once, "
                                 "with the password, from a server running this version")

    def schema_version(self) -> str:
        applied = self.applied_migrations()
        return applied[-1] if applied else "none"

    def ping(self) -> float:
        """Round-trip time of a trivial query, in milliseconds."""
        t0 = time.perf_counter()
        self.fetchone("SELECT 1")
        return (time.perf_counter() - t0) * 1000

    # --- the change stream ----------------------------------------------------------------
    @staticmethod
    def record_change(conn: Any, kind: str, key: str) -> int:
        """Inside a writing transaction: record that ``key`` (a skill name, a draft, an
        overlay's skill id) of ``kind`` changed, and announce it at commit. Returns its
        sequence number."""
        seq = conn.execute("INSERT INTO changes (kind, key) VALUES (%s, %s) RETURNING seq", (kind, key)).fetchone()[0]
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(seq)))
        return int(seq)

    def last_change(self) -> int:
        row = self.fetchone("SELECT COALESCE(MAX(seq), 0) FROM changes")
        return int(row[0]) if row else 0

    def changes_after(self, seq: int, limit: int = 10_000) -> list[tuple[int, str, str]]:
        """(seq, kind, key) committed after ``seq``, oldest first."""
        return [(int(s), k, key) for s, k, key in self.fetchall(
            "SELECT seq, kind, key FROM changes WHERE seq > %s ORDER BY seq LIMIT %s", (int(seq), int(limit)))]

    def listen(self, on_change: Callable[[], None], *, poll: float = 1.0) -> threading.Thread:
        """Call ``on_change()`` soon after another server commits a change: a daemon thread
        LISTENs on its own connection, and also wakes every ``poll`` seconds (a notification
        lost with a dropped connection is then caught by the caller's ``changes_after``).
        Reconnects with back-off while PostgreSQL is away; ``close()`` stops it."""
        psycopg = self._psycopg

        def run() -> None:
            delay = 0.5
            while not self._closed:
                try:
                    with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                        conn.execute(f"LISTEN {CHANNEL}")
                        delay = 0.5
                        on_change()     # catch up with what was committed while not listening
                        while not self._closed:
                            # a notification wakes it at once; the timeout is the safety net
                            for _ in conn.notifies(timeout=poll, stop_after=1):
                                pass
                            if self._closed:
                                return
                            on_change()
                except Exception:  # noqa: BLE001 -- PostgreSQL away: retry, the poll covers the gap
                    if self._closed:
                        return
                    time.sleep(delay)
                    delay = min(delay * 2, 5.0)

        t = threading.Thread(target=run, name="skillshelf-listen", daemon=True)
        t.start()
        self._listener = t
        return t

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(Exception):
            self.pool.close(timeout=2.0)
        t = getattr(self, "_listener", None)
        if t is not None and t is not threading.current_thread():
            t.join(timeout=3.0)
