"""Trigger evals on the real corpus: `skillshelf eval --all` over a copy of every collection, ten skills of one
collection carrying hand-written `evals/eval_queries.json` files (bench/evals/<collection>/<skill>/), each query
searched among all 5.3k skills with the bundled model, as agents search.

    python bench/evals.py --corpus ../shared/corpus [--home DIR] [--k 5] [--json out.json]

Prints, per skill, recall@k of its should-trigger queries, its false triggers, and what came first on each miss;
then the time per query and what judging a change costs (the index copied, the skill re-indexed in the copy,
its evals searched twice)."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

from skillshelf import Library

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=HERE.parent.parent / "shared" / "corpus")
    ap.add_argument("--home", type=Path, default=Path(".bench-home-evals"))
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    # the corpus is read-only: a copy of it holds the eval files (kept between runs with its index)
    copy = args.home.parent / (args.home.name + "-corpus") / "skills"
    if not copy.is_dir():
        shutil.copytree(args.corpus / "skills", copy, symlinks=True)
    placed = []
    for f in sorted((HERE / "evals").glob("*/*/eval_queries.json")):
        collection, skill = f.parts[-3], f.parts[-2]
        target = next((copy / collection).rglob(f"{skill}/SKILL.md")).parent
        (target / "evals").mkdir(exist_ok=True)
        shutil.copyfile(f, target / "evals" / "eval_queries.json")
        placed.append(skill)

    lib = Library(home=args.home, roots=[copy], auto_sync=False)
    t0 = time.perf_counter()
    lib.sync()
    print(f"index: {lib.count()} skills, sync {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    lib.search("warm the model and the search state", log=False)

    times: list[float] = []
    search = lib.evals._search

    def timed(q: str, k: int, vector=None) -> list:
        t = time.perf_counter()
        hits = search(q, k) if vector is None else search(q, k, vector)
        times.append((time.perf_counter() - t) * 1000)
        return hits

    lib.evals._search = timed
    t0 = time.perf_counter()
    run = lib.evals.run([], everything=True, k=args.k)
    total = time.perf_counter() - t0
    lib.evals._search = search
    rows = [r for r in run.results if r.source == "authored"]
    print(f"| skill | recall@{args.k} | false triggers | missed (first instead) |")
    print("|---|---|---|---|")
    for r in rows:
        missed = "; ".join(f"{m.query[:50]!r} ({', '.join(m.first[:2])})" for m in r.misses) or "-"
        false = ", ".join(repr(m.query[:40]) for m in r.false_triggers) or "-"
        print(f"| {r.name} | {r.found}/{r.positives} | {len(r.false_triggers)}/{r.negatives} {false} | {missed} |")
    pos = sum(r.positives for r in rows)
    found = sum(r.found for r in rows)
    neg = sum(r.negatives for r in rows)
    fal = sum(len(r.false_triggers) for r in rows)
    print(f"\n{len(rows)} skills, {pos + neg} queries: recall@{args.k} {found}/{pos} = {found / pos:.2f}, "
          f"false triggers {fal}/{neg} = {fal / neg:.2f}; {sum(r.passed for r in rows)} pass the floors")
    print(f"collisions: {run.collisions}")
    print(f"eval --all: {total:.1f} s over {lib.count()} skills ({run.without_evals} without evals); "
          f"{len(times)} searches, p50 {statistics.median(times):.1f} ms, "
          f"p95 {sorted(times)[int(len(times) * 0.95)]:.1f} ms")

    # what judging a change costs: the skill's own text and one more line (re-indexed and embedded in the copy)
    rec = lib.get(rows[0].id)
    text = Path(rec.path).read_text(encoding="utf-8") + "\nCheck the output before you share it.\n"
    t0 = time.perf_counter()
    rep = lib.evals.judge_change(rec.id, text)
    judge = time.perf_counter() - t0
    db_mb = lib.config.db_path.stat().st_size / 1e6
    print(f"judging a FIX of {rec.name}: {judge:.2f} s (index copy of {db_mb:.0f} MB, one skill re-indexed, "
          f"{2 * (rep['before']['of'] + rep['before']['negatives'])} searches): {rep['line']}")
    if args.json:
        args.json.write_text(json.dumps({"run": run.as_dict(), "p50_ms": statistics.median(times),
                                         "total_s": total, "judge_s": judge, "db_mb": db_mb}, indent=2))
    lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
