"""The query pipeline: lexical ∥ dense → fuse (RRF) → filter → collapse copies →
recency → diversify (MMR) → hits (metadata only).

Its parts, one noun each: the state kept between queries (``search_state``: rebuilt only
when the store's generation changes), ranking after retrieval (``ranking``: fusion, recency,
diversity, confidence), the hits shown (``hits``: which copy of a group, what it says) and
the language of a text (``language``). The names other modules use are importable from here.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import numpy as np

from ..config import SearchConfig
from ..errors import ValidationError
from ..store import Store
from ..text import COMPOUND_RE, STOPWORDS
from ..usage import learning
from . import fusion as ranking, lexical, ranker, vectors
from .fusion import rrf
from .hits import CONFIDENT_COSINE, Hit, Hits, SearchResult
from .language import text_language
from .state import SearchState, Snapshot

__all__ = [
    "CONFIDENT_COSINE",
    "EMPTY_LIBRARY",
    "MODES",
    "SCOPES",
    "Hit",
    "SearchResult",
    "Searcher",
    "rrf",
    "text_language",
]

MODES = ("find", "brainstorm")
SCOPES = ("all", "current")

# What ``degraded`` says when the library has no skills: no request can be served, and that
# is not a gap in a collection (such requests stay out of the gap list).
EMPTY_LIBRARY = ("the library has no skills indexed yet: `skillshelf init` adds three sample skills; add your own"
                 " collection with `skillshelf roots add PATH` and `skillshelf sync`")


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d(a, b)`` (sorted, each value once) without ``np.unique``, whose first call
    imports numpy.ma (~0.05 s of a server's first search)."""
    c = np.sort(np.concatenate((a, b)))
    return c[np.concatenate(([True], c[1:] != c[:-1]))] if len(c) else c


