"""Change-to-visible latency across two servers of one team store: a skill saved through
server A, how long from its commit until a search on server B finds it; a skill deprecated
through A, how long until B's search no longer shows it.

Two server processes with their own homes on one PostgreSQL database (a throwaway cluster, or
``SKILLSHELF_TEST_PG``'s server), each a library built as the facade builds team mode. The
store holds ``--skills`` skills first (committed straight into it, as ``migrate-store`` would);
each server brings them in and indexes them as it starts. Each of ``--saves`` rounds tells B
what to look for, saves one new skill through A (ARCHIVE), and B searches every ``--poll`` ms
until the skill is among its hits; every ``--every``-th round also deprecates that skill
through A and B waits until its search no longer shows it. The latency runs from the moment
A's transaction committed to the moment B's search answered (both read the system's monotonic
clock); the time A's whole call took is shown beside it.

    python bench/team.py                                   # a throwaway PostgreSQL cluster
    python bench/team.py --saves 50 --skills 1000 --embedder minilm
    SKILLSHELF_TEST_PG=postgresql://… python bench/team.py  # an existing server
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

WORDS = ("cache", "widget", "queue", "ledger", "router", "parser", "tensor", "bundle", "socket", "schema")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]


def seed(url: str, n: int) -> None:
    """``n`` skills committed straight into the team store."""
    from skillshelf.store.pg_workspace import NEW, PgWorkspace
    from skillshelf.store.postgres import PgStore

    pg = PgStore(url)
    ws = PgWorkspace(pg)
    try:
        for i in range(n):
            w = WORDS[i % len(WORDS)]
            text = (f"---\nname: base-{i}\ndescription: Keep the {w} of service {i} healthy under load\n"
                    f"metadata:\n  version: '1'\n---\n\n## Solution\n\nTune the {w} of service {i}.\n")
            ws.commit(f"base-{i}", text.encode(), 1, base=NEW)
    finally:
        ws.close()
        pg.close()


def server_b(url: str, home: str, embedder: str, poll: float) -> None:
    """B: reads ``find|gone NAME QUERY`` lines, answers with the monotonic time its search
    first showed (or stopped showing) the skill."""
    from teamlib import close, team_library

    t0 = time.monotonic()
    lib = team_library(Path(home), url, embedder=embedder)
    lib.warm(sync=False)
    print(json.dumps({"ready": time.monotonic() - t0}), flush=True)
    for line in sys.stdin:
        what, name, query = line.rstrip("\n").split(" ", 2)
        deadline = time.monotonic() + 30
        at = None
        while time.monotonic() < deadline:
            shown = any(h.name == name for h in lib.search(query, log=False, limit=5).hits)
            if shown == (what == "find"):
                at = time.monotonic()
                break
            time.sleep(poll)
        print(json.dumps({"at": at}), flush=True)
    close(lib)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--saves", type=int, default=50)
    ap.add_argument("--skills", type=int, default=1000, help="skills in the team store before the rounds")
    ap.add_argument("--every", type=int, default=2, help="a deprecation every this many rounds")
    ap.add_argument("--poll", type=float, default=5.0, help="ms between B's searches while waiting")
    ap.add_argument("--embedder", default="minilm", choices=("minilm", "fake", "none"))
    ap.add_argument("--role", default="main", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--home", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "b":
        server_b(args.url, args.home, args.embedder, args.poll / 1000)
        return

    import pgcluster
    from teamlib import close, team_library

    stack = contextlib.ExitStack()   # a new database: SKILLSHELF_TEST_PG's server, or a throwaway cluster
    url = stack.enter_context(pgcluster.database("bench/team.py"))
    tmp = Path(tempfile.mkdtemp(prefix="skillshelf-team-bench-"))
    b = None
    try:
        seed(url, args.skills)
        t0 = time.monotonic()
        a = team_library(tmp / "a", url, embedder=args.embedder)
        start_a = time.monotonic() - t0
        b = subprocess.Popen([sys.executable, __file__, "--role", "b", "--url", url, "--home", str(tmp / "b"),
                              "--embedder", args.embedder, "--poll", str(args.poll)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        start_b = json.loads(b.stdout.readline())["ready"]
        commits: list[float] = []
        commit = a._team.store.commit

        def timed(*x, **kw):       # the moment A's transaction committed
            seq = commit(*x, **kw)
            commits.append(time.monotonic())
            return seq

        a._team.store.commit = timed

        def round_trip(what: str, name: str, query: str, change) -> tuple[float | None, float]:
            b.stdin.write(f"{what} {name} {query}\n")
            b.stdin.flush()
            t_call = time.monotonic()
            change()
            took = time.monotonic() - t_call
            at = json.loads(b.stdout.readline())["at"]
            return (None if at is None else at - commits[-1]), took

        rng = random.Random(7)
        seen, hidden, calls_save, calls_dep, missed = [], [], [], [], 0
        for i in range(args.saves):
            token = "".join(rng.choice(string.ascii_lowercase) for _ in range(12))    # one word, nowhere else
            name, query = f"fresh-{i}", f"{token} quasar handling"
            lat, took = round_trip("find", name, query, lambda name=name, token=token: a.save(
                "ARCHIVE", name=name, description=f"Handle {token} quasar events in the ingest path",
                body=f"## Solution\n\nDrain the {token} quasar queue first.\n"))
            calls_save.append(took)
            if lat is None:
                missed += 1
            else:
                seen.append(lat)
            if args.every and i % args.every == 0:
                lat, took = round_trip("gone", name, query, lambda name=name: a.deprecate(name, "bench: superseded"))
                calls_dep.append(took)
                if lat is None:
                    missed += 1
                else:
                    hidden.append(lat)
        b.stdin.close()
        b.wait(timeout=60)
        close(a)
    finally:
        if b is not None and b.poll() is None:
            b.kill()
        stack.close()

    def line(what: str, xs: list[float], calls: list[float]) -> str:
        if not xs:
            return f"{what}: no samples"
        return (f"{what}: n={len(xs)}  from A's commit p50 {statistics.median(xs) * 1000:.0f} ms, "
                f"p99 {pct(xs, 99) * 1000:.0f} ms, max {max(xs) * 1000:.0f} ms  (A's call took p50 "
                f"{statistics.median(calls) * 1000:.0f} ms)")

    print(f"team store: 2 server processes, {args.skills} skills before, embedder {args.embedder}, "
          f"B searched every {args.poll:g} ms")
    print(f"start (the store brought into an empty home, then the first index): A {start_a:.1f} s, B {start_b:.1f} s")
    print(line("saved through A, found by B's search", seen, calls_save))
    print(line("deprecated through A, gone from B's search", hidden, calls_dep))
    print(f"not seen within 30 s: {missed}")


if __name__ == "__main__":
    main()
