"""Fit the ranker (src/skillshelf/search/ranker.py) on the labelled development requests, and score
it on requests held out of each fit.

    python bench/ranker.py --corpus ../shared/corpus --home .bench-home [--folds 5] [--write] [--json out.json]
    python bench/ranker.py --plain [--json out.json]     # the library as shipped, same tables

Requests: the first and second wordings (requests-dev.jsonl, requests-dev-paraphrases.jsonl).
Cross-validation is grouped by request: both wordings of one need are in the same fold, so a
fold's model never saw the need it is scored on. For each fold the model is fitted (logistic
regression, scikit-learn) on the candidates of the other folds' requests, each labelled by
its grade (a soft label: grade / 3), and the held-out requests are searched for real with
that model in the library (the whole pipeline: collapse of copies, diversity, the shown copy).
The threshold of a likely match is chosen on the training folds (gaps flagged at most
``--served-flagged`` of served requests) and applied to the held-out fold; so is the share of the
best likely hit's probability a likely hit needs (``near``: the lowest that gives the training folds'
likely hits a precision of ``--likely-precision``).

``--write`` fits on every request and writes src/skillshelf/search/ranker.json, with the held-out
figures in its "about". Figures: distinct nDCG@10, Hit@1, Hit@5 (target and free requests),
per style and kind; gap requests flagged and served requests flagged (as bench/quality.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from quality import measure

from skillshelf import Library

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = None   # the model in the package when this run started (set in main)
MODEL_FILE = ROOT / "src" / "skillshelf" / "search" / "ranker.json"


def load(corpus: Path) -> list[dict]:
    out = []
    for f in ("requests-dev.jsonl", "requests-dev-paraphrases.jsonl"):
        for line in (corpus / f).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                r["need"] = r["qid"].removesuffix("-p")
                r["wording"] = "second" if r["qid"].endswith("-p") else "first"
                out.append(r)
    return out


def open_library(corpus: Path, home: Path) -> tuple[Library, callable, dict]:
    skills_dir = (corpus / "skills").resolve()
    lib = Library(home=home, roots=[skills_dir], auto_sync=False)
    # measure ranking, not the anti-repeat policy or learning
    s = dataclasses.replace(lib.config.search, recency_window=0, learn_from_outcomes=False)
    lib.config = dataclasses.replace(lib.config, search=s)
    lib.searcher.s = s
    t0 = time.perf_counter()
    rep = lib.sync()
    print(f"sync: +{rep.added} ~{rep.updated} -{rep.removed} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

    def cid(path: str) -> str:
        return Path(path).resolve().relative_to(skills_dir).as_posix()

    names = {cid(r.path): r.name for r in lib.list()}
    return lib, cid, names


def _rowid_ids(lib: Library, cid) -> dict[int, str]:
    """Skill rowid -> corpus id (the bench reads the index directly, as bench/quality.py does)."""
    return {int(rid): cid(path) for rid, path in lib.store.db.execute("SELECT rowid, path FROM skills")}


def fit(data: dict, qids: list[str], c: float, method: str = "pairwise"):
    """A ranker.Model fitted on these requests' candidates.

    ``pairwise``: logistic regression on the differences of two candidates of one request
    whose grades differ (which should rank first), each pair weighing the difference of their
    gains (2^grade - 1), then the order's scale calibrated to P(grade >= 2) by a one-feature
    logistic regression (Platt). ``pointwise``: logistic regression on each candidate's grade
    / 3 (a soft label)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from skillshelf.search import ranker

    # each signal is used from its 1st percentile to the highest value the fit sees
    # (ranker.Model.logit): a rare low value (an empty body) weighs as an uncommon one, not more
    x_all = np.vstack([data[q][0] for q in qids])
    lo, hi = np.percentile(x_all, 1, axis=0), x_all.max(axis=0)
    span = np.vstack([lo, hi])

    def clip(a: np.ndarray) -> np.ndarray:
        return np.clip(a, lo, hi)

    x = clip(x_all)
    g = np.concatenate([data[q][1] for q in qids])
    sc = StandardScaler().fit(x)
    scale = np.where(sc.scale_ > 0, sc.scale_, 1.0)
    if method == "pointwise":
        soft = g / 3.0
        # soft labels as two weighted rows: (x, 1) weighing grade/3 and (x, 0) weighing the rest
        xx, yy = np.vstack([x, x]), np.concatenate([np.ones(len(x)), np.zeros(len(x))])
        ww = np.concatenate([soft, 1.0 - soft])
        keep = ww > 0
        lr = LogisticRegression(C=c, max_iter=2000).fit(sc.transform(xx[keep]), yy[keep], sample_weight=ww[keep])
        return ranker.Model(mean=sc.mean_, scale=scale, weights=lr.coef_[0], intercept=float(lr.intercept_[0]),
                            match=SHIPPED.match, likely=SHIPPED.likely,
                            match_range=SHIPPED.match_range, span=span, useful=SHIPPED.useful, about={},
                            near=SHIPPED.near)
    diffs, ws = [], []
    rng = np.random.default_rng(0)
    for q in qids:
        xq, gq = sc.transform(clip(data[q][0])), data[q][1]
        pos = np.flatnonzero(gq > 0)
        for i in pos:
            lower = np.flatnonzero(gq < gq[i])
            if len(lower) > 40:   # every better candidate against 40 worse ones
                lower = rng.choice(lower, 40, replace=False)
            gain = (2 ** gq[i] - 1) - (2 ** gq[lower] - 1)
            diffs.append(xq[i] - xq[lower])
            ws.append(gain)
    d = np.vstack(diffs)
    w = np.concatenate(ws)
    coef = pairwise_logistic(d, w, c)
    z = sc.transform(x) @ coef
    platt = LogisticRegression(C=100.0).fit(z[:, None], (g >= 2).astype(int))
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    return ranker.Model(mean=sc.mean_, scale=scale, weights=coef * a, intercept=b, match=SHIPPED.match,
                        likely=SHIPPED.likely, match_range=SHIPPED.match_range, span=span, useful=SHIPPED.useful,
                        about={}, near=SHIPPED.near)


