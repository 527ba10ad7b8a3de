"""What browsing the library reads: the skill rows' browse columns, the rows of one table page,
and the usage counts and series the dashboard shows beside them.

Plain values in and out (tuples, dicts, ints), so that another backend can answer the same
calls; ``CatalogReads`` reads the skill index, ``UsageReads`` the usage log (queries,
recommendations, outcomes)."""

from __future__ import annotations

from typing import Any

from .sqlite import Store

# the browse snapshot's columns, in this order (catalog._Snapshot reads them by position)
BROWSE_COLUMNS = ("rowid", "id", "name", "root", "kind", "repo", "skill_type", "tags", "active", "expires_on",
                  "version", "status", "last_modified", "derived_from", "lineage", "merged_from")
_ROW_COLS = ("rowid", "id", "name", "display_name", "description", "root", "kind", "repo", "skill_type", "tags",
             "version", "active", "expires_on")


def _marks(n: int) -> str:
    return ",".join("?" * n)


class CatalogReads:
    """Reads of the skill index for browsing (the index itself is written by ``index.sync``)."""

    def __init__(self, store: Store):
        self.store = store

    def generation(self) -> str:
        """The index generation: changes whenever a skill row does."""
        return self.store.get_meta("generation", "0") or "0"

    def browse_columns(self) -> list[tuple]:
        """Every skill's browse columns (``BROWSE_COLUMNS``), in rowid order."""
        return self.store.db.execute("""
            SELECT rowid, id, name, root, kind, repo, skill_type, tags, active, expires_on, version,
                   CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.status') END,
                   CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$."last-modified"') END,
                   CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$."derived-from"') END,
                   CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.lineage') END,
                   CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$."merged-from"') END
            FROM skills ORDER BY rowid""").fetchall()

    def rows(self, rowids: list[int]) -> dict[int, dict[str, Any]]:
        """The table columns of these rows, by rowid (rows removed meanwhile are absent)."""
        if not rowids:
            return {}
        cur = self.store.db.execute(f"SELECT {', '.join(_ROW_COLS)} FROM skills WHERE rowid IN ({_marks(len(rowids))})",
                                    rowids)
        return {r[0]: dict(zip(_ROW_COLS, r)) for r in cur}

    def content_hash(self, skill_id: str) -> str | None:
        row = self.store.db.execute("SELECT content_hash FROM skills WHERE id = ?", (skill_id,)).fetchone()
        return row[0] if row else None

    def invalid_count(self) -> int:
        return int(self.store.db.execute("SELECT COUNT(*) FROM invalid_files").fetchone()[0])


class UsageReads:
    """Counts and series over the usage log for the dashboard's tables and charts."""

    def __init__(self, store: Store):
        self.store = store

    def counts(self, ids: list[str]) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
        """(times shown, (reports, worked)) per skill id, for these ids."""
        if not ids:
            return {}, {}
        q = _marks(len(ids))
        db = self.store.db
        shown = {r[0]: int(r[1]) for r in db.execute(
            f"SELECT skill_id, COUNT(*) FROM recommendations WHERE skill_id IN ({q}) GROUP BY skill_id", ids)}
        reports = {r[0]: (int(r[1]), int(r[2] or 0)) for r in db.execute(
            f"SELECT skill_id, COUNT(*), SUM(worked) FROM outcomes WHERE skill_id IN ({q}) GROUP BY skill_id", ids)}
        return shown, reports

    def times_shown(self) -> list[tuple[str, int]]:
        return [(r[0], int(r[1])) for r in
                self.store.db.execute("SELECT skill_id, COUNT(*) FROM recommendations GROUP BY skill_id")]

    def reports(self) -> list[tuple[str, int, int]]:
        """(skill id, reports, worked) for every skill with a report."""
        return [(r[0], int(r[1]), int(r[2] or 0)) for r in self.store.db.execute(
            "SELECT skill_id, COUNT(*), SUM(worked) FROM outcomes WHERE skill_id IS NOT NULL GROUP BY skill_id")]

    def marks(self) -> tuple:
        """The newest query, outcome and recommendation ids: changes whenever the log grows."""
        return tuple(self.store.db.execute("SELECT (SELECT MAX(id) FROM queries), (SELECT MAX(id) FROM outcomes),"
                                           " (SELECT MAX(id) FROM recommendations)").fetchone())

    def queries_per_day(self, since: str) -> list[tuple[str, int, int, int]]:
        """(day, queries, finds, gaps) per UTC day since ``since``; a gap is a find without a
        confident match that was not lexical-only."""
        return [(d, int(n), int(f or 0), int(g or 0)) for d, n, f, g in self.store.db.execute("""
                SELECT substr(at, 1, 10) d, COUNT(*), SUM(mode = 'find'),
                       SUM(mode = 'find' AND confident = 0 AND degraded = 0)
                FROM queries WHERE at >= ? GROUP BY d""", (since,))]

    def reported_finds_per_day(self, since: str) -> list[tuple[str, int]]:
        """(day, finds with at least one outcome reported) per UTC day since ``since``."""
        return [(d, int(n)) for d, n in self.store.db.execute("""
                SELECT substr(q.at, 1, 10) d, COUNT(DISTINCT q.id) FROM queries q JOIN outcomes o ON o.query_id = q.id
                WHERE q.mode = 'find' AND q.at >= ? GROUP BY d""", (since,))]

    def outcomes_per_day(self, since: str) -> list[tuple[str, int, int]]:
        """(day, outcomes, worked) per UTC day since ``since``."""
        return [(d, int(n), int(ok or 0)) for d, n, ok in self.store.db.execute(
            "SELECT substr(at, 1, 10) d, COUNT(*), SUM(worked) FROM outcomes WHERE at >= ? GROUP BY d", (since,))]

    def surfaced(self, skill_id: str, limit: int) -> list[dict[str, Any]]:
        """The searches that listed this skill, newest first."""
        cols = ("at", "rank", "score", "qid", "text", "mode", "client", "confident")
        return [dict(zip(cols, r)) for r in self.store.db.execute("""
                SELECT r.at, r.rank, r.score, q.id qid, q.text, q.mode, q.client, q.confident
                FROM recommendations r JOIN queries q ON q.id = r.query_id
                WHERE r.skill_id = ? ORDER BY r.id DESC LIMIT ?""", (skill_id, int(limit)))]

    def outcomes(self, skill_id: str, name: str, limit: int) -> list[dict[str, Any]]:
        """The outcomes reported for this skill (or for its name before it had an id), newest first."""
        cols = ("id", "at", "worked", "note", "client", "query_id")
        return [dict(zip(cols, r)) for r in self.store.db.execute(
            "SELECT id, at, worked, note, client, query_id FROM outcomes"
            " WHERE skill_id = ? OR (skill_id IS NULL AND name = ?) ORDER BY id DESC LIMIT ?",
            (skill_id, name, int(limit)))]

    def outcome_days(self, skill_id: str, name: str) -> list[tuple[str, int]]:
        """(day, worked) of every outcome reported for this skill."""
        return [(d, int(ok)) for d, ok in self.store.db.execute(
            "SELECT substr(at, 1, 10), worked FROM outcomes WHERE skill_id = ? OR (skill_id IS NULL AND name = ?)",
            (skill_id, name))]
