"""What pruning the team store's change stream costs (``store/pg_changes.py``).

A new database (a throwaway cluster unless SKILLSHELF_TEST_PG is set) gets ``--rows`` change
rows eight days old and the newest 10,000 of the day; then ``prune`` is called as a
server's follower calls it (batches of 5,000, four per call) until nothing is left to delete,
each batch timed, and a call with nothing to delete is timed; then a save's change row is
written while a prune runs beside it, to show that writers do not wait for it.

    python bench/prune.py                 # 1,000,000 old rows
    python bench/prune.py --rows 200000
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from skillshelf.store import pg_changes  # noqa: E402
from skillshelf.store.postgres import PgStore  # noqa: E402


def fill(pg: PgStore, old: int, recent: int) -> None:
    with pg.tx() as conn:
        conn.execute("INSERT INTO changes (kind, key, at) SELECT 'learning', 'k' || g, "
                     "now() - interval '8 days' FROM generate_series(1, %s) g", (old,))
        conn.execute("INSERT INTO changes (kind, key) SELECT 'learning', 'r' || g FROM generate_series(1, %s) g",
                     (recent,))
        conn.execute("ANALYZE changes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="old change rows to prune")
    args = ap.parse_args()

    import pgcluster

    with contextlib.ExitStack() as stack:
        url = stack.enter_context(pgcluster.database("bench/prune.py"))
        pg = PgStore(url)
        stack.callback(pg.close)
        t0 = time.perf_counter()
        fill(pg, args.rows, pg_changes.KEEP)
        print(f"{args.rows:,} old rows and {pg_changes.KEEP:,} recent ones written in "
              f"{time.perf_counter() - t0:.1f} s")

        # one batch per call, timed alone (a call does up to ROUNDS of them)
        times, deleted = [], 0
        while True:
            t0 = time.perf_counter()
            got = pg_changes.prune(pg, rounds=1)
            times.append(time.perf_counter() - t0)
            deleted += got.deleted
            if not got.deleted:
                times.pop()
                break
        t0 = time.perf_counter()
        pg_changes.prune(pg)
        idle = time.perf_counter() - t0
        left = pg.fetchone("SELECT count(*) FROM changes")[0]
        print(f"deleted {deleted:,} rows in {len(times)} batches of up to {pg_changes.BATCH:,}: "
              f"batch p50 {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms; "
              f"{left:,} rows left")
        print(f"a call with nothing to delete: {idle * 1000:.1f} ms")

        # a writer beside a prune: refill, then time change rows written while batches run
        fill(pg, 200_000, 0)
        stop = threading.Event()

        def pruning() -> None:
            while not stop.is_set() and pg_changes.prune(pg, rounds=1).deleted:
                pass

        worker = threading.Thread(target=pruning)
        worker.start()
        waits = []
        while worker.is_alive() and len(waits) < 200:
            t0 = time.perf_counter()
            with pg.tx() as conn:
                conn.execute("INSERT INTO changes (kind, key) VALUES ('skill', 'bench')")
            waits.append(time.perf_counter() - t0)
        stop.set()
        worker.join()
        print(f"{len(waits)} change rows written while pruning: p50 {statistics.median(waits) * 1000:.1f} ms, "
              f"max {max(waits) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
