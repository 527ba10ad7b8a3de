"""What a team server's follower spends indexing one skill another server changed: the index
step for one rewritten workspace folder, as a sync of that folder alone
(``Indexer.sync(only=[folder])``, what the follower does now) and as a whole sync of every
root (``Indexer.sync()``, what it did before), on a library already indexed.

The home given is copied to a temporary folder first (the measurement writes into the copy
only). Each round rewrites one workspace skill's SKILL.md (a new description: one skill to
re-index and re-embed), then times one index step; the two kinds alternate. The embedding
model is loaded before the first round.

    python bench/team_one_change.py --home HOME --root ../shared/corpus/skills
    python bench/team_one_change.py --home HOME --root ../shared/corpus/skills --rounds 20
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="a home with the root already indexed (copied first)")
    ap.add_argument("--root", type=Path, required=True, help="the read-only root the home indexed")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()

    from skillshelf import Library

    with tempfile.TemporaryDirectory(prefix="skillshelf-one-change-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(args.home, home)
        lib = Library(home=home, roots=[args.root.resolve()], auto_sync=False)
        try:
            folder = lib.config.workspace / "bench-one-change"
            folder.mkdir(parents=True, exist_ok=True)

            def change(i: int) -> None:
                (folder / "SKILL.md").write_text(
                    f"---\nname: bench-one-change\ndescription: A skill another server changed, round {i}\n---\n\n"
                    f"## When to Use\n\nWhen round {i} of the benchmark runs.\n", encoding="utf-8")

            change(0)
            first = lib.indexer.sync()           # brings the copy up to date (and indexes the skill)
            lib.indexer.embedder.state()          # the model loaded, as in a running server
            skills = lib.indexer.embedder_status()["skills"]
            times: dict[str, list[float]] = {"only": [], "whole": []}
            for i in range(1, 2 * args.rounds + 1):
                kind = "only" if i % 2 else "whole"
                change(i)
                t0 = time.perf_counter()
                rep = lib.indexer.sync(only=[folder]) if kind == "only" else lib.indexer.sync()
                times[kind].append(time.perf_counter() - t0)
                assert rep.updated == 1, rep.as_dict()
                assert lib.get("bench-one-change").description.endswith(f"round {i}")
            out = {"skills": skills, "first_sync_s": round(first.seconds, 3), "rounds": args.rounds}
            for kind, xs in times.items():
                out[kind] = {"median_ms": round(statistics.median(xs) * 1000, 1),
                             "min_ms": round(min(xs) * 1000, 1), "max_ms": round(max(xs) * 1000, 1)}
            json.dump(out, sys.stdout, indent=2)
            print()
        finally:
            lib.close()


if __name__ == "__main__":
    main()
