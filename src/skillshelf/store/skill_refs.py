"""The few reads of the skill index that usage, learning, the judge and overlays make of it:
names, descriptions, the row standing for a name. The index itself is written by indexing.

The skill index is each process's own derived data (a team store shares usage, learning and
overlays, while each server indexes what it serves), so these reads stay beside the index
and the shared logs never join against it."""

from __future__ import annotations

from .sqlite import Store

_CHUNK = 500     # ids per IN (...): well under SQLite's variable limit


class SkillRefs:
    """Names, descriptions and rows of indexed skills, looked up by id or name key."""

    def __init__(self, store: Store):
        self.store = store

    def generation(self) -> str:
        """The index generation: changes whenever a skill row does (rows may be renumbered)."""
        return self.store.get_meta("generation", "0") or "0"

    def all(self) -> list[tuple[str, str, bool]]:
        """``(id, name, active)`` of every indexed skill, by id."""
        return [(r[0], r[1], bool(r[2])) for r in self.store.db.execute(
            "SELECT id, name, active FROM skills ORDER BY id")]

    def names(self, ids: list[str]) -> dict[str, str]:
        """Name by id, for those of ``ids`` that are indexed."""
        return {r[0]: r[1] for r in self._by_ids("SELECT id, name FROM skills WHERE id IN ({})", ids)}

    def descriptions(self, ids: list[str]) -> dict[str, str]:
        """The whole description by id, for those of ``ids`` that are indexed."""
        return {r[0]: r[1] or "" for r in self._by_ids("SELECT id, description FROM skills WHERE id IN ({})", ids)}

    def first_rows(self, name_keys: list[str]) -> dict[str, int]:
        """Per name key, the lowest row number of a skill with it (one copy standing for all)."""
        return {r[0]: int(r[1]) for r in self._by_ids(
            "SELECT name_key, MIN(rowid) FROM skills WHERE name_key IN ({}) GROUP BY name_key", name_keys)}

    def _by_ids(self, sql: str, keys: list[str]) -> list[tuple]:
        keys = list(dict.fromkeys(keys))
        out: list[tuple] = []
        for i in range(0, len(keys), _CHUNK):
            part = keys[i:i + _CHUNK]
            out += [tuple(r) for r in self.store.db.execute(sql.format(",".join("?" * len(part))), part)]
        return out
