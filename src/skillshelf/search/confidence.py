"""Whether a hit is a likely match: a small logistic model over a hit's signals (its cosine,
the share of the request's rare words it holds, both together, and the request's length),
so that "no confident match" rests on more than one cosine.

The weights are data: fitted by ``bench/ranker.py --write`` (plain logistic regression with
a little L2, Newton's method: ``fit_best_hit``), which scores every fit on requests it did
not see, and shipped in ``ranker.json`` beside the ranker's. Other embedding models move the
cosine signals: set ``search.confident_threshold`` (the cosine-only rule) or refit.
"""

from __future__ import annotations

import numpy as np

# Per hit: cos, its score (the request's cosine to the skill's better vector); cover, the
# share of the request's term weight (idf) the skill holds in any field; their product; and
# log2(1 + the request's distinct words): a short request is covered easily, so its words
# say less. A request is served when one skill holds both its meaning and its rare words.
FEATURES = ("cos", "cover", "cos_x_cover", "request_terms")


def row(score: float, cover: float, request_terms: float) -> list[float]:
    """The features of one hit (``FEATURES``); ``request_terms``: log2(1 + the request's
    distinct words), as the ranker computes it."""
    return [score, cover, score * cover, request_terms]


# Below this score a hit is not likely whatever words it holds: the model was fitted on
# requests of a sentence or two (10 words or more). 0.15 changes the flag of no development
# request (0.20 flags one more served second wording, 0.25 five).
COSINE_FLOOR = 0.15
# A request of one or two words: a skill that holds them somewhere in its body has coverage
# 1.0, so the words say next to nothing and the meaning must carry the match. A word that is
# a skill's subject scores 0.45-0.50 ("docker", "cors", "commit message"); a word a body only
# mentions scores under 0.16 ("header", "json", "localhost ports"), and the 8-bit model moves
# a score by up to ~0.02 between CPUs (AVX2 or AVX-512 kernels) and against float32. 0.30 sits
# far from both, so no decision flips with the CPU. No development request is this short
# (the shortest has 10 words).
SHORT_REQUEST_WORDS = 2
SHORT_COSINE_FLOOR = 0.30


def cosine_floor(words: int | None = None) -> float:
    """The lowest score a likely hit may have, for a request of ``words`` words (the words
    the coverage looks for: stop words and numbers left out, a repeated word counted each
    time; None: not known, the plain floor)."""
    return SHORT_COSINE_FLOOR if words is not None and words <= SHORT_REQUEST_WORDS else COSINE_FLOOR


def predict(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    z = weights[0] + x @ np.asarray(weights[1:])
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


def fit_best_hit(hits: list[np.ndarray], y: np.ndarray, l2: float = 1.0, rounds: int = 20) -> np.ndarray:
    """Weights for a request served when its *best* hit is: each request stands for the
    features of whichever of its first hits the current weights rate highest, refitted
    until that choice no longer changes. ``hits``: per request, an array [hits, features]."""
    pick = [h[int(np.argmax(h[:, 0]))] if len(h) else np.zeros(len(FEATURES)) for h in hits]
    w = fit(np.array(pick), y, l2)
    for _ in range(rounds):
        new = [h[int(np.argmax(predict(w, h)))] if len(h) else np.zeros(len(FEATURES)) for h in hits]
        if all(np.array_equal(a, b) for a, b in zip(new, pick)):
            break
        pick = new
        w = fit(np.array(pick), y, l2)
    return w


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> np.ndarray:
    """Logistic regression (intercept unpenalised) by Newton's method: the weights."""
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    pen = np.full(a.shape[1], l2)
    pen[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ w, -50, 50)))
        grad = a.T @ (p - y) + pen * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(pen + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w
