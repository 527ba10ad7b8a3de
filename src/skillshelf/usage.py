"""Usage logs (append-only: queries, recommendations, outcomes) and the curation
statistics built on them. Nothing here leaves the machine."""

from __future__ import annotations

import datetime as _dt
import json
import re
import sqlite3
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import StoreError
from .store import Store, now
from .learning import changes as learning_changes
from .text import sha256, tokenize


def normalize_request(text: str) -> str:
    """The form in which two requests count as the same: Unicode-normalised, case-folded,
    words only ("My docker image is HUGE!" == "my docker image is huge")."""
    folded = unicodedata.normalize("NFKC", text or "").casefold()
    return " ".join(re.findall(r"[^\W_]+", folded))


def request_hash(text: str) -> str:
    """What the log keeps of a request to recognise a repeat (also with ``hash_queries``)."""
    return sha256(normalize_request(text))


def log_query(store: Store, *, text: str, mode: str, filters: dict, client: str | None, confident: bool,
              degraded: bool, hits: list, latency_ms: float, hash_text: bool, at: str | None = None) -> int:
    """One query row plus one row per recommended hit (wildcards are not recommendations)."""
    at = at or now()
    try:
        return _insert_query(store, at=at, text=text, mode=mode, filters=filters, client=client,
                             confident=confident, degraded=degraded, hits=hits, latency_ms=latency_ms,
                             hash_text=hash_text)
    except BaseException:
        # A COMMIT that fails (disk full, I/O error) may leave the transaction open on this
        # thread's connection, which would then read an old snapshot and refuse the next BEGIN.
        db = store.db
        if db.in_transaction:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:  # SQLite ended it already
                pass
        raise


def _insert_query(store: Store, *, at: str, text: str, mode: str, filters: dict, client: str | None,
                  confident: bool, degraded: bool, hits: list, latency_ms: float, hash_text: bool) -> int:
    with store.tx() as tx:
        cur = tx.execute(
            "INSERT INTO queries (at, text, text_hash, mode, filters, client, confident, degraded, n_hits, latency_ms)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            (at, None if hash_text else text, request_hash(text), mode,
             json.dumps(filters, sort_keys=True), client, int(confident), int(bool(degraded)),
             len(hits), float(latency_ms)))
        qid = int(cur.lastrowid)
        rank = 0
        rows = []
        for h in hits:
            if getattr(h, "wildcard", False):
                continue
            rank += 1
            rows.append((qid, at, h.id, h.name, rank, float(h.score)))
        tx.executemany("INSERT INTO recommendations (query_id, at, skill_id, name, rank, score) VALUES (?,?,?,?,?,?)",
                       rows)
    return qid


def log_outcome(store: Store, *, skill_id: str | None, name: str, worked: bool, note: str,
                query_id: int | None, client: str | None, at: str | None = None) -> int:
    with store.tx() as tx:
        cur = tx.execute("INSERT INTO outcomes (at, skill_id, name, worked, note, query_id, client)"
                         " VALUES (?,?,?,?,?,?,?)",
                         (at or now(), skill_id, name, int(bool(worked)), note or "", query_id, client))
    return int(cur.lastrowid)


def recent_counts(store: Store, window: int, *, exclude_request: str | None = None) -> dict[str, int]:
    """How often each skill was recommended in the last ``window`` logged requests, repeats
    of ``exclude_request`` (same normalised text) left out: the anti-repeat policy spreads
    different requests over the collection, it must not change the answer to the same one.
    The window is counted without the repeats too, so a repeat sees the same recent requests
    as the first ask did."""
    if window <= 0:
        return {}
    skip = request_hash(exclude_request) if exclude_request is not None else ""
    qids = [r[0] for r in store.db.execute(
        "SELECT id FROM queries WHERE text_hash != ? ORDER BY id DESC LIMIT ?", (skip, window))]
    if not qids:
        return {}
    # recommendations are written with their query, in one transaction: the rows of the
    # last queries are the last rows, and their number is bounded by the queries' n_hits
    # (no full scan of a long log on every search)
    bound = store.db.execute("SELECT COALESCE(SUM(n_hits), 0) FROM queries WHERE id >= ?", (min(qids),)).fetchone()[0]
    q = ",".join("?" * len(qids))
    rows = store.db.execute(f"""
        SELECT skill_id, COUNT(*) FROM (SELECT query_id, skill_id FROM recommendations ORDER BY id DESC LIMIT ?)
        WHERE query_id IN ({q}) GROUP BY skill_id""", (int(bound), *qids))
    return {r[0]: int(r[1]) for r in rows}


