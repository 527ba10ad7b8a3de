"""The usage log: what agents asked (queries), what each search recommended
(recommendations) and what they reported back (outcomes).

Append-only: rows are only inserted, except by ``prune`` (the one confirmed retention
deletion, which also covers the judge log). Plain values in and out; timestamps are ISO
strings (UTC), and comparing two of them as text orders them in time."""

from __future__ import annotations

import json
from typing import Any

from .sqlite import Store
from .writes import refused_as_store_error, rowid


def _marks(n: int) -> str:
    return ",".join("?" * n)


class UsageLog:
    """Queries, the recommendations of each, and reported outcomes. Writes that the disk or
    a lock refuses raise ``StoreError`` (the SQLite error is its cause)."""

    def __init__(self, store: Store):
        self.store = store

    # --- writes -------------------------------------------------------------------------
    def log_query(self, *, at: str, text: str | None, text_hash: str, mode: str, filters: dict[str, Any],
                  client: str | None, confident: bool, degraded: bool, n_hits: int, latency_ms: float,
                  recommended: list[tuple[str, str, float]]) -> int:
        """One query and its recommendations (``(skill_id, name, score)`` in rank order), in
        one transaction. Returns the query's id."""
        with refused_as_store_error(self.store), self.store.tx() as tx:
            cur = tx.execute(
                "INSERT INTO queries (at, text, text_hash, mode, filters, client, confident, degraded, n_hits,"
                " latency_ms) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (at, text, text_hash, mode, json.dumps(filters, sort_keys=True), client, int(bool(confident)),
                 int(bool(degraded)), int(n_hits), float(latency_ms)))
            qid = rowid(cur)
            tx.executemany("INSERT INTO recommendations (query_id, at, skill_id, name, rank, score)"
                           " VALUES (?,?,?,?,?,?)",
                           [(qid, at, sid, name, rank, float(score))
                            for rank, (sid, name, score) in enumerate(recommended, 1)])
        return qid

    def log_outcome(self, *, at: str, skill_id: str | None, name: str, worked: bool, note: str,
                    query_id: int | None, client: str | None, version: int | None = None) -> int:
        """One reported outcome (``version``: the skill's version it is about). Returns its id."""
        with refused_as_store_error(self.store), self.store.tx() as tx:
            cur = tx.execute("INSERT INTO outcomes (at, skill_id, name, worked, note, query_id, client, version)"
                             " VALUES (?,?,?,?,?,?,?,?)",
                             (at, skill_id, name, int(bool(worked)), note or "", query_id, client, version))
        return rowid(cur)

    def prune(self, before: str) -> int:
        """Delete usage rows (and judge log rows) older than ``before``; the rows deleted."""
        with refused_as_store_error(self.store), self.store.tx() as tx:
            tx.execute("INSERT OR REPLACE INTO meta VALUES ('retention_unlocked', '1')")
            try:
                n = 0
                n += tx.execute("DELETE FROM recommendations WHERE at < ?", (before,)).rowcount
                n += tx.execute("DELETE FROM outcomes WHERE at < ?", (before,)).rowcount
                n += tx.execute("DELETE FROM judge_log WHERE at < ?", (before,)).rowcount
                n += tx.execute("DELETE FROM queries WHERE at < ? AND id NOT IN"
                                " (SELECT query_id FROM recommendations)", (before,)).rowcount
            finally:
                tx.execute("DELETE FROM meta WHERE key = 'retention_unlocked'")
        return n

    # --- reads for searching and reporting ----------------------------------------------
    def query(self, query_id: int) -> dict[str, Any] | None:
        """One logged query (``id, at, text, mode, client, confident, degraded``), or None.
        ``text`` is None when the log keeps hashes only."""
        if not 1 <= int(query_id) < 2**63:       # past SQLite's integers no query has the id
            return None
        row = self.store.db.execute("SELECT id, at, text, mode, client, confident, degraded FROM queries"
                                    " WHERE id = ?", (int(query_id),)).fetchone()
        if row is None:
            return None
        return {"id": int(row[0]), "at": row[1], "text": row[2], "mode": row[3], "client": row[4],
                "confident": bool(row[5]), "degraded": bool(row[6])}

    def recent_counts(self, window: int, *, skip_hash: str = "") -> dict[str, int]:
        """How often each skill was recommended by the last ``window`` queries whose text
        hash is not ``skip_hash``."""
        if window <= 0:
            return {}
        db = self.store.db
        qids = [r[0] for r in db.execute("SELECT id FROM queries WHERE text_hash != ? ORDER BY id DESC LIMIT ?",
                                         (skip_hash, int(window)))]
        if not qids:
            return {}
        # recommendations are written with their query, in one transaction: the rows of the
        # last queries are the last rows, and their number is bounded by the queries' n_hits
        # (no full scan of a long log on every search)
        bound = db.execute("SELECT COALESCE(SUM(n_hits), 0) FROM queries WHERE id >= ?", (min(qids),)).fetchone()[0]
        rows = db.execute(f"""
            SELECT skill_id, COUNT(*) FROM (SELECT query_id, skill_id FROM recommendations ORDER BY id DESC LIMIT ?)
            WHERE query_id IN ({_marks(len(qids))}) GROUP BY skill_id""", (int(bound), *qids))
        return {r[0]: int(r[1]) for r in rows}

    def recent_requests(self, n: int, *, skip_hash: str = "") -> list[dict[str, Any]]:
        """The last ``n`` queries whose text hash is not ``skip_hash``, newest first: ``id``,
        ``text`` (None when the log keeps hashes only) and ``skills`` (the ids of the skills it
        recommended, in rank order). One bounded read, as ``recent_counts``."""
        if n <= 0:
            return []
        db = self.store.db
        queries = db.execute("SELECT id, text FROM queries WHERE text_hash != ? ORDER BY id DESC LIMIT ?",
                             (skip_hash, int(n))).fetchall()
        if not queries:
            return []
        qids = [int(r[0]) for r in queries]
        bound = db.execute("SELECT COALESCE(SUM(n_hits), 0) FROM queries WHERE id >= ?", (min(qids),)).fetchone()[0]
        skills: dict[int, list[str]] = {q: [] for q in qids}
        for qid, sid in db.execute(f"""
                SELECT query_id, skill_id FROM (SELECT id, query_id, skill_id FROM recommendations
                                                ORDER BY id DESC LIMIT ?)
                WHERE query_id IN ({_marks(len(qids))}) ORDER BY id""", (int(bound), *qids)):
            skills[int(qid)].append(sid)
        return [{"id": int(r[0]), "text": r[1], "skills": skills[int(r[0])]} for r in queries]

    def worked_latest(self, skill_ids: list[str]) -> set[str]:
        """Those of ``skill_ids`` whose latest outcome was 'worked'."""
        if not skill_ids:
            return set()
        rows = self.store.db.execute(f"""
            SELECT o.skill_id, o.worked FROM outcomes o
            JOIN (SELECT skill_id, MAX(id) AS mid FROM outcomes WHERE skill_id IN ({_marks(len(skill_ids))})
                  GROUP BY skill_id) last
            ON last.mid = o.id""", list(skill_ids))
        return {r[0] for r in rows if r[1]}

    def queries_since(self, since: str) -> list[dict[str, Any]]:
        """Queries logged at or after ``since``, oldest first (``id, at, text, mode,
        confident, degraded``)."""
        rows = self.store.db.execute("SELECT id, at, text, mode, confident, degraded FROM queries WHERE at >= ?"
                                     " ORDER BY id", (since,))
        return [{"id": int(r[0]), "at": r[1], "text": r[2], "mode": r[3], "confident": bool(r[4]),
                 "degraded": bool(r[5])} for r in rows]

    def shown_since(self, since: str) -> list[tuple[str, str, int]]:
        """``(skill_id, name, times recommended)`` per skill recommended at or after ``since``;
        the name is the one of its latest recommendation."""
        # SQLite takes a bare column of an aggregate with MAX() from the row holding the maximum
        rows = self.store.db.execute("SELECT skill_id, name, COUNT(*), MAX(at) FROM recommendations WHERE at >= ?"
                                     " GROUP BY skill_id ORDER BY skill_id", (since,))
        return [(r[0], r[1], int(r[2])) for r in rows]

    def outcomes_since(self, since: str) -> list[dict[str, Any]]:
        """Outcomes reported at or after ``since``, oldest first (``id, at, skill_id, name,
        worked, note, query_id, client``)."""
        rows = self.store.db.execute("SELECT id, at, skill_id, name, worked, note, query_id, client FROM outcomes"
                                     " WHERE at >= ? ORDER BY id", (since,))
        return [{"id": int(r[0]), "at": r[1], "skill_id": r[2], "name": r[3], "worked": bool(r[4]),
                 "note": r[5] or "", "query_id": None if r[6] is None else int(r[6]), "client": r[7]}
                for r in rows]

    def ever_recommended(self) -> set[str]:
        """The ids of every skill any logged search recommended."""
        return {r[0] for r in self.store.db.execute("SELECT DISTINCT skill_id FROM recommendations")}

    def skill_usage(self, skill_id: str, name: str) -> tuple[int, list[tuple[bool, str, str]]]:
        """(times recommended, its outcomes oldest first as ``(worked, note, at)``). Outcomes
        reported for a name no skill had are counted for a skill of that name."""
        db = self.store.db
        shown = int(db.execute("SELECT COUNT(*) FROM recommendations WHERE skill_id = ?", (skill_id,)).fetchone()[0])
        outs = [(bool(r[0]), r[1] or "", r[2]) for r in db.execute(
            "SELECT worked, note, at FROM outcomes WHERE skill_id = ? OR (skill_id IS NULL AND name = ?) ORDER BY id",
            (skill_id, name))]
        return shown, outs
