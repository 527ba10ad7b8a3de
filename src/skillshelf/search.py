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
from . import lexical
from .index import PART_BODY, PART_META, load_vectors
from .store import Store
from .text import COMPOUND_RE, STOPWORDS, trim

MODES = ("find", "brainstorm")
SCOPES = ("all", "current")

# Calibrated on requests-dev.jsonl (bench/calibrate.py): a request counts as served when
# one of the first three hits has cosine >= this value to the query (all-MiniLM-L6-v2 over
# name + description). 0.38 maximises Youden's J (gap requests flagged − good requests
# flagged) on the development set. Other embedding models need their own value
# (search.confident_threshold).
CONFIDENT_COSINE = 0.38


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
    """Per-skill fields needed to filter, collapse and display, indexed by position."""

    rowids: np.ndarray
    pos: dict[int, int]
    ids: list[str]
    names: list[str]
    name_keys: list[str]
    paths: list[str]
    descriptions: list[str]
    display: list[str]
    types: list[str | None]
    repos: list[str | None]
    versions: list[int]
    tags: list[list[str]]
    active: np.ndarray
    expires: list[str | None]
    lineage: list[list[str]]
    precedence: list[tuple]
    by_key: dict[str, list[int]]


def rrf(lists: list[list[int]], weights: list[float], k: int) -> dict[int, float]:
    """Weighted reciprocal rank fusion: score(d) = Σ w_i / (k + rank_i(d)), ranks from 1."""
    fused: dict[int, float] = {}
    for w, lst in zip(weights, lists):
        for rank, p in enumerate(lst, start=1):
            fused[p] = fused.get(p, 0.0) + w / (k + rank)
    return fused


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
        self._has_vec: np.ndarray | None = None   # meta position -> has a metadata vector
        self._mat: np.ndarray | None = None       # metadata vectors (part 0), aligned with meta
        self._bmat: np.ndarray | None = None      # body vectors (part 1), or None when there are none
        self._has_body: np.ndarray | None = None
        self._rng = random.Random()
        self._lex = lexical.LexicalIndex(store, (settings.weight_name, settings.weight_description,
                                                 settings.weight_tags, settings.weight_headings, settings.weight_body))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillshelf-embed")

    # --- caches -----------------------------------------------------------------
    def _ensure_meta(self) -> _Meta:
        gen = self.store.get_meta("generation", "0")
        if self._meta is not None and gen == self._gen:
            return self._meta
        from .sources import precedence_key

        rows = self.store.db.execute(
            "SELECT rowid, id, name, name_key, path, description, display_name, skill_type, repo, version, tags,"
            " active, expires_on, metadata, kind, rel FROM skills ORDER BY rowid").fetchall()
        rowids = np.array([r[0] for r in rows], dtype=np.int64)
        by_key: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            by_key.setdefault(r[3], []).append(i)
        m = _Meta(
            rowids=rowids, pos={int(r[0]): i for i, r in enumerate(rows)}, ids=[r[1] for r in rows],
            names=[r[2] for r in rows], name_keys=[r[3] for r in rows], paths=[r[4] for r in rows],
            descriptions=[r[5] for r in rows], display=[r[6] or r[2] for r in rows], types=[r[7] for r in rows],
            repos=[r[8] for r in rows], versions=[r[9] for r in rows],
            tags=[[t for t in (r[10] or "").split(",") if t] for r in rows],
            active=np.array([bool(r[11]) for r in rows], dtype=bool), expires=[r[12] for r in rows],
            lineage=[_lineage(r[13]) for r in rows],
            precedence=[precedence_key(r[14], r[15], r[1], self._canonical) for r in rows], by_key=by_key)
        self._meta, self._gen = m, gen
        return m

    def _ensure_vectors(self, embedder, meta: _Meta) -> np.ndarray | None:
        """The metadata vectors as a matrix aligned with the meta positions (zero rows: no
        vector); the body vectors are loaded beside it into ``_bmat``."""
        key = (self._gen, embedder.model_id, self.store.get_meta("vectors_generation", "0"))
        if self._mat is not None and self._vec_gen == key:
            return self._mat if self._has_vec.any() else None
        self._mat = self._bmat = None   # free the old matrices before loading the new ones
        full, has = load_vectors(self.store, embedder.model_id, meta.pos, len(meta.rowids), PART_META)
        body, has_body = load_vectors(self.store, embedder.model_id, meta.pos, len(meta.rowids), PART_BODY)
        self._mat, self._has_vec, self._vec_gen = full, has, key
        self._bmat, self._has_body = (body, has_body) if has_body.any() else (None, None)
        return self._mat if has.any() else None

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

    def _embed_and_score(self, embedder, query: str, mat: np.ndarray,
                         bmat: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The query vector and its dot products with both matrices (runs beside the
        lexical list: onnxruntime and BLAS release the GIL)."""
        q = embedder.embed(query)
        return q, mat @ q, (bmat @ q if bmat is not None else None)

    def dense(self, meta_scores: np.ndarray, body_scores: np.ndarray | None, limit: int,
              allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """(meta position, score) best first: each skill scored by the better of its
        metadata and body vectors (max-sim)."""
        if body_scores is not None:
            full = np.where(self._has_body, np.maximum(meta_scores, body_scores), meta_scores)
            full[~(self._has_vec | self._has_body)] = -np.inf
        else:
            full = meta_scores.copy()
            full[~self._has_vec] = -np.inf
        if allowed is not None:
            full[~allowed] = -np.inf
        k = min(limit, len(full))
        if k == 0:
            return []
        top = np.argpartition(-full, k - 1)[:k]
        top = top[np.argsort(-full[top])]
        return [(int(p), float(full[p])) for p in top if full[p] > -np.inf]

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

        # The query embedding + matrix product (onnxruntime, BLAS) and the lexical scoring
        # (SQLite, numpy) mostly release the GIL: run them side by side on the two cores.
        qfuture = None
        mat = bmat = None
        if embedder is not None:
            with self._lock:
                mat = self._ensure_vectors(embedder, meta)
                bmat = self._bmat
            if mat is None:
                degraded = degraded or "no vectors yet for this model: run `skillshelf sync`"
            else:
                qfuture = self._pool.submit(self._embed_and_score, embedder, query, mat, bmat)

        # lexical list (filtered after retrieval: take extra when filters are on)
        lex_raw = self.lexical(query, ncand * (3 if allowed is not None else 1))
        lex = [(meta.pos[r], sc) for r, sc in lex_raw if r in meta.pos]
        if allowed is not None:
            lex = [(p, sc) for p, sc in lex if allowed[p]]
        lex = lex[:ncand]

        dense: list[tuple[int, float]] = []
        qvec = None
        if qfuture is not None:
            try:
                qvec, meta_scores, body_scores = qfuture.result()
            except Exception as exc:  # any backend failure degrades loudly to lexical-only
                degraded = f"embedder failed: {exc}"
        if qvec is not None:
            # Pseudo-relevance feedback (Rocchio): the probe is the query vector plus the
            # mean metadata vector of the top lexical hits, so the dense list searches near
            # what the words matched. Scores are linear in the probe, so the query's own
            # products (computed above, beside the lexical list) are reused and only the
            # feedback part is added; the probe's norm is one factor for every skill and
            # does not change the order.
            top = [p for p, _ in lex[:s.prf_docs] if self._has_vec[p]]
            if s.prf_weight and top:
                fb = s.prf_weight * mat[top].mean(axis=0)
                meta_scores = meta_scores + mat @ fb
                if body_scores is not None:
                    body_scores = body_scores + bmat @ fb
            dense = self.dense(meta_scores, body_scores, ncand, allowed)

        def cos(p: int) -> float | None:
            """Cosine of the user's own query (not the feedback probe): confidence and match."""
            if qvec is None or not self._has_vec[p]:
                return None
            return float(mat[p] @ qvec)

        fused = rrf([[p for p, _ in lex], [p for p, _ in dense]], [s.lexical_weight, s.dense_weight], s.rrf_k)
        if not fused:
            return SearchResult(query, mode, [], False, degraded, latency_ms=(time.perf_counter() - t0) * 1000)

        # collapse copies (same name key): the best-ranked one stands for the group
        order = sorted(fused, key=lambda p: -fused[p])
        groups: dict[str, int] = {}
        reps: list[int] = []
        for p in order:
            k = meta.name_keys[p]
            if k not in groups:
                groups[k] = p
                reps.append(p)

        top = fused[reps[0]]
        rel = {p: fused[p] / top for p in reps}
        if recent:
            for p in reps:
                hits_recent = recent.get(meta.ids[p], 0)
                if hits_recent and not (worked and meta.ids[p] in worked):
                    rel[p] -= s.recency_penalty * hits_recent
        pool = sorted(reps, key=lambda p: -rel[p])[: max(limit * 3, 15)]
        lam = s.mmr_lambda_find if mode == "find" else s.mmr_lambda_brainstorm
        chosen = self._mmr(pool, rel, lam, limit, qvec is not None)

        confident = self._confident(chosen, cos)
        hits = [self._hit(meta, p, rel[p], cos) for p in chosen]
        if mode == "brainstorm" and s.wildcards:
            # "outside the relevant set": not shown and not among the next-best candidates;
            # a small library falls back to "not shown"
            shown = {i for p in chosen for i in meta.by_key.get(meta.name_keys[p], [p])}
            hits.extend(self._wildcards(meta, shown | set(pool[: limit * 2]), shown, allowed, s.wildcards))
        return SearchResult(query, mode, hits, confident, degraded,
                            latency_ms=(time.perf_counter() - t0) * 1000)

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
            mask &= np.array([(r is None or r == "" or r.lower() in (want, "global", "*")) for r in meta.repos])
            filtered = True
        if tags:
            want_tags = {t.strip().lower() for t in tags if t.strip()}
            if want_tags:
                mask &= np.array([bool(want_tags & set(t)) for t in meta.tags])
                filtered = True
        if skill_type:
            st = skill_type.strip().upper()
            from .skill import SKILL_TYPES

            if st not in SKILL_TYPES:
                raise ValidationError(f"unknown skill_type {skill_type!r}", fix=f"use one of {', '.join(SKILL_TYPES)}")
            mask &= np.array([t == st for t in meta.types])
            filtered = True
        return mask if filtered else None

    def _expired_mask(self, meta: _Meta) -> np.ndarray:
        today = _dt.date.today().isoformat()
        cached = getattr(meta, "_expired", None)
        if cached is None or cached[0] != today:
            cached = (today, np.array([bool(e) and e < today for e in meta.expires], dtype=bool))
            meta._expired = cached  # type: ignore[attr-defined]
        return cached[1]

    def _mmr(self, pool: list[int], rel: dict[int, float], lam: float, limit: int, use_vectors: bool) -> list[int]:
        """Maximal marginal relevance over the collapsed pool.

        Relevance is min-max scaled over the pool, and only redundancy counts against a
        candidate: cosine above ``mmr_redundancy_floor`` (near-duplicates under other names).
        Plain MMR on raw cosine pushes down every skill of the right topic, which is what
        cost the_librarian quality (DESIGN.md: 0.522 → 0.485)."""
        if not use_vectors or len(pool) <= 1 or self._mat is None:
            return pool[:limit]
        idx = np.asarray(pool)
        has = self._has_vec[idx]
        vecs = self._mat[idx]
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

    def _hit(self, meta: _Meta, p: int, score: float, cos) -> Hit:
        group = meta.by_key.get(meta.name_keys[p], [p])
        copy_ids = [meta.ids[i] for i in group if i != p]
        same_name = [i for i in group if meta.names[i] == meta.names[p]]
        winner = min(same_name, key=lambda i: meta.precedence[i])
        today = _dt.date.today().isoformat()
        c = cos(p) if cos is not None else None
        likely = c is not None and c >= self._threshold()
        return Hit(
            id=meta.ids[p], name=meta.names[p], path=meta.paths[p], score=round(float(score), 4),
            match="likely" if likely else "weak", description=trim(meta.descriptions[p], self.s.description_chars),
            display_name=meta.display[p], skill_type=meta.types[p], repo=meta.repos[p], version=meta.versions[p],
            tags=meta.tags[p], copies=len(group), copy_ids=copy_ids[:10], active=bool(meta.active[p]),
            expired=bool(meta.expires[p] and meta.expires[p] < today), lineage=meta.lineage[p],
            ref=meta.names[p] if winner == p else meta.ids[p])

    def _wildcards(self, meta: _Meta, exclude: set[int], fallback: set[int], allowed, k: int) -> list[Hit]:
        def pick(ex: set[int]) -> list[int]:
            return [i for i in range(len(meta.rowids)) if i not in ex and meta.active[i]
                    and (allowed is None or allowed[i])]

        cand = pick(exclude)
        if len(cand) < k:
            cand = pick(fallback)
        picks = self._rng.sample(cand, min(k, len(cand)))
        out = []
        for p in picks:
            h = self._hit(meta, p, 0.0, None)
            h.wildcard = True
            out.append(h)
        return out