def worked_latest(store: Store, skill_ids: list[str]) -> set[str]:
    """Those of ``skill_ids`` whose latest outcome was 'worked' (exempt from the recency penalty)."""
    if not skill_ids:
        return set()
    q = ",".join("?" * len(skill_ids))
    rows = store.db.execute(f"""
        SELECT o.skill_id, o.worked FROM outcomes o
        JOIN (SELECT skill_id, MAX(id) AS mid FROM outcomes WHERE skill_id IN ({q}) GROUP BY skill_id) last
        ON last.mid = o.id""", skill_ids)
    return {r[0] for r in rows if r[1]}


# --- statistics -----------------------------------------------------------------

@dataclass
class SkillUsage:
    """One skill's usage: ``times_shown`` counts the searches that listed it (not uses);
    ``reports`` the outcomes reported for it (uses), ``worked`` / ``failed`` split them."""

    id: str
    name: str
    times_shown: int = 0
    reports: int = 0
    worked: int = 0
    failed: int = 0
    last_used: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def success_rate(self) -> float | None:
        return (self.worked / self.reports) if self.reports else None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["success_rate"] = None if self.success_rate is None else round(self.success_rate, 3)
        return d


@dataclass
class Gap:
    query: str
    count: int
    examples: list[str]
    last_seen: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Stats:
    since: str | None
    queries: int
    finds: int
    reports: int
    report_rate: float
    confident_rate: float
    queries_per_day: dict[str, int]
    skills_total: int
    most_used: list[SkillUsage]
    low_success: list[SkillUsage]
    never_surfaced: list[dict[str, str]]
    gaps: list[Gap]
    worked: list[SkillUsage]
    per_skill: list[SkillUsage]
    # skills that outcomes promote or demote in ranking, with the requests behind it
    # (learning.changes); empty when nothing was learned
    learning: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since, "queries": self.queries, "finds": self.finds, "reports": self.reports,
            "report_rate": round(self.report_rate, 3), "confident_rate": round(self.confident_rate, 3),
            "queries_per_day": self.queries_per_day, "skills_total": self.skills_total,
            "most_used": [s.as_dict() for s in self.most_used],
            "low_success": [s.as_dict() for s in self.low_success],
            "never_surfaced": self.never_surfaced, "gaps": [g.as_dict() for g in self.gaps],
            "worked": [s.as_dict() for s in self.worked],
            "per_skill": [s.as_dict() for s in self.per_skill],
            "learning": self.learning,
        }


def _gap_key_tokens(text: str) -> set[str]:
    return {t for t in tokenize(text) if len(t) > 2 and not re.fullmatch(r"\d+", t)}


def group_gaps(rows: list[tuple[str, str]], threshold: float = 0.5) -> list[Gap]:
    """Group unserved requests so the same need asked several ways is one line.

    Greedy single-link grouping on token-set Jaccard similarity: deterministic for a
    given input order (oldest first)."""
    groups: list[dict[str, Any]] = []
    for text, at in rows:
        toks = _gap_key_tokens(text)
        best, best_sim = None, 0.0
        for g in groups:
            inter = len(toks & g["tokens"])
            union = len(toks | g["tokens"]) or 1
            sim = inter / union
            if sim > best_sim:
                best, best_sim = g, sim
        if best is not None and best_sim >= threshold:
            best["count"] += 1
            best["tokens"] |= toks
            if text not in best["examples"] and len(best["examples"]) < 5:
                best["examples"].append(text)
            best["last"] = max(best["last"], at)
        else:
            groups.append({"query": text, "tokens": set(toks), "count": 1, "examples": [text], "last": at})
    groups.sort(key=lambda g: (-g["count"], g["query"]))
    return [Gap(g["query"], g["count"], g["examples"], g["last"]) for g in groups]


