"""What the usage log says about one skill, read for its evals and its versions: the requests
an outcome reported as worked for it (its learned evals).

``evidence_store(local, team)`` gives the reads of the store the usage log is in: this SQLite
file, or the team store (``pg_evidence.PgEvidence``, the same methods and values)."""

from __future__ import annotations

from typing import Any

from .sqlite import Store


def _marks(n: int) -> str:
    return ",".join("?" * n)


class Evidence:
    """Reads of the local usage log for evals and per-version outcomes."""

    def __init__(self, store: Store):
        self.store = store

    def worked_requests(self, skill_ids: list[str], limit: int = 50) -> list[str]:
        """The texts of the requests an outcome reported as worked for any of ``skill_ids``,
        newest first, each once (a log that keeps hashes only has none)."""
        if not skill_ids:
            return []
        rows = self.store.db.execute(f"""
            SELECT q.text, MAX(o.id) AS last FROM outcomes o JOIN queries q ON q.id = o.query_id
            WHERE o.worked = 1 AND o.skill_id IN ({_marks(len(skill_ids))}) AND q.text IS NOT NULL
            GROUP BY q.text ORDER BY last DESC LIMIT ?""", (*skill_ids, int(limit)))
        return [r[0] for r in rows]

    def worked_names(self) -> set[str]:
        """The names of the skills some request was reported as worked for (a first cut of
        which skills have learned evals)."""
        rows = self.store.db.execute("SELECT DISTINCT o.name FROM outcomes o JOIN queries q ON q.id = o.query_id"
                                     " WHERE o.worked = 1 AND q.text IS NOT NULL")
        return {r[0] for r in rows}

    def near_misses(self, skill_ids: list[str], limit: int = 50) -> list[str]:
        """The texts of requests that showed one of ``skill_ids`` but were reported as worked for
        another skill: the near misses a skill's evals want as should-not queries."""
        if not skill_ids:
            return []
        marks = _marks(len(skill_ids))
        rows = self.store.db.execute(f"""
            SELECT q.text, MAX(o.id) AS last FROM outcomes o JOIN queries q ON q.id = o.query_id
            WHERE o.worked = 1 AND o.skill_id NOT IN ({marks}) AND q.text IS NOT NULL
              AND EXISTS (SELECT 1 FROM recommendations r WHERE r.query_id = o.query_id AND r.skill_id IN ({marks}))
            GROUP BY q.text ORDER BY last DESC LIMIT ?""", (*skill_ids, *skill_ids, int(limit)))
        return [r[0] for r in rows]

    def version_outcomes(self, skill_ids: list[str] | None = None) -> list[tuple[str, int, int, int]]:
        """``(skill_id, version, worked, reports)`` of the outcomes reported with a version, for
        ``skill_ids`` (None: every skill)."""
        where, args = ("", []) if skill_ids is None else (f"AND skill_id IN ({_marks(len(skill_ids))})",
                                                           list(skill_ids))
        if skill_ids is not None and not skill_ids:
            return []
        rows = self.store.db.execute(f"""
            SELECT skill_id, version, SUM(worked), COUNT(*) FROM outcomes
            WHERE version IS NOT NULL AND skill_id IS NOT NULL {where}
            GROUP BY skill_id, version ORDER BY skill_id, version""", args)
        return [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]


def evidence_store(local: Store, team: Any = None) -> Any:
    """The evidence reads of the store the usage log is in (``team``: a ``PgStore``, or None)."""
    if team is None:
        return Evidence(local)
    from .pg_evidence import PgEvidence

    return PgEvidence(team)
