"""Warm search latency of two source trees of skillshelf over the same library, alternating
per request, so that both see the same phase of a machine whose speed drifts.

    python bench/ab_search.py --before OLD/src --after src --home .bench-home [--rounds 5]

Each tree runs in its own process (``PYTHONPATH`` set to it), opens the library, warms up,
then searches one request at a time when told to; the driver alternates the two per request
(the order flips each round). Printed: each tree's p50 and p90 over all searches, and the
median of the per-request ratios after / before. Recency is off (the same as
bench/quality.py); searches are not logged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import dataclasses, json, sys, time
from skillshelf import Library
lib = Library(home=sys.argv[1], roots=[sys.argv[2]], auto_sync=False)
s = dataclasses.replace(lib.config.search, recency_window=0)
lib.config = dataclasses.replace(lib.config, search=s)
lib.searcher.s = s
for line in sys.stdin:
    q = json.loads(line)
    t = time.perf_counter()
    lib.search(q, log=False)
    print(json.dumps((time.perf_counter() - t) * 1000), flush=True)
"""


def start(src: Path, home: Path, skills: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(src.resolve()))
    return subprocess.Popen([sys.executable, "-c", WORKER, str(home), str(skills)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def ask(p: subprocess.Popen, q: str) -> float:
    p.stdin.write(json.dumps(q) + "\n")
    p.stdin.flush()
    return float(p.stdout.readline())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the src folder of the tree measured first")
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, default=Path("../shared/corpus"))
    ap.add_argument("--home", type=Path, default=Path(".bench-home"))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    qs = [json.loads(line)["query"] for line in (args.corpus / "requests-dev.jsonl").read_text().splitlines()
          if line.strip()]
    skills = (args.corpus / "skills").resolve()
    procs = {"before": start(args.before, args.home, skills), "after": start(args.after, args.home, skills)}
    for p in procs.values():       # warm: the first pass loads the state and the model
        for q in qs:
            ask(p, q)
    times: dict[str, list[float]] = {"before": [], "after": []}
    ratios = []
    for r in range(args.rounds):
        for q in qs:
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            got = {k: ask(procs[k], q) for k in order}
            for k, v in got.items():
                times[k].append(v)
            ratios.append(got["after"] / got["before"])
    for p in procs.values():
        p.stdin.close()
        p.wait()
    for k, v in times.items():
        v = sorted(v)
        print(f"{k:7} p50 {statistics.median(v):.2f} ms  p90 {v[int(0.9 * len(v))]:.2f} ms  ({len(v)} searches)")
    print(f"median per-request ratio after/before: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