# Signals of which more never makes a skill a worse match (closer meaning, more of the request's
# words, a better rank): their weights are held >= 0, so the model cannot learn from a few
# requests that, say, a closer cosine counts against a skill once the other signals are known
# (collinear signals invite that, and it breaks on libraries unlike the corpus).
MONOTONE = ("rrf", "lex_rank", "lex_score", "dense_rank", "dense_score", "cos", "cos_meta", "cos_body", "cover",
            "cover_name", "cover_description", "cover_tags", "cover_headings", "cover_body", "name_said",
            "cos_x_cover")


def pairwise_logistic(d: np.ndarray, w: np.ndarray, c: float) -> np.ndarray:
    """Weights minimising the weighted logistic loss of the differences ``d`` (the better
    candidate first) plus an L2 penalty 1 / (2c), the MONOTONE signals' weights bounded
    below by 0 (L-BFGS-B, scipy)."""
    from scipy.optimize import minimize

    from skillshelf.search import ranker

    def loss(beta):
        z = d @ beta
        # log(1 + e^-z), stably; its gradient -sigmoid(-z)
        lz = np.logaddexp(0.0, -z)
        g = -(w * (1.0 / (1.0 + np.exp(z)))) @ d
        return float(w @ lz + beta @ beta / (2 * c)), g + beta / c

    bounds = [(0.0, None) if f in MONOTONE else (None, None) for f in ranker.FEATURES]
    got = minimize(loss, np.zeros(d.shape[1]), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 2000})
    return got.x


def fit_match(lib: Library, reqs: list[dict], target: float) -> tuple[np.ndarray, float, np.ndarray]:
    """The likely-match model (confidence.py) fitted on these requests as the library now
    ranks them (a request is served unless it is a gap), and the cut that flags at most
    ``target`` of their served requests, and the range of each feature the fit saw."""
    from skillshelf.search import confidence

    hits, y = [], []
    for r in reqs:
        res = lib.search(r["query"], limit=10, log=False)
        hits.append(np.asarray(res.signals.get("first3", []), dtype=np.float64).reshape(-1, len(confidence.FEATURES)))
        y.append(float(r["kind"] != "gap"))
    y = np.asarray(y)
    w = confidence.fit_best_hit(hits, y)
    best = np.array([confidence.predict(w, h).max() if len(h) else 0.0 for h in hits])
    served = np.sort(best[y == 1])
    k = int(np.floor(target * len(served)))
    seen = np.vstack([h for h in hits if len(h)])
    return w, float(served[min(k, len(served) - 1)]), np.vstack([seen.min(axis=0), seen.max(axis=0)])


