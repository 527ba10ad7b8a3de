"""Skill rows as the library's lookups read them: by id, path, name or name key, filtered
lists, names for "did you mean", clashes, and the files the index could not take.

Each row is a plain dict of ``COLUMNS``; the index itself is written by ``index.sync``."""

from __future__ import annotations

from typing import Any

from .sqlite import Store

COLUMNS = ("id", "name", "path", "root", "kind", "description", "body", "skill_type", "tags", "repo", "version",
           "display_name", "metadata", "findings", "active", "expires_on", "rel", "content_hash")
_COLS = ", ".join(COLUMNS)
_MAX_INT = 2**63 - 1


def _dicts(cur) -> list[dict[str, Any]]:
    return [dict(zip(COLUMNS, r)) for r in cur]


class SkillRows:
    """Reads of indexed skill rows."""

    def __init__(self, store: Store):
        self.store = store

    def by_id(self, skill_id: str) -> dict[str, Any] | None:
        rows = _dicts(self.store.db.execute(f"SELECT {_COLS} FROM skills WHERE id = ?", (skill_id,)))
        return rows[0] if rows else None

    def by_path(self, path: str) -> dict[str, Any] | None:
        rows = _dicts(self.store.db.execute(f"SELECT {_COLS} FROM skills WHERE path = ?", (path,)))
        return rows[0] if rows else None

    def by_name(self, name: str) -> list[dict[str, Any]]:
        return _dicts(self.store.db.execute(f"SELECT {_COLS} FROM skills WHERE name = ?", (name,)))

    def by_name_key(self, key: str) -> list[dict[str, Any]]:
        return _dicts(self.store.db.execute(f"SELECT {_COLS} FROM skills WHERE name_key = ?", (key,)))

    def names(self) -> list[str]:
        return [r[0] for r in self.store.db.execute("SELECT DISTINCT name FROM skills")]

    def skill_types(self) -> set[str]:
        return {r[0] for r in self.store.db.execute(
            "SELECT DISTINCT skill_type FROM skills WHERE skill_type IS NOT NULL AND skill_type != ''")}

    def ids(self) -> set[str]:
        return {r[0] for r in self.store.db.execute("SELECT id FROM skills")}

    def count(self) -> int:
        return int(self.store.db.execute("SELECT COUNT(*) FROM skills").fetchone()[0])

    @staticmethod
    def _where(root: str | None, skill_type: str | None, tag: str | None, name_contains: str | None,
               active_only: bool, invalid_only: bool) -> tuple[str, list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        if root:
            where.append("root = ?")
            args.append(root)
        if skill_type:
            where.append("skill_type = ?")
            args.append(skill_type)
        if tag:
            where.append("(',' || tags || ',') LIKE ?")
            args.append(f"%,{tag.lower()},%")
        if name_contains:
            where.append("name LIKE ?")
            args.append(f"%{name_contains}%")
        if active_only:
            where.append("active = 1")
        if invalid_only:
            where.append("worst IN ('error', 'fatal')")
        return (" WHERE " + " AND ".join(where) if where else ""), args

    def select(self, *, root: str | None = None, skill_type: str | None = None, tag: str | None = None,
               name_contains: str | None = None, active_only: bool = False, invalid_only: bool = False,
               limit: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """(rows by name whatever its case, then id, at most ``limit``; how many match in all)."""
        cond, args = self._where(root, skill_type, tag, name_contains, active_only, invalid_only)
        sql = f"SELECT {_COLS} FROM skills{cond} ORDER BY name COLLATE NOCASE, name, id"   # as a person reads
        args_l = args
        if limit:
            sql += " LIMIT ?"   # "at most N": a limit past SQLite's integers means all of them
            args_l = [*args, min(int(limit), _MAX_INT)]
        rows = _dicts(self.store.db.execute(sql, args_l))
        matched = len(rows)
        if limit and len(rows) == min(int(limit), _MAX_INT):
            matched = int(self.store.db.execute(f"SELECT COUNT(*) FROM skills{cond}", args).fetchone()[0])
        return rows, matched

    def clashing_names(self) -> list[str]:
        """Names held by more than one skill, sorted."""
        return [r[0] for r in self.store.db.execute(
            "SELECT name FROM skills GROUP BY name HAVING COUNT(*) > 1 ORDER BY name")]

    def invalid_files(self) -> list[dict[str, Any]]:
        cols = ("path", "root", "rule", "message", "line")
        return [dict(zip(cols, r)) for r in self.store.db.execute(
            "SELECT path, root, rule, message, line FROM invalid_files ORDER BY path")]
