"""The usage log in the team store: the PostgreSQL twin of ``usage.UsageLog`` and of
``catalog.UsageReads``, same methods, same values in and out.

Every server of a team logs into the same tables, so the anti-repeat counts and the dashboard
see everyone's searches and reports. Ids come from PostgreSQL's sequences. A write is one
statement where it can be (the query with its recommendations is one: a CTE), so a search
pays one round trip for its log row."""

from __future__ import annotations

import json
from typing import Any

from .pg_writes import call, clean, write


class PgUsageLog:
    """Queries, the recommendations of each, and reported outcomes, in the team store
    (``PgStore``). Refusals and lost connections raise ``StoreError``."""

    def __init__(self, pg: Any):
        self.pg = pg

    # --- writes -------------------------------------------------------------------------
    def log_query(self, *, at: str, text: str | None, text_hash: str, mode: str, filters: dict[str, Any],
                  client: str | None, confident: bool, degraded: bool, n_hits: int, latency_ms: float,
                  recommended: list[tuple[str, str, float]]) -> int:
        """One query and its recommendations (``(skill_id, name, score)`` in rank order), in
        one statement. Returns the query's id."""
        sids = [clean(sid) for sid, _, _ in recommended]
        names = [clean(name) for _, name, _ in recommended]
        scores = [float(score) for _, _, score in recommended]
        with call(self.pg) as conn:
            row = conn.execute("""
                WITH q AS (
                    INSERT INTO queries (at, text, text_hash, mode, filters, client, confident, degraded, n_hits,
                                         latency_ms)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id),
                r AS (
                    INSERT INTO recommendations (query_id, at, skill_id, name, rank, score)
                    SELECT q.id, %s, u.sid, u.name, u.rank, u.score
                    FROM q, unnest(%s::text[], %s::text[], %s::float8[]) WITH ORDINALITY AS u(sid, name, score, rank))
                SELECT id FROM q""",
                (clean(at), clean(text), clean(text_hash), clean(mode), json.dumps(filters, sort_keys=True),
                 clean(client), int(bool(confident)), int(bool(degraded)), int(n_hits), float(latency_ms),
                 clean(at), sids, names, scores)).fetchone()
        return int(row[0])

    def log_outcome(self, *, at: str, skill_id: str | None, name: str, worked: bool, note: str,
                    query_id: int | None, client: str | None, version: int | None = None) -> int:
        """One reported outcome (``version``: the skill's version it is about). Returns its id."""
        with call(self.pg) as conn:
            row = conn.execute("INSERT INTO outcomes (at, skill_id, name, worked, note, query_id, client, version)"
                               " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                               (clean(at), clean(skill_id), clean(name), int(bool(worked)), clean(note or ""),
                                query_id, clean(client), version)).fetchone()
        return int(row[0])

    def prune(self, before: str) -> int:
        """Delete usage rows (and judge log rows) older than ``before``; the rows deleted."""
        before = clean(before)
        with write(self.pg) as conn:
            conn.execute("SET LOCAL skillshelf.retention = 'on'")     # the one sanctioned deletion
            n = conn.execute("DELETE FROM recommendations WHERE at < %s", (before,)).rowcount
            n += conn.execute("DELETE FROM outcomes WHERE at < %s", (before,)).rowcount
            n += conn.execute("DELETE FROM judge_log WHERE at < %s", (before,)).rowcount
            n += conn.execute("DELETE FROM queries q WHERE at < %s AND NOT EXISTS"
                              " (SELECT 1 FROM recommendations r WHERE r.query_id = q.id)", (before,)).rowcount
        return n

    # --- reads for searching and reporting ----------------------------------------------
    def query(self, query_id: int) -> dict[str, Any] | None:
        """One logged query (``id, at, text, mode, client, confident, degraded``), or None.
        ``text`` is None when the log keeps hashes only."""
        if not 1 <= int(query_id) < 2**63:       # past a BIGINT no query has the id
            return None
        with call(self.pg) as conn:
            row = conn.execute("SELECT id, at, text, mode, client, confident, degraded FROM queries WHERE id = %s",
                               (int(query_id),)).fetchone()
        if row is None:
            return None
        return {"id": int(row[0]), "at": row[1], "text": row[2], "mode": row[3], "client": row[4],
                "confident": bool(row[5]), "degraded": bool(row[6])}

    def recent_counts(self, window: int, *, skip_hash: str = "") -> dict[str, int]:
        """How often each skill was recommended by the last ``window`` queries whose text
        hash is not ``skip_hash``."""
        if window <= 0:
            return {}
        # the last queries by the primary key, their recommendations by rec_query: a bounded
        # read however long the log is
        with call(self.pg) as conn:
            rows = conn.execute("""
                SELECT r.skill_id, COUNT(*) FROM recommendations r
                WHERE r.query_id IN (SELECT id FROM queries WHERE text_hash <> %s ORDER BY id DESC LIMIT %s)
                GROUP BY r.skill_id""", (clean(skip_hash), int(window))).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def recent_requests(self, n: int, *, skip_hash: str = "") -> list[dict[str, Any]]:
        """The last ``n`` queries whose text hash is not ``skip_hash``, newest first: ``id``,
        ``text`` (None when the log keeps hashes only) and ``skills`` (the ids of the skills it
        recommended, in rank order). One statement, bounded as ``recent_counts``."""
        if n <= 0:
            return []
        with call(self.pg) as conn:
            rows = conn.execute("""
                SELECT q.id, q.text, COALESCE(array_agg(r.skill_id ORDER BY r.id)
                                              FILTER (WHERE r.id IS NOT NULL), '{}')
                FROM (SELECT id, text FROM queries WHERE text_hash <> %s ORDER BY id DESC LIMIT %s) q
                LEFT JOIN recommendations r ON r.query_id = q.id
                GROUP BY q.id, q.text ORDER BY q.id DESC""", (clean(skip_hash), int(n))).fetchall()
        return [{"id": int(r[0]), "text": r[1], "skills": list(r[2])} for r in rows]

    def worked_latest(self, skill_ids: list[str]) -> set[str]:
        """Those of ``skill_ids`` whose latest outcome was 'worked'."""
        if not skill_ids:
            return set()
        with call(self.pg) as conn:
            rows = conn.execute("SELECT DISTINCT ON (skill_id) skill_id, worked FROM outcomes"
                                " WHERE skill_id = ANY(%s) ORDER BY skill_id, id DESC",
                                ([clean(s) for s in skill_ids],)).fetchall()
        return {r[0] for r in rows if r[1]}

    def queries_since(self, since: str) -> list[dict[str, Any]]:
        """Queries logged at or after ``since``, oldest first (``id, at, text, mode,
        confident, degraded``)."""
        with call(self.pg) as conn:
            rows = conn.execute("SELECT id, at, text, mode, confident, degraded FROM queries WHERE at >= %s"
                                " ORDER BY id", (clean(since),)).fetchall()
        return [{"id": int(r[0]), "at": r[1], "text": r[2], "mode": r[3], "confident": bool(r[4]),
                 "degraded": bool(r[5])} for r in rows]

    def shown_since(self, since: str) -> list[tuple[str, str, int]]:
        """``(skill_id, name, times recommended)`` per skill recommended at or after ``since``;
        the name is the one of its latest recommendation."""
        with call(self.pg) as conn:
            rows = conn.execute("""
                SELECT DISTINCT ON (skill_id) skill_id, name, COUNT(*) OVER (PARTITION BY skill_id)
                FROM recommendations WHERE at >= %s ORDER BY skill_id, at DESC, id DESC""",
                (clean(since),)).fetchall()
        # in code point order, as the local store's binary collation gives them
        return sorted((r[0], r[1], int(r[2])) for r in rows)

    def outcomes_since(self, since: str) -> list[dict[str, Any]]:
        """Outcomes reported at or after ``since``, oldest first (``id, at, skill_id, name,
        worked, note, query_id, client``)."""
        with call(self.pg) as conn:
            rows = conn.execute("SELECT id, at, skill_id, name, worked, note, query_id, client FROM outcomes"
                                " WHERE at >= %s ORDER BY id", (clean(since),)).fetchall()
        return [{"id": int(r[0]), "at": r[1], "skill_id": r[2], "name": r[3], "worked": bool(r[4]),
                 "note": r[5] or "", "query_id": None if r[6] is None else int(r[6]), "client": r[7]}
                for r in rows]

    def ever_recommended(self) -> set[str]:
        """The ids of every skill any logged search recommended."""
        with call(self.pg) as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT skill_id FROM recommendations")}

    def skill_usage(self, skill_id: str, name: str) -> tuple[int, list[tuple[bool, str, str]]]:
        """(times recommended, its outcomes oldest first as ``(worked, note, at)``). Outcomes
        reported for a name no skill had are counted for a skill of that name."""
        skill_id, name = clean(skill_id), clean(name)
        with call(self.pg) as conn:
            shown = int(conn.execute("SELECT COUNT(*) FROM recommendations WHERE skill_id = %s",
                                     (skill_id,)).fetchone()[0])
            outs = [(bool(r[0]), r[1] or "", r[2]) for r in conn.execute(
                "SELECT worked, note, at FROM outcomes WHERE skill_id = %s OR (skill_id IS NULL AND name = %s)"
                " ORDER BY id", (skill_id, name))]
        return shown, outs


