"""The team workspace in PostgreSQL: its skills (SKILL.md and their other files), every
version of them, their changelogs, the drafts waiting for review, and the locks writers of
one skill take across servers.

A change to a skill is one transaction (:meth:`PgWorkspace.commit`): the skills row (and its
files), the new version in ``history`` (whose primary key (name, version) never gives a number
twice), the changelog entry and the record in the change stream. The row is written only if
it still holds what the change was planned from (a compare-and-swap on its sha256), so a
change planned from an old version can never replace a newer one, even when the advisory lock
was lost with its connection (PostgreSQL restarted under it).

Locks (:meth:`PgWorkspace.locked`) are session-level advisory locks on a connection the
thread holds for the whole operation; every query of this module made by that thread inside
the operation runs on that connection, so a commit whose lock has gone fails instead of
landing unprotected, and an operation never needs a second connection while it holds one."""

from __future__ import annotations

import contextlib
import hashlib
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConflictError, StoreError
from . import pg_changes
from .pg_writes import lost, redact, refusal
from .postgres import PgStore, _psycopg

NEW = None     # ``base`` of a change that creates a skill: no live row may exist


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class SkillRow:
    name: str
    text: bytes
    version: int
    sha256: str
    deleted: bool
    files: dict[str, str] = field(default_factory=dict)    # path -> sha256


