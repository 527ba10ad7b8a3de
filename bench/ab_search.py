"""Warm search latency of two source trees of skillshelf over the same library, in one
process, alternating per request, so that both see the same phase of a machine whose speed
drifts.

    python bench/ab_search.py --before OLD/src --home .bench-home [--rounds 5]

The tree measured against (``--before``: the ``src`` folder of another checkout) is copied
into a temporary folder as the package ``skillshelf_before`` (its imports are relative) and
imported beside the installed ``skillshelf``; each opens the library, warms up, then the two
search one request at a time, in turn (the order flips each round). Printed: each tree's p50
and p90 over all searches, and the median of the per-request ratios after / before. Recency
is off (as in bench/quality.py) unless ``--recency``; searches are not logged.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def open_library(module, home: Path, skills: Path, recency: bool = False):
    lib = module.Library(home=home, roots=[skills], auto_sync=False)
    if recency:     # the default settings: the anti-repeat policy reads the home's logged searches
        return lib
    s = dataclasses.replace(lib.config.search, recency_window=0)
    lib.config = dataclasses.replace(lib.config, search=s)
    lib.searcher.s = s
    return lib


def timed(lib, q: str) -> float:
    t = time.perf_counter()
    lib.search(q, log=False)
    return (time.perf_counter() - t) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the src folder of the tree measured against")
    ap.add_argument("--corpus", type=Path, default=Path("../shared/corpus"))
    ap.add_argument("--home", type=Path, default=Path(".bench-home"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--recency", action="store_true",
                    help="keep the recency policy on (measure it on a home with logged searches)")
    args = ap.parse_args()
    qs = [json.loads(line)["query"] for line in (args.corpus / "requests-dev.jsonl").read_text().splitlines()
          if line.strip()]
    skills = (args.corpus / "skills").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(args.before / "skillshelf", Path(tmp) / "skillshelf_before")
        sys.path.insert(0, tmp)
        libs = {"before": open_library(importlib.import_module("skillshelf_before"), args.home, skills, args.recency),
                "after": open_library(importlib.import_module("skillshelf"), args.home, skills, args.recency)}
        for lib in libs.values():      # warm: the first pass loads the state and the model
            for q in qs:
                lib.search(q, log=False)
        times: dict[str, list[float]] = {"before": [], "after": []}
        ratios = []
        for r in range(args.rounds):
            for q in qs:
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                got = {k: timed(libs[k], q) for k in order}
                for k, v in got.items():
                    times[k].append(v)
                ratios.append(got["after"] / got["before"])
    for k, v in times.items():
        v = sorted(v)
        print(f"{k:7} p50 {statistics.median(v):.2f} ms  p90 {v[int(0.9 * len(v))]:.2f} ms  ({len(v)} searches)")
    print(f"median per-request ratio after/before: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
