"""The ranker: a small logistic model over the signals search computes for each candidate
(the two retrievers' ranks and scores, the request's cosine to the skill's metadata and body,
which fields hold the request's words, copies, lengths), fitted rather than tuned by hand.

Its weights are data (``ranker.json`` beside this module), written by ``bench/ranker.py
--write``, which fits them on the labelled development requests and reports every figure
on requests held out of the fit (cross-validation grouped by request). The same score says
whether a hit is a likely match: the file also holds the weights of that model
(``confidence.py``), fitted and scored the same way. Scoring is a dot product per candidate;
nothing here is loaded from a pickle.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from . import confidence
from .lexical import FIELDS, Matches

# One row per candidate, in this order (the model file names them: a file fitted over other
# features is refused, not misread).
FEATURES = (
    "rrf",           # the two lists' reciprocal rank fusion, / the best candidate's
    "lex_rank",      # 1 / log2(1 + rank) in the lexical (BM25F) list, 0 when not in it
    "lex_score",     # BM25F score / the list's best score
    "dense_rank",    # 1 / log2(1 + rank) in the embedding list, 0 when not in it
    "dense_score",   # its score there (the feedback probe's cosine) / the list's best
    "cos",           # the request's cosine to the skill's better vector (the hit's score)
    "cos_meta",      # ... to its metadata vector (name, description, tags)
    "cos_body",      # ... to its body's opening
    "cover",         # share of the request's word weight (idf) the skill holds anywhere
    "cover_name",    # ... in its name
    "cover_description",
    "cover_tags",
    "cover_headings",
    "cover_body",
    "name_said",     # share of the name's words the request holds
    "no_words",      # 1 when the request cannot be checked word by word (CJK, Thai ...)
    "copies",        # log2 of the copies of the skill (same name) in the library
    "body_length",   # log10 of the body's length in words
    "name_length",   # log2 of the name's words
    "description_length",  # log2 of the description's words (a broad skill says more)
    "headings_length",     # log2 of the headings' words (how many topics the body covers)
    "cos_x_cover",   # meaning and words together
    "request_terms", # log2 of the request's distinct words (the same for every candidate)
)

# How each feature reads in a hit's ``why`` (a value of ``x`` the feature holds).
_MEANING = "close in meaning"
_WORDS = "its words match the request's"
_SAY = {
    "rrf": lambda x: "found by both words and meaning",
    "lex_rank": lambda x: _WORDS,
    "lex_score": lambda x: _WORDS,
    "dense_rank": lambda x: "ranked high by meaning",
    "dense_score": lambda x: "ranked high by meaning",
    "cos": lambda x: _MEANING,
    "cos_meta": lambda x: "its description is close in meaning",
    "cos_body": lambda x: "its body is close in meaning",
    "cover": lambda x: f"holds {x:.0%} of the request's words",
    "cover_name": lambda x: "its name holds the request's words",
    "cover_description": lambda x: "its description holds the request's words",
    "cover_tags": lambda x: "its tags hold the request's words",
    "cover_headings": lambda x: "its headings hold the request's words",
    "cover_body": lambda x: "its body holds the request's words",
    "name_said": lambda x: "the request names it",
    "copies": lambda x: "many collections carry it",
    "body_length": lambda x: "a long body",
    "name_length": lambda x: "a long name",
    "description_length": lambda x: "a long description",
    "headings_length": lambda x: "many headings",
    "cos_x_cover": lambda x: "meaning and words agree",
}
# Not given as a reason: the same for every candidate (about the request), or a sum of the
# signals that are named themselves (the fused rank: the word and meaning lists).
_ABOUT_REQUEST = (FEATURES.index("no_words"), FEATURES.index("request_terms"), FEATURES.index("rrf"))
# Reasons that speak of meaning: not given for a hit whose cosine is below the floor of a likely
# match (in a small library every skill is "ranked high by meaning", however far its meaning is)
_OF_MEANING = tuple(FEATURES.index(f) for f in ("dense_rank", "dense_score", "cos", "cos_meta", "cos_body",
                                                "cos_x_cover"))


@dataclass(frozen=True)
class Model:
    """Standardised logistic regression: p = sigmoid(b + w · (x - mean) / scale); and the
    likely-match model (``confidence.FEATURES``: intercept first, then one weight each) with
    the probability from which a hit is a likely match."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    intercept: float
    match: np.ndarray
    likely: float
    match_range: np.ndarray     # [2, features]: the lowest and highest values the fit saw
    span: np.ndarray            # [2, FEATURES]: the range of each signal the ranker is applied in
    useful: float               # the ranker's probability below which a hit is not a likely match
    about: dict                 # how it was fitted and what it scored held out (from the file)
    # A likely hit is rated by the ranker at least this share of the request's best likely hit:
    # the likely hits far below the best were mostly not useful (fitted for a per-hit precision
    # on held-out requests, bench/ranker.py). The best one is never held back by it, so whether
    # a request is served hardly changes.
    near: float = 0.0

    def logit(self, x: np.ndarray) -> np.ndarray:
        """The ranker's score. Each signal is held inside what the fit saw, from its 1st
        percentile to its highest value: a skill with an empty body, or copied 30 times, is not
        extrapolated to (the corpus has neither)."""
        return self.intercept + ((np.clip(x, self.span[0], self.span[1]) - self.mean) / self.scale) @ self.weights

    def probability(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-np.clip(self.logit(x), -50, 50)))

    def match_probability(self, rows: np.ndarray) -> np.ndarray:
        """P(the request is served by this hit) per row of ``confidence.FEATURES``. Each value
        is held inside the range the fit saw: the development requests have 10 to 25 words, and
        a three-word request is not extrapolated to, it is weighed as the shortest of them."""
        x = np.asarray(rows, dtype=np.float64).reshape(-1, len(self.match) - 1)
        return confidence.predict(self.match, np.clip(x, self.match_range[0], self.match_range[1]))

    def likely_matches(self, rows: npt.ArrayLike, words: int | None, useful: npt.ArrayLike) -> np.ndarray:
        """``likely_match`` of many hits before the share of the best (``near_best``): ``rows``
        of ``confidence.FEATURES`` (the score first), ``useful`` the ranker's probability of each."""
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, len(confidence.FEATURES))
        score = rows[:, 0]
        return (score > 0) & (score >= confidence.cosine_floor(words)) & (np.asarray(useful) >= self.useful) & \
            (self.match_probability(rows) >= self.likely)

    def near_best(self, useful: npt.ArrayLike, best: float) -> np.ndarray:
        """Whether each hit's probability (``useful``) is at least ``self.near`` of ``best``, the
        request's best likely hit's: a likely hit stays likely only then."""
        return np.asarray(useful, dtype=np.float64) >= self.near * float(best) - 1e-12

    def likely_match(self, score: float, cover: float, request_terms: float, words: int | None = None,
                     useful: float = 1.0, best: float | None = None) -> bool:
        """Whether a hit of this score (cosine), holding this share of the request's rare
        words, is a likely match for a request of ``request_terms`` (log2(1 + distinct words))
        and ``words`` words (the floor: ``confidence.cosine_floor``); ``useful``: the ranker's
        probability that it is useful (below ``self.useful`` it is not a likely match: the
        request may be served, by another hit); ``best``: the probability of the request's best
        likely hit (below ``self.near`` of it, not a likely match; None: this hit is the best)."""
        return bool(self.likely_matches([confidence.row(score, cover, request_terms)], words, [useful])[0]) and \
            bool(self.near_best([useful], useful if best is None else best)[0])

    def why(self, x: np.ndarray, top: int = 2) -> str:
        """The signals that lift this candidate most above an average one."""
        return self.whys(np.asarray(x)[None, :], top)[0]

    def whys(self, x: np.ndarray, top: int = 2) -> list[str]:
        """``why`` of each row of ``x``."""
        # a signal that is high where a high value helps (the phrases say "high")
        x = np.clip(x, self.span[0], self.span[1])
        part = np.where((self.weights > 0) & (x > self.mean), self.weights * (x - self.mean) / self.scale, 0.0)
        part[:, list(_ABOUT_REQUEST)] = 0.0
        far = x[:, FEATURES.index("cos")] < confidence.cosine_floor()
        part[np.ix_(far, np.asarray(_OF_MEANING))] = 0.0
        out = []
        for row, xs, order in zip(part, x, np.argsort(-part, axis=1)[:, :6].tolist()):
            said = dict.fromkeys(_SAY[FEATURES[i]](float(xs[i])) for i in order if row[i] > 0.25)
            out.append("; ".join(list(said)[:top]))
        return out

    def as_dict(self) -> dict:
        return {"features": list(FEATURES), "mean": self.mean.round(6).tolist(),
                "low": self.span[0].round(6).tolist(), "high": self.span[1].round(6).tolist(),
                "scale": self.scale.round(6).tolist(), "weights": self.weights.round(6).tolist(),
                "intercept": round(float(self.intercept), 6),
                "match": {"features": list(confidence.FEATURES), "weights": self.match.round(6).tolist(),
                          "likely": round(float(self.likely), 4), "low": self.match_range[0].round(6).tolist(),
                          "high": self.match_range[1].round(6).tolist(), "useful": round(float(self.useful), 4),
                          "near": round(float(self.near), 4)},
                "about": self.about}


