"""Usage logs (append-only: queries, recommendations, outcomes) and the curation
statistics built on them. Nothing here leaves the machine.

``Usage`` is the service: what a search and a report write, what ranking reads back (the
anti-repeat counts), and the statistics. The rows live behind ``store.usage.UsageLog``."""

from __future__ import annotations

import datetime as _dt
import json
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import EmbedderError, NotFoundError, ValidationError, write_failure
from ..store import now
from ..store.protocols import UsageLogStore
from ..text import name_key, sha256, tokenize, trim

# What the log keeps of a request's text: its first LOGGED_TEXT_CHARS characters and a marker
# saying how long it was. A request is rarely longer; one that is (a pasted log, a whole file)
# would otherwise grow the database by its size on every search. The hash of the whole
# normalised text is kept as well, so a repeat is still recognised.
LOGGED_TEXT_CHARS = 2000
# a request or a note as a report shows it (the log keeps more: ``skillshelf stats --json``)
SHOWN_CHARS = 200


def normalize_request(text: str) -> str:
    """The form in which two requests count as the same: Unicode-normalised, case-folded,
    words only ("My docker image is HUGE!" == "my docker image is huge")."""
    folded = unicodedata.normalize("NFKC", text or "").casefold()
    return " ".join(re.findall(r"[^\W_]+", folded))


def request_hash(text: str) -> str:
    """What the log keeps of a request to recognise a repeat (also with ``hash_queries``)."""
    return sha256(normalize_request(text))


def logged_text(text: str) -> str:
    """``text`` as the log keeps it: whole up to ``LOGGED_TEXT_CHARS`` characters, else its
    start and a marker with the full length."""
    if len(text) <= LOGGED_TEXT_CHARS:
        return text
    return f"{text[:LOGGED_TEXT_CHARS]} … [cut for the log: {len(text):,} characters in all]"


def logged_request_vectors(known: Any, embed: Callable[[list[str]], Any] | None,
                           remember: Callable[[int, Any], None] | None = None
                           ) -> Callable[[list[tuple[int, str | None]]], list[Any]]:
    """The ``vectors`` of ``Usage.recent_counts``: a logged request's unit vector is the one its
    search kept (``known``: query id -> vector, the learning service's memory of the searches
    this process logged), else its logged text embedded now (``embed``: texts -> one row each,
    None: no embedder) and handed to ``remember`` (so each is embedded once per process);
    None for a request with neither (its text not kept: ``hash_queries``), which is then
    compared by its text only."""

    def vectors(rows: list[tuple[int, str | None]]) -> list[Any]:
        out = [known.get(int(qid)) for qid, _ in rows]
        todo = [k for k, (qid, text) in enumerate(rows) if out[k] is None and text]
        if todo and embed is not None:
            try:
                embedded = np.asarray(embed([rows[k][1] or "" for k in todo]), dtype=np.float32)   # (each has a text)
            except EmbedderError:
                # the request being ranked was embedded a moment ago; should the backend fail
                # now, those earlier requests are compared by text only (the hits are complete)
                return out
            for k, vec in zip(todo, embedded):
                vec = vec / (float(np.linalg.norm(vec)) or 1.0)
                out[k] = vec
                if remember is not None:
                    remember(int(rows[k][0]), vec)
        return out

    return vectors


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
                lines.append(f"  - {trim(note, SHOWN_CHARS)}")
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
                lines.append(f"  - for: {trim(q, SHOWN_CHARS)}")
    else:
        lines.append("- nothing learned yet (outcomes reported with a query id teach ranking)")
    lines += ["", "## Gaps (requests nothing served)", ""]
    if st.gaps:
        for g in st.gaps[:limit]:
            also = (f" — also: {'; '.join(trim(e, SHOWN_CHARS) for e in g.examples[1:3])}"
                    if len(g.examples) > 1 else "")   # (a repeat adds none)
            lines.append(f"- {trim(g.query, SHOWN_CHARS)} ×{g.count}{also}")
    else:
        lines.append("- none")
    return "\n".join(lines) + "\n"


