"""The query pipeline: lexical ∥ dense → fuse (RRF) → filter → collapse copies →
recency → diversify (MMR) → hits (metadata only).

State kept between queries (rebuilt only when the store's generation changes): the
metadata of every skill needed for filtering and display, and the dense matrix.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .config import SearchConfig
from .errors import ValidationError
from . import lexical, vectors
from .index import PART_BODY, PART_META
from .store import Store
from .text import COMPOUND_RE, STOPWORDS, trim

MODES = ("find", "brainstorm")
SCOPES = ("all", "current")

# Calibrated on requests-dev.jsonl (bench/calibrate.py): a request counts as served when
# one of the first three hits has cosine >= this value to the query, scored as the dense
# list ranks (the better of the skill's metadata and body vectors, all-MiniLM-L6-v2).
# 0.43 maximises Youden's J (gap requests flagged − good requests flagged) on the
# development set; the max-sim signal separates gaps better than the metadata cosine alone
# (AUC 0.88 vs 0.83). Other embedding models need their own value (search.confident_threshold).
CONFIDENT_COSINE = 0.43


@dataclass
class Hit:
    id: str
    name: str
    path: str
    score: float
    match: str                      # likely | weak
    description: str
    display_name: str
    skill_type: str | None
    repo: str | None
    version: int
    tags: list[str]
    copies: int = 1                 # how many same-named skills this hit stands for
    copy_ids: list[str] = field(default_factory=list)
    active: bool = True
    expired: bool = False
    lineage: list[str] = field(default_factory=list)
    wildcard: bool = False
    ref: str = ""                   # what to pass to get_skill: the name, or the id when the
                                    # name would resolve to another copy

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    confident: bool
    degraded: str | None            # None, or why search is lexical-only
    query_id: int | None = None
    latency_ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "confident": self.confident,
                "degraded": self.degraded, "query_id": self.query_id,
                "latency_ms": round(self.latency_ms, 2), "hits": [h.as_dict() for h in self.hits]}


@dataclass
class _Meta:
    """The per-skill state kept in memory between queries: numbers only, indexed by
    position (skills in rowid order). Display fields are read from SQLite for the few
    hits shown, and filters on repo, tags and type are answered by SQL and cached, so
    100k skills cost a few MB here instead of ~150 MB of Python strings."""

    gen: str                    # the index generation this snapshot belongs to
    rowids: np.ndarray          # int64, ascending: position -> skill rowid
    group: np.ndarray           # int32 copy group (same name key) per position
    group_order: np.ndarray     # positions sorted by group ...
    group_start: np.ndarray     # ... and each group's offset into group_order
    active: np.ndarray          # bool
    expires: np.ndarray         # int32 date ordinal of expires_on, 0 = never

    def positions(self, rowids) -> np.ndarray:
        """Positions of skill rowids (-1 where the rowid is not in this snapshot)."""
        r = np.asarray(rowids, dtype=np.int64)
        p = np.searchsorted(self.rowids, r)
        p[p >= len(self.rowids)] = 0
        return np.where(self.rowids[p] == r, p, -1) if len(self.rowids) else np.full(len(r), -1)

    def members(self, p: int) -> np.ndarray:
        """Positions of the copies in ``p``'s group, ``p`` included."""
        g = self.group[p]
        return self.group_order[self.group_start[g]:self.group_start[g + 1]]


_HIT_COLS = ("rowid, id, name, path, description, display_name, skill_type, repo, version, tags, active,"
             " expires_on, metadata, kind, rel, name_key")


def rrf(lists: list[list[int]], weights: list[float], k: int) -> dict[int, float]:
    """Weighted reciprocal rank fusion: score(d) = Σ w_i / (k + rank_i(d)), ranks from 1."""
    fused: dict[int, float] = {}
    for w, lst in zip(weights, lists):
        for rank, p in enumerate(lst, start=1):
            fused[p] = fused.get(p, 0.0) + w / (k + rank)
    return fused


