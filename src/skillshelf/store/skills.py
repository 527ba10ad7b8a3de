"""Skill rows as indexing writes them, the files that could not be indexed, and what a
search reads of the rows.

``SkillIndex`` is the write side of ``index.sync``: a first look at every row's file state,
then, inside the sync's transaction (``tx``: what ``store.tx()`` yields), the rows of a batch,
inserts, updates, deletes and the invalid-file list. ``SearchReads`` is the read side of a
search: the few numbers per skill its state is built from, the rows that filters select,
and the display columns of the hits shown. Plain values in and out (tuples, dicts, lists).

The columns a sync or a search state reads of every row (file state; copy group, active
flag, expiry) are answered from covering indexes (migration 011): in the table they sit
behind the body, so reading them there walked every body."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from .sqlite import Store
from .writes import rowid

IN_CHUNK = 500   # values per IN (...) list: far below SQLite's limit on bound parameters

# the invalid-file list's columns, in the table's order
INVALID_COLUMNS = ("path", "root", "rel", "rule", "message", "line", "mtime_ns", "size")
# what a sync needs to decide about a row it may write
_ROW_STATE = ("rowid", "id", "mtime_ns", "size", "content_hash", "path")


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _chunks(values: list, n: int = IN_CHUNK) -> Iterator[list]:
    for i in range(0, len(values), n):
        yield values[i:i + n]


def _under(sql: str, under: list[tuple[str, str]] | None) -> tuple[str, list[str]]:
    """``sql`` limited to the ids equal to ``id`` or starting with ``prefix`` of one of the
    (id, prefix) pairs (a range on the id's unique index); None: every row."""
    if under is None:
        return sql, []
    if not under:
        return sql + " WHERE 0", []
    params: list[str] = []
    for sid, prefix in under:
        params += [sid, prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)]
    return sql + " WHERE " + " OR ".join(["(id = ? OR (id >= ? AND id < ?))"] * len(under)), params


