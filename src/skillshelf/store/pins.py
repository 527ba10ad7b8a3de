"""Pinned roots: the content of each of their skills when it was pinned, and the skills held
back from agents because their files differ now.

Per root: its label, path and when it was pinned. Per skill: its root, content key, SKILL.md
text and findings when pinned, and per file its hash, size and time (``FILE_FIELDS``). Held
skills: id, root, why (``changed`` | ``added`` | ``imported``), since when and, for an import,
its content key and name. Plain values in and out. A write
the disk or a lock refuses raises ``StoreError``; each write advances ``pin_generation`` in
``meta``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from typing import Any

from .sqlite import Store
from .writes import refused_as_store_error

FILE_FIELDS = ("file", "sha256", "size", "mtime_ns")
SKILL_FIELDS = ("skill_id", "root", "content_key", "skill_md", "findings", "pinned_at")


def _bump(tx) -> None:
    tx.execute("INSERT INTO meta VALUES ('pin_generation', '1') ON CONFLICT(key) DO UPDATE"
               " SET value = CAST(value AS INTEGER) + 1")


def _insert_skill(tx, root: str, skill: dict[str, Any], at: str) -> None:
    sid = skill["skill_id"]
    tx.execute("DELETE FROM pinned_files WHERE skill_id = ?", (sid,))
    tx.execute("INSERT OR REPLACE INTO pinned_skills VALUES (?, ?, ?, ?, ?, ?)",
               (sid, root, skill["content_key"], skill["skill_md"],
                json.dumps(skill.get("findings") or [], ensure_ascii=False), at))
    tx.executemany("INSERT INTO pinned_files VALUES (?, ?, ?, ?, ?)",
                   [(sid, f["file"], f.get("sha256"), int(f["size"]), int(f["mtime_ns"])) for f in skill["files"]])
    tx.execute("DELETE FROM pin_held WHERE skill_id = ?", (sid,))


class PinnedContent:
    """The pins of a store."""

    def __init__(self, store: Store):
        self.store = store

    @contextmanager
    def _tx(self):
        with refused_as_store_error(self.store), self.store.tx() as tx:
            yield tx

    # --- roots ---------------------------------------------------------------------------
    def pin_root(self, root: str, path: str, skills: list[dict[str, Any]], *, at: str) -> None:
        """Pin a root: replace every pin of it by ``skills`` (dicts of ``skill_id``,
        ``content_key``, ``skill_md``, ``findings`` and ``files``, a list of ``FILE_FIELDS``
        dicts) and clear its held skills, in one transaction."""
        with self._tx() as tx:
            tx.execute("INSERT OR REPLACE INTO pinned_roots VALUES (?, ?, ?)", (root, path, at))
            old = [r[0] for r in tx.execute("SELECT skill_id FROM pinned_skills WHERE root = ?", (root,))]
            tx.executemany("DELETE FROM pinned_files WHERE skill_id = ?", [(s,) for s in old])
            tx.execute("DELETE FROM pinned_skills WHERE root = ?", (root,))
            tx.execute("DELETE FROM pin_held WHERE root = ?", (root,))
            for skill in skills:
                _insert_skill(tx, root, skill, at)
            _bump(tx)

    def unpin_root(self, root: str) -> bool:
        with self._tx() as tx:
            n = tx.execute("DELETE FROM pinned_roots WHERE root = ?", (root,)).rowcount
            old = [r[0] for r in tx.execute("SELECT skill_id FROM pinned_skills WHERE root = ?", (root,))]
            tx.executemany("DELETE FROM pinned_files WHERE skill_id = ?", [(s,) for s in old])
            tx.execute("DELETE FROM pinned_skills WHERE root = ?", (root,))
            tx.execute("DELETE FROM pin_held WHERE root = ?", (root,))
            _bump(tx)
        return bool(n)

    def roots(self) -> list[dict[str, Any]]:
        """Every pinned root: ``root``, ``path``, ``pinned_at`` and how many skills it pins."""
        rows = self.store.db.execute(
            "SELECT r.root, r.path, r.pinned_at, (SELECT COUNT(*) FROM pinned_skills s WHERE s.root = r.root)"
            " FROM pinned_roots r ORDER BY r.root").fetchall()
        return [{"root": r, "path": p, "pinned_at": at, "skills": n} for r, p, at, n in rows]

    def root_labels(self) -> set[str]:
        return {r[0] for r in self.store.db.execute("SELECT root FROM pinned_roots")}

    # --- skills --------------------------------------------------------------------------
    def pin_skill(self, root: str, skill: dict[str, Any], *, at: str) -> None:
        """Pin (again) one skill of a pinned root, and release it if it was held."""
        with self._tx() as tx:
            _insert_skill(tx, root, skill, at)
            _bump(tx)

    def drop_skill(self, skill_id: str) -> None:
        """Forget a pinned skill whose folder is gone (accepting its removal)."""
        with self._tx() as tx:
            tx.execute("DELETE FROM pinned_files WHERE skill_id = ?", (skill_id,))
            tx.execute("DELETE FROM pinned_skills WHERE skill_id = ?", (skill_id,))
            tx.execute("DELETE FROM pin_held WHERE skill_id = ?", (skill_id,))
            _bump(tx)

    def skill(self, skill_id: str) -> dict[str, Any] | None:
        """A pinned skill (``SKILL_FIELDS``, findings as dicts) with its ``files`` (file -> dict), or None."""
        db = self.store.db
        row = db.execute(f"SELECT {', '.join(SKILL_FIELDS)} FROM pinned_skills WHERE skill_id = ?",
                         (skill_id,)).fetchone()
        if row is None:
            return None
        d = dict(zip(SKILL_FIELDS, row))
        d["findings"] = json.loads(d["findings"] or "[]")
        d["files"] = {r[0]: dict(zip(FILE_FIELDS, r)) for r in db.execute(
            f"SELECT {', '.join(FILE_FIELDS)} FROM pinned_files WHERE skill_id = ?", (skill_id,))}
        return d

    def files(self, skill_id: str) -> dict[str, dict[str, Any]]:
        return {r[0]: dict(zip(FILE_FIELDS, r)) for r in self.store.db.execute(
            f"SELECT {', '.join(FILE_FIELDS)} FROM pinned_files WHERE skill_id = ?", (skill_id,))}

    def root_files(self, root: str) -> dict[str, dict[str, dict[str, Any]]]:
        """The pinned files of every skill of ``root``: skill id -> ``files`` of it, in one read."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for sid, *row in self.store.db.execute(
                f"SELECT f.skill_id, {', '.join('f.' + c for c in FILE_FIELDS)} FROM pinned_files f"
                " JOIN pinned_skills s ON s.skill_id = f.skill_id WHERE s.root = ?", (root,)):
            out.setdefault(sid, {})[row[0]] = dict(zip(FILE_FIELDS, row))
        return out

    def skill_ids(self, root: str | None = None) -> dict[str, str]:
        """Pinned skill id -> its root (of one root, or of all)."""
        if root is None:
            return dict(self.store.db.execute("SELECT skill_id, root FROM pinned_skills").fetchall())
        return dict(self.store.db.execute("SELECT skill_id, root FROM pinned_skills WHERE root = ?",
                                          (root,)).fetchall())

    def touch_files(self, skill_id: str, states: Iterable[tuple[str, int, int]]) -> None:
        """Record new (file, size, mtime_ns) for pinned files whose content hashed the same."""
        with self._tx() as tx:
            tx.executemany("UPDATE pinned_files SET size = ?, mtime_ns = ? WHERE skill_id = ? AND file = ?",
                           [(size, mtime, skill_id, f) for f, size, mtime in states])

    # --- held ----------------------------------------------------------------------------
    def set_held(self, held: Mapping[str, tuple[str, ...]], released: Iterable[str], *, at: str) -> None:
        """Hold skills (id -> (root, reason) or (root, reason, content key, name): what an import
        took in); a skill held already keeps its ``since``, and its key and name unless new ones
        are given. Release the ``released`` ones."""
        with self._tx() as tx:
            tx.executemany("DELETE FROM pin_held WHERE skill_id = ?", [(s,) for s in released])
            for sid, (root, reason, *origin) in held.items():
                key, name = (origin + ["", ""])[:2]
                tx.execute("INSERT INTO pin_held (skill_id, root, reason, since, content_key, name)"
                           " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(skill_id) DO UPDATE"
                           " SET reason = excluded.reason, root = excluded.root,"
                           " content_key = CASE excluded.content_key WHEN '' THEN pin_held.content_key"
                           " ELSE excluded.content_key END,"
                           " name = CASE excluded.name WHEN '' THEN pin_held.name ELSE excluded.name END",
                           (sid, root, reason, at, key, name))
            _bump(tx)

    def held(self) -> dict[str, dict[str, str]]:
        """Held skill id -> ``root``, ``reason``, ``since``, ``content_key`` and ``name`` (what an
        import took in; '' otherwise)."""
        return {sid: {"root": r, "reason": why, "since": since, "content_key": key, "name": name}
                for sid, r, why, since, key, name in self.store.db.execute(
                    "SELECT skill_id, root, reason, since, content_key, name FROM pin_held ORDER BY skill_id")}

    def unpinned(self) -> set[str]:
        """The indexed skills of pinned roots that no pin has (new in a pinned root, or the root is held
        whole): held as new whether or not a look at the files has written their hold yet. One statement."""
        return {r[0] for r in self.store.db.execute(
            "SELECT s.id FROM skills s JOIN pinned_roots r ON r.root = s.root"
            " WHERE NOT EXISTS (SELECT 1 FROM pinned_skills p WHERE p.skill_id = s.id)")}

    def generation(self) -> str:
        return self.store.get_meta("pin_generation", "0") or "0"