class Searcher:
    def __init__(self, store: Store, settings: SearchConfig, *, embedder_provider, canonical: list[str]):
        self.store = store
        self._embedder_provider = embedder_provider   # () -> (embedder | None, reason | None)
        self._lock = threading.Lock()
        self._rng = random.Random()
        self.state = SearchState(store, settings)
        self._hits = Hits(settings, canonical)
        self.s = settings
        self._lex = lexical.LexicalIndex(store, (settings.weight_name, settings.weight_description,
                                                 settings.weight_tags, settings.weight_headings, settings.weight_body))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillshelf-embed")
        self.learner = learning.Learner(store)
        self.ranker = ranker.bundled()
        # called with each search's candidates and their features (bench/ranker.py fits on them)
        self.observe = None

    @property
    def s(self) -> SearchConfig:
        """The search settings (replacing them reaches every part of the search)."""
        return self._settings

    @s.setter
    def s(self, settings: SearchConfig) -> None:
        self._settings = self.state.s = self._hits.s = settings

    # --- the state between queries ---------------------------------------------------
    def _ensure_meta(self) -> Snapshot:
        """The snapshot of the current index generation (callers hold no lock: the
        pipeline takes ``_lock`` around it)."""
        return self.state.snapshot()

    def _ensure_vectors(self, embedder, meta: Snapshot) -> vectors.ExactIndex | None:
        """The metadata vector index aligned with ``meta`` (None: no vectors yet); the body
        vector index is loaded beside it (``state.bindex``)."""
        return self.state.vectors(embedder, meta)

    def rows(self, positions: list[int], meta: Snapshot | None = None) -> dict[int, Any]:
        """The display columns of the skills at these positions of ``meta`` (default: the
        current snapshot), by position."""
        return self.state.rows(positions, meta)

    # the state's parts under their earlier names (tests and benchmarks read and reset them)
    _meta = property(lambda self: self.state.meta, lambda self, v: setattr(self.state, "meta", v))
    _gen = property(lambda self: self.state.gen)
    _vindex = property(lambda self: self.state.vindex, lambda self, v: setattr(self.state, "vindex", v))
    _bindex = property(lambda self: self.state.bindex, lambda self, v: setattr(self.state, "bindex", v))
    _vec_gen = property(lambda self: self.state.vec_gen, lambda self, v: setattr(self.state, "vec_gen", v))

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
    @staticmethod
    def _plain_terms(query: str) -> list[str]:
        # Numbers ("1.4 GB", "30%", "2pm") say nothing about which skill fits; identifiers
        # that contain digits ("e164", "v2", "s3") are kept.
        toks = [t for t in dict.fromkeys(lexical.terms(query)) if not t.isdigit()]
        return toks or list(dict.fromkeys(lexical.terms(query, keep_stopwords=True)))

    def _query_terms(self, query: str) -> list[str]:
        toks = self._plain_terms(query)
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

    def lexical(self, query: str, limit: int, gen: str | None = None) -> list[tuple[int, float]]:
        """(skill rowid, BM25F score) best first; ``gen``: the index generation the caller's
        snapshot was read at (not read again when the lexical state is of it)."""
        return self._lex.search(self._query_terms(query), limit, gen=gen)

    def dense(self, probe: np.ndarray, limit: int, allowed: np.ndarray | None,
              vi: vectors.ExactIndex | None = None, bi: vectors.ExactIndex | None = None) -> list[tuple[int, float]]:
        """(meta position, score) best first: each skill scored by the better of its
        metadata and body vectors (max-sim). Exact from the two indexes' top lists: a
        skill in the top ``limit`` by its better score is in the top ``limit`` of the
        index that gives it that score."""
        if vi is None:
            vi, bi = self.state.vindex, self.state.bindex
        assert vi is not None, "a dense search needs the loaded vector index"
        # the two top-k searches run side by side (numpy and faiss release the GIL): at
        # 100k skills each takes ~1.7 ms in faiss' 8-bit index
        body = self._pool.submit(bi.top, probe, limit, allowed) if bi is not None else None
        pos, _ = vi.top(probe, limit, allowed)
        cand = pos if body is None else _union(pos, body.result()[0])
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
               recent: dict[str, int] | Callable[[Any], dict[str, int]] | None = None, worked=None,
               exclude: frozenset[str] | None = None, query_vector: np.ndarray | None = None) -> SearchResult:
        """``exclude``: skill ids never returned (held back from agents), left out before
        ranking so the limit still fills (pass the same set object while it is unchanged: its
        filter is cached by it). ``recent``: skill id -> appearances in the recent requests the anti-repeat policy
        counts (the caller leaves repeats of this request out); ``worked``: a set of skill
        ids, or a function from skill ids to those whose latest outcome worked -- a group
        with such a copy is exempt from the penalty. ``query_vector``: the query's embedding,
        computed beforehand by the same embedder (a batch of eval queries), used instead of
        embedding it here."""
        t0 = time.perf_counter()
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("the query is empty", fix="describe the task in a few words")
        if mode not in MODES:
            raise ValidationError(f"unknown mode {mode!r}", fix="use 'find' or 'brainstorm'")
        if repo_scope not in SCOPES:
            raise ValidationError(f"unknown repo_scope {repo_scope!r}", fix="use 'all' or 'current'")
        if not 1 <= int(limit) <= 100:
            raise ValidationError(f"limit {limit} is out of range", fix="use a limit from 1 to 100")
        query = query.strip()
        if len(query) > 2000:
            cut = query[:2000]
            if not query[2000].isspace():   # a cut word would count as a rare word no skill holds: drop it
                parts = cut.rsplit(None, 1)
                cut = parts[0] if len(parts) == 2 else cut
            query = cut.rstrip()
        with self._lock:
            meta = self._ensure_meta()
        n = len(meta.rowids)
        if n == 0:
            # Nothing can match: not a gap in a collection. Saying so (``degraded``) also keeps
            # the request out of the gap list, and tells a new user what to do.
            return SearchResult(query, mode, [], False, EMPTY_LIBRARY, latency_ms=(time.perf_counter() - t0) * 1000)

        allowed = self.state.allowed(meta, repo_scope, current_repo, tags, skill_type, include_inactive,
                                     include_expired, exclude)
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
                bi = self.state.bindex
            if vi is None:
                degraded = degraded or "no vectors yet for this model: run `skillshelf sync`"
            elif query_vector is None:
                qfuture = self._pool.submit(embedder.embed, query)

        # lexical list (filtered after retrieval: take extra when filters are on)
        lex_raw = self.lexical(query, ncand * (3 if allowed is not None else 1), meta.gen)
        lex_pos = meta.positions([r for r, _ in lex_raw])
        lex = [(int(p), sc) for p, (_, sc) in zip(lex_pos, lex_raw) if p >= 0]
        if allowed is not None:
            lex = [(p, sc) for p, sc in lex if allowed[p]]
        lex = lex[:ncand]

        dense: list[tuple[int, float]] = []
        qvec = query_vector if vi is not None else None
        if qfuture is not None:
            try:
                qvec = qfuture.result()
            except Exception as exc:  # any backend failure degrades loudly to lexical-only
                degraded = f"embedder failed: {exc}"
        if qvec is not None:
            assert vi is not None   # a query vector is only taken or computed with the index
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

        # The ranker scores every candidate from the signals both lists and the index give
        # (ranker.py): P(the skill is useful for the request).
        terms = self._plain_terms(query)[:64]   # as many as the lexical list weighs
        cands = sorted(fused, key=lambda p: -fused[p])
        # the best s.ranked by fused rank, and more while they hold fewer distinct skills (copies
        # collapse into one hit) than the pool diversity picks from needs
        keep = min(len(cands), s.ranked)
        seen = set(meta.group[cands[:keep]].tolist())
        while keep < len(cands) and len(seen) < max(limit * 3, 15):
            seen.add(int(meta.group[cands[keep]]))
            keep += 1
        cands = cands[:keep]
        feats = self._features(meta, cands, fused, lex, dense, qvec, vi, bi, terms, cos_cache)
        prob = dict(zip(cands, self.ranker.probability(feats).tolist()))
        if self.observe is not None:
            self.observe(query, meta, cands, feats)

        # collapse copies (same name key): the best-scored one stands for the group
        order = sorted(cands, key=lambda p: -prob[p])
        groups: dict[int, int] = {}
        reps: list[int] = []
        for p in order:
            k = int(meta.group[p])
            if k not in groups:
                groups[k] = p
                reps.append(p)

        best_prob = prob[reps[0]] or 1.0
        rel = {p: prob[p] / best_prob for p in reps}
        if callable(recent):
            recent = recent(qvec)
        for g, times in ranking.recent_groups(meta, recent, worked, self.state.reads.copies, groups).items():
            rep = groups.get(g)
            if rep is not None:
                rel[rep] -= s.recency_penalty * times
        # Outcomes of similar earlier requests shift the candidates retrieval found (never
        # add one): bounded, decaying, capped per client (learning.py).
        evidence: dict[int, learning.Evidence] = {}
        if s.learn_from_outcomes and qvec is not None:
            found = self.learner.evidence(qvec, embedder.model_id, s)
            if found:
                # places are counted among the hits an agent would see above it: those related
                # in meaning (an unrelated one, cosine <= 0, is listed after them, see below)
                ordered = sorted(reps, key=lambda p: -rel[p])
                related = [p for p in ordered if not ((c := cos(p)) is not None and c <= 0.0)]
                lines = {p: related for p in related}
                place = {p: i for i, p in enumerate(related)}
                for i, p in enumerate(ordered):
                    if p not in place:
                        lines[p], place[p] = ordered, i
                before = dict(rel)
                for (rid, ev), pp in zip(found.items(), meta.positions(list(found))):
                    got = groups.get(int(meta.group[pp])) if pp >= 0 else None
                    if got is None:
                        continue
                    p = got
                    evidence[p] = ev
                    # Outcomes move a hit by places among its neighbours, whatever the
                    # ranker's scale of scores, and never outside the plain range of scores
                    # (diversity scales relevance by that range). One client is a hint: a
                    # promotion passes at most learning_max_lift hits for one client that
                    # reported it working, however many reports it sends (it cannot lift a
                    # skill over a much better match); clients that agree compound: n of them
                    # pass up to learning_max_lift x n^2 (3, 12, 27). A demotion falls the same
                    # way per client that reported it failing. Weaker evidence (older, from
                    # less similar requests, not agreed) moves it less: in proportion to its
                    # shift, full at learning_weight.
                    i, plain = place[p], lines[p]
                    strength = min(1.0, abs(ev.shift) / (s.learning_weight or 1.0))
                    if ev.shift > 0:
                        m = min(i, round(s.learning_max_lift * max(1, ev.promoters) ** 2 * strength))
                        ev.moved, ev.room = m, i
                        if m:
                            rel[p] = before[plain[i - m]] + 1e-9 * (1.0 + ev.shift)
                    elif ev.shift < 0:
                        m = min(len(plain) - 1 - i, round(s.learning_max_lift * max(1, ev.demoters) ** 2 * strength))
                        ev.moved, ev.room = -m, len(plain) - 1 - i
                        if m:
                            rel[p] = before[plain[i + m]] - 1e-9 * (1.0 - ev.shift)
        pool = sorted(reps, key=lambda p: -rel[p])[: max(limit * 3, 15)]
        lam = s.mmr_lambda_find if mode == "find" else s.mmr_lambda_brainstorm
        # brainstorm's wildcards are part of the limit, never on top of it; the relevant hits
        # keep the majority (limit 5: 3 + 2; limit 3: 2 + 1; limit 1 or 2: no wildcard)
        n_wild = min(s.wildcards, (limit - 1) // 2) if mode == "brainstorm" else 0
        # Diversity works among the candidates related to the request: one whose meaning is
        # unrelated (cosine <= 0: retrieval reached it through a shared common word, as in a
        # small library where every skill is a candidate) never passes a related one because
        # the related one resembles a hit already chosen (a near-copy under another name).
        unrelated = [p for p in pool if (c := cos(p)) is not None and c <= 0.0]   # no vector: not known
        related = [p for p in pool if p not in unrelated] if unrelated else pool
        stood_in: dict[int, int] = {}    # a near-duplicate left out -> the hit that stands for it
        chosen = ranking.mmr(related, rel, lam, limit - n_wild, vi if qvec is not None else None,
                             s.mmr_redundancy_floor, stood_in)
        chosen += unrelated[: max(0, limit - n_wild - len(chosen))]

        # one read for the shown hits and their copies (each hit names its copies and the
        # copy a lookup by name would return), and the near-duplicates they stand for
        rows = self.rows(list({int(i) for p in chosen for i in meta.members(p)} | set(chosen) | set(stood_in)), meta)
        # a skill another process removed after this snapshot was taken has no row: it is
        # not shown (the next search reads the new generation)
        chosen = [p for p in chosen if p in rows]
        qlang = text_language(query)
        as_copy = [self._hits.shown_copy(meta, rows, p, qlang, allowed, prob, (vi, bi)) for p in chosen]
        hits = [self._hits.hit(meta, rows, p, q, cos) for p, q in zip(chosen, as_copy)]
        # how many words the request has, a repeated one each time (a short request needs more meaning)
        words = sum(1 for t in lexical.terms(query) if not t.isdigit())
        at = {p: i for i, p in enumerate(cands)}
        # (the features of the copy shown, when it was a candidate: its words may differ)
        match_rows, best = self._weigh(hits, feats[[at.get(q, at[p]) for p, q in zip(chosen, as_copy)]], words)
        for h, p in zip(hits, chosen):
            if p in evidence:
                h.learned = evidence[p].why()
                h.why = "; ".join(w for w in (h.why, h.learned) if w)
            twins = [rows[t] for t, by in stood_in.items() if by == p and t in rows]
            if twins:
                h.stands_for = [t["id"] for t in twins]
                them = ", ".join(t["name"] for t in twins)
                h.why = "; ".join(w for w in (h.why, f"stands for its near-duplicate {them} (left out as redundant)")
                                  if w)
        # served when one of the first three hits is a likely match (the label an agent sees);
        # outcomes of similar requests overrule the ranker: a hit reported working for them is
        # likely, one reported failing is weak (its ``learned`` says why), so the label and
        # ``confident`` never disagree
        for h, p in zip(hits, chosen):
            said = evidence.get(p)
            if said is not None and said.shift:
                h.match = "likely" if said.shift > 0 else "weak"
        confident = any(h.match == "likely" for h in hits[:3])
        signals = {"first3": match_rows[:3]}
        if n_wild:
            # "outside the relevant set": not shown and not among the next-best candidates;
            # a small library falls back to "not shown"
            shown = {int(i) for p in chosen for i in meta.members(p)}
            hits.extend(self._wildcards(meta, shown | set(pool[: limit * 2]), shown, allowed, n_wild, cos, qlang,
                                        terms, qvec, vi, bi, words, best))
        return SearchResult(query, mode, hits, confident, degraded,
                            latency_ms=(time.perf_counter() - t0) * 1000, request_vector=qvec, signals=signals)

    def _features(self, meta: Snapshot, cands: list[int], fused: dict[int, float], lex: list[tuple[int, float]],
                  dense: list[tuple[int, float]], qvec, vi, bi, terms: list[str],
                  cos_cache: dict[int, float | None]) -> np.ndarray:
        """The ranker's feature rows of the candidates at positions ``cands`` (``ranker.features``);
        fills ``cos_cache`` (position -> the request's best cosine to the skill) on the way."""
        idx = np.asarray(cands, dtype=np.int64)
        order = np.argsort(idx, kind="stable")
        srt = idx[order]

        def ranked(lst: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
            """The list's ranks (from 1; 0 where absent) and scores / its best, per candidate."""
            rank, score = np.zeros(len(idx)), np.zeros(len(idx))
            if lst:
                pos = np.fromiter((p for p, _ in lst), dtype=np.int64, count=len(lst))
                sc = np.fromiter((v for _, v in lst), dtype=np.float64, count=len(lst))
                at = np.minimum(np.searchsorted(srt, pos), len(srt) - 1)
                ok = srt[at] == pos
                where = order[at[ok]]
                rank[where] = np.flatnonzero(ok) + 1
                score[where] = sc[ok] / (sc[0] if sc[0] > 0 else 1.0)
            return rank, score

        lex_rank, lex_score = ranked(lex)
        dense_rank, dense_score = ranked(dense)
        sims = []
        for ix in (vi, bi):
            c = np.full(len(idx), np.nan)
            if qvec is not None and ix is not None:
                h = ix.has[idx]
                if h.any():
                    c[h] = ix.dot(idx[h], qvec)
            sims.append(c)
        best = np.fmax(sims[0], sims[1])
        cos_cache.update(zip(cands, cast(np.ndarray, np.where(np.isnan(best), None, best)).tolist()))   # NaN: no vector
        matches = self._lex.field_matches(terms, meta.rowids[idx], gen=meta.gen)
        copies = meta.group_start[meta.group[idx] + 1] - meta.group_start[meta.group[idx]]
        rrf_share = np.fromiter((fused.get(p, 0.0) for p in cands), dtype=np.float64, count=len(cands))
        rrf_share /= (max(fused.values(), default=0.0) or 1.0)
        return ranker.features(rrf=rrf_share, lex_rank=lex_rank, lex_score=lex_score, dense_rank=dense_rank,
                               dense_score=dense_score, cos_meta=sims[0],
                               cos_body=sims[1], matches=matches, copies=copies)

    def _weigh(self, hits: list[Hit], feats, words: int,
               best: float | None = None) -> tuple[list[list[float]], float]:
        """Set each hit's ``match`` and ``why``. ``likely``: the likely-match model
        (``confidence.py``, its weights in the ranker's file) over the hit's score (cosine),
        the share of the request's rare words it holds and the request's length reaches its
        cut, the score reaches the floor for a request of ``words`` words (a one-word request
        needs more meaning than words) and the ranker does not rate the hit itself unlikely to
        be useful (``ranker.Model.useful``) nor far below the request's best likely hit (``best``,
        its probability; None: the best of these; ``ranker.Model.near``); when the request cannot be
        checked word by word (CJK, Thai ...), the score (``CONFIDENT_COSINE``) and the ranker decide; with
        ``search.confident_threshold`` set (another embedding model), the score alone against
        that. Returns each hit's row of the likely-match features, and the best likely hit's probability."""
        cut = self.s.confident_threshold
        x = np.asarray(feats, dtype=np.float64).reshape(len(hits), len(ranker.FEATURES))
        score = np.asarray([h.score for h in hits], dtype=np.float64)
        cover, nowords, nterms = (ranker.FEATURES.index(f) for f in ("cover", "no_words", "request_terms"))
        rows = np.column_stack([score, x[:, cover], score * x[:, cover], x[:, nterms]])
        useful = self.ranker.probability(x) if len(x) else score
        if cut:
            likely = score >= cut
        else:
            likely = np.where(x[:, nowords] > 0, (score >= CONFIDENT_COSINE) & (useful >= self.ranker.useful),
                              self.ranker.likely_matches(rows, words, useful))
            best = float(useful[likely].max(initial=0.0)) if best is None else best
            likely &= self.ranker.near_best(useful, best)
        best = float(useful[likely].max(initial=0.0)) if best is None else best
        for h, lk, why in zip(hits, likely.tolist(), self.ranker.whys(x)):
            h.match = "likely" if lk and h.score > 0 else "weak"
            h.why = why or None
        return rows.tolist(), best

    def _threshold(self) -> float:
        return self._hits.threshold()

    def _wildcards(self, meta: Snapshot, exclude: set[int], fallback: set[int], allowed, k: int, cos,
                   qlang: str, terms: list[str], qvec, vi, bi, words: int, best: float | None = None) -> list[Hit]:
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
        picks = [p for p in picks if p in rows]
        as_copy = [self._hits.shown_copy(meta, rows, p, qlang, allowed) for p in picks]
        for p, q in zip(picks, as_copy):
            h = self._hits.hit(meta, rows, p, q, cos)
            h.wildcard = True
            out.append(h)
        if picks:
            feats = self._features(meta, as_copy, {}, [], [], qvec, vi, bi, terms, {})
            self._weigh(out, feats, words, best)    # (likely only near the relevant hits' best)
        return out
