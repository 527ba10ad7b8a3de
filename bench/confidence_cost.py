"""What the confidence model costs per search: the same library, the same process, each
request searched twice in alternation -- once as shipped, once with the per-hit coverage and
the request's signals switched off (the cosine rule decides ``match``, as before the model).
Alternating in one process keeps other load on the machine out of the difference.

    python bench/confidence_cost.py --home .bench-home [--rounds 3]
    python bench/confidence_cost.py --home .bench-home-speed-scaled     # the 100k copy bench/speed.py builds
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from skillshelf import Library  # noqa: E402
from skillshelf import search as searchmod  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    reqs = [json.loads(x)["query"] for x in (args.corpus / "requests-dev.jsonl").read_text().splitlines() if x]
    lib = Library(home=args.home, roots=[], auto_sync=False)
    s = lib.searcher
    shipped_weigh, shipped_signals = s._weigh_matches, s._signals

    def cosine_rule(hits, shown, meta, terms):
        for h in hits:
            h.match = "likely" if h.score >= searchmod.CONFIDENT_COSINE else "weak"
        return [0.0] * len(hits)

    def set_model(on: bool) -> None:
        s._weigh_matches = shipped_weigh if on else cosine_rule
        s._signals = shipped_signals if on else (lambda *a, **k: {})

    cover_ms: list[float] = []
    real_cover = s._lex.coverage

    def timed_cover(*a):
        t = time.perf_counter()
        out = real_cover(*a)
        cover_ms.append((time.perf_counter() - t) * 1000)
        return out

    for q in reqs:                       # warm-up: caches, vectors, the model
        lib.search(q, limit=10, log=False)
    s._lex.coverage = timed_cover
    on, off = [], []
    for r in range(args.rounds):
        for i, q in enumerate(reqs):
            order = (True, False) if (i + r) % 2 == 0 else (False, True)
            for model in order:
                set_model(model)
                t = time.perf_counter()
                lib.search(q, limit=10, log=False)
                (on if model else off).append((time.perf_counter() - t) * 1000)
    set_model(True)
    a, b = np.array(on), np.array(off)
    print(f"{lib.count()} skills, {len(a)} searches each way, alternating in one process")
    print(f"  as shipped:       p50 {np.median(a):.2f} ms, p99 {np.percentile(a, 99):.2f} ms")
    print(f"  cosine rule only: p50 {np.median(b):.2f} ms, p99 {np.percentile(b, 99):.2f} ms")
    print(f"  difference of p50: {np.median(a) - np.median(b):+.2f} ms ({(np.median(a) / np.median(b) - 1) * 100:+.1f} %)")
    print(f"  coverage itself: p50 {np.median(cover_ms):.3f} ms, p99 {np.percentile(cover_ms, 99):.3f} ms")


if __name__ == "__main__":
    main()