class Usage:
    """The usage service: logs searches and reports, answers ranking's questions about recent
    recommendations, and builds the curation statistics.

    ``log``: the usage rows (``store.usage.UsageLog``); ``skills``: a callable returning
    ``(id, name, active)`` of every indexed skill (the kill list); ``learned``: a callable
    ``since -> list`` of what learning changed (``learning.Learning.changes``), put in the
    statistics (None: nothing)."""

    def __init__(self, log: UsageLogStore, *, skills: Callable[[], list[tuple[str, str, bool]]],
                 learned: Callable[[str | None], list[dict[str, Any]]] | None = None):
        self.log = log
        self._skills = skills
        self._learned = learned

    # --- writing --------------------------------------------------------------------------
    def log_query(self, *, text: str, mode: str, filters: dict, client: str | None, confident: bool,
                  degraded: bool, hits: list, latency_ms: float, hash_text: bool, at: str | None = None) -> int:
        """One query row plus one row per recommended hit (wildcards are not recommendations).
        The text is kept cut to ``LOGGED_TEXT_CHARS`` (none with ``hash_text``); its hash is of
        the whole request. ``StoreError`` when the disk or a lock refuses the write."""
        recommended = [(h.id, h.name, float(h.score)) for h in hits if not getattr(h, "wildcard", False)]
        return self.log.log_query(at=at or now(), text=None if hash_text else logged_text(text),
                                  text_hash=request_hash(text), mode=mode, filters=filters, client=client,
                                  confident=confident, degraded=bool(degraded), n_hits=len(hits),
                                  latency_ms=latency_ms, recommended=recommended)

    def log_search(self, query: str, result: Any, *, mode: str, filters: dict, client: str | None, hash_text: bool,
                   read_only: bool, remember: Callable[[int | None, Any], None] | None = None) -> None:
        """Log a search and its hits, setting ``result.query_id`` (and handing the request's
        vector to ``remember``, so a report on it is learned without embedding it again). A
        read keeps working when the log cannot be written (a full disk, a read-only database):
        the hits are returned and ``result.degraded`` says what is missing; any other error is
        raised."""
        try:
            result.query_id = self.log_query(text=query, mode=mode, filters=filters, client=client,
                                             confident=result.confident, degraded=result.degraded is not None,
                                             hits=result.hits, latency_ms=result.latency_ms, hash_text=hash_text)
            if remember is not None:
                remember(result.query_id, result.request_vector)
        except Exception as exc:
            reason = write_failure(exc)
            if reason is None:
                raise
            note = (f"usage not recorded ({reason}): the hits are complete"
                    + ("" if read_only else "; report_outcome without a query_id"))
            result.degraded = f"{result.degraded}; {note}" if result.degraded else note
            print(f"skillshelf: {note}", file=sys.stderr)

    def logged_query_id(self, query_id: int | str | None) -> int | None:
        """The id of a logged query a report names (None for none); ``ValidationError`` for
        one that is not a number, ``NotFoundError`` for one never logged."""
        if query_id in (None, ""):
            return None
        try:
            qid = int(query_id)
        except (TypeError, ValueError):
            raise ValidationError(f"query id {query_id!r} is not a number",
                                  fix="pass the query id a search returned, or leave it empty") from None
        if self.query(qid) is None:    # (ids past the store's integers included)
            raise NotFoundError(f"no query with id {qid}", fix="pass the query id a search returned, or none")
        return qid

    def log_outcome(self, *, skill_id: str | None, name: str, worked: bool, note: str, query_id: int | None,
                    client: str | None, at: str | None = None, version: int | None = None) -> int:
        """One reported outcome (its id). ``StoreError`` when the disk or a lock refuses it."""
        return self.log.log_outcome(at=at or now(), skill_id=skill_id, name=name, worked=worked, note=note,
                                    query_id=query_id, client=client, version=version)

    def prune(self, before: str) -> int:
        """Delete usage rows older than ``before`` (the one sanctioned deletion; the CLI
        confirms). ``ValueError`` when ``before`` is not a date."""
        _dt.date.fromisoformat(before[:10])
        return self.log.prune(before)

    # --- reading --------------------------------------------------------------------------
    def query(self, query_id: int) -> dict[str, Any] | None:
        """A logged query (``id, at, text, mode, client, confident, degraded``) or None."""
        return self.log.query(query_id)

    def recent_counts(self, window: int, *, exclude_request: str | None = None, request_vector: Any = None,
                      vectors: Callable[[list[tuple[int, str | None]]], list[Any]] | None = None,
                      same_meaning: float | None = None) -> dict[str, int]:
        """How often each skill was recommended in the last ``window`` logged requests, repeats
        of ``exclude_request`` left out: the anti-repeat policy spreads different requests over
        the collection, it must not change the answer to the same one. The window is counted
        without the repeats too, so a repeat sees the same recent requests as the first ask did.

        A repeat is the same normalised text; with ``request_vector`` (this request's unit
        vector) and ``vectors`` (``[(query id, logged text or None)]`` -> their unit vectors,
        None where none is known: ``logged_request_vectors``), it is also a recent request
        whose vector has a cosine of at least ``same_meaning`` with this one: the same need in
        other words. A request whose vector is not known is compared by its text only. At most
        ``window`` such paraphrases are left out of a full window (the read is of twice the
        window)."""
        skip = request_hash(exclude_request) if exclude_request is not None else ""
        if request_vector is None or vectors is None or same_meaning is None or same_meaning > 1.0:
            return self.log.recent_counts(window, skip_hash=skip)
        if window <= 0:
            return {}
        rows = self.log.recent_requests(2 * window, skip_hash=skip)       # one read
        qvec = np.asarray(request_vector, dtype=np.float32).ravel()
        counted: list[dict[str, Any]] = []
        i = 0
        while len(counted) < window and i < len(rows):
            # the vectors of only as many rows as can still fill the window (a vector not
            # known is embedded from the logged text: no more than needed)
            batch = rows[i:i + window - len(counted)]
            i += len(batch)
            for row, vec in zip(batch, vectors([(r["id"], r["text"]) for r in batch])):
                v = None if vec is None else np.asarray(vec, dtype=np.float32).ravel()
                if v is None or v.shape != qvec.shape or float(v @ qvec) < same_meaning:
                    counted.append(row)
        return dict(Counter(sid for row in counted for sid in row["skills"]))

    def recent_counter(self, request: str, window: int, same_meaning: float | None, *, known: Any,
                       embedder: Callable[[], tuple[Any, str | None]],
                       remember: Callable[[int, Any], None] | None = None) -> Callable[[Any], dict[str, int]]:
        """The ``recent`` of ``Searcher.search`` for ``request``: its vector (None without an
        embedder) -> ``recent_counts``, repeats of its text and of its meaning left out.
        ``known``: query id -> the request vector its search kept; ``embedder``: () ->
        (embedder or None, reason), to embed the logged text of a request whose vector is not
        known; see ``logged_request_vectors``."""

        def recent(qvec: Any) -> dict[str, int]:
            emb = embedder()[0] if qvec is not None else None
            vectors = logged_request_vectors(known, emb.embed_batch if emb is not None else None, remember)
            return self.recent_counts(window, exclude_request=request, request_vector=qvec, vectors=vectors,
                                      same_meaning=same_meaning)
        return recent

    def worked_latest(self, skill_ids: list[str]) -> set[str]:
        """Those of ``skill_ids`` whose latest outcome was 'worked' (exempt from the recency penalty)."""
        return self.log.worked_latest(skill_ids)

    def report(self, skill_id: str, name: str, worked: bool, *, note: str = "", query_id: int | str | None = None,
               client: str | None = None, learn: Callable[..., bool], version: int | None = None) -> dict[str, Any]:
        """Record whether a skill worked (append-only), with the skill's ``version``, and hand the
        outcome to learning (``learn(outcome_id, skill_id, name, worked, query_id, client)``): what
        ``Library.report_outcome`` answers."""
        if not isinstance(worked, bool):
            raise ValidationError("worked must be true or false", fix="pass worked=true or worked=false")
        if note and len(note) > 4000:
            raise ValidationError("note is over 4000 characters", fix="shorten the note")
        qid = self.logged_query_id(query_id)
        oid = self.log_outcome(skill_id=skill_id, name=name, worked=worked, note=note, query_id=qid, client=client,
                               version=version)
        # Kept for ranking (learning.py) when it names the request it answers: later requests
        # that mean the same thing see it. Learning is a derived copy; a failure to write it
        # leaves the logged outcome in place.
        try:
            learned = learn(oid, skill_id, name, worked, qid, client)
        except EmbedderError:
            learned = False         # the model failed to place the request: logged, not learned
        except Exception as exc:
            if write_failure(exc) is None:
                raise
            learned = False
        u = self.skill_usage(skill_id, name)
        return {"outcome_id": oid, "skill": name, "id": skill_id, "worked": worked,
                "reports": u.reports, "success_rate": None if u.success_rate is None else round(u.success_rate, 3),
                "learned": learned}

    def skill_usage(self, skill_id: str, name: str) -> SkillUsage:
        """One skill's usage: times shown, outcomes reported, their notes."""
        u = SkillUsage(skill_id, name)
        u.times_shown, outcomes = self.log.skill_usage(skill_id, name)
        for worked, note, at in outcomes:
            u.reports += 1
            u.worked += int(worked)
            u.failed += 1 - int(worked)
            u.last_used = at
            if note:
                u.notes.append(note)
        return u

    def stats(self, *, since: str | None = None, min_uses: int = 3, low_rate: float = 0.5, top: int = 20) -> Stats:
        """The curation statistics of the usage logged at or after ``since`` (all of it when
        None): what worked, what keeps failing (``min_uses`` reports, success below
        ``low_rate``), what never surfaced, the unserved requests grouped, what learning changed."""
        since_at = since or "0000"
        qrows = self.log.queries_since(since_at)
        finds = [q for q in qrows if q["mode"] == "find"]
        per_day: Counter[str] = Counter(q["at"][:10] for q in qrows)
        usage: dict[str, SkillUsage] = {}
        skills = self._skills()

        def get(sid: str, name: str) -> SkillUsage:
            if sid not in usage:
                usage[sid] = SkillUsage(sid, name)
            return usage[sid]

        for sid, name, shown in self.log.shown_since(since_at):
            get(sid, name).times_shown = shown
        orows = self.log.outcomes_since(since_at)
        reported_queries = set()
        answered = set()     # requests a skill was reported to have worked for: not gaps, whatever the score said
        for o in orows:
            u = get(o["skill_id"] or o["name"], o["name"])
            u.reports += 1
            if o["worked"]:
                u.worked += 1
            else:
                u.failed += 1
            u.last_used = max(u.last_used or "", o["at"])
            if o["note"]:
                u.notes.append(("worked: " if o["worked"] else "failed: ") + o["note"])
            if o["query_id"] is not None:
                reported_queries.add(o["query_id"])
                if o["worked"]:
                    answered.add(o["query_id"])
        find_ids = {q["id"] for q in finds}
        report_rate = (len(find_ids & reported_queries) / len(find_ids)) if find_ids else 0.0
        surfaced_ever = self.log.ever_recommended()
        # a search shows one skill of a name for all its copies (the other roots' skills of that
        # name), and a skill an agent reported on was used: neither is a kill candidate
        shown_keys = {name_key(nm) for sid, nm, _ in skills if sid in surfaced_ever}
        shown_keys |= {name_key(o["name"]) for o in orows if o["name"]}
        # active skills only are kill candidates
        never = [{"id": sid, "name": nm} for sid, nm, active in sorted(skills)
                 if active and sid not in surfaced_ever and name_key(nm) not in shown_keys]
        per_skill = sorted(usage.values(), key=lambda u: (-(u.reports + u.times_shown), u.id))
        # a retired skill (deprecated, merged away) is off the shelf: nothing to rewrite
        retired = {sid for sid, _, active in skills if not active}
        low = [u for u in per_skill if u.reports >= min_uses and (u.success_rate or 0.0) < low_rate
               and u.id not in retired]
        low.sort(key=lambda u: (u.success_rate or 0.0, -u.reports, u.id))
        worked = sorted([u for u in per_skill if u.worked], key=lambda u: (-u.worked, u.id))
        # "most used" means used: skills with reported outcomes, ranked by reports and then by
        # how many worked. Being shown is not being used (times_shown is its own field).
        most = sorted((u for u in per_skill if u.reports), key=lambda u: (-u.reports, -u.worked, -u.times_shown,
                                                                           u.id))[:top]
        gap_rows = [(q["text"] or f"(hashed query {q['id']})", q["at"]) for q in finds
                    if not q["confident"] and not q["degraded"]   # lexical-only runs have no confidence signal
                    and q["id"] not in answered]
        return Stats(
            since=since, queries=len(qrows), finds=len(finds), reports=len(orows), report_rate=report_rate,
            confident_rate=(sum(1 for q in finds if q["confident"]) / len(finds)) if finds else 0.0,
            queries_per_day=dict(sorted(per_day.items())), skills_total=len({sid for sid, _, _ in skills}),
            most_used=most, low_success=low, never_surfaced=never, gaps=group_gaps(gap_rows), worked=worked,
            per_skill=per_skill, learning=self._learned(since) if self._learned else [])