class PgUsageReads:
    """Counts and series over the team's usage log for the dashboard's tables and charts
    (the twin of ``catalog.UsageReads``)."""

    def __init__(self, pg: Any):
        self.pg = pg

    def _rows(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with call(self.pg) as conn:
            return conn.execute(sql, params).fetchall()

    def counts(self, ids: list[str]) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
        """(times shown, (reports, worked)) per skill id, for these ids."""
        if not ids:
            return {}, {}
        ids = [clean(i) for i in ids]
        with call(self.pg) as conn:
            shown = {r[0]: int(r[1]) for r in conn.execute(
                "SELECT skill_id, COUNT(*) FROM recommendations WHERE skill_id = ANY(%s) GROUP BY skill_id", (ids,))}
            reports = {r[0]: (int(r[1]), int(r[2] or 0)) for r in conn.execute(
                "SELECT skill_id, COUNT(*), SUM(worked) FROM outcomes WHERE skill_id = ANY(%s) GROUP BY skill_id",
                (ids,))}
        return shown, reports

    def times_shown(self) -> list[tuple[str, int]]:
        return [(r[0], int(r[1])) for r in
                self._rows("SELECT skill_id, COUNT(*) FROM recommendations GROUP BY skill_id")]

    def reports(self) -> list[tuple[str, int, int]]:
        """(skill id, reports, worked) for every skill with a report."""
        return [(r[0], int(r[1]), int(r[2] or 0)) for r in self._rows(
            "SELECT skill_id, COUNT(*), SUM(worked) FROM outcomes WHERE skill_id IS NOT NULL GROUP BY skill_id")]

    def marks(self) -> tuple:
        """The newest query, outcome and recommendation ids: changes whenever the log grows."""
        row = self._rows("SELECT (SELECT MAX(id) FROM queries), (SELECT MAX(id) FROM outcomes),"
                         " (SELECT MAX(id) FROM recommendations)")[0]
        return tuple(None if v is None else int(v) for v in row)

    def queries_per_day(self, since: str) -> list[tuple[str, int, int, int]]:
        """(day, queries, finds, gaps) per UTC day since ``since``; a gap is a find without a
        confident match that was not lexical-only."""
        return [(d, int(n), int(f or 0), int(g or 0)) for d, n, f, g in self._rows("""
                SELECT substr(at, 1, 10) d, COUNT(*), COUNT(*) FILTER (WHERE mode = 'find'),
                       COUNT(*) FILTER (WHERE mode = 'find' AND confident = 0 AND degraded = 0)
                FROM queries WHERE at >= %s GROUP BY d ORDER BY d""", (clean(since),))]

    def reported_finds_per_day(self, since: str) -> list[tuple[str, int]]:
        """(day, finds with at least one outcome reported) per UTC day since ``since``."""
        return [(d, int(n)) for d, n in self._rows("""
                SELECT substr(q.at, 1, 10) d, COUNT(DISTINCT q.id) FROM queries q JOIN outcomes o ON o.query_id = q.id
                WHERE q.mode = 'find' AND q.at >= %s GROUP BY d ORDER BY d""", (clean(since),))]

    def outcomes_per_day(self, since: str) -> list[tuple[str, int, int]]:
        """(day, outcomes, worked) per UTC day since ``since``."""
        return [(d, int(n), int(ok or 0)) for d, n, ok in self._rows(
            "SELECT substr(at, 1, 10) d, COUNT(*), SUM(worked) FROM outcomes WHERE at >= %s GROUP BY d ORDER BY d",
            (clean(since),))]

    def surfaced(self, skill_id: str, limit: int) -> list[dict[str, Any]]:
        """The searches that listed this skill, newest first."""
        cols = ("at", "rank", "score", "qid", "text", "mode", "client", "confident")
        return [dict(zip(cols, r)) for r in self._rows("""
                SELECT r.at, r.rank, r.score, q.id qid, q.text, q.mode, q.client, q.confident
                FROM recommendations r JOIN queries q ON q.id = r.query_id
                WHERE r.skill_id = %s ORDER BY r.id DESC LIMIT %s""", (clean(skill_id), int(limit)))]

    def outcomes(self, skill_id: str, name: str, limit: int) -> list[dict[str, Any]]:
        """The outcomes reported for this skill (or for its name before it had an id), newest first."""
        cols = ("id", "at", "worked", "note", "client", "query_id")
        return [dict(zip(cols, r)) for r in self._rows(
            "SELECT id, at, worked, note, client, query_id FROM outcomes"
            " WHERE skill_id = %s OR (skill_id IS NULL AND name = %s) ORDER BY id DESC LIMIT %s",
            (clean(skill_id), clean(name), int(limit)))]

    def outcome_days(self, skill_id: str, name: str) -> list[tuple[str, int]]:
        """(day, worked) of every outcome reported for this skill."""
        return [(d, int(ok)) for d, ok in self._rows(
            "SELECT substr(at, 1, 10), worked FROM outcomes WHERE skill_id = %s OR (skill_id IS NULL AND name = %s)"
            " ORDER BY id", (clean(skill_id), clean(name)))]