class PgWorkspace:
    """SQL for the team workspace over a :class:`PgStore` (see the module's text)."""

    LOCK_WAIT = 30.0        # seconds a writer waits for another server's writer of the same skill
    # connections held by operations at once (each holds one while it runs, waiting included);
    # closed again after a minute unused. A server opens at most this many beside the shared
    # pool's and the listener's: PostgreSQL's max_connections must allow for every server.
    SESSIONS = 16

    def __init__(self, pg: PgStore, *, sessions: int | None = None):
        psycopg, pool_mod = _psycopg()
        self.pg = pg
        self._psycopg = psycopg
        self._local = threading.local()
        # Operations hold their connection while they wait for a lock: a pool of their own,
        # so that waiting writers never starve the requests of the shared pool.
        self._sessions = pool_mod.ConnectionPool(
            pg.url, min_size=0, max_size=sessions or self.SESSIONS, open=False, timeout=self.LOCK_WAIT,
            check=pool_mod.ConnectionPool.check_connection, reset=self._reset, name="skillshelf-writers",
            max_idle=60, kwargs={"autocommit": True, "connect_timeout": 5})
        self._sessions.open(wait=False)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._sessions.close(timeout=2.0)

    @staticmethod
    def _reset(conn: Any) -> None:
        # a connection goes back to the pool holding no lock, whatever happened to its holder
        conn.execute("SELECT pg_advisory_unlock_all()")

    # --- sessions and locks -------------------------------------------------------------
    def in_session(self) -> bool:
        return getattr(self._local, "conn", None) is not None

    @contextlib.contextmanager
    def locked(self, *keys: str) -> Iterator[None]:
        """Exclusive locks on ``keys`` across every server (taken in sorted order: two
        writers locking the same skills cannot deadlock), held until the block ends. Nested
        blocks of one thread share its connection."""
        psycopg = self._psycopg
        own = not self.in_session()
        stack = contextlib.ExitStack()
        try:
            if own:
                try:
                    self._local.conn = stack.enter_context(self._sessions.connection())
                except Exception as exc:
                    stack.close()
                    if type(exc).__name__ == "PoolTimeout":
                        raise ConflictError(f"too many changes are waiting on this server (over "
                                            f"{self._sessions.max_size} for {self.LOCK_WAIT:g} s)",
                                            fix="try again in a moment") from None
                    if isinstance(exc, psycopg.OperationalError):
                        raise lost(self.pg.url, exc) from None
                    raise
            conn = self._local.conn
            taken: list[str] = []
            stack.callback(self._unlock, conn, taken)
            try:
                conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(self.LOCK_WAIT * 1000)}ms",))
                for key in sorted(set(keys)):
                    conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
                    taken.append(key)
            except psycopg.errors.LockNotAvailable:
                what = ", ".join(k.split(":", 1)[-1] for k in sorted(set(keys)))
                raise ConflictError(f"{what} is being changed through another server (waited "
                                    f"{self.LOCK_WAIT:g} s)", fix="try again in a moment") from None
            except psycopg.errors.DeadlockDetected:
                raise ConflictError("two changes waited for each other's skills", fix="try again") from None
            except psycopg.OperationalError as exc:
                raise lost(self.pg.url, exc) from None
            yield
        finally:
            if own:
                self._local.conn = None
            stack.close()

    @staticmethod
    def _unlock(conn: Any, keys: list[str]) -> None:
        for key in reversed(keys):
            with contextlib.suppress(Exception):   # a dropped connection holds no lock any more
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        """One transaction: on the thread's locked connection inside an operation, else on
        the shared pool."""
        psycopg = self._psycopg
        conn = getattr(self._local, "conn", None)
        try:
            if conn is None:
                with self.pg.tx() as c:
                    yield c
            else:
                with conn.transaction():
                    yield conn
        except psycopg.OperationalError as exc:
            raise lost(self.pg.url, exc) from None
        except psycopg.IntegrityError:
            raise                       # the caller knows what a duplicate means
        except psycopg.Error as exc:
            raise (refusal(self.pg.url, exc) or refused(self.pg.url, exc)) from None

    def store_id(self) -> str | None:
        """This team store's own id: a random one, written by the first server that asks (a
        dump restored into another database keeps it). None when it has none and may not write."""
        row = self._one("SELECT value FROM meta WHERE key = 'store_id'")
        if row is None:
            try:
                with self.tx() as conn:
                    conn.execute("INSERT INTO meta (key, value) VALUES ('store_id', %s) ON CONFLICT (key) DO NOTHING",
                                 (uuid.uuid4().hex,))
                    row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            except StoreError:      # a read-only role or database: nothing to compare with
                return None
        return str(row[0]) if row else None

    def _one(self, sql: str, params: tuple = ()) -> tuple | None:
        with self.tx() as conn:
            return conn.execute(sql, params).fetchone()

    def _all(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self.tx() as conn:
            return conn.execute(sql, params).fetchall()

    # --- skills ---------------------------------------------------------------------------
    def skill(self, name: str) -> SkillRow | None:
        """The skill ``name`` as committed now (a deleted one too: ``deleted``), with the
        sha256 of each of its other files; None when the store never had it."""
        with self.tx() as conn:
            row = conn.execute("SELECT text, version, sha256, deleted FROM skills WHERE name = %s",
                               (name,)).fetchone()
            if row is None:
                return None
            files = dict(conn.execute("SELECT path, sha256 FROM skill_files WHERE name = %s", (name,)).fetchall())
        return SkillRow(name, bytes(row[0]), int(row[1]), row[2], bool(row[3]), files)

    def skills(self, names: list[str]) -> dict[str, SkillRow]:
        """:meth:`skill` of many names at once (the rows the store has)."""
        with self.tx() as conn:
            found = conn.execute("SELECT name, text, version, sha256, deleted FROM skills WHERE name = ANY(%s)",
                                 (list(names),)).fetchall()
            files = conn.execute("SELECT name, path, sha256 FROM skill_files WHERE name = ANY(%s)",
                                 (list(names),)).fetchall()
        out = {n: SkillRow(n, bytes(t), int(v), s, bool(d)) for n, t, v, s, d in found}
        for n, path, digest in files:
            if n in out:
                out[n].files[path] = digest
        return out

    def states(self) -> dict[str, tuple[str, bool]]:
        """name -> (sha256 of its SKILL.md, deleted) for every skill the store has had."""
        return {n: (s, bool(d)) for n, s, d in self._all("SELECT name, sha256, deleted FROM skills")}

    def file_states(self) -> dict[str, dict[str, str]]:
        """name -> {path: sha256} of the other files of every skill."""
        out: dict[str, dict[str, str]] = {}
        for name, path, digest in self._all("SELECT name, path, sha256 FROM skill_files"):
            out.setdefault(name, {})[path] = digest
        return out

    def file_content(self, name: str, path: str) -> bytes | None:
        row = self._one("SELECT content FROM skill_files WHERE name = %s AND path = %s", (name, path))
        return None if row is None else bytes(row[0])

    def commit(self, name: str, text: bytes, version: int, *, base: str | None,
               keep: Iterable[tuple[int, bytes]] = (), entry: str | None = None,
               files: Mapping[str, bytes] | None = None, author: str = "") -> int:
        """Write the skill ``name`` in one transaction: its row (``text``, ``version``), its
        other files when ``files`` is given (they replace the old set), the versions in ``keep``
        that history lacks, ``text`` as the new ``version`` (refused if that number is kept
        already), the changelog ``entry`` (a JSON line) and a change. Only if the row still
        holds ``base`` (the sha256 the change was planned from; ``NEW`` for a skill that does
        not exist): ``ConflictError`` otherwise, with nothing written. Returns the change's
        sequence number."""
        psycopg = self._psycopg
        digest = sha256(text)
        try:
            with self.tx() as conn:
                if base is NEW:
                    cur = conn.execute(
                        "INSERT INTO skills AS s (name, text, version, sha256, deleted, updated_at, updated_by) "
                        "VALUES (%s, %s, %s, %s, false, now(), %s) ON CONFLICT (name) DO UPDATE SET "
                        "text = EXCLUDED.text, version = EXCLUDED.version, sha256 = EXCLUDED.sha256, deleted = false,"
                        " updated_at = now(), updated_by = EXCLUDED.updated_by WHERE s.deleted",
                        (name, text, version, digest, author or None))
                    if cur.rowcount != 1:
                        raise _changed(name, "was created")
                    conn.execute("DELETE FROM skill_files WHERE name = %s", (name,))   # a deleted one's
                else:
                    cur = conn.execute(
                        "UPDATE skills SET text = %s, version = %s, sha256 = %s, updated_at = now(), updated_by = %s "
                        "WHERE name = %s AND sha256 = %s AND NOT deleted",
                        (text, version, digest, author or None, name, base))
                    if cur.rowcount != 1:
                        raise _changed(name, "was changed")
                if files is not None:
                    conn.execute("DELETE FROM skill_files WHERE name = %s", (name,))
                    for path, content in sorted(files.items()):
                        conn.execute("INSERT INTO skill_files (name, path, content, sha256) VALUES (%s, %s, %s, %s)",
                                     (name, path, content, sha256(content)))
                for v, t in keep:
                    conn.execute("INSERT INTO history (name, version, text) VALUES (%s, %s, %s) "
                                 "ON CONFLICT (name, version) DO NOTHING", (name, int(v), t))
                conn.execute("INSERT INTO history (name, version, text) VALUES (%s, %s, %s)", (name, version, text))
                if entry is not None:
                    conn.execute("INSERT INTO changelog (name, entry) VALUES (%s, %s)", (name, entry))
                return PgStore.record_change(conn, "skill", name)
        except psycopg.errors.UniqueViolation:
            raise ConflictError(f"version {version} of {name} was given by another server meanwhile; nothing was "
                                "written", fix="try again: the change is planned again from the newest version") from None
        except psycopg.IntegrityError as exc:
            raise refused(self.pg.url, exc) from None

    def delete(self, name: str, *, base: str, forget: bool, author: str = "") -> int:
        """Mark the skill deleted (its row stays as a tombstone, so every server removes its
        copy), drop its files and, with ``forget``, its versions and changelog. Only if the row
        still holds ``base``."""
        with self.tx() as conn:
            cur = conn.execute("UPDATE skills SET deleted = true, text = ''::bytea, sha256 = '', updated_at = now(),"
                               " updated_by = %s WHERE name = %s AND sha256 = %s AND NOT deleted",
                               (author or None, name, base))
            if cur.rowcount != 1:
                raise _changed(name, "was changed")
            conn.execute("DELETE FROM skill_files WHERE name = %s", (name,))
            if forget:
                conn.execute("DELETE FROM history WHERE name = %s", (name,))
                conn.execute("DELETE FROM changelog WHERE name = %s", (name,))
            return PgStore.record_change(conn, "skill", name)

    # --- history --------------------------------------------------------------------------
    def versions(self, name: str) -> list[int]:
        return [int(r[0]) for r in self._all("SELECT version FROM history WHERE name = %s ORDER BY version",
                                             (name,))]

    def version_text(self, name: str, version: int) -> bytes | None:
        row = self._one("SELECT text FROM history WHERE name = %s AND version = %s", (name, int(version)))
        return None if row is None else bytes(row[0])

    def kept_version(self, name: str, digest: str) -> int | None:
        """The newest version of ``name`` whose text has this sha256, or None (no version kept
        has it: a text this store never held, e.g. a person's edit on a server's disk)."""
        row = self._one("SELECT max(version) FROM history WHERE name = %s AND sha256(text) = decode(%s, 'hex')",
                        (name, digest))
        return None if row is None or row[0] is None else int(row[0])

    def add_version(self, name: str, version: int, text: bytes) -> None:
        """Keep ``text`` as ``version`` (outside a change: a version found on disk);
        ``ConflictError`` when that number is kept already."""
        try:
            with self.tx() as conn:
                conn.execute("INSERT INTO history (name, version, text) VALUES (%s, %s, %s)",
                             (name, int(version), text))
        except self._psycopg.errors.UniqueViolation:
            raise ConflictError(f"version {version} of {name} is kept already (given by another server)",
                                fix="try again") from None
        except self._psycopg.IntegrityError as exc:
            raise refused(self.pg.url, exc) from None

    def append_changelog(self, name: str, entry: str) -> None:
        with self.tx() as conn:
            conn.execute("INSERT INTO changelog (name, entry) VALUES (%s, %s)", (name, entry))

    def changelog(self, name: str) -> list[str]:
        return [r[0] for r in self._all("SELECT entry FROM changelog WHERE name = %s ORDER BY id", (name,))]

    def forget(self, name: str) -> None:
        with self.tx() as conn:
            conn.execute("DELETE FROM history WHERE name = %s", (name,))
            conn.execute("DELETE FROM changelog WHERE name = %s", (name,))

    # --- drafts ---------------------------------------------------------------------------
    def draft_names(self) -> list[str]:
        return [r[0] for r in self._all("SELECT name FROM drafts ORDER BY name")]

    def draft(self, name: str) -> tuple[bytes, str] | None:
        """(the SKILL.md it would write, its record as JSON), or None."""
        row = self._one("SELECT content, record FROM drafts WHERE name = %s", (name,))
        return None if row is None else (bytes(row[0]), row[1])

    def drafts(self) -> dict[str, tuple[bytes, str]]:
        return {n: (bytes(c), r) for n, c, r in self._all("SELECT name, content, record FROM drafts")}

    def put_draft(self, name: str, content: bytes, record: str) -> None:
        with self.tx() as conn:
            conn.execute("INSERT INTO drafts (name, content, record, updated_at) VALUES (%s, %s, %s, now()) "
                         "ON CONFLICT (name) DO UPDATE SET content = EXCLUDED.content, record = EXCLUDED.record, "
                         "updated_at = now()", (name, content, record))
            PgStore.record_change(conn, "draft", name)

    def remove_draft(self, name: str) -> bool:
        with self.tx() as conn:
            gone = conn.execute("DELETE FROM drafts WHERE name = %s", (name,)).rowcount > 0
            if gone:
                PgStore.record_change(conn, "draft", name)
            return gone

    def log_rejection(self, name: str, entry: str) -> None:
        with self.tx() as conn:
            conn.execute("INSERT INTO draft_rejections (name, entry) VALUES (%s, %s)", (name, entry))

    def rejections(self) -> list[str]:
        return [r[0] for r in self._all("SELECT entry FROM draft_rejections ORDER BY id")]

    # --- the change stream ----------------------------------------------------------------
    def last_change(self) -> int:
        """The stream's position: its highest change number (never below what was pruned, so
        a reader starting here never takes the pruned part for a gap of its own)."""
        row = self._one("SELECT GREATEST(COALESCE(MAX(seq), 0), COALESCE((SELECT value::bigint FROM meta "
                        "WHERE key = %s), 0)) FROM changes", (pg_changes.HORIZON,))
        return int(row[0]) if row else 0

    def recent_seqs(self, after: int) -> list[int]:
        return [int(r[0]) for r in self._all("SELECT seq FROM changes WHERE seq > %s ORDER BY seq", (int(after),))]

    def pruned_through(self) -> int:
        """The highest change number pruned so far (0: none)."""
        with self.tx() as conn:
            return pg_changes.horizon(conn)

    def changes(self, after: int, also: Iterable[int] = (),
                limit: int = 10_000) -> tuple[list[tuple[int, str, str]], int]:
        """(seq, kind, key) committed after ``after``, and those of ``also`` (numbers below
        it not seen yet: a transaction that took its number earlier may commit later),
        oldest first; with the highest number pruned so far. Rows above ``after`` (or of
        ``also``) at or below that number may be gone unread: the reader has a gap."""
        with self.tx() as conn:
            rows = conn.execute("SELECT seq, kind, key FROM changes WHERE seq > %s OR seq = ANY(%s) "
                                "ORDER BY seq LIMIT %s", (int(after), [int(x) for x in also], int(limit))).fetchall()
            # read after the rows (each statement sees what was committed when it began): a
            # prune that removed a row before the rows were read had committed, with its
            # horizon, before this read, so a gap is never missed (at worst one is seen that
            # the rows above had covered; under a stricter isolation both share one snapshot)
            through = pg_changes.horizon(conn)
        return [(int(s), k, key) for s, k, key in rows], through

    def prune_changes(self, **kw: Any) -> pg_changes.Pruned:
        """Prune the change stream's old rows (``pg_changes.prune``)."""
        return pg_changes.prune(self.pg, **kw)

def refused(url: str, exc: BaseException) -> StoreError:
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    return StoreError(f"the team store at {redact(url)} refused this change ({reason}); nothing was written",
                      fix="see the PostgreSQL server's log for the reason; the change can be tried again")


def _changed(name: str, how: str) -> ConflictError:
    return ConflictError(f"{name} {how} through another server while this change was being made; nothing was "
                         "written", fix="try again: the change is planned again from the newest version")


__all__ = ["NEW", "PgWorkspace", "SkillRow", "sha256"]
