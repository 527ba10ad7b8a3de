"""Team search against local search, request by request, in one process.

    python bench/team_search_ab.py --work DIR [--rounds 4] [--profile] [--root ROOT --lexical]

``bench/team_search.py`` times the two libraries in alternating rounds of every request; on a
machine whose speed drifts from one minute to the next, a round's phase decides the ratio.
Here the two search the same request one after the other (the order flips each round) and the
ratio is taken per request: the median of team / local is the figure. Both libraries are the
ones ``bench/team_search.py`` builds under ``--work`` (``local`` and ``team``: the same root, the
bundled model); a home copied there beforehand is used as it is. Every search is logged, as an
agent's search is (``client="bench"``): the local library writes its usage log in SQLite, the
team library in the team store. ``--profile``: cProfile of the team searches, the functions
whose own time is largest.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from team_search import pct, requests

from skillshelf import Library


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--root", type=Path, default=None, help="the skills root (default: CORPUS/skills)")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--lexical", action="store_true",
                    help="no model (embedder none): for a large root indexed without vectors")
    args = ap.parse_args()
    root = args.root or args.corpus / "skills"
    reqs = requests(args.corpus)

    import pgcluster

    stack = contextlib.ExitStack()
    url = stack.enter_context(pgcluster.database("bench/team_search_ab.py"))
    try:
        kw = {"embedder": "none"} if args.lexical else {}
        libs = {"local": Library(home=args.work / "local", roots=[root], auto_sync=False, **kw),
                "team": Library(home=args.work / "team", roots=[root], auto_sync=False, store=url, **kw)}
        for name, lib in libs.items():
            t0 = time.perf_counter()
            rep = lib.sync()
            print(f"{name}: sync {time.perf_counter() - t0:.1f} s ({rep.added} added, {rep.embedded} embedded)",
                  flush=True)
            lib.warm(sync=False)
            for r in reqs:
                lib.search(r, log=False)
        times: dict[str, list[float]] = {"local": [], "team": []}
        ratios = []
        prof = cProfile.Profile() if args.profile else None
        for rnd in range(args.rounds):
            order = ("local", "team") if rnd % 2 == 0 else ("team", "local")
            for r in reqs:
                got = {}
                for name in order:
                    if prof is not None and name == "team":
                        prof.enable()
                    t0 = time.perf_counter()
                    libs[name].search(r, limit=10, client="bench")
                    got[name] = (time.perf_counter() - t0) * 1000
                    if prof is not None and name == "team":
                        prof.disable()
                for name, ms in got.items():
                    times[name].append(ms)
                ratios.append(got["team"] / got["local"])
        for name in ("local", "team"):
            xs = times[name]
            print(f"{name:5}  searches {len(xs)}  p50 {statistics.median(xs):.2f} ms  p99 {pct(xs, 0.99):.2f} ms")
        print(f"median per-request ratio team / local: {statistics.median(ratios):.3f}")
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        for lib in libs.values():
            lib.close()
    finally:
        stack.close()


if __name__ == "__main__":
    main()
