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

import json
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import decisions as decisionsmod
from ..decisions import Decisions
from ..errors import SkillshelfError, StoreError
from .overlay import FIELDS as OVERLAY_FIELDS, Overlays
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



# --- the decisions file (``decisions.json``): what a database made anew takes back ----------------
MARK = "decisions_taken"     # meta: this database has the decisions file's decisions (or made them)


def decisions_of(store: Store) -> Decisions:
    """The decisions the file keeps, as the database holds them now: pinned roots, held imports, overlays."""
    db = store.db
    return Decisions(
        pinned=[{"root": r, "path": p, "pinned_at": at} for r, p, at in
                db.execute("SELECT root, path, pinned_at FROM pinned_roots ORDER BY root")],
        held=[{"skill_id": s, "root": r, "content_key": k, "name": n, "since": at} for s, r, k, n, at in
              db.execute("SELECT skill_id, root, content_key, name, since FROM pin_held WHERE reason = 'imported'"
                         " ORDER BY skill_id")],
        overlays=[dict(zip(OVERLAY_FIELDS, row)) for row in
                  db.execute(f"SELECT {', '.join(OVERLAY_FIELDS)} FROM overlay ORDER BY skill_id")])


def taken(store: Store) -> bool:
    """Whether this database has taken the decisions file's decisions (or was there before it)."""
    return store.get_meta(MARK) is not None


def mark_taken(store: Store, what: str = "carried") -> None:
    """Say this database holds the owner's decisions (a rebuild that carried them whole)."""
    with store.tx():
        store.set_meta(MARK, what)


def take_back(store: Store, d: Decisions | None, *, at: str, whole: Iterable[tuple[str, str]] = (),
              note: str = "") -> dict[str, Any] | None:
    """Into a database that has not taken them yet (one made anew): the pinned roots of ``d``, each pinned
    again with no skills (every skill of it held as new until a person pins it), and the roots ``whole``
    (label, path) so too; its held imports and its overlays. One transaction, once per database (the mark
    in ``meta``, set with them); a decision the database has already is kept as it is. What was taken
    (``at``, ``roots``, ``held``, ``overlays``, ``note``), or None when it had been."""
    with store.tx() as db:
        if db.execute("SELECT 1 FROM meta WHERE key = ?", (MARK,)).fetchone():
            return None
        roots = [(r["root"], r["path"]) for r in (d.pinned if d else [])] + list(whole)
        have = {r[0] for r in db.execute("SELECT root FROM pinned_roots")}
        fresh = sorted({label for label, _ in roots} - have)
        held = overlays = 0
        if roots:
            _hold(db, roots, at)
        if d is not None:
            held = db.executemany(
                "INSERT OR IGNORE INTO pin_held (skill_id, root, reason, since, content_key, name)"
                " VALUES (?, ?, 'imported', ?, ?, ?)",
                [(h["skill_id"], h["root"], h["since"] or at, h["content_key"] or "", h["name"] or "")
                 for h in d.held]).rowcount
            overlays = db.executemany(
                f"INSERT OR IGNORE INTO overlay ({', '.join(OVERLAY_FIELDS)}) VALUES "
                f"({', '.join('?' * len(OVERLAY_FIELDS))})",
                [tuple(o[k] for k in OVERLAY_FIELDS) for o in d.overlays]).rowcount
            for o in d.overlays:        # (on the skills indexed already; indexing applies them to the others)
                Overlays(None).apply_to_index(o["skill_id"], db)
            db.execute("INSERT INTO meta VALUES ('pin_generation', '1') ON CONFLICT(key) DO UPDATE"
                       " SET value = CAST(value AS INTEGER) + 1")
            db.execute("INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE"
                       " SET value = CAST(value AS INTEGER) + 1")
        got: dict[str, Any] = {"at": at, "roots": fresh, "held": max(held, 0), "overlays": max(overlays, 0),
                                  "note": note}
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (MARK, json.dumps(got)))
    return got


def taken_back(store: Store) -> dict[str, Any] | None:
    """What ``take_back`` took into this database (None: nothing, or it was there before the file)."""
    raw = store.get_meta(MARK)
    try:
        got = json.loads(raw) if raw else None
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def hollow_roots(store: Store) -> list[str]:
    """The pinned roots that pin no skill (held whole until a person pins them)."""
    return [r[0] for r in store.db.execute("SELECT root FROM pinned_roots r WHERE NOT EXISTS"
                                           " (SELECT 1 FROM pinned_skills s WHERE s.root = r.root) ORDER BY root")]


def keep_decisions(store: Store) -> None:
    """Write the home's decisions file again from this database (``decisions.keep``), once it has taken
    the file's decisions (a database made anew that has not is never written over them). A damaged file
    is moved aside first, and its new path said on stderr. A write that fails is said on stderr: the database has the decision; the next change writes the file again."""
    try:
        if store.read_only or not taken(store):
            return
        aside = decisionsmod.keep(Path(store.path).parent, lambda: decisions_of(store))
    except (OSError, SkillshelfError) as exc:
        print(f"skillshelf: the owner's decisions could not be written to "
              f"{decisionsmod.path(Path(store.path).parent)}: {getattr(exc, 'message', None) or exc}; the database"
              " has them, and the next pin, trust or deprecation writes the file again", file=sys.stderr)
        return
    if aside is not None:
        print(f"skillshelf: {decisionsmod.path(Path(store.path).parent)} was damaged: it was moved to {aside} before"
              " the decisions the database holds were written in its place", file=sys.stderr)
