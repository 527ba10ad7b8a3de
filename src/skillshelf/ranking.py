"""Ranking after retrieval: fusion of the two lists (RRF), the recency penalty's groups,
diversity (MMR), and whether each hit is a likely match (confidence).

Functions of plain values and the search state's arrays: the searcher's pipeline calls them
in order (``search.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import confidence
from .hits import CONFIDENT_COSINE, Hit
from .search_state import Snapshot
from .vectors import ExactIndex


def rrf(lists: list[list[int]], weights: list[float], k: int) -> dict[int, float]:
    """Weighted reciprocal rank fusion: score(d) = Σ w_i / (k + rank_i(d)), ranks from 1."""
    fused: dict[int, float] = {}
    for w, lst in zip(weights, lists):
        for rank, p in enumerate(lst, start=1):
            fused[p] = fused.get(p, 0.0) + w / (k + rank)
    return fused


def recent_groups(meta: Snapshot, recent: dict[str, int] | None, worked,
                  copies: Callable[[list[str]], list[tuple[int, str]]]) -> dict[int, int]:
    """Copy group -> recent appearances of any of its copies, for the groups none of
    whose copies was last reported as worked (``worked``: skill ids -> those of them
    whose latest outcome worked). Groups, not ids: the copy shown for a group can
    change between requests (language, filters), and an outcome is reported against
    the copy a name resolves to. ``copies``: skill ids -> (rowid, id) of every copy of
    their groups (a read of the store)."""
    if not recent:
        return {}
    groups: dict[str, int] = {}        # skill id -> group, for every copy of a recent group
    found = copies(list(recent))
    for (_, sid), p in zip(found, meta.positions([r[0] for r in found])):
        if p >= 0:
            groups[sid] = int(meta.group[p])
    out: dict[int, int] = {}
    for sid, g in groups.items():
        if sid in recent:
            out[g] = out.get(g, 0) + recent[sid]
    if out and worked is not None:
        done = worked(list(groups)) if callable(worked) else set(worked) & set(groups)
        for sid in done:
            out.pop(groups[sid], None)
    return out


def mmr(pool: list[int], rel: dict[int, float], lam: float, limit: int, vi: ExactIndex | None,
        redundancy_floor: float) -> list[int]:
    """Maximal marginal relevance over the collapsed pool.

    Relevance is min-max scaled over the pool, and only redundancy counts against a
    candidate: cosine above ``redundancy_floor`` (near-duplicates under other names).
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
    floor = redundancy_floor
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


def weigh_matches(hits: list[Hit], coverage: Callable[[], list[float | None]],
                  confident_threshold: float | None, words: int | None = None) -> list[float]:
    """Set each hit's ``match``: ``likely`` when the match probability of its score and
    of the share of the request's rare words it holds (``confidence.py``) reaches the
    threshold; with ``confident_threshold`` set (``search.confident_threshold``: another
    embedding model), when its score alone reaches that. ``coverage()``: each hit's share
    of the request's rare words (None where it cannot be told), computed only when needed;
    ``words``: how many words the request has (a one- or two-word request needs a higher
    cosine: ``confidence.cosine_floor``). Returns each hit's share of the rare words."""
    if not hits:
        return []
    if confident_threshold or all(h.score <= 0 for h in hits):
        # the cosine alone decides (or nothing can be likely): no coverage to compute
        for h in hits:
            h.match = "likely" if confident_threshold and h.score >= confident_threshold else "weak"
        return [0.0] * len(hits)
    covers = coverage()
    for h, c in zip(hits, covers):
        if c is None:   # the request's words cannot be looked for (scripts without spaces): the cosine rule
            likely = h.score >= CONFIDENT_COSINE
        else:
            # the words alone never make a match: a skill that holds a one-word request's word
            # somewhere in its body is not a match for it without some of its meaning
            likely = confidence.likely(h.score, c, words)
        h.match = "likely" if likely and h.score > 0 else "weak"
    return [0.0 if c is None else c for c in covers]


def signals(hits: list[Hit], covers: list[float]) -> dict[str, Any]:
    """What the confidence flag was decided from, for bench/confidence.py: the best score
    and rare-word share of the first three hits, and both per hit."""
    if not hits:
        return {}
    return {"cos": max(h.score for h in hits[:3]), "cover": max(covers[:3]),
            "first3": [(h.score, c) for h, c in zip(hits[:3], covers[:3])]}
