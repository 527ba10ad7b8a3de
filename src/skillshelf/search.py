"""The query pipeline: lexical ∥ dense → fuse (RRF) → filter → collapse copies →
recency → diversify (MMR) → hits (metadata only).

State kept between queries (rebuilt only when the store's generation changes): the
metadata of every skill needed for filtering and display, and the dense matrix.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .config import SearchConfig
from .errors import ValidationError
from . import confidence, learning, lexical, vectors
from .index import PART_BODY, PART_META
from .store import Store
from .store.meta import IndexMeta
from .store.skills import SearchReads
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

# What ``degraded`` says when the library has no skills: no request can be served, and that
# is not a gap in a collection (such requests stay out of the gap list).
EMPTY_LIBRARY = ("the library has no skills indexed yet: `skillshelf init` adds three sample skills; add your own"
                 " collection with `skillshelf roots add PATH` and `skillshelf sync`")

# Which copy of a group of copies (same name) a hit shows, among the copies in the request's
# language: "same" -- the best-ranked one, or the original (the copy a lookup by name returns)
# when it holds the same text; "ranked" -- the best-ranked one; "original" -- the original
# whatever its text; "off" -- the best-ranked copy in any language (the rule before). Only
# "same" is meant for use: the others are kept so bench/quality.py can measure them
# (BENCHMARKS.md, "Search results").
SHOW_COPY = "same"
# Two copies with this cosine (metadata or body vectors) hold the same text: mirrors of one
# skill, shown as the original. The value is the library's near-duplicate threshold.
COPY_COSINE = 0.85


# --- the language of a text: which copy of a group to show ----------------------------
# Translated copies of a skill (docs/ja-JP/skills/x, docs/tr/skills/x, ...) collapse into one
# hit; the copy shown should be one the requester can read. A cheap guess is enough: the
# script of the letters (a text whose letters are mostly CJK, Hangul, Cyrillic ... is in that
# script's language), and for Latin script a vote of a few frequent function words per
# language. English is the default: short technical texts ("docker multi-stage build")
# carry no function words at all, and agents ask in English unless told otherwise.
_SCRIPTS = (("ja", "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"),          # kana (Japanese also uses Han)
            ("ko", "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"),          # Hangul
            ("zh", "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"),          # Han
            ("ru", "\u0400-\u04ff"), ("el", "\u0370-\u03ff"), ("ar", "\u0600-\u06ff"),
            ("he", "\u0590-\u05ff"), ("th", "\u0e00-\u0e7f"), ("hi", "\u0900-\u097f"))
_SCRIPT_RES = tuple((code, re.compile(f"[{chars}]")) for code, chars in _SCRIPTS)
_LATIN_RE = re.compile("[A-Za-z\u00c0-\u024f]")
_WORDS_RE = re.compile(r"[^\W\d_]{2,}")
# Words of two letters or more that are frequent in one language and rare in English
# technical prose: single letters (Italian "e", Spanish "y") and words that are also
# English or jargon ("do", "os", "com", "em", "es", "per", "mit", "di") are left out.
_FUNCTION_WORDS = {
    "en": "the and for with to of in is this that when use from your or on by are how not be it an as at can".split(),
    "tr": "ve için ile bir bu olan veya gibi nasıl çok daha değil zaman olarak tüm her kullanın".split(),
    "es": "el la los las en con para una del por cuando como cómo que se su".split(),
    "pt": "para uma da não quando como que ao seu são".split(),
    "de": "der das und für ist ein eine zu von nicht wenn auf dem oder wie".split(),
    "fr": "le la les et en pour avec des une est dans que quand sur aux ou".split(),
    "it": "il la gli con che una quando sono della delle".split(),
}
_WORD_LANG: dict[str, list[str]] = {}
for _code, _words in _FUNCTION_WORDS.items():
    for _w in _words:
        _WORD_LANG.setdefault(_w, []).append(_code)
_TURKISH_LETTERS = re.compile("[ğış]")


def text_language(text: str) -> str:
    """A guess at the language of ``text``: an ISO 639-1 code, "en" when nothing says
    otherwise. Scripts first: CJK, Hangul and other non-Latin letters making up at least
    a third of the text's letters (a CJK character or Hangul syllable counted as two)
    decide it; kana among Han characters mean Japanese. Then, for Latin script, the language
    whose function words occur most, if it beats English with at least two of them."""
    text = text or ""
    counts = {code: len(rx.findall(text)) for code, rx in _SCRIPT_RES}
    # one CJK character (or Hangul syllable) carries about as much as two Latin letters
    weighted = sum(n * (2 if code in ("ja", "ko", "zh") else 1) for code, n in counts.items())
    if weighted and 2 * weighted >= len(_LATIN_RE.findall(text)):
        if counts["ja"] and counts["ja"] >= 0.1 * (counts["ja"] + counts["zh"]):
            return "ja"
        return max(counts, key=lambda c: counts[c])
    votes: dict[str, int] = {}
    for w in _WORDS_RE.findall(text.lower()):
        for code in _WORD_LANG.get(w, ()):
            votes[code] = votes.get(code, 0) + 1
        if _TURKISH_LETTERS.search(w):
            votes["tr"] = votes.get("tr", 0) + 1
    en = votes.pop("en", 0)
    if votes:
        code, n = max(votes.items(), key=lambda kv: kv[1])
        if n >= 2 and n > en:
            return code
    return "en"


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
    why: str | None = None          # what outcomes of similar requests did to its rank, if anything

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
    # the request's vector (not serialised): a report on this request is learned with it
    request_vector: Any = field(default=None, repr=False, compare=False)
    # what the confidence flag was decided from (not serialised; bench/confidence.py)
    signals: dict = field(default_factory=dict, repr=False, compare=False)

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
        self._langs: dict[tuple, tuple[str, str]] = {}   # (rowid, content hash) -> languages
        self._reads = SearchReads(store)
        self._index_meta = IndexMeta(store)
        self._lex = lexical.LexicalIndex(store, (settings.weight_name, settings.weight_description,
                                                 settings.weight_tags, settings.weight_headings, settings.weight_body))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillshelf-embed")
        self.learner = learning.Learner(store)

    # --- caches -----------------------------------------------------------------
    def _ensure_meta(self) -> _Meta:
        gen = self._index_meta.generation()
        if self._meta is not None and gen == self._gen:
            return self._meta
        rows = sorted(self._reads.state())   # by rowid: positions are in rowid order
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

    def _sql_mask(self, meta: _Meta, key: tuple, select) -> np.ndarray:
        """Positions of the rowids ``select()`` returns (a read of the store), cached for
        this index generation."""
        cached = self._masks.get(key)
        if cached is not None:
            return cached
        ids = select()
        mask = np.zeros(len(meta.rowids), dtype=bool)
        pos = meta.positions(ids)
        mask[pos[pos >= 0]] = True
        if len(self._masks) > 64:
            self._masks.clear()
        self._masks[key] = mask
        return mask

    def rows(self, positions: list[int], meta: _Meta | None = None) -> dict[int, Any]:
        """The skills rows (``store.skills.HIT_COLUMNS``, as dicts) at these positions of
        ``meta`` (default: the current snapshot), by position."""
        meta = meta or self._meta
        found = self._reads.hit_rows([int(meta.rowids[p]) for p in positions])
        out: dict[int, Any] = {}
        for r, p in zip(found, meta.positions([r["rowid"] for r in found])):
            if p >= 0:
                out[int(p)] = r
        return out

    def _ensure_vectors(self, embedder, meta: _Meta) -> vectors.ExactIndex | None:
        """The metadata vector index aligned with the meta positions (None: no vectors yet);
        the body vector index is loaded beside it into ``_bindex``."""
        # keyed by the snapshot the vectors are aligned with, not by whatever is current
        key = (meta.gen, embedder.model_id, self._index_meta.vectors_generation())
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
               recent: dict[str, int] | None = None, worked=None) -> SearchResult:
        """``recent``: skill id -> appearances in the recent requests the anti-repeat policy
        counts (the caller leaves repeats of this request out); ``worked``: a set of skill
        ids, or a function from skill ids to those whose latest outcome worked -- a group
        with such a copy is exempt from the penalty."""
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

        def cos_all(ps: list[int]) -> None:
            """``cos`` of many positions in one product per index (not one call each)."""
            need = np.asarray([p for p in ps if p not in cos_cache], dtype=np.int64)
            if qvec is None or not len(need):
                return
            best = np.full(len(need), -np.inf)
            for ix in (vi, bi):
                if ix is not None:
                    h = ix.has[need]
                    if h.any():
                        best[h] = np.maximum(best[h], ix.dot(need[h], qvec))
            for p, b in zip(need.tolist(), best.tolist()):
                cos_cache[p] = None if b == -np.inf else b

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
        for g, times in self._recent_groups(meta, recent, worked).items():
            p = groups.get(g)
            if p is not None:
                rel[p] -= s.recency_penalty * times
        # Outcomes of similar earlier requests shift the candidates retrieval found (never
        # add one): bounded, decaying, capped per client (learning.py).
        evidence: dict[int, learning.Evidence] = {}
        if s.learn_from_outcomes and qvec is not None:
            found = self.learner.evidence(qvec, embedder.model_id, s)
            if found:
                plain = sorted(reps, key=lambda p: -rel[p])
                place = {p: i for i, p in enumerate(plain)}
                before = dict(rel)
                for (rid, ev), pp in zip(found.items(), meta.positions(list(found))):
                    p = groups.get(int(meta.group[pp])) if pp >= 0 else None
                    if p is not None:
                        rel[p] += ev.shift
                        evidence[p] = ev
                        # a promotion passes at most learning_max_lift hits per client that
                        # reported it working: one client cannot lift a skill over a much
                        # better match, however many reports it sends
                        k = s.learning_max_lift * max(1, ev.promoters)
                        if ev.shift > 0 and place[p] > k:
                            rel[p] = max(before[p], min(rel[p], before[plain[place[p] - k]] - 1e-9))
        pool = sorted(reps, key=lambda p: -rel[p])[: max(limit * 3, 15)]
        lam = s.mmr_lambda_find if mode == "find" else s.mmr_lambda_brainstorm
        # brainstorm's wildcards are part of the limit, never on top of it; the relevant hits
        # keep the majority (limit 5: 3 + 2; limit 3: 2 + 1; limit 1 or 2: no wildcard)
        n_wild = min(s.wildcards, (limit - 1) // 2) if mode == "brainstorm" else 0
        # Diversity works among the candidates related to the request: one whose meaning is
        # unrelated (cosine <= 0: retrieval reached it through a shared common word, as in a
        # small library where every skill is a candidate) never passes a related one because
        # the related one resembles a hit already chosen (a near-copy under another name).
        cos_all(pool)
        unrelated = [p for p in pool if (c := cos(p)) is not None and c <= 0.0]   # no vector: not known
        related = [p for p in pool if p not in unrelated] if unrelated else pool
        chosen = self._mmr(related, rel, lam, limit - n_wild, vi if qvec is not None else None)
        chosen += unrelated[: max(0, limit - n_wild - len(chosen))]

        # one read for the shown hits and their copies (each hit names its copies and the
        # copy a lookup by name would return)
        rows = self.rows(list({int(i) for p in chosen for i in meta.members(p)} | set(chosen)), meta)
        # a skill another process removed after this snapshot was taken has no row: it is
        # not shown (the next search reads the new generation)
        chosen = [p for p in chosen if p in rows]
        qlang = text_language(query)
        as_copy = [self._shown_copy(meta, rows, p, qlang, allowed, fused, (vi, bi)) for p in chosen]
        hits = [self._hit(meta, rows, p, q, cos) for p, q in zip(chosen, as_copy)]
        terms = self._plain_terms(query)[:64]   # as many as the lexical list weighs
        covers = self._weigh_matches(hits, as_copy, meta, terms)
        for h, p in zip(hits, chosen):
            if p in evidence:
                h.why = evidence[p].why()
        # served when one of the first three hits is a likely match (the score an agent sees);
        # outcomes of similar requests overrule the cosine: a hit reported working for them
        # counts as likely, one reported failing does not
        def serves(h: Hit, p: int) -> bool:
            ev = evidence.get(p)
            if ev is not None and ev.shift:
                return ev.shift > 0
            return h.match == "likely"

        confident = any(serves(h, p) for h, p in zip(hits[:3], chosen[:3]))
        signals = self._signals(hits, covers)
        if n_wild:
            # "outside the relevant set": not shown and not among the next-best candidates;
            # a small library falls back to "not shown"
            shown = {int(i) for p in chosen for i in meta.members(p)}
            hits.extend(self._wildcards(meta, shown | set(pool[: limit * 2]), shown, allowed, n_wild, cos, qlang,
                                        terms))
        return SearchResult(query, mode, hits, confident, degraded,
                            latency_ms=(time.perf_counter() - t0) * 1000, request_vector=qvec, signals=signals)

    def _weigh_matches(self, hits: list[Hit], shown: list[int], meta: _Meta, terms: list[str]) -> list[float]:
        """Set each hit's ``match``: ``likely`` when the match probability of its score and
        of the share of the request's rare words it holds (``confidence.py``) reaches the
        threshold; with ``search.confident_threshold`` set (another embedding model), when
        its score alone reaches that. Returns each hit's share of the rare words."""
        if not hits:
            return []
        if self.s.confident_threshold or all(h.score <= 0 for h in hits):
            # the cosine alone decides (or nothing can be likely): no coverage to compute
            for h in hits:
                h.match = "likely" if self.s.confident_threshold and h.score >= self.s.confident_threshold else "weak"
            return [0.0] * len(hits)
        covers = self._lex.coverage(terms, [int(meta.rowids[q]) for q in shown])
        for h, c in zip(hits, covers):
            if c is None:   # the request's words cannot be looked for (scripts without spaces): the cosine rule
                likely = h.score >= CONFIDENT_COSINE
            else:
                # the words alone never make a match: a skill that holds a one-word request's word
                # somewhere in its body is not a match for it without some of its meaning
                likely = h.score >= confidence.COSINE_FLOOR and \
                    confidence.probability({"cos": h.score, "cover": c}) >= confidence.THRESHOLD
            h.match = "likely" if likely and h.score > 0 else "weak"
        return [0.0 if c is None else c for c in covers]

    @staticmethod
    def _signals(hits: list[Hit], covers: list[float]) -> dict[str, Any]:
        """What the confidence flag was decided from, for bench/confidence.py: the best score
        and rare-word share of the first three hits, and both per hit."""
        if not hits:
            return {}
        return {"cos": max(h.score for h in hits[:3]), "cover": max(covers[:3]),
                "first3": [(h.score, c) for h, c in zip(hits[:3], covers[:3])]}

    def _recent_groups(self, meta: _Meta, recent: dict[str, int] | None, worked) -> dict[int, int]:
        """Copy group -> recent appearances of any of its copies, for the groups none of
        whose copies was last reported as worked (``worked``: skill ids -> those of them
        whose latest outcome worked). Groups, not ids: the copy shown for a group can
        change between requests (language, filters), and an outcome is reported against
        the copy a name resolves to."""
        if not recent:
            return {}
        copies: dict[str, int] = {}        # skill id -> group, for every copy of a recent group
        found = self._reads.copies(list(recent))
        for (_, sid), p in zip(found, meta.positions([r[0] for r in found])):
            if p >= 0:
                copies[sid] = int(meta.group[p])
        out: dict[int, int] = {}
        for sid, g in copies.items():
            if sid in recent:
                out[g] = out.get(g, 0) + recent[sid]
        if out and worked is not None:
            done = worked(list(copies)) if callable(worked) else set(worked) & set(copies)
            for sid in done:
                out.pop(copies[sid], None)
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
            mask &= self._sql_mask(meta, ("repo", want), lambda: self._reads.rowids_for_repo(want))
            filtered = True
        if tags:
            want_tags = {t.strip().lower() for t in tags if t.strip()}
            if want_tags:
                mask &= self._sql_mask(meta, ("tags", *sorted(want_tags)), lambda: [
                    rid for rid, tags in self._reads.tags() if want_tags & set(tags.split(","))])
                filtered = True
        if skill_type:
            st = skill_type.strip().upper()
            from .skill import SKILL_TYPES

            if st not in SKILL_TYPES:
                raise ValidationError(f"unknown skill_type {skill_type!r}", fix=f"use one of {', '.join(SKILL_TYPES)}")
            mask &= self._sql_mask(meta, ("type", st), lambda: self._reads.rowids_of_type(st))
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

    def _language(self, row) -> tuple[str, str]:
        """(language of the description, language of the body's opening) of a skills row."""
        key = (row["rowid"], row["content_hash"])
        got = self._langs.get(key)
        if got is None:
            got = (text_language(row["description"]) if (row["description"] or "").strip() else "",
                   text_language(row["opening"]) if (row["opening"] or "").strip() else "")
            if len(self._langs) > 50_000:
                self._langs.clear()
            self._langs[key] = got
        return got

    def _shown_copy(self, meta: _Meta, rows: dict[int, Any], p: int, qlang: str, allowed,
                    fused: dict[int, float] | None = None, vecs: tuple = ()) -> int:
        """The copy of ``p``'s group to show. Only copies in the request's language compete
        (both description and body opening in it when such a copy exists, else one of
        them); ``p`` itself when none is. Among them the best-ranked one, or, when other
        copies have the same text (cosine >= ``COPY_COSINE`` by metadata or body vector:
        mirrors of one skill, not different skills that share a name), the one a lookup by
        name returns: the original collection's, by precedence."""
        group = [int(i) for i in meta.members(p)]
        if len(group) == 1 or SHOW_COPY == "off":
            return p
        from .sources import precedence_key

        def original(cands: list[int]) -> int:
            return min(cands, key=lambda i: precedence_key(rows[i]["kind"], rows[i]["rel"], rows[i]["id"],
                                                           self._canonical))

        tiers: dict[int, list[int]] = {}
        for i in group:
            if i not in rows or (allowed is not None and not allowed[i]) or not meta.active[i]:
                continue
            desc, opening = self._language(rows[i])
            parts = [x for x in (desc, opening) if x]
            # a missing part (no description, an empty body) counts as agreeing
            tier = 2 if parts and all(x == qlang for x in parts) else int(qlang in parts)
            if tier:
                tiers.setdefault(tier, []).append(i)
        if not tiers:
            return p
        cands = tiers[max(tiers)]
        fused = fused or {}
        ranked = [i for i in cands if fused.get(i)]
        best = max(ranked, key=lambda i: fused[i]) if ranked else original(cands)
        if SHOW_COPY == "ranked":
            return best
        if SHOW_COPY == "original":
            return original(cands)
        same = [best]
        for i in cands:
            if i != best and any(ix is not None and ix.has[i] and ix.has[best]
                                 and float(ix.vectors([i])[0] @ ix.vectors([best])[0]) >= COPY_COSINE
                                 for ix in vecs):
                same.append(i)
        return original(same)

    def _hit(self, meta: _Meta, rows: dict[int, Any], p: int, q: int, cos) -> Hit:
        """The hit for group representative ``p`` (the copy that ranked), shown as its copy
        ``q``; ``rows`` holds the rows of the group. Its score is the max-sim cosine of the
        request to the better of the two copies (the group's evidence), 0 without vectors."""
        row = rows[q]
        group = meta.members(p)
        copy_ids: list[str] = []
        ref = row["name"]
        if len(group) > 1:
            from .sources import precedence_key

            copy_ids = [rows[int(i)]["id"] for i in group if int(i) != q and int(i) in rows]
            same = [rows[int(i)] for i in group if int(i) in rows and rows[int(i)]["name"] == row["name"]]
            winner = min(same, key=lambda r: precedence_key(r["kind"], r["rel"], r["id"], self._canonical))
            ref = row["name"] if winner["id"] == row["id"] else row["id"]
        sims = [c for c in ((cos(p), cos(q)) if cos is not None else ()) if c is not None]
        score = max(sims) if sims else 0.0
        likely = bool(sims) and score >= self._threshold()
        return Hit(
            id=row["id"], name=row["name"], path=row["path"], score=round(float(score), 3),
            match="likely" if likely else "weak", description=trim(row["description"], self.s.description_chars),
            display_name=row["display_name"] or row["name"], skill_type=row["skill_type"], repo=row["repo"],
            version=row["version"], tags=[t for t in (row["tags"] or "").split(",") if t], copies=len(group),
            copy_ids=copy_ids[:10], active=bool(row["active"]),
            expired=bool(meta.expires[q] and meta.expires[q] < _dt.date.today().toordinal()),
            lineage=_lineage(row["metadata"]), ref=ref)

    def _wildcards(self, meta: _Meta, exclude: set[int], fallback: set[int], allowed, k: int, cos,
                   qlang: str, terms: list[str]) -> list[Hit]:
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
        as_copy = [self._shown_copy(meta, rows, p, qlang, allowed) for p in picks]
        for p, q in zip(picks, as_copy):
            h = self._hit(meta, rows, p, q, cos)
            h.wildcard = True
            out.append(h)
        self._weigh_matches(out, as_copy, meta, terms)
        return out
