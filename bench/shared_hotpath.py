"""Warm per-call latency of what every search asks of the shared state, in the local SQLite
store and in the team store (PostgreSQL over loopback): ``recent_counts`` (the anti-repeat
window), ``worked_latest`` (which recent hits last worked), ``log_query`` (the query and its
recommendations), and ``learning.state`` (whether the learned evidence must be reloaded).

Both stores are filled with the same log first (``--queries`` queries of 10 recommendations,
an outcome for every fourth). Then rounds alternate between the two stores (SQLite first in
even rounds, PostgreSQL first in odd ones), each round timing ``--calls`` calls of each method
after a few warm-up calls; the p50 and p90 are over every timed call.

    python bench/shared_hotpath.py                     # a throwaway PostgreSQL cluster
    SKILLSHELF_TEST_PG=postgresql://… python bench/shared_hotpath.py   # an existing server
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from skillshelf.store import Store
from skillshelf.store.learning import LearningMemory
from skillshelf.store.usage import UsageLog

AT = "2026-11-01T09:00:00+00:00"


def fill(log, n: int) -> None:
    for i in range(n):
        recs = [(f"r:skill-{(i * 7 + k) % 5000}", f"skill-{(i * 7 + k) % 5000}", 1.0 - k / 10) for k in range(10)]
        qid = log.log_query(at=AT, text=f"request {i}", text_hash=hashlib.sha256(str(i % 900).encode()).hexdigest(),
                            mode="find", filters={}, client="bench", confident=True, degraded=False, n_hits=10,
                            latency_ms=5.0, recommended=recs)
        if i % 4 == 0:
            log.log_outcome(at=AT, skill_id=recs[0][0], name=recs[0][1], worked=i % 8 == 0, note="",
                            query_id=qid, client="bench")


def calls(log, memory):
    ids = [f"r:skill-{k}" for k in range(0, 100, 10)]
    recs = [(sid, sid[2:], 0.5) for sid in ids]
    skip = hashlib.sha256(b"this request").hexdigest()
    n = iter(range(10**9))
    # each logged request is a new one (a search logs its own request after asking for the
    # window without it): repeats of the skipped one would stretch the window's read
    return {
        "recent_counts": lambda: log.recent_counts(10, skip_hash=skip),
        "worked_latest": lambda: log.worked_latest(ids),
        "log_query": lambda: log.log_query(at=AT, text="a request", text_hash=f"h{next(n)}", mode="find", filters={},
                                           client="bench", confident=True, degraded=False, n_hits=10,
                                           latency_ms=5.0, recommended=recs),
        "learning.state": memory.state,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()

    import pgcluster

    from skillshelf.store.pg_learning import PgLearningMemory
    from skillshelf.store.pg_usage import PgUsageLog
    from skillshelf.store.postgres import PgStore

    stack = contextlib.ExitStack()   # a new database: SKILLSHELF_TEST_PG's server, or a throwaway cluster
    url = stack.enter_context(pgcluster.database("bench/shared_hotpath.py"))
    tmp = Path(tempfile.mkdtemp(prefix="skillshelf-hotpath-"))
    local = Store(tmp / "index.db")
    pg = PgStore(url)
    try:
        stores = {"sqlite": calls(UsageLog(local), LearningMemory(local)),
                  "postgres": calls(PgUsageLog(pg), PgLearningMemory(pg))}
        t0 = time.perf_counter()
        fill(UsageLog(local), args.queries)
        fill(PgUsageLog(pg), args.queries)
        pg.execute("ANALYZE")
        print(f"filled both with {args.queries:,} queries in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        times: dict[tuple[str, str], list[float]] = {}
        for rnd in range(args.rounds):
            order = ["sqlite", "postgres"] if rnd % 2 == 0 else ["postgres", "sqlite"]
            for kind in order:
                for name, fn in stores[kind].items():
                    for _ in range(20):
                        fn()
                    got = times.setdefault((kind, name), [])
                    for _ in range(args.calls):
                        t = time.perf_counter()
                        fn()
                        got.append((time.perf_counter() - t) * 1000)
        print(f"{'call':<16}{'SQLite p50':>12}{'p90':>9}{'PostgreSQL p50':>16}{'p90':>9}{'ratio p50':>11}")
        for name in stores["sqlite"]:
            s, p = times[("sqlite", name)], times[("postgres", name)]
            q = lambda xs, f: statistics.quantiles(xs, n=100)[f - 1]
            print(f"{name:<16}{statistics.median(s):>10.3f}ms{q(s, 90):>7.3f}ms"
                  f"{statistics.median(p):>14.3f}ms{q(p, 90):>7.3f}ms{statistics.median(p) / statistics.median(s):>10.1f}x")
        print(f"({args.rounds} alternating rounds x {args.calls} calls each, after {args.queries:,} logged queries)")
    finally:
        pg.close()
        local.close()
        stack.close()


if __name__ == "__main__":
    main()
