"""The judge log: one row per judged search -- which model judged it, how long it took,
whether it answered, and what it said of each candidate.

Append-only like the usage log (``UsageLog.prune`` is the one deletion). Plain values in
and out; timestamps are ISO strings."""

from __future__ import annotations

import json
from typing import Any

from .sqlite import Store
from .writes import refused_as_store_error, rowid


class JudgeLog:
    """Judged searches. A write the disk or a lock refuses raises ``StoreError``."""

    def __init__(self, store: Store):
        self.store = store

    def add(self, *, at: str, query_id: int | None, mode: str, backend: str, model: str, status: str,
            latency_ms: float, candidates: int, invented: int, pick: str | None,
            verdicts: list[dict[str, Any]]) -> int:
        """Log one judged search; returns the row's id."""
        with refused_as_store_error(self.store), self.store.tx() as tx:
            cur = tx.execute("INSERT INTO judge_log (at, query_id, mode, backend, model, status, latency_ms,"
                             " candidates, invented, pick, verdicts) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                             (at, query_id, mode, backend, model, status, float(latency_ms), int(candidates),
                              int(invented), pick, json.dumps(verdicts, ensure_ascii=False)))
        return rowid(cur)

    def since(self, since: str) -> list[dict[str, Any]]:
        """Judged searches at or after ``since``, oldest first: ``at, query_id, mode, backend,
        model, status, latency_ms, candidates, invented, pick, verdicts`` (a list; empty when
        the stored text cannot be read)."""
        out = []
        for r in self.store.db.execute("SELECT at, query_id, mode, backend, model, status, latency_ms, candidates,"
                                       " invented, pick, verdicts FROM judge_log WHERE at >= ? ORDER BY id",
                                       (since,)):
            try:
                verdicts = json.loads(r[10] or "[]")
            except ValueError:
                verdicts = []
            out.append({"at": r[0], "query_id": r[1], "mode": r[2], "backend": r[3], "model": r[4],
                        "status": r[5], "latency_ms": float(r[6]), "candidates": int(r[7]), "invented": int(r[8]),
                        "pick": r[9], "verdicts": verdicts if isinstance(verdicts, list) else []})
        return out