def fit_useful(lib: Library, reqs: list[dict], cid, keep: float) -> float:
    """The ranker's probability below which a hit is not a likely match: the highest cut that
    keeps ``keep`` of the likely hits these requests' labels call useful (grade >= 2)."""
    model = lib.searcher.ranker
    lib.searcher.ranker = dataclasses.replace(model, useful=0.0)
    rid = {sid: r for r, sid in lib.store.db.execute("SELECT rowid, id FROM skills")}
    probs: dict[int, float] = {}

    def observe(query, meta, cands, feats):
        probs.clear()
        probs.update(zip([int(meta.rowids[p]) for p in cands], lib.searcher.ranker.probability(feats).tolist()))

    lib.searcher.observe = observe
    good = []
    for r in reqs:
        if r["kind"] == "gap":
            continue
        res = lib.search(r["query"], limit=10, log=False)
        good += [probs.get(rid[h.id], 0.0) for h in res.hits
                 if h.match == "likely" and r["relevant"].get(cid(h.path), 0) >= 2]
    lib.searcher.observe = None
    lib.searcher.ranker = model
    return float(np.quantile(good, 1.0 - keep)) if good else 0.0


def fit_near(lib: Library, reqs: list[dict], cid, precision: float) -> float:
    """The share of the best likely hit's probability (ranker) a likely hit needs: the lowest of a
    grid (0, 0.01 ... 0.95) at which the likely hits of these requests are useful (grade >= 2) at
    least ``precision`` of the time, counting a gap request's likely hits as not useful. The best
    likely hit always passes it, so which requests are served hardly changes."""
    model = lib.searcher.ranker
    lib.searcher.ranker = dataclasses.replace(model, near=0.0)
    weigh = lib.searcher._weigh
    shown: list[tuple[np.ndarray, np.ndarray]] = []   # the last search's hits: likely (near 0), share of the best

    def watch(hits, feats, words, best=None):
        rows, top = weigh(hits, feats, words, best)     # (top: the best likely hit's probability)
        x = np.asarray(feats, dtype=np.float64).reshape(len(hits), -1)
        share = lib.searcher.ranker.probability(x) / (top or 1.0) if len(x) else np.zeros(0)
        shown.append((np.array([h.match == "likely" for h in hits], bool), share))
        return rows, top

    lib.searcher._weigh = watch
    got = []
    try:
        for r in reqs:
            shown.clear()
            res = lib.search(r["query"], limit=10, log=False)
            likely, share = shown[0]
            good = np.array([r["relevant"].get(cid(h.path), 0) >= 2 for h in res.hits], bool)
            got.append((likely, good, share))
    finally:
        lib.searcher._weigh = weigh
        lib.searcher.ranker = model
    for near in np.round(np.arange(0.0, 0.951, 0.01), 2):
        kept = [(lk & (share >= near - 1e-12), good) for lk, good, share in got]
        n = sum(int(k.sum()) for k, _ in kept)
        if n and sum(int((k & g).sum()) for k, g in kept) / n >= precision:
            return float(near)
    return 0.95