def compute_stats(store: Store, *, since: str | None = None, min_uses: int = 3, low_rate: float = 0.5,
                  top: int = 20) -> Stats:
    db = store.db
    since_at = since or "0000"
    qrows = db.execute("SELECT id, at, text, mode, confident, degraded FROM queries WHERE at >= ? ORDER BY id",
                       (since_at,)).fetchall()
    finds = [q for q in qrows if q["mode"] == "find"]
    per_day: Counter[str] = Counter(q["at"][:10] for q in qrows)
    usage: dict[str, SkillUsage] = {}
    names = {r["id"]: r["name"] for r in db.execute("SELECT id, name FROM skills")}

    def get(sid: str, name: str) -> SkillUsage:
        if sid not in usage:
            usage[sid] = SkillUsage(sid, name)
        return usage[sid]

    for r in db.execute("SELECT skill_id, name, COUNT(*) c, MAX(at) last FROM recommendations WHERE at >= ?"
                        " GROUP BY skill_id", (since_at,)):
        u = get(r["skill_id"], r["name"])
        u.times_shown = int(r["c"])
    orows = db.execute("SELECT * FROM outcomes WHERE at >= ? ORDER BY id", (since_at,)).fetchall()
    reported_queries = set()
    for o in orows:
        sid = o["skill_id"] or o["name"]
        u = get(sid, o["name"])
        u.reports += 1
        if o["worked"]:
            u.worked += 1
        else:
            u.failed += 1
        u.last_used = max(u.last_used or "", o["at"])
        if o["note"]:
            u.notes.append(("worked: " if o["worked"] else "failed: ") + o["note"])
        if o["query_id"] is not None:
            reported_queries.add(int(o["query_id"]))
    find_ids = {int(q["id"]) for q in finds}
    report_rate = (len(find_ids & reported_queries) / len(find_ids)) if find_ids else 0.0
    surfaced_ever = {r[0] for r in db.execute("SELECT DISTINCT skill_id FROM recommendations")}
    never = [{"id": sid, "name": nm} for sid, nm in sorted(names.items()) if sid not in surfaced_ever]
    # active skills only are kill candidates
    active = {r[0] for r in db.execute("SELECT id FROM skills WHERE active = 1")}
    never = [x for x in never if x["id"] in active]
    per_skill = sorted(usage.values(), key=lambda u: (-(u.reports + u.times_shown), u.id))
    low = [u for u in per_skill if u.reports >= min_uses and (u.success_rate or 0.0) < low_rate]
    low.sort(key=lambda u: (u.success_rate or 0.0, -u.reports, u.id))
    worked = sorted([u for u in per_skill if u.worked], key=lambda u: (-u.worked, u.id))
    # "most used" means used: skills with reported outcomes, ranked by reports and then by
    # how many worked. Being shown is not being used (times_shown is its own field).
    most = sorted((u for u in per_skill if u.reports), key=lambda u: (-u.reports, -u.worked, -u.times_shown,
                                                                       u.id))[:top]
    gap_rows = [(q["text"] or f"(hashed query {q['id']})", q["at"]) for q in finds
                if not q["confident"] and not q["degraded"]]  # lexical-only runs have no confidence signal
    return Stats(
        since=since, queries=len(qrows), finds=len(finds), reports=len(orows), report_rate=report_rate,
        confident_rate=(sum(1 for q in finds if q["confident"]) / len(finds)) if finds else 0.0,
        queries_per_day=dict(sorted(per_day.items())), skills_total=len(names), most_used=most,
        low_success=low, never_surfaced=never, gaps=group_gaps(gap_rows), worked=worked, per_skill=per_skill,
        learning=learning_changes(store, since=since))