class SkillIndex:
    """The skill rows and the invalid-file list as ``index.sync`` writes them. Methods that
    take ``tx`` run inside the caller's transaction; the others read on their own."""

    def __init__(self, store: Store):
        self.store = store

    # --- reads outside a transaction (a first look; re-checked inside it) --------------
    def file_states(self, under: list[tuple[str, str]] | None = None) -> dict[str, tuple[int, int, str]]:
        """Skill id -> (mtime_ns, size, path) of the file each row was indexed from; ``under``:
        only the ids equal to or starting with one of these (id, prefix) pairs."""
        sql, params = _under("SELECT id, mtime_ns, size, path FROM skills", under)
        return {r[0]: (r[1], r[2], r[3]) for r in self.store.db.execute(sql, params)}

    def invalid_files(self) -> dict[str, dict[str, Any]]:
        """Path -> the invalid-file row (``INVALID_COLUMNS``) of every file that could not be indexed."""
        cur = self.store.db.execute(f"SELECT {', '.join(INVALID_COLUMNS)} FROM invalid_files")
        return {r[0]: dict(zip(INVALID_COLUMNS, r)) for r in cur}

    # --- inside the sync's transaction ---------------------------------------------------
    @staticmethod
    def rows_for(tx, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Skill id -> its row's state (rowid, id, mtime_ns, size, content_hash, path), for
        the ids that have a row now."""
        out: dict[str, dict[str, Any]] = {}
        for part in _chunks(ids):
            for r in tx.execute(f"SELECT {', '.join(_ROW_STATE)} FROM skills WHERE id IN ({_marks(len(part))})",
                                part):
                out[r[1]] = dict(zip(_ROW_STATE, r))
        return out

    @staticmethod
    def all_ids(tx, under: list[tuple[str, str]] | None = None) -> list[tuple[int, str]]:
        """(rowid, id) of every row (``under``: as in ``file_states``), as the rows are now."""
        sql, params = _under("SELECT rowid, id FROM skills", under)
        return [(r[0], r[1]) for r in tx.execute(sql, params)]

    @staticmethod
    def insert(tx, values: dict[str, Any]) -> int:
        """A new row (``values``: column -> value); returns its rowid."""
        cols = ", ".join(values)
        cur = tx.execute(f"INSERT INTO skills ({cols}) VALUES ({_marks(len(values))})", tuple(values.values()))
        return rowid(cur)

    @staticmethod
    def update(tx, rowid: int, values: dict[str, Any]) -> None:
        sets = ", ".join(f"{k} = ?" for k in values)
        tx.execute(f"UPDATE skills SET {sets} WHERE rowid = ?", (*values.values(), rowid))

    @staticmethod
    def touch(tx, rowid: int, mtime_ns: int, size: int, path: str) -> None:
        """Record a new file state for a row whose content did not change (a moved or copied
        home: the same skill at another path)."""
        tx.execute("UPDATE skills SET mtime_ns = ?, size = ?, path = ? WHERE rowid = ?", (mtime_ns, size, path, rowid))

    @staticmethod
    def delete(tx, rowid: int) -> None:
        tx.execute("DELETE FROM skills WHERE rowid = ?", (rowid,))

    @staticmethod
    def mark_invalid(tx, row: dict[str, Any]) -> None:
        """Record (or replace) a file that could not be indexed (``INVALID_COLUMNS``)."""
        tx.execute(f"INSERT OR REPLACE INTO invalid_files ({', '.join(INVALID_COLUMNS)})"
                   f" VALUES ({_marks(len(INVALID_COLUMNS))})", tuple(row[c] for c in INVALID_COLUMNS))

    @staticmethod
    def clear_invalid(tx, path: str) -> None:
        tx.execute("DELETE FROM invalid_files WHERE path = ?", (path,))

    @staticmethod
    def invalid_paths(tx) -> list[str]:
        return [r[0] for r in tx.execute("SELECT path FROM invalid_files")]

    @staticmethod
    @contextmanager
    def isolated(tx) -> Iterator[None]:
        """One file's writes as a unit inside the batch: whatever fails (or is interrupted)
        in the block is undone alone, and the exception goes on to the caller."""
        tx.execute("SAVEPOINT one_file")
        try:
            yield
        except BaseException:
            # SQLite may have ended the whole transaction already (a full disk does): then
            # there is no savepoint to go back to, and the caller's rollback says what failed
            if tx.in_transaction:
                with suppress(sqlite3.Error):
                    tx.execute("ROLLBACK TO one_file")
                    tx.execute("RELEASE one_file")
            raise
        tx.execute("RELEASE one_file")


# the columns a hit is shown from (``opening``: the start of the body, for its language)
HIT_COLUMNS = ("rowid", "id", "name", "path", "description", "display_name", "skill_type", "repo", "version", "tags",
               "active", "expires_on", "metadata", "kind", "rel", "name_key", "content_hash", "opening")
_HIT_SQL = ", ".join(HIT_COLUMNS[:-1]) + ", substr(body, 1, 400)"


class SearchReads:
    """What a search reads of the skill rows. Its per-skill state (``state``) is a few
    numbers per row, read once per index generation; filters read the rowids they select;
    display columns are read for the few hits shown."""

    def __init__(self, store: Store):
        self.store = store

    def state(self) -> list[tuple[int, str, int, str | None]]:
        """(rowid, name_key, active, expires_on) of every row, in no particular order (from
        the covering index: the caller sorts by rowid)."""
        return [tuple(r) for r in self.store.db.execute("SELECT rowid, name_key, active, expires_on FROM skills")]

    def state_of(self, rowids: list[int]) -> list[tuple[int, str, int, str | None]]:
        """``state`` of these rows only (rows removed meanwhile are absent)."""
        out: list[tuple[int, str, int, str | None]] = []
        for part in _chunks(rowids):
            out.extend(tuple(r) for r in self.store.db.execute(
                f"SELECT rowid, name_key, active, expires_on FROM skills WHERE rowid IN ({_marks(len(part))})", part))
        return out

    def hit_rows(self, rowids: list[int]) -> list[dict[str, Any]]:
        """The display columns (``HIT_COLUMNS``) of these rows (rows removed meanwhile are absent)."""
        out: list[dict[str, Any]] = []
        for part in _chunks(rowids):
            cur = self.store.db.execute(f"SELECT {_HIT_SQL} FROM skills WHERE rowid IN ({_marks(len(part))})", part)
            out.extend(dict(zip(HIT_COLUMNS, r)) for r in cur)
        return out

    def rowids_for_repo(self, repo: str) -> list[int]:
        """Rows for ``repo`` (lower-cased) or for any repo (none, 'global', '*')."""
        return [r[0] for r in self.store.db.execute(
            "SELECT rowid FROM skills WHERE repo IS NULL OR repo = '' OR lower(repo) IN (?, 'global', '*')", (repo,))]

    def tags(self) -> list[tuple[int, str]]:
        """(rowid, comma-separated tags) of the rows that have tags."""
        return [(r[0], r[1]) for r in self.store.db.execute("SELECT rowid, tags FROM skills WHERE tags != ''")]

    def rowids_of_type(self, skill_type: str) -> list[int]:
        return [r[0] for r in self.store.db.execute("SELECT rowid FROM skills WHERE skill_type = ?", (skill_type,))]

    def copies(self, ids: list[str]) -> list[tuple[int, str]]:
        """(rowid, id) of every row that shares a name key with one of ``ids`` (those included)."""
        out: list[tuple[int, str]] = []
        for part in _chunks(ids):
            out.extend((r[0], r[1]) for r in self.store.db.execute(
                "SELECT DISTINCT s2.rowid, s2.id FROM skills s1 JOIN skills s2 ON s2.name_key = s1.name_key"
                f" WHERE s1.id IN ({_marks(len(part))})", part))
        return out
