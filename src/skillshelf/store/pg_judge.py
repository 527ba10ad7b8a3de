"""The judge log in the team store: the PostgreSQL twin of ``judge.JudgeLog``.

Append-only like the usage log (``PgUsageLog.prune`` is the one deletion). Plain values in
and out; timestamps are ISO strings."""

from __future__ import annotations

import json
from typing import Any

from .pg_writes import call, clean


class PgJudgeLog:
    """Judged searches. Refusals and lost connections raise ``StoreError``."""

    def __init__(self, pg: Any):
        self.pg = pg

    def add(self, *, at: str, query_id: int | None, mode: str, backend: str, model: str, status: str,
            latency_ms: float, candidates: int, invented: int, pick: str | None,
            verdicts: list[dict[str, Any]]) -> int:
        """Log one judged search; returns the row's id."""
        with call(self.pg) as conn:
            row = conn.execute("INSERT INTO judge_log (at, query_id, mode, backend, model, status, latency_ms,"
                               " candidates, invented, pick, verdicts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s,"
                               " %s, %s) RETURNING id",
                               (clean(at), query_id, clean(mode), clean(backend), clean(model), clean(status),
                                float(latency_ms), int(candidates), int(invented), clean(pick),
                                clean(json.dumps(verdicts, ensure_ascii=False)))).fetchone()
        return int(row[0])

    def since(self, since: str) -> list[dict[str, Any]]:
        """Judged searches at or after ``since``, oldest first: ``at, query_id, mode, backend,
        model, status, latency_ms, candidates, invented, pick, verdicts`` (a list; empty when
        the stored text cannot be read)."""
        with call(self.pg) as conn:
            rows = conn.execute("SELECT at, query_id, mode, backend, model, status, latency_ms, candidates,"
                                " invented, pick, verdicts FROM judge_log WHERE at >= %s ORDER BY id",
                                (clean(since),)).fetchall()
        out = []
        for r in rows:
            try:
                verdicts = json.loads(r[10] or "[]")
            except ValueError:
                verdicts = []
            out.append({"at": r[0], "query_id": None if r[1] is None else int(r[1]), "mode": r[2],
                        "backend": r[3], "model": r[4], "status": r[5], "latency_ms": float(r[6]),
                        "candidates": int(r[7]), "invented": int(r[8]), "pick": r[9],
                        "verdicts": verdicts if isinstance(verdicts, list) else []})
        return out