def render_report(st: Stats, *, fmt: str = "md", limit: int = 25) -> str:
    if fmt == "json":
        return json.dumps(st.as_dict(), indent=2, ensure_ascii=False)
    lines = [f"# skillshelf usage report{' since ' + st.since if st.since else ''}", "",
             f"{st.queries} queries ({st.finds} finds), {st.reports} outcome reports; "
             f"report rate {st.report_rate:.0%}; confident matches {st.confident_rate:.0%}; "
             f"{st.skills_total} skills in the library.", ""]
    lines += ["## What worked", ""]
    if st.worked:
        for u in st.worked[:limit]:
            lines.append(f"- **{u.name}** — {u.worked}/{u.reports} worked" +
                         (f"; {u.notes[-1]}" if u.notes else ""))
    else:
        lines.append("- nothing reported as working yet")
    lines += ["", "## Rewrite list (low success)", ""]
    if st.low_success:
        for u in st.low_success[:limit]:
            lines.append(f"- **{u.name}** — {u.worked}/{u.reports} worked ({(u.success_rate or 0):.0%})")
            for note in u.notes[-3:]:
                lines.append(f"  - {note}")
    else:
        lines.append("- none")
    lines += ["", f"## Kill list (never surfaced: {len(st.never_surfaced)})", ""]
    for x in st.never_surfaced[:limit]:
        lines.append(f"- {x['name']} (`{x['id']}`)")
    if len(st.never_surfaced) > limit:
        lines.append(f"- … and {len(st.never_surfaced) - limit} more (`skillshelf stats --json`)")
    lines += ["", "## What learning changed", ""]
    if st.learning:
        lines.append("Outcomes reported for a request move the skill for later requests that mean the same thing"
                     " (`skillshelf usage forget` undoes it):")
        lines.append("")
        for d in st.learning[:limit]:
            lines.append(f"- **{d['name']}** {d['direction']} — worked {d['worked']}, failed {d['failed']}"
                         f" ({d['clients']} client{'s' * (d['clients'] != 1)})")
            for q in d["requests"]:
                lines.append(f"  - for: {q}")
    else:
        lines.append("- nothing learned yet (outcomes reported with a query id teach ranking)")
    lines += ["", "## Gaps (requests nothing served)", ""]
    if st.gaps:
        for g in st.gaps[:limit]:
            lines.append(f"- {g.query} ×{g.count}" + (f" — also: {'; '.join(g.examples[1:3])}" if g.count > 1 else ""))
    else:
        lines.append("- none")
    return "\n".join(lines) + "\n"


def prune(store: Store, before: str) -> int:
    """Delete usage rows older than ``before`` (the one sanctioned deletion; the CLI confirms)."""
    _dt.date.fromisoformat(before[:10])
    with store.tx() as tx:
        tx.execute("INSERT OR REPLACE INTO meta VALUES ('retention_unlocked', '1')")
        try:
            n = 0
            n += tx.execute("DELETE FROM recommendations WHERE at < ?", (before,)).rowcount
            n += tx.execute("DELETE FROM outcomes WHERE at < ?", (before,)).rowcount
            n += tx.execute("DELETE FROM judge_log WHERE at < ?", (before,)).rowcount
            n += tx.execute("DELETE FROM queries WHERE at < ? AND id NOT IN (SELECT query_id FROM recommendations)",
                            (before,)).rowcount
        finally:
            tx.execute("DELETE FROM meta WHERE key = 'retention_unlocked'")
    return n


def per_skill_usage(store: Store, skill_id: str, name: str) -> SkillUsage:
    u = SkillUsage(skill_id, name)
    r = store.db.execute("SELECT COUNT(*), MAX(at) FROM recommendations WHERE skill_id=?", (skill_id,)).fetchone()
    u.times_shown = int(r[0])
    for o in store.db.execute("SELECT worked, note, at FROM outcomes WHERE skill_id=? OR (skill_id IS NULL AND name=?)"
                              " ORDER BY id", (skill_id, name)):
        u.reports += 1
        u.worked += int(o[0])
        u.failed += 1 - int(o[0])
        u.last_used = o[2]
        if o[1]:
            u.notes.append(o[1])
    return u

