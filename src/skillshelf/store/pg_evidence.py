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
