"""Calibrate the confidence threshold: best cosine among the first three hits, for gap
requests vs. the others, and the flag rates at each threshold.

    python bench/calibrate.py --corpus ../shared/corpus --home .bench-home
"""
import argparse
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from pathlib import Path
import numpy as np
from quality import load_requests
from skillshelf import Library
ap = argparse.ArgumentParser()
ap.add_argument("--corpus", default="../shared/corpus", type=Path)
ap.add_argument("--home", default=".bench-home", type=Path)
args = ap.parse_args()
corpus = args.corpus
reqs = load_requests(corpus)
lib = Library(home=args.home, roots=[(corpus/"skills").resolve()], auto_sync=False)
emb,_ = lib._embedder_state()
S = lib.searcher
feats=[]
for r in reqs:
    res = lib.search(r["query"], limit=10, log=False)
    meta=S._meta
    q = emb.embed(r["query"])
    cos = S._mat @ q
    full = np.full(len(meta.rowids), -1.0); full[S._vec_pos]=cos
    pos=[meta.ids.index(h.id) for h in res.hits[:3]]
    best = max(full[p] for p in pos) if pos else 0
    maxall = full.max()
    feats.append((r["kind"], best, maxall))
for kind in ("gap","target","free"):
    v=[f[1] for f in feats if f[0]==kind]; w=[f[2] for f in feats if f[0]==kind]
    print(kind, len(v), "top3cos pct", np.percentile(v,[10,25,50,75,90]).round(3), "maxall", np.percentile(w,[10,50,90]).round(3))
g=np.array([f[1] for f in feats if f[0]=="gap"]); o=np.array([f[1] for f in feats if f[0]!="gap"])
for t in np.arange(0.30,0.60,0.02):
    print(round(t,2), "gap flagged", (g<t).mean().round(2), "false gap", (o<t).mean().round(2))
