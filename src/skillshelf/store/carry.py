"""Rows carried from an old database file into a new one: what a rebuild keeps that the files do not hold.

A rebuild indexes the files into a new database. Two kinds of rows are not in the files, so they are
copied from the file the rebuild moved aside, row for row with their ids (the references between them
hold): the usage history (queries, recommendations, outcomes, the judge log, what learning kept of
them) and the owner's decisions (overlays on read-only skills, skills trusted after review, pinned
roots with what was pinned and the skills held). Both in one transaction: all of it or none.

From a file too damaged for that, :func:`salvage` copies each kind (the usage history, each kind of
decision) that can still be read whole, and says which cannot. Pins are never dropped quietly: a pinned root whose pins cannot be
read is pinned again with no skills (every skill of it is held as new until a person pins the root
again), and when even which roots were pinned cannot be read, the roots the caller names are held so."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreError
from .sqlite import Store

# the usage history, in the order its references need (recommendations point at queries)
USAGE_TABLES = ("queries", "recommendations", "outcomes", "judge_log", "learned")
# the owner's decisions that live only in the database, by kind (each kind is carried whole or not at all)
DECISIONS = {"overlays": ("overlay",), "trusted": ("audit_trust",),
             "pins": ("pinned_roots", "pinned_skills", "pinned_files"), "holds": ("pin_held",)}
DECISION_TABLES = tuple(t for tables in DECISIONS.values() for t in tables)


def _columns(db: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in db.execute(f"PRAGMA {schema}.table_info({table})")]


def _copy(db: sqlite3.Connection, table: str, have: set[str]) -> int:
    """Copy one table's rows from ``old`` (the columns both files have: an older file lacks later ones,
    they stay at their defaults); the rows copied (0 when the old file has no such table)."""
    if table not in have:
        return 0
    cols = [c for c in _columns(db, "main", table) if c in set(_columns(db, "old", table))]
    names = ", ".join(f'"{c}"' for c in cols)
    order = " ORDER BY id" if "id" in cols and table in USAGE_TABLES else ""
    return db.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM old.{table}{order}").rowcount


def _unreadable(old: Path, exc: BaseException) -> StoreError:
    why = "the file is damaged" if isinstance(exc, StoreError) else str(exc)
    return StoreError(f"cannot read the usage history and decisions in {old}: {why}",
                      fix="they stay in that file; the skill files are indexed all the same")


@contextmanager
def _attached(store: Store, old: Path) -> Iterator[set[str]]:
    """``old`` attached to the store's connection as ``old``: the names of its tables."""
    db = store.db
    try:
        db.execute("ATTACH DATABASE ? AS old", (str(old),))
    except (sqlite3.Error, StoreError) as exc:
        raise _unreadable(old, exc) from None
    try:
        try:
            have = {r[0] for r in db.execute("SELECT name FROM old.sqlite_master WHERE type = 'table'")}
        except (sqlite3.Error, StoreError) as exc:
            raise _unreadable(old, exc) from None
        yield have
    finally:
        try:
            db.execute("DETACH DATABASE old")
        except (sqlite3.Error, StoreError):
            pass


def carry_over(store: Store, old: Path) -> dict[str, int]:
    """Copy the usage history and the owner's decisions of the database file ``old`` into ``store`` (a
    new one, whose tables for them are empty) in one transaction: the rows copied per table. Raises
    ``StoreError`` naming the old file when it cannot be read; nothing is copied then."""
    copied: dict[str, int] = {}
    with _attached(store, old) as have:
        try:
            with store.tx() as db:
                for table in USAGE_TABLES + DECISION_TABLES:
                    if table in have:
                        copied[table] = _copy(db, table, have)
        except (sqlite3.Error, StoreError) as exc:     # (the connection names a damaged file as its own)
            raise _unreadable(old, exc) from None
    return copied


@dataclass
class Salvaged:
    """What :func:`salvage` could read of a damaged file: rows copied per table, the kinds that stay in
    the old file (``usage`` and the ``DECISIONS`` keys), the roots pinned again with no skills because their
    pins could not be read (``held_whole``), and whether even which roots were pinned could not be read
    (``roots_unread``: then ``held_whole`` are the roots the caller named)."""

    copied: dict[str, int] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)
    held_whole: list[str] = field(default_factory=list)
    roots_unread: bool = False


def _scan(db: sqlite3.Connection, table: str, have: set[str]) -> None:
    """Read every row of one table in ``old`` (the columns a copy takes); raises when it cannot."""
    if table in have:
        cols = [c for c in _columns(db, "main", table) if c in set(_columns(db, "old", table))]
        names = ", ".join(f'"{c}"' for c in cols)
        for _ in db.execute(f"SELECT {names} FROM old.{table}"):
            pass


def salvage(store: Store, old: Path, *, at: str, unknown: Iterable[tuple[str, str]] = ()) -> Salvaged:
    """Copy from ``old`` what can still be read of it, each kind whole or not at all (the usage history,
    then each kind of decision), in one transaction. A kind that cannot be read stays there (``left``).
    When the pins cannot be read, no hold is released: the roots that were pinned are pinned again with
    no skills, so every skill in them is held as new until a person pins the root again; when which
    roots were pinned cannot be read either (or the file cannot be opened), the roots ``unknown``
    (label, path) are held so. (Each kind is read through once before the transaction: a transaction
    that met a damaged page does not commit.)"""
    kinds = {"usage": USAGE_TABLES, **DECISIONS}
    pinned: list[tuple[str, str]] | None = None        # the roots pinned in ``old``, when that can be read
    try:
        with _attached(store, old) as have:
            try:
                pinned = [(r[0], r[1]) for r in store.db.execute("SELECT root, path FROM old.pinned_roots")] \
                    if "pinned_roots" in have else []
            except (sqlite3.Error, StoreError):
                pinned = None
            readable = []
            for kind, tables in kinds.items():
                try:
                    for t in tables:
                        _scan(store.db, t, have)
                except (sqlite3.Error, StoreError):
                    continue
                readable.append(kind)
            got = Salvaged(left=[k for k in kinds if k not in readable])
            hold = None if "pins" in readable else pinned if pinned is not None else list(unknown)
            with store.tx() as db:
                for kind in readable:
                    for t in kinds[kind]:
                        got.copied[t] = _copy(db, t, have)
                if hold is not None:
                    _hold(db, hold, at)
            got.held_whole, got.roots_unread = sorted(r[0] for r in hold or []), hold is not None and pinned is None
            return got
    except (sqlite3.Error, StoreError):     # not opened at all, or the copy met a damaged page after all
        pass
    hold = pinned if pinned is not None else list(unknown)
    with store.tx() as db:
        _hold(db, hold, at)
    return Salvaged(left=list(kinds), held_whole=sorted(r[0] for r in hold), roots_unread=pinned is None)


def _hold(db: sqlite3.Connection, roots: Iterable[tuple[str, str]], at: str) -> None:
    db.executemany("INSERT OR IGNORE INTO pinned_roots VALUES (?, ?, ?)", [(r, p, at) for r, p in roots])
    db.execute("INSERT INTO meta VALUES ('pin_generation', '1') ON CONFLICT(key) DO UPDATE"
               " SET value = CAST(value AS INTEGER) + 1")

