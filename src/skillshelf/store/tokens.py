"""Tokens of a team library: one per person or agent, each with a role (``access.ROLES``).

A token is shown once, when it is made; the team store keeps its sha256 only, so a copy of
the database gives no one a way in. ``verify`` looks a token up by that hash (a lookup by
hash needs no constant-time comparison: the hash of a guess says nothing about the stored
ones) and notes when it was last used, at most once a minute per token so a busy agent does
not turn every request into a write."""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import secrets
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..access import ROLES, check_role
from ..errors import ConflictError, NotFoundError, ValidationError
from .pg_writes import call, clean, refusal

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
LAST_USED_EVERY = 60.0       # seconds between two writes of one token's last_used


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _iso(t: _dt.datetime | None) -> str | None:
    return None if t is None else t.astimezone(_dt.UTC).isoformat(timespec="seconds")


class Tokens:
    """The tokens in the team store ``pg`` (``PgStore``). Refusals and lost connections
    raise ``StoreError``."""

    def __init__(self, pg: Any):
        self.pg = pg
        self._noted: dict[str, float] = {}     # hash -> monotonic time its last_used was written
        self._lock = threading.Lock()

    def add(self, name: str, role: str) -> str:
        """Make a token for ``name`` with ``role``; returns it (the only time it is seen)."""
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise ValidationError(f"{name!r} cannot name a token",
                                  fix="use 1-64 letters, digits and . _ @ + - (starting with a letter or digit), "
                                      "e.g. alice or ci-agent")
        check_role(role)
        token = secrets.token_urlsafe(32)
        with call(self.pg) as conn:
            row = conn.execute("INSERT INTO tokens (name, role, hash) VALUES (%s, %s, %s)"
                               " ON CONFLICT (name) DO NOTHING RETURNING name", (name, role, digest(token))).fetchone()
        if row is None:
            raise ConflictError(f"a token named {name!r} exists already",
                                fix=f"choose another name, or revoke it first (`skillshelf tokens revoke {name}`)")
        return token

    def list(self) -> list[dict[str, Any]]:
        """Every token's ``name, role, created, last_used`` (ISO times, UTC; last_used None
        when never used), by name: never the token or its hash."""
        with call(self.pg) as conn:
            rows = conn.execute("SELECT name, role, created_at, last_used FROM tokens"
                                " ORDER BY name COLLATE \"C\"").fetchall()
        return [{"name": r[0], "role": r[1], "created": _iso(r[2]), "last_used": _iso(r[3])} for r in rows]

    def revoke(self, name: str) -> None:
        """Delete the token of ``name``: requests with it are refused from now on."""
        n = 0
        if isinstance(name, str):
            with call(self.pg) as conn:
                n = conn.execute("DELETE FROM tokens WHERE name = %s", (clean(name),)).rowcount
        if not n:
            raise NotFoundError(f"no token named {name!r}", fix="`skillshelf tokens list` shows the names")

    def verify(self, token: str) -> tuple[str, str] | None:
        """``(name, role)`` of the token, or None for a token that is not (or no longer) one."""
        if not isinstance(token, str) or not token or len(token) > 512:
            return None
        h = digest(token)
        with call(self.pg) as conn:
            row = conn.execute("SELECT name, role FROM tokens WHERE hash = %s", (h,)).fetchone()
            if row is None or row[1] not in ROLES:
                return None
            if self._due(h):
                try:
                    # the condition keeps several servers from writing it more than once a minute too
                    conn.execute("UPDATE tokens SET last_used = now() WHERE hash = %s"
                                 " AND (last_used IS NULL OR last_used < now() - interval '60 seconds')", (h,))
                except Exception as exc:
                    # a store that cannot take the write (read-only, full) still lets its
                    # readers in: last_used is a note, not a permission
                    if getattr(refusal(self.pg.url, exc), "write_failure", None) is None:
                        raise
        return row[0], row[1]

    def _due(self, h: str) -> bool:
        t = time.monotonic()
        with self._lock:
            last = self._noted.get(h)
            if last is not None and t - last < LAST_USED_EVERY:
                return False
            self._noted[h] = t
            if len(self._noted) > 10_000:           # bounded: forget the oldest notes
                for k in sorted(self._noted, key=lambda k: self._noted[k])[:5_000]:
                    del self._noted[k]
            return True


@contextlib.contextmanager
def opened(url: str) -> Iterator[Tokens]:
    """The tokens of the team store at ``url`` on a connection of their own: managing tokens
    opens no library (no home is created, no skill is copied out of the store)."""
    from .postgres import PgStore

    pg = PgStore(url, max_size=1)
    try:
        yield Tokens(pg)
    finally:
        pg.close()
