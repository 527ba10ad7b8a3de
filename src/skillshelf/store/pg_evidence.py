"""The PostgreSQL twin of ``evidence.Evidence``: the same reads of the team store's usage log."""

from __future__ import annotations

from typing import Any

from .pg_writes import call


class PgEvidence:
    """Reads of the team store's usage log for evals and per-version outcomes."""

    def __init__(self, pg: Any):
        self.pg = pg

    def worked_requests(self, skill_ids: list[str], limit: int = 50) -> list[str]:
        if not skill_ids:
            return []
        with call(self.pg) as conn:
            rows = conn.execute("""
                SELECT q.text, MAX(o.id) AS last FROM outcomes o JOIN queries q ON q.id = o.query_id
                WHERE o.worked = 1 AND o.skill_id = ANY(%s::text[]) AND q.text IS NOT NULL
                GROUP BY q.text ORDER BY last DESC LIMIT %s""", (list(skill_ids), int(limit))).fetchall()
        return [r[0] for r in rows]

    def worked_names(self) -> set[str]:
        with call(self.pg) as conn:
            rows = conn.execute("SELECT DISTINCT o.name FROM outcomes o JOIN queries q ON q.id = o.query_id"
                                " WHERE o.worked = 1 AND q.text IS NOT NULL").fetchall()
        return {r[0] for r in rows}

    def near_misses(self, skill_ids: list[str], limit: int = 50) -> list[str]:
        if not skill_ids:
            return []
        with call(self.pg) as conn:
            rows = conn.execute("""
                SELECT q.text, MAX(o.id) AS last FROM outcomes o JOIN queries q ON q.id = o.query_id
                WHERE o.worked = 1 AND NOT (o.skill_id = ANY(%s::text[])) AND q.text IS NOT NULL
                  AND EXISTS (SELECT 1 FROM recommendations r WHERE r.query_id = o.query_id
                              AND r.skill_id = ANY(%s::text[]))
                GROUP BY q.text ORDER BY last DESC LIMIT %s""",
                (list(skill_ids), list(skill_ids), int(limit))).fetchall()
        return [r[0] for r in rows]

    def version_outcomes(self, skill_ids: list[str] | None = None) -> list[tuple[str, int, int, int]]:
        if skill_ids is not None and not skill_ids:
            return []
        with call(self.pg) as conn:
            rows = conn.execute("""
                SELECT skill_id, version, SUM(worked), COUNT(*) FROM outcomes
                WHERE version IS NOT NULL AND skill_id IS NOT NULL
                  AND (%s::text[] IS NULL OR skill_id = ANY(%s::text[]))
                GROUP BY skill_id, version ORDER BY skill_id, version""",
                (None if skill_ids is None else list(skill_ids),) * 2).fetchall()
        return [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]
