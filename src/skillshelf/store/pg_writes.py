"""How the team store's refusals reach the services: as the library's ``StoreError``.

The PostgreSQL twin of ``writes``: a full disk on the database server, a read-only database
(a standby), a role without the right to write, an I/O error or a lock held too long are
not bugs, and a connection cut during a request (PostgreSQL restarted) is not either. The
caller gets one ``StoreError`` naming the problem and the fix, PostgreSQL's error kept as its
cause. A refusal a read can go on without also carries ``write_failure`` (the reason in
``errors.write_failure``'s words), so a search whose usage row cannot be written still
answers.

``call(pg)`` is one statement on a pooled connection without a transaction of its own
(a single statement is atomic by itself: one round trip less than BEGIN/COMMIT around it);
``write(pg)`` is a transaction for several statements."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from ..errors import StoreError
from ..net import redact_password


def redact(url: str) -> str:
    """The URL without its password (for messages and `doctor`): ``net.redact_password``."""
    return redact_password(url)


def unreachable(url: str, exc: BaseException) -> StoreError:
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    return StoreError(f"cannot reach the team store at {redact(url)} ({reason})",
                      fix="check that PostgreSQL is running there and that the URL's host, port, database, user "
                          "and password are right (`skillshelf --store URL doctor` tests it)")


def lost(url: str, exc: BaseException) -> StoreError:
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    return StoreError(f"the connection to the team store at {redact(url)} failed during this request ({reason})",
                      fix="try again: the server reconnects by itself once PostgreSQL answers")


# SQLSTATE (or its two-character class) -> (what happened, the fix, errors.write_failure's reason)
_REFUSALS: dict[str, tuple[str, str, str | None]] = {
    "53100": ("the team store's disk is full", "free disk space on the database server; searching still works",
              "the disk is full"),
    "53": ("the team store is out of resources", "check the database server's memory and connection limits",
           None),
    "25006": ("the team store is read-only (a standby, or default_transaction_read_only)",
              "point --store at the primary database; searching still works", "the database is read-only"),
    "42501": ("the team store's role may not write here",
              ("grant the role of the store URL the rights on skillshelf's tables (the owner of the schema runs "
               "`skillshelf migrate-store --upgrade`)"), "no permission to write the database"),
    "58": ("the team store had an I/O error", "check the database server's disk and its log", "disk I/O error"),
    "55P03": ("a row of the team store stayed locked too long", "try again in a moment",
              "the database is locked"),
    "57014": ("the team store cancelled the statement (statement_timeout, or an administrator)",
              "try again; if it keeps happening, raise statement_timeout for the store's role", None),
    "40001": ("a concurrent change in the team store conflicted with this one", "try again", None),
    "40P01": ("a concurrent change in the team store conflicted with this one (deadlock)", "try again", None),
    "42P01": ("the team store lacks a table this skillshelf needs",
              "run `skillshelf migrate-store --upgrade` from a server running this version", None),
    "42703": ("the team store lacks a column this skillshelf needs",
              "run `skillshelf migrate-store --upgrade` from a server running this version", None),
}
# the connection itself went away: PostgreSQL restarted, a network cut, an administrator
_LOST_CLASSES = ("08", "57P01", "57P02", "57P03")


def refusal(url: str, exc: BaseException) -> StoreError | None:
    """The ``StoreError`` for psycopg's ``exc`` when it is a refusal or a lost connection,
    else None (a bug, to be raised as it is)."""
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return None
    state = getattr(exc, "sqlstate", None) or ""
    if (not state and isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))) \
            or state.startswith(_LOST_CLASSES):
        return lost(url, exc)
    if state.startswith("22"):    # a value PostgreSQL cannot hold (what it says names it)
        said = " ".join(str(exc).split())[:200]
        return StoreError(f"the team store at {redact(url)} refused a value ({said})",
                          fix="leave control characters and out-of-range numbers out of what is sent")
    hit = _REFUSALS.get(state) or _REFUSALS.get(state[:2])
    if hit is None:
        return None
    what, fix, reason = hit
    err = StoreError(f"{what} ({redact(url)}: {' '.join(str(exc).split())[:200]})", fix=fix)
    err.write_failure = reason      # type: ignore[attr-defined]
    return err


@contextlib.contextmanager
def converted(url: str) -> Iterator[None]:
    """psycopg's refusals and lost connections inside leave as ``StoreError``."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        err = refusal(url, exc)
        if err is None:
            if type(exc).__name__ == "PoolTimeout":     # every connection busy or the server away
                raise lost(url, exc) from None
            raise
        raise err from exc


@contextlib.contextmanager
def call(pg: Any) -> Iterator[Any]:
    """A pooled connection in autocommit mode: each statement is its own transaction."""
    with converted(pg.url), pg.pool.connection() as conn:
        yield conn


@contextlib.contextmanager
def write(pg: Any) -> Iterator[Any]:
    """One transaction on a pooled connection (rolled back when the block raises)."""
    with converted(pg.url), pg.pool.connection() as conn, conn.transaction():
        yield conn


# The team store's ``meta`` values a request reads (generations of pins, trusts, learning), read
# once per request inside ``one_meta_read()``: a few rows in one statement instead of a round
# trip each. Per thread (a ContextVar): a read outside a scope goes to the store as before.
_META: contextvars.ContextVar[dict[int, dict[str, str]] | None] = contextvars.ContextVar("skillshelf_meta",
                                                                                          default=None)


@contextlib.contextmanager
def one_meta_read() -> Iterator[None]:
    """Inside it, the first ``meta_values`` of a store reads its whole ``meta`` table (a few
    rows); the others are answered from that read: what one request sees is one moment's."""
    token = _META.set({})
    try:
        yield
    finally:
        _META.reset(token)


def meta_values(pg: Any, keys: tuple[str, ...]) -> tuple[str | None, ...]:
    """The values of ``keys`` in the team store's ``meta`` table (None: not set)."""
    scope = _META.get()
    got: dict[str, str] | None = None if scope is None else scope.get(id(pg))
    if got is None:
        with call(pg) as conn:
            if scope is None:
                got = dict(conn.execute("SELECT key, value FROM meta WHERE key = ANY(%s)", (list(keys),)).fetchall())
            else:
                got = scope[id(pg)] = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    return tuple(got.get(k) for k in keys)


def clean(value: Any) -> Any:
    """A text value PostgreSQL can hold: a NUL character (which SQLite keeps and a ``text``
    column refuses) becomes U+FFFD, so a request holding one is still logged."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value
