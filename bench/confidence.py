"""The confidence flag: how well each signal, and the model that combines them, tells the
requests the library serves from the ones it does not (gap requests).

    python bench/confidence.py --corpus ../shared/corpus --home .bench-home [--fit]

For each development request (and its second wording, requests-dev-paraphrases.jsonl) the
search is run once without logging, and the signals it decided the flag from are read
(``SearchResult.signals``). Printed: per signal, its AUC (gap vs served); the flag rates of
the shipped model (``confidence.py``) at its threshold; and its curve: for each threshold,
gaps flagged and served requests flagged.

``--fit`` fits the logistic model on one set of requests and scores it on the other (first
wordings -> second wordings and back, then each half of the request ids against the other
half), so no request is scored by a model that saw it. The shipped coefficients are not
read from here: they are printed for a person to decide on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from quality import load_requests  # noqa: E402

from skillshelf import Library  # noqa: E402
from skillshelf import confidence  # noqa: E402


def auc(gap: np.ndarray, served: np.ndarray) -> float:
    """P(a served request scores above a gap request), ties count half."""
    if not len(gap) or not len(served):
        return float("nan")
    return float(np.mean([(g < served).mean() + 0.5 * (g == served).mean() for g in gap]))


def rates(p_gap: np.ndarray, p_served: np.ndarray, t: float) -> tuple[float, float]:
    """(gaps flagged, served flagged) when a request is flagged below ``t``."""
    return float((p_gap < t).mean()), float((p_served < t).mean())


def collect(lib: Library, reqs: list[dict]) -> list[tuple[str, str, dict]]:
    out = []
    for r in reqs:
        res = lib.search(r["query"], limit=10, log=False)
        out.append((r["qid"], r["kind"], dict(res.signals, confident=float(res.confident))))
    return out


def table(rows, names) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[sig.get(n, 0.0) for n in names] for _, _, sig in rows], dtype=np.float64)
    y = np.array([kind != "gap" for _, kind, _ in rows], dtype=np.float64)
    return x, y


def per_hit(rows) -> tuple[list[np.ndarray], np.ndarray]:
    """Per request, the (score, cover) of its first three hits; served or not."""
    hits = [np.array(sig.get("first3", []), dtype=np.float64).reshape(-1, len(confidence.FEATURES))
            for _, _, sig in rows]
    return hits, np.array([kind != "gap" for _, kind, _ in rows], dtype=np.float64)


def best_hit(w: np.ndarray, hits: list[np.ndarray]) -> np.ndarray:
    """The match probability of each request's best hit."""
    return np.array([confidence.predict(w, h).max() if len(h) else 0.0 for h in hits])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--fit", action="store_true", help="fit on one set, score on the other (see above)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    first = load_requests(args.corpus)
    second = [json.loads(x) for x in (args.corpus / "requests-dev-paraphrases.jsonl").read_text().splitlines() if x]
    lib = Library(home=args.home, roots=[(args.corpus / "skills").resolve()], auto_sync=False)
    emb, reason = lib._embedder_state()
    if emb is None:
        raise SystemExit(f"the confidence signals need the embedder: {reason}")
    sets = {"first wordings": collect(lib, first), "second wordings": collect(lib, second)}
    names = list(confidence.FEATURES)
    report: dict = {"sets": {}}

    for label, rows in sets.items():
        x, y = table(rows, names)
        gap, served = y == 0, y == 1
        print(f"\n{label}: {int(gap.sum())} gap requests, {int(served.sum())} served")
        for i, n in enumerate(names):
            print(f"  {n:>14}: AUC {auc(x[gap, i], x[served, i]):.3f}")
        flag = np.array([1.0 - sig["confident"] for _, _, sig in rows])
        shipped = (float(flag[gap].mean()), float(flag[served].mean()))
        p = best_hit(np.asarray(confidence.WEIGHTS), per_hit(rows)[0])
        print(f"  the flag as shipped: gaps flagged {shipped[0]:.3f}, served flagged {shipped[1]:.3f};"
              f" match probability AUC {auc(p[gap], p[served]):.3f}")
        curve = []
        for t in np.round(np.arange(0.05, 0.96, 0.05), 2):
            g, s = rates(p[gap], p[served], t)
            curve.append((float(t), g, s))
            print(f"    flagged below {t:.2f}: gaps {g:.3f}, served {s:.3f}")
        report["sets"][label] = {"flag": shipped, "auc": auc(p[gap], p[served]), "curve": curve}

    if args.fit:
        rows1, rows2 = sets["first wordings"], sets["second wordings"]
        ha, ya = per_hit(rows1 + rows2)
        wa = confidence.fit_best_hit(ha, ya)
        print(f"\nfitted on all {len(ya)} requests: weights {np.round(wa, 3).tolist()}"
              f" (shipped: {list(confidence.WEIGHTS)})")
        qid = lambda q: q[:-2] if q.endswith("-p") else q  # noqa: E731
        ids = sorted({qid(q) for q, _, _ in rows1})
        half = {q for i, q in enumerate(ids) if i % 2 == 0}
        folds = [("first -> second", rows1, rows2), ("second -> first", rows2, rows1),
                 ("even ids -> odd ids", [r for r in rows1 + rows2 if qid(r[0]) in half],
                  [r for r in rows1 + rows2 if qid(r[0]) not in half]),
                 ("odd ids -> even ids", [r for r in rows1 + rows2 if qid(r[0]) not in half],
                  [r for r in rows1 + rows2 if qid(r[0]) in half])]
        print("\nfitted on one set, scored on the other; threshold: the shipped one, and the fitting set's"
              " own (served flagged <= 0.10 there)")
        report["folds"] = []
        for label, train, test in folds:
            ht, yt = per_hit(train)
            w = confidence.fit_best_hit(ht, yt)
            own = float(np.quantile(best_hit(w, ht)[yt == 1], 0.10))
            hs, ys = per_hit(test)
            ps = best_hit(w, hs)
            g, s_ = rates(ps[ys == 0], ps[ys == 1], confidence.THRESHOLD)
            g2, s2 = rates(ps[ys == 0], ps[ys == 1], own)
            print(f"  {label}: weights {np.round(w, 2).tolist()}; held out at {confidence.THRESHOLD}: gaps flagged"
                  f" {g:.3f}, served flagged {s_:.3f}; at its own {own:.3f}: {g2:.3f}, {s2:.3f};"
                  f" AUC {auc(ps[ys == 0], ps[ys == 1]):.3f}")
            report["folds"].append({"fold": label, "weights": w.tolist(), "own_threshold": own,
                                    "shipped_threshold": [g, s_], "own": [g2, s2]})
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