def table(rows: list[dict], title: str) -> dict:
    out = {}
    served = [r for r in rows if r["kind"] != "gap"]
    gaps = [r for r in rows if r["kind"] == "gap"]

    def agg(rs):
        return {k: round(float(np.mean([r[k] for r in rs])), 4) for k in ("dndcg10", "hit1", "hit5")} | {"n": len(rs)}

    out["all"] = agg(served)
    out["all"]["gaps_flagged"] = round(float(np.mean([r["flagged"] for r in gaps])), 4) if gaps else None
    out["all"]["served_flagged"] = round(float(np.mean([r["flagged"] for r in served])), 4)
    # of the hits marked likely, the share the labels call useful (pooled labels: a lower bound):
    # for served requests, and for every request (a gap request's likely hits are not useful)
    out["all"]["likely_precision"] = round(sum(r["likely_useful"] for r in served) / max(1, sum(
        r["likely"] for r in served)), 4)
    out["all"]["likely_precision_all"] = round(sum(r["likely_useful"] for r in rows) / max(1, sum(
        r["likely"] for r in rows)), 4)
    out["all"]["likely_per_request"] = round(float(np.mean([r["likely"] for r in rows])), 2)
    for key in ("wording", "style", "kind"):
        for v in sorted({r[key] for r in served}):
            out[f"{key}={v}"] = agg([r for r in served if r[key] == v])
    for v in sorted({r["style"] for r in gaps}):
        gs = [r for r in gaps if r["style"] == v]
        out[f"gaps style={v}"] = {"flagged": round(float(np.mean([r["flagged"] for r in gs])), 4), "n": len(gs)}
    print(f"\n{title}")
    for k, m in out.items():
        print(f"  {k:24} " + "  ".join(f"{a}={b}" for a, b in m.items()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--c", type=float, default=0.1, help="inverse L2 strength of the logistic regression")
    ap.add_argument("--served-flagged", type=float, default=0.07,
                    help="share of the training folds' served requests a likely-match cut may flag")
    ap.add_argument("--keep-useful", type=float, default=0.95,
                    help="share of the useful likely hits (training folds) the ranker's cut on `likely` keeps")
    ap.add_argument("--likely-precision", type=float, default=0.65,
                    help="per-hit precision of `likely` the training folds' cut on the share of the best hit aims at")
    ap.add_argument("--method", choices=("pairwise", "pointwise"), default="pairwise")
    ap.add_argument("--plain", action="store_true", help="score the library as shipped (no fitting)")
    ap.add_argument("--write", action="store_true", help="fit on every request and write src/skillshelf/ranker.json")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    reqs = load(args.corpus)
    lib, cid, names = open_library(args.corpus, args.home)
    ids_of = _rowid_ids(lib, cid)

    def judge(r, res, flagged):
        ranked = [cid(h.path) for h in res.hits]
        m = measure(ranked, r["relevant"], names) if r["kind"] != "gap" else {}
        likely = [h for h in res.hits if h.match == "likely"]
        return {**m, "qid": r["qid"], "kind": r["kind"], "style": r["style"], "wording": r["wording"],
                "flagged": bool(flagged), "likely": len(likely),
                "likely_useful": sum(r["relevant"].get(cid(h.path), 0) >= 2 for h in likely)}

    if args.plain:
        rows = []
        for r in reqs:
            res = lib.search(r["query"], limit=10, log=False)
            rows.append(judge(r, res, not res.confident))
        result = {"plain": table(rows, "the library as shipped")}
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
        return

    t0 = time.perf_counter()
    data = {}
    lib.searcher.observe = None

    def observe(query, meta, cands, feats):
        data["_last"] = ([int(meta.rowids[p]) for p in cands], feats.copy())

    lib.searcher.observe = observe
    for r in reqs:
        lib.search(r["query"], limit=10, log=False)
        rowids, feats = data.pop("_last")
        data[r["qid"]] = (feats, np.array([r["relevant"].get(ids_of.get(rid, ""), 0) for rid in rowids], float))
    lib.searcher.observe = None
    print(f"features of {len(reqs)} requests in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

    needs = sorted({r["need"] for r in reqs})
    rng = np.random.default_rng(args.seed)
    fold_of = dict(zip(rng.permutation(needs), np.arange(len(needs)) % args.folds))
    global SHIPPED
    SHIPPED = shipped = lib.searcher.ranker
    rows = []
    for k in range(args.folds):
        train = [r for r in reqs if fold_of[r["need"]] != k]
        test = [r for r in reqs if fold_of[r["need"]] == k]
        model = fit(data, [r["qid"] for r in train], args.c, args.method)
        lib.searcher.ranker = model
        w, cut, span = fit_match(lib, train, args.served_flagged)
        lib.searcher.ranker = model = dataclasses.replace(model, match=w, likely=cut, match_range=span)
        lib.searcher.ranker = model = dataclasses.replace(model, useful=fit_useful(lib, train, cid, args.keep_useful))
        lib.searcher.ranker = model = dataclasses.replace(model, near=fit_near(lib, train, cid, args.likely_precision))
        for r in test:
            res = lib.search(r["query"], limit=10, log=False)
            rows.append(judge(r, res, not res.confident))
    lib.searcher.ranker = shipped
    result = {"held_out": table(rows, f"held out ({args.folds}-fold, grouped by request; {args.method}, C={args.c})")}

    if args.write:
        model = fit(data, [r["qid"] for r in reqs], args.c, args.method)
        lib.searcher.ranker = model
        w, cut, span = fit_match(lib, reqs, args.served_flagged)
        lib.searcher.ranker = dataclasses.replace(model, match=w, likely=cut, match_range=span)
        model = dataclasses.replace(model, match=w, likely=cut, match_range=span,
                                    useful=fit_useful(lib, reqs, cid, args.keep_useful))
        lib.searcher.ranker = model
        model = dataclasses.replace(model, near=fit_near(lib, reqs, cid, args.likely_precision), about={
            "fitted": "python bench/ranker.py --write",
            "requests": len(reqs), "c": args.c, "served_flagged_target": args.served_flagged,
            "likely_precision_target": args.likely_precision,
            "held_out": result["held_out"]["all"]})
        MODEL_FILE.write_text(json.dumps(model.as_dict(), indent=1) + "\n")
        print(f"wrote {MODEL_FILE.relative_to(ROOT)}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
