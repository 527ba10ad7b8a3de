"""Ranking after retrieval: fusion of the two lists (RRF), the recency penalty's groups and
diversity (MMR). The fitted order and the likely-match model are ``ranker.py``.

Functions of plain values and the search state's arrays: the searcher's pipeline calls them
in order (``search.py``)."""

from __future__ import annotations

from collections.abc import Callable, Container

import numpy as np

from .state import Snapshot
from .vectors import ExactIndex


def rrf(lists: list[list[int]], weights: list[float], k: int) -> dict[int, float]:
    """Weighted reciprocal rank fusion: score(d) = Σ w_i / (k + rank_i(d)), ranks from 1."""
    fused: dict[int, float] = {}
    for w, lst in zip(weights, lists):
        for rank, p in enumerate(lst, start=1):
            fused[p] = fused.get(p, 0.0) + w / (k + rank)
    return fused


def recent_groups(meta: Snapshot, recent: dict[str, int] | None, worked,
                  copies: Callable[[list[str]], list[tuple[int, str]]],
                  among: Container[int] | None = None) -> dict[int, int]:
    """Copy group -> recent appearances of any of its copies, for the groups none of
    whose copies was last reported as worked (``worked``: skill ids -> those of them
    whose latest outcome worked). Groups, not ids: the copy shown for a group can
    change between requests (language, filters), and an outcome is reported against
    the copy a name resolves to. ``copies``: skill ids -> (rowid, id) of every copy of
    their groups (a read of the store). ``among``: only these groups are wanted (the
    search's candidates): the outcomes of the others are not asked for (on a team store,
    a round trip saved whenever no recent group is a candidate)."""
    if not recent:
        return {}
    groups: dict[str, int] = {}        # skill id -> group, for every copy of a recent group
    found = copies(list(recent))
    for (_, sid), p in zip(found, meta.positions([r[0] for r in found])):
        if p >= 0:
            groups[sid] = int(meta.group[p])
    if among is not None:
        groups = {sid: g for sid, g in groups.items() if g in among}
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
        redundancy_floor: float, stood_in: dict[int, int] | None = None) -> list[int]:
    """Maximal marginal relevance over the collapsed pool.

    Relevance is min-max scaled over the pool, and only redundancy counts against a
    candidate: cosine above ``redundancy_floor`` (near-duplicates under other names).
    Plain MMR on raw cosine pushes down every skill of the right topic, which is what
    cost the_librarian quality (DESIGN.md: 0.522 → 0.485). ``stood_in`` is filled with each
    candidate left out that its relevance alone would have placed within ``limit``, mapped to
    the chosen near-duplicate that stands for it (its closest)."""
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
    if stood_in is not None:
        at = np.asarray(chosen)
        for i in np.argsort(-r, kind="stable")[:limit].tolist():
            if free[i] and red[at, i].max() > 0:
                stood_in[pool[i]] = pool[int(at[np.argmax(sims[at, i])])]
    return [pool[i] for i in chosen]