def from_dict(d: dict) -> Model:
    """A model from its JSON form; a model over other features is refused."""
    if list(d.get("features", [])) != list(FEATURES):
        raise ValueError("the ranker file was fitted over other features: run `python bench/ranker.py --write`")
    arr = [np.asarray(d[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
    if any(a.shape != (len(FEATURES),) for a in arr):
        raise ValueError("the ranker file's arrays do not match its features")
    m = d.get("match", {})
    if list(m.get("features", [])) != list(confidence.FEATURES) or len(m.get("weights", [])) != 1 + len(
            confidence.FEATURES):
        raise ValueError("the ranker file's likely-match model is over other features: run `python bench/ranker.py"
                         " --write`")
    span = np.asarray([m.get("low", [-np.inf] * len(confidence.FEATURES)),
                       m.get("high", [np.inf] * len(confidence.FEATURES))], dtype=np.float64)
    signals = np.asarray([d.get("low", [-np.inf] * len(FEATURES)), d.get("high", [np.inf] * len(FEATURES))],
                         dtype=np.float64)
    return Model(arr[0], np.where(arr[1] > 0, arr[1], 1.0), arr[2], float(d["intercept"]),
                 np.asarray(m["weights"], dtype=np.float64), float(m["likely"]), span, signals,
                 float(m.get("useful", 0.0)), dict(d.get("about", {})), float(m.get("near", 0.0)))


@functools.lru_cache(maxsize=1)
def bundled() -> Model:
    """The model shipped with the package (``ranker.json``)."""
    try:
        return from_dict(json.loads(resources.files(__package__).joinpath("ranker.json").read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the ranker's weights that ship with skillshelf (ranker.json) cannot be read: {exc}",
                          fix="reinstall skillshelf (`pip install --force-reinstall skillshelf`)") from exc


def _discount(rank: np.ndarray) -> np.ndarray:
    """1 / log2(1 + rank) for ranks from 1; 0 for rank 0 (not in the list)."""
    out = np.zeros(len(rank))
    at = rank > 0
    out[at] = 1.0 / np.log2(1.0 + rank[at])
    return out


def features(*, rrf: np.ndarray, lex_rank: np.ndarray, lex_score: np.ndarray, dense_rank: np.ndarray,
             dense_score: np.ndarray, cos_meta: np.ndarray,
             cos_body: np.ndarray, matches: Matches, copies: np.ndarray) -> np.ndarray:
    """The feature rows of some candidates. Ranks count from 1 (0: not in that list);
    ``lex_score`` is already divided by the list's best; cosines are NaN where the skill has
    no such vector; ``matches``: which fields hold the request's terms (not ``checkable``:
    the request cannot be checked word by word, and only the lengths count; its field lengths are in terms as the index counts them,
    so the name's words and the request's are counted alike)."""
    n = len(lex_rank)
    x = np.zeros((n, len(FEATURES)))
    col = {f: i for i, f in enumerate(FEATURES)}
    x[:, col["rrf"]] = rrf
    x[:, col["lex_rank"]] = _discount(lex_rank)
    x[:, col["lex_score"]] = lex_score
    x[:, col["dense_rank"]] = _discount(dense_rank)
    x[:, col["dense_score"]] = dense_score
    cm = np.nan_to_num(cos_meta, nan=0.0)
    cb = np.nan_to_num(cos_body, nan=0.0)
    best = np.fmax(cos_meta, cos_body)
    x[:, col["cos"]] = np.nan_to_num(best, nan=0.0)
    x[:, col["cos_meta"]] = cm
    x[:, col["cos_body"]] = cb
    if not matches.checkable:
        x[:, col["no_words"]] = 1.0
    else:
        x[:, col["cover"]] = matches.share()
        for f, name in enumerate(FIELDS):
            x[:, col[f"cover_{name}"]] = matches.share(1 << f)
        x[:, col["name_said"]] = np.minimum(1.0, matches.count(1) / np.maximum(matches.lens[:, 0], 1.0))
        x[:, col["request_terms"]] = np.log2(1.0 + len(matches.idf))
    x[:, col["body_length"]] = np.log10(1.0 + matches.lens[:, FIELDS.index("body")])
    x[:, col["name_length"]] = np.log2(1.0 + matches.lens[:, FIELDS.index("name")])
    x[:, col["description_length"]] = np.log2(1.0 + matches.lens[:, FIELDS.index("description")])
    x[:, col["headings_length"]] = np.log2(1.0 + matches.lens[:, FIELDS.index("headings")])
    x[:, col["copies"]] = np.log2(np.maximum(copies, 1))
    x[:, col["cos_x_cover"]] = x[:, col["cos"]] * x[:, col["cover"]]
    return x