def _ordinal(day: str | None) -> int:
    """Date ordinal of an ISO date (0 for none or unreadable: never expires)."""
    try:
        return _dt.date.fromisoformat(day[:10]).toordinal() if day else 0
    except ValueError:
        return 0


def _lineage(meta_json: str) -> list[str]:
    try:
        m = json.loads(meta_json or "{}")
    except ValueError:
        return []
    chain = m.get("lineage") or m.get("derived-from") or ""
    return [x.strip() for x in chain.split(",") if x.strip()]


class Searcher:
    def __init__(self, store: Store, settings: SearchConfig, *, embedder_provider, canonical: list[str]):
        self.store = store
        self.s = settings
        self._embedder_provider = embedder_provider   # () -> (embedder | None, reason | None)
        self._canonical = canonical
        self._lock = threading.Lock()
        self._gen: str | None = None
        self._meta: _Meta | None = None
        self._vec_gen: tuple | None = None
        self._vindex: vectors.ExactIndex | None = None   # metadata vectors (part 0), aligned with meta
        self._bindex: vectors.ExactIndex | None = None   # body vectors (part 1), or None
        self._rng = random.Random()
        self._masks: dict[tuple, np.ndarray] = {}
        self._lex = lexical.LexicalIndex(store, (settings.weight_name, settings.weight_description,
                                                 settings.weight_tags, settings.weight_headings, settings.weight_body))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillshelf-embed")

    # --- caches -----------------------------------------------------------------
    def _ensure_meta(self) -> _Meta:
        gen = self.store.get_meta("generation", "0")
        if self._meta is not None and gen == self._gen:
            return self._meta
        rows = self.store.db.execute("SELECT rowid, name_key, active, expires_on FROM skills ORDER BY rowid")
        keys: dict[str, int] = {}
        rowids, group, active, expires = [], [], [], []
        for rid, key, act, exp in rows:
            rowids.append(rid)
            group.append(keys.setdefault(key, len(keys)))
            active.append(bool(act))
            expires.append(_ordinal(exp))
        g = np.asarray(group, dtype=np.int32)
        order = np.argsort(g, kind="stable").astype(np.int32)
        start = np.searchsorted(g[order], np.arange(len(keys) + 1)).astype(np.int32)
        m = _Meta(gen=gen, rowids=np.asarray(rowids, dtype=np.int64), group=g, group_order=order, group_start=start,
                  active=np.asarray(active, dtype=bool), expires=np.asarray(expires, dtype=np.int32))
        self._meta, self._gen, self._masks = m, gen, {}
        return m

    def _sql_mask(self, meta: _Meta, key: tuple, sql: str, args: tuple = (), keep=None) -> np.ndarray:
        """Positions whose rows ``sql`` selects (rowid first, optionally tested by ``keep``
        on the rest of the row), cached for this index generation."""
        cached = self._masks.get(key)
        if cached is not None:
            return cached
        rows = self.store.db.execute(sql, args).fetchall()
        ids = [r[0] for r in rows if keep is None or keep(r)]
        mask = np.zeros(len(meta.rowids), dtype=bool)
        pos = meta.positions(ids)
        mask[pos[pos >= 0]] = True
        if len(self._masks) > 64:
            self._masks.clear()
        self._masks[key] = mask
        return mask

    def rows(self, positions: list[int], meta: _Meta | None = None) -> dict[int, Any]:
        """The skills rows (``_HIT_COLS``) at these positions of ``meta`` (default: the
        current snapshot), by position."""
        meta = meta or self._meta
        rids = [int(meta.rowids[p]) for p in positions]
        out: dict[int, Any] = {}
        for i in range(0, len(rids), 500):
            chunk = rids[i:i + 500]
            q = ",".join("?" * len(chunk))
            found = self.store.db.execute(f"SELECT {_HIT_COLS} FROM skills WHERE rowid IN ({q})", chunk).fetchall()
            for r, p in zip(found, meta.positions([r[0] for r in found])):
                if p >= 0:
                    out[int(p)] = r
        return out

    def _ensure_vectors(self, embedder, meta: _Meta) -> vectors.ExactIndex | None:
        """The metadata vector index aligned with the meta positions (None: no vectors yet);
        the body vector index is loaded beside it into ``_bindex``."""
        # keyed by the snapshot the vectors are aligned with, not by whatever is current
        key = (meta.gen, embedder.model_id, self.store.get_meta("vectors_generation", "0"))
        if self._vec_gen == key:
            return self._vindex
        # what the new load may reuse (unchanged skills' vectors), then free the old indexes
        # before loading the new ones
        prev = vectors.previous(self._vindex), vectors.previous(self._bindex)
        self._vindex = self._bindex = None
        big = self.s.sq8_above
        self._vindex = vectors.load(self.store, embedder.model_id, meta.rowids, PART_META, sq8_above=big,
                                    previous=prev[0])
        self._bindex = vectors.load(self.store, embedder.model_id, meta.rowids, PART_BODY, sq8_above=big,
                                    previous=prev[1])
        self._vec_gen = key
        return self._vindex

    def warm(self, embedder=None) -> None:
        """Load the search state now (metadata, lexical arrays, and with an embedder the
        vector matrix) so the first query does not pay for it."""
        with self._lock:
            meta = self._ensure_meta()
        self._lex._ensure()
        if embedder is not None:
            with self._lock:
                self._ensure_vectors(embedder, meta)

    # --- retrievers ---------------------------------------------------------------
    def _query_terms(self, query: str) -> list[str]:
        # Numbers ("1.4 GB", "30%", "2pm") say nothing about which skill fits; identifiers
        # that contain digits ("e164", "v2", "s3") are kept.
        toks = [t for t in dict.fromkeys(lexical.terms(query)) if not t.isdigit()]
        if not toks:
            toks = list(dict.fromkeys(lexical.terms(query, keep_stopwords=True)))
        # Adjacent words also as one joined term: "Process Street" meets the name
        # "process-street-automation", "spring boot" meets "SpringBoot". Joined terms no
        # skill contains cost nothing.
        words = [w.lower() for w in COMPOUND_RE.findall(query)]
        for a, b in zip(words, words[1:]):
            if a.isalpha() and b.isalpha() and a not in STOPWORDS and b not in STOPWORDS:
                joined = lexical.stem(a + b)
                if joined not in toks:
                    toks.append(joined)
        return toks[:64]

    def lexical(self, query: str, limit: int) -> list[tuple[int, float]]:
        """(skill rowid, BM25F score) best first."""
        return self._lex.search(self._query_terms(query), limit)

    def dense(self, probe: np.ndarray, limit: int, allowed: np.ndarray | None,
              vi: vectors.ExactIndex | None = None, bi: vectors.ExactIndex | None = None) -> list[tuple[int, float]]:
        """(meta position, score) best first: each skill scored by the better of its
        metadata and body vectors (max-sim). Exact from the two indexes' top lists: a
        skill in the top ``limit`` by its better score is in the top ``limit`` of the
        index that gives it that score."""
        if vi is None:
            vi, bi = self._vindex, self._bindex
        # the two top-k searches run side by side (numpy and faiss release the GIL): at
        # 100k skills each takes ~2.5 ms
        body = self._pool.submit(bi.top, probe, limit, allowed) if bi is not None else None
        pos, _ = vi.top(probe, limit, allowed)
        cand = pos if body is None else np.union1d(pos, body.result()[0])
        if not len(cand):
            return []
        best = np.where(vi.has[cand], vi.dot(cand, probe), -np.inf)
        if bi is not None:
            best = np.maximum(best, np.where(bi.has[cand], bi.dot(cand, probe), -np.inf))
        order = np.argsort(-best, kind="stable")[:limit]
        return [(int(cand[i]), float(best[i])) for i in order]

    # --- the pipeline -------------------------------------------------------------
    def search(self, query: str, *, limit: int = 10, mode: str = "find", repo_scope: str = "all",
               current_repo: str | None = None, tags: list[str] | None = None, skill_type: str | None = None,
               include_inactive: bool = False, include_expired: bool = False,
               recent: dict[str, int] | None = None, worked: set[str] | None = None) -> SearchResult:
        t0 = time.perf_counter()
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("the query is empty", fix="describe the task in a few words")
        if mode not in MODES:
            raise ValidationError(f"unknown mode {mode!r}", fix="use 'find' or 'brainstorm'")
        if repo_scope not in SCOPES:
            raise ValidationError(f"unknown repo_scope {repo_scope!r}", fix="use 'all' or 'current'")
        if not 1 <= int(limit) <= 100:
            raise ValidationError(f"limit {limit} is out of range", fix="use a limit from 1 to 100")
        query = query.strip()[:2000]
        with self._lock:
            meta = self._ensure_meta()
        n = len(meta.rowids)
        if n == 0:
            return SearchResult(query, mode, [], False, None, latency_ms=(time.perf_counter() - t0) * 1000)

        allowed = self._allowed(meta, repo_scope, current_repo, tags, skill_type, include_inactive, include_expired)
        embedder, degraded = self._embedder_provider()
        s = self.s
        ncand = max(s.candidates, limit * 4)

        # The query embedding (onnxruntime releases the GIL) runs on the other core while the
        # lexical list is scored; the dense top-k needs the lexical top hits (feedback), so
        # it comes after both.
        qfuture = None
        vi = bi = None
        if embedder is not None:
            with self._lock:   # the meta snapshot and its two indexes, taken together
                vi = self._ensure_vectors(embedder, meta)
                bi = self._bindex
            if vi is None:
                degraded = degraded or "no vectors yet for this model: run `skillshelf sync`"
            else:
                qfuture = self._pool.submit(embedder.embed, query)

        # lexical list (filtered after retrieval: take extra when filters are on)
        lex_raw = self.lexical(query, ncand * (3 if allowed is not None else 1))
        lex_pos = meta.positions([r for r, _ in lex_raw])
        lex = [(int(p), sc) for p, (_, sc) in zip(lex_pos, lex_raw) if p >= 0]
        if allowed is not None:
            lex = [(p, sc) for p, sc in lex if allowed[p]]
        lex = lex[:ncand]

        dense: list[tuple[int, float]] = []
        qvec = None
        if qfuture is not None:
            try:
                qvec = qfuture.result()
            except Exception as exc:  # any backend failure degrades loudly to lexical-only
                degraded = f"embedder failed: {exc}"
        if qvec is not None:
            # Pseudo-relevance feedback (Rocchio): move the query vector toward the metadata
            # vectors of the top lexical hits, so the dense list searches near what the words
            # matched (for both the metadata and the body vectors).
            probe = qvec
            top = [p for p, _ in lex[:s.prf_docs] if vi.has[p]]
            if s.prf_weight and top:
                probe = qvec + s.prf_weight * vi.vectors(top).mean(axis=0)
                probe = (probe / (np.linalg.norm(probe) or 1.0)).astype(np.float32)
            dense = self.dense(probe, ncand, allowed, vi, bi)

        cos_cache: dict[int, float | None] = {}

        def cos(p: int) -> float | None:
            """Max-sim cosine of the user's own query (not the feedback probe) over the
            skill's vectors: confidence and match."""
            if p not in cos_cache:
                sims = [float(ix.dot([p], qvec)[0]) for ix in (vi, bi)
                        if qvec is not None and ix is not None and ix.has[p]]
                cos_cache[p] = max(sims) if sims else None
            return cos_cache[p]

        fused = rrf([[p for p, _ in lex], [p for p, _ in dense]], [s.lexical_weight, s.dense_weight], s.rrf_k)
        if not fused:
            return SearchResult(query, mode, [], False, degraded, latency_ms=(time.perf_counter() - t0) * 1000)

        # collapse copies (same name key): the best-ranked one stands for the group
        order = sorted(fused, key=lambda p: -fused[p])
        groups: dict[int, int] = {}
        reps: list[int] = []
        for p in order:
            k = int(meta.group[p])
            if k not in groups:
                groups[k] = p
                reps.append(p)

        top = fused[reps[0]]
        rel = {p: fused[p] / top for p in reps}
        for p, times in self._recent_positions(meta, recent, worked).items():
            if p in rel:
                rel[p] -= s.recency_penalty * times
        pool = sorted(reps, key=lambda p: -rel[p])[: max(limit * 3, 15)]
        lam = s.mmr_lambda_find if mode == "find" else s.mmr_lambda_brainstorm
        chosen = self._mmr(pool, rel, lam, limit, vi if qvec is not None else None)

        confident = self._confident(chosen, cos)
        # one read for the shown hits and their copies (each hit names its copies and the
        # copy a lookup by name would return)
        rows = self.rows(list({int(i) for p in chosen for i in meta.members(p)} | set(chosen)), meta)
        hits = [self._hit(meta, rows, p, rel[p], cos) for p in chosen]
        if mode == "brainstorm" and s.wildcards:
            # "outside the relevant set": not shown and not among the next-best candidates;
            # a small library falls back to "not shown"
            shown = {int(i) for p in chosen for i in meta.members(p)}
            hits.extend(self._wildcards(meta, shown | set(pool[: limit * 2]), shown, allowed, s.wildcards))
        return SearchResult(query, mode, hits, confident, degraded,
                            latency_ms=(time.perf_counter() - t0) * 1000)

    def _recent_positions(self, meta: _Meta, recent: dict[str, int] | None,
                          worked: set[str] | None) -> dict[int, int]:
        """Position -> recent appearances, for recently shown skills not reported as worked."""
        ids = [i for i in (recent or {}) if not (worked and i in worked)]
        out: dict[int, int] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            q = ",".join("?" * len(chunk))
            found = self.store.db.execute(f"SELECT rowid, id FROM skills WHERE id IN ({q})", chunk).fetchall()
            for (_, sid), p in zip(found, meta.positions([r[0] for r in found])):
                if p >= 0:
                    out[int(p)] = recent[sid]
        return out

    def _allowed(self, meta: _Meta, repo_scope, current_repo, tags, skill_type, include_inactive,
                 include_expired) -> np.ndarray | None:
        n = len(meta.rowids)
        mask = np.ones(n, dtype=bool)
        filtered = False
        if not include_inactive and not meta.active.all():
            mask &= meta.active
            filtered = True
        if not include_expired:
            exp = self._expired_mask(meta)
            if exp.any():
                mask &= ~exp
                filtered = True
        if repo_scope == "current":
            if not current_repo:
                raise ValidationError("repo_scope 'current' needs the current repo",
                                      fix="pass current_repo, set WORKSPACE_FOLDER, or run inside a git repo")
            want = current_repo.lower()
            mask &= self._sql_mask(meta, ("repo", want), "SELECT rowid FROM skills WHERE repo IS NULL OR repo = ''"
                                   " OR lower(repo) IN (?, 'global', '*')", (want,))
            filtered = True
        if tags:
            want_tags = {t.strip().lower() for t in tags if t.strip()}
            if want_tags:
                mask &= self._sql_mask(meta, ("tags", *sorted(want_tags)), "SELECT rowid, tags FROM skills"
                                       " WHERE tags != ''", keep=lambda r: bool(want_tags & set(r[1].split(","))))
                filtered = True
        if skill_type:
            st = skill_type.strip().upper()
            from .skill import SKILL_TYPES

            if st not in SKILL_TYPES:
                raise ValidationError(f"unknown skill_type {skill_type!r}", fix=f"use one of {', '.join(SKILL_TYPES)}")
            mask &= self._sql_mask(meta, ("type", st), "SELECT rowid FROM skills WHERE skill_type = ?", (st,))
            filtered = True
        return mask if filtered else None

    def _expired_mask(self, meta: _Meta) -> np.ndarray:
        return (meta.expires > 0) & (meta.expires < _dt.date.today().toordinal())

    def _mmr(self, pool: list[int], rel: dict[int, float], lam: float, limit: int,
             vi: vectors.ExactIndex | None) -> list[int]:
        """Maximal marginal relevance over the collapsed pool.

        Relevance is min-max scaled over the pool, and only redundancy counts against a
        candidate: cosine above ``mmr_redundancy_floor`` (near-duplicates under other names).
        Plain MMR on raw cosine pushes down every skill of the right topic, which is what
        cost the_librarian quality (DESIGN.md: 0.522 → 0.485)."""
        if len(pool) <= 1 or vi is None:
            return pool[:limit]
        idx = np.asarray(pool)
        has = vi.has[idx]
        vecs = vi.vectors(idx)
        sims = vecs @ vecs.T
        sims[~has, :] = 0.0
        sims[:, ~has] = 0.0
        floor = self.s.mmr_redundancy_floor
        red = np.clip((sims - floor) / (1.0 - floor), 0.0, None)
        r = np.array([rel[p] for p in pool], dtype=np.float32)
        span = float(r.max() - r.min()) or 1.0
        relevance = lam * (r - r.min()) / span
        chosen: list[int] = []
        penalty = np.zeros(len(pool), dtype=np.float32)
        free = np.ones(len(pool), dtype=bool)
        while free.any() and len(chosen) < limit:
            score = np.where(free, relevance - (1 - lam) * penalty, -np.inf)
            i = int(np.argmax(score))
            chosen.append(i)
            free[i] = False
            penalty = np.maximum(penalty, red[i])
        return [pool[i] for i in chosen]

    def _threshold(self) -> float:
        return self.s.confident_threshold or CONFIDENT_COSINE

    def _confident(self, chosen: list[int], cos) -> bool:
        sims = [c for c in (cos(p) for p in chosen[:3]) if c is not None]
        # lexical-only: no calibrated signal; "not confident" (and `degraded` says why)
        return bool(sims) and max(sims) >= self._threshold()

    def _hit(self, meta: _Meta, rows: dict[int, Any], p: int, score: float, cos) -> Hit:
        """The hit at position ``p``; ``rows`` holds its row and its copies' rows."""
        row = rows[p]
        group = meta.members(p)
        copy_ids: list[str] = []
        ref = row["name"]
        if len(group) > 1:
            from .sources import precedence_key

            copy_ids = [rows[int(i)]["id"] for i in group if int(i) != p and int(i) in rows]
            same = [rows[int(i)] for i in group if int(i) in rows and rows[int(i)]["name"] == row["name"]]
            winner = min(same, key=lambda r: precedence_key(r["kind"], r["rel"], r["id"], self._canonical))
            ref = row["name"] if winner["id"] == row["id"] else row["id"]
        c = cos(p) if cos is not None else None
        likely = c is not None and c >= self._threshold()
        return Hit(
            id=row["id"], name=row["name"], path=row["path"], score=round(float(score), 4),
            match="likely" if likely else "weak", description=trim(row["description"], self.s.description_chars),
            display_name=row["display_name"] or row["name"], skill_type=row["skill_type"], repo=row["repo"],
            version=row["version"], tags=[t for t in (row["tags"] or "").split(",") if t], copies=len(group),
            copy_ids=copy_ids[:10], active=bool(row["active"]),
            expired=bool(meta.expires[p] and meta.expires[p] < _dt.date.today().toordinal()),
            lineage=_lineage(row["metadata"]), ref=ref)

    def _wildcards(self, meta: _Meta, exclude: set[int], fallback: set[int], allowed, k: int) -> list[Hit]:
        def pick(ex: set[int]) -> np.ndarray:
            ok = meta.active.copy() if allowed is None else (meta.active & allowed)
            ok[list(ex)] = False
            return np.flatnonzero(ok)

        cand = pick(exclude)
        if len(cand) < k:
            cand = pick(fallback)
        picks = [int(cand[i]) for i in self._rng.sample(range(len(cand)), min(k, len(cand)))]
        rows = self.rows(list({int(i) for p in picks for i in meta.members(p)}), meta)
        out = []
        for p in picks:
            h = self._hit(meta, rows, p, 0.0, None)
            h.wildcard = True
            out.append(h)
        return out
