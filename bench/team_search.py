"""Warm search latency in team mode against the local SQLite library, on the same skills.

Two libraries index the same read-only root (the 5.3k corpus by default): one local, one on a
team store (PostgreSQL over loopback, a throwaway cluster unless SKILLSHELF_TEST_PG is set).
Both use the bundled model. Then rounds alternate between them (local first in even rounds,
team first in odd ones), each timing every development request once as an agent's logged
search (``log=True``: the team store's usage log is written on every search, as it is in
use). p50 and p99 are over every timed search.

    python bench/team_search.py                          # the corpus, 3 rounds
    python bench/team_search.py --root DIR --rounds 5    # another collection

The first run indexes the corpus twice (about a minute each on 2 cores); the homes are kept
under --work and reused.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from skillshelf import Library  # noqa: E402


def requests(corpus: Path) -> list[str]:
    out = []
    with (corpus / "requests-dev.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append(d.get("request") or d.get("query") or d.get("text"))
    return [r for r in out if r]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("SKILLSHELF_CORPUS", REPO.parent / "shared" / "corpus")))
    ap.add_argument("--root", type=Path, default=None, help="the skills root (default: CORPUS/skills)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "skillshelf-team-search")
    args = ap.parse_args()
    root = args.root or args.corpus / "skills"
    reqs = requests(args.corpus)

    import pgcluster

    stack = contextlib.ExitStack()   # a new database: SKILLSHELF_TEST_PG's server, or a throwaway cluster
    url = stack.enter_context(pgcluster.database("bench/team_search.py"))
    try:
        args.work.mkdir(parents=True, exist_ok=True)
        local = Library(home=args.work / "local", roots=[root], auto_sync=False)
        team = Library(home=args.work / "team", roots=[root], auto_sync=False, store=url)
        for name, lib in (("local", local), ("team", team)):
            t0 = time.perf_counter()
            rep = lib.sync()
            print(f"{name}: sync {time.perf_counter() - t0:.1f} s ({rep.added} added, {rep.embedded} embedded)",
                  flush=True)
            lib.warm(sync=False)
            for r in reqs[:10]:
                lib.search(r, log=False)
        times: dict[str, list[float]] = {"local": [], "team": []}
        for rnd in range(args.rounds):
            order = [("local", local), ("team", team)] if rnd % 2 == 0 else [("team", team), ("local", local)]
            for name, lib in order:
                for r in reqs:
                    t0 = time.perf_counter()
                    lib.search(r, limit=10, client="bench")
                    times[name].append((time.perf_counter() - t0) * 1000)
        for name in ("local", "team"):
            xs = times[name]
            print(f"{name:5}  searches {len(xs)}  p50 {statistics.median(xs):.2f} ms  p99 {pct(xs, 0.99):.2f} ms")
        ratio = statistics.median(times["team"]) / statistics.median(times["local"])
        print(f"team / local p50: {ratio:.2f}x")
        local.close()
        team.close()
    finally:
        stack.close()


if __name__ == "__main__":
    main()
