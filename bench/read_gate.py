"""What the read gate costs a read: ``Library.read`` for an agent's reader (gated: held or
blocked, and for a pinned collection the bytes served against the pin) against a person's
(which skips the gate), alternating per call over the same skills.

    python bench/read_gate.py --home .bench-home --corpus ../shared/corpus [--skills 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from skillshelf import Library
from skillshelf.access import AGENT, PERSON


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, default=Path(".bench-home"))
    ap.add_argument("--corpus", type=Path, default=Path("../shared/corpus"))
    ap.add_argument("--skills", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    lib = Library(home=args.home, roots=[args.corpus / "skills"], auto_sync=False, embedder="none")
    ids = [r.id for r in lib.list()][:args.skills]
    random.seed(1)
    for i in ids[:50]:                 # warm both paths
        lib.read(i, reader=PERSON)
        lib.read(i, reader=AGENT)
    times: dict[str, list[float]] = {"agent": [], "person": []}
    for rnd in range(args.rounds):
        random.shuffle(ids)
        order = [("agent", AGENT), ("person", PERSON)]
        for i in ids:
            for who, reader in (order if rnd % 2 == 0 else order[::-1]):
                t = time.perf_counter()
                lib.read(i, reader=reader)
                times[who].append((time.perf_counter() - t) * 1000)
    lib.close()

    def q(xs: list[float], p: float) -> float:
        return sorted(xs)[int(p * (len(xs) - 1))]

    for who, xs in times.items():
        print(f"{who:7s} {len(xs):5d} reads  p50 {q(xs, .5):.3f} ms  p90 {q(xs, .9):.3f} ms")


if __name__ == "__main__":
    main()
