"""Calibrate the confidence threshold: the best cosine (query vs. skill) among the first
three hits, for gap requests vs. the others, and the flag rates at each threshold. Two
signals side by side: the metadata vector's cosine, and the better of the metadata and body
vectors' cosines (max-sim, the score the dense list ranks by).

    python bench/calibrate.py --corpus ../shared/corpus --home .bench-home
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from quality import load_requests  # noqa: E402

from skillshelf import Library  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    args = ap.parse_args()
    reqs = load_requests(args.corpus)
    lib = Library(home=args.home, roots=[(args.corpus / "skills").resolve()], auto_sync=False)
    emb, reason = lib._embedder_state()
    if emb is None:
        raise SystemExit(f"calibration needs the embedder: {reason}")
    s = lib.searcher
    feats = []
    for r in reqs:
        res = lib.search(r["query"], limit=10, log=False)
        q = emb.embed(r["query"])
        rowids = [lib.store.db.execute("SELECT rowid FROM skills WHERE id=?", (h.id,)).fetchone()[0] for h in res.hits[:3]]
        pos = [int(p) for p in s._meta.positions(rowids) if p >= 0]
        meta = max((float(s._vindex.dot([p], q)[0]) for p in pos if s._vindex.has[p]), default=0.0)
        body = max((float(s._bindex.dot([p], q)[0]) for p in pos if s._bindex is not None and s._bindex.has[p]),
                   default=0.0)
        feats.append((r["kind"], meta, max(meta, body)))
    for name, col in (("metadata cosine", 1), ("max-sim cosine", 2)):
        gaps = np.array([f[col] for f in feats if f[0] == "gap"])
        other = np.array([f[col] for f in feats if f[0] != "gap"])
        auc = float(np.mean([(g < other).mean() + 0.5 * (g == other).mean() for g in gaps]))
        print(f"\n{name}: gap requests: {len(gaps)}, median best cosine {np.median(gaps):.3f}; "
              f"others: {len(other)}, median {np.median(other):.3f}; AUC {auc:.3f}")
        best_t, best_j = None, -1.0
        for t in np.arange(0.30, 0.56, 0.01):
            flagged, false = float((gaps < t).mean()), float((other < t).mean())
            print(f"threshold {t:.2f}: gaps flagged {flagged:.2f}, good requests flagged {false:.2f}")
            if flagged - false > best_j:
                best_t, best_j = t, flagged - false
        print(f"Youden's J is highest at {best_t:.2f} ({best_j:.2f})")


if __name__ == "__main__":
    main()
