"""Where a warm search's time goes, stage by stage, at the size of the library in ``--home``.

    python bench/search_stages.py --corpus ../shared/corpus --home .bench-home-speed-scaled [--rounds 2]

Each stage of ``Library.search`` is wrapped in a timer (inclusive times: a stage that calls
another holds it; the query embedding runs on the other thread beside the lexical list, and
``embed wait`` is the time the pipeline waited for it after the lexical list). The floor is
one query embedding plus one exact float32 scoring pass over an n x 384 matrix, timed in the
same process, alternating with the searches. Printed: per stage, the mean and p50 ms per
search, and the whole search's p50 / p99 beside the floor's p50.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

STAGES: dict[str, list[float]] = defaultdict(list)
CURRENT: dict[str, float] = defaultdict(float)


def timed(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            CURRENT[name] += (time.perf_counter() - t) * 1000
    return wrapper


def wrap(obj, attr: str, name: str) -> None:
    object.__setattr__(obj, attr, timed(name, getattr(obj, attr)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("../shared/corpus"))
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    from skillshelf import Library
    from skillshelf.search import fusion, pipeline

    qs = [json.loads(line)["query"] for line in (args.corpus / "requests-dev.jsonl").read_text().splitlines()
          if line.strip()]
    lib = Library(home=args.home, roots=None, auto_sync=False)
    lib.search(qs[0], log=False)
    emb, _ = lib._embedder_state()
    sr = lib.searcher
    vi = sr.state.vindex
    n = len(sr.state.meta.rowids)
    # the floor's matrix: the library's metadata vectors as float32 (an exact pass)
    mat = vi.vectors(np.arange(n)) if vi is not None else np.zeros((n, 384), dtype=np.float32)
    mat = np.ascontiguousarray(mat, dtype=np.float32)

    wrap(lib, "_maybe_sync", "maybe_sync")
    counter = lib._usage.recent_counter
    lib._usage.recent_counter = timed("recency: recent_counter",
                                      lambda *a, **kw: timed("recency: counts (in the pipeline)", counter(*a, **kw)))
    wrap(lib._usage, "worked_latest", "recency: worked_latest")
    wrap(lib.supply, "hidden_ids", "held: hidden_ids")
    wrap(lib.supply, "mark", "audit: mark hits")
    wrap(sr, "_ensure_meta", "snapshot")
    wrap(sr.state, "allowed", "filter mask (allowed)")
    wrap(sr, "_ensure_vectors", "vector state")
    wrap(emb, "embed", "query embedding (thread)")
    wrap(sr, "lexical", "lexical")
    wrap(sr._lex, "field_matches", "ranker features: field_matches")
    wrap(sr, "dense", "dense scoring")
    wrap(sr, "_features", "ranker features (all)")
    wrap(sr.ranker, "probability", "ranker probability")
    wrap(sr.learner, "evidence", "learning evidence")
    wrap(sr, "rows", "hit rows (store read)")
    wrap(sr._hits, "shown_copy", "hits: shown copy")
    wrap(sr._hits, "hit", "hits: build")
    wrap(sr, "_weigh", "confidence (_weigh)")
    pipeline.rrf = timed("fusion (rrf)", pipeline.rrf)
    pipeline.ranking = type("R", (), {})()
    pipeline.ranking.recent_groups = timed("recency: recent_groups", fusion.recent_groups)
    pipeline.ranking.mmr = timed("diversify (mmr)", fusion.mmr)
    pipeline.text_language = timed("query language", pipeline.text_language)

    # embed wait: time in the pipeline's Future.result for the query vector
    import concurrent.futures as cf
    orig_result = cf.Future.result

    def result(self, timeout=None):
        t = time.perf_counter()
        try:
            return orig_result(self, timeout)
        finally:
            CURRENT["embed/body wait (futures)"] += (time.perf_counter() - t) * 1000
    cf.Future.result = result

    total, floor = [], []
    for _ in range(args.rounds):
        for q in qs:
            t = time.perf_counter()
            v = emb.embed(q)
            _ = mat @ v
            floor.append((time.perf_counter() - t) * 1000)
            CURRENT.clear()
            t = time.perf_counter()
            lib.search(q, limit=10, log=False)
            total.append((time.perf_counter() - t) * 1000)
            for k, v in CURRENT.items():
                STAGES[k].append(v)
    cf.Future.result = orig_result
    m = len(total)
    print(f"{n} skills, {m} searches")
    per = len(qs)
    for r in range(args.rounds):
        lat = total[r * per:(r + 1) * per]
        print(f"round {r + 1}: p50 {np.percentile(lat, 50):.2f} ms  p99 {np.percentile(lat, 99):.2f} ms")
    print(f"{'stage':40} {'mean ms':>8} {'p50 ms':>8}")
    for k, v in sorted(STAGES.items(), key=lambda kv: -sum(kv[1])):
        v = v + [0.0] * (m - len(v))
        print(f"{k:40} {sum(v) / m:8.2f} {statistics.median(v):8.2f}")
    f50 = float(np.percentile(floor, 50))
    print(f"search p50 {np.percentile(total, 50):.2f} ms  p99 {np.percentile(total, 99):.2f} ms;"
          f" floor p50 {f50:.2f} ms; p50/floor {np.percentile(total, 50) / f50:.2f}"
          f" p99/floor {np.percentile(total, 99) / f50:.2f}")


if __name__ == "__main__":
    main()
