"""The anti-repeat (recency) policy on the labelled corpus requests: does asking the same
request again change its answer, and how much does the policy spread a run of different
requests over the collection?

    python bench/repeat.py --corpus ../shared/corpus --home .bench-home [--json out.json]

Each scenario runs on its own copy of the home's database (queries are logged, as a real
session logs them; the home itself is left untouched) with the default search settings
unless said otherwise:

  repeat      every request asked ``--asks`` times in a row (logged, limit 10), in the
              file's order; counts the requests whose top 3 (skill ids) differ between asks
  spread-on   every request asked once, in order, policy on (recency window 10, 0.15)
  spread-off  the same with the policy off (recency_window = 0)

For the spread runs: distinct skills (ids, and names: copies counted once) in the top 5 and
top 10 over the whole run, and the run's distinct nDCG@10 / Hit@5 (bench/quality.py's
measures; gap requests left out), i.e. what the policy costs in quality for what it spreads.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from skillshelf import Library

_spec = importlib.util.spec_from_file_location("quality", Path(__file__).with_name("quality.py"))
quality = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(quality)


def copy_home(src_db: Path, dest: Path) -> None:
    """A consistent copy of the database (SQLite's backup API: WAL included)."""
    dest.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src_db) as a, sqlite3.connect(dest / "skillshelf.db") as b:
        a.backup(b)


def open_copy(args, tmp: Path, name: str, **search) -> Library:
    home = tmp / name
    copy_home(args.home / "skillshelf.db", home)
    lib = Library(home=home, roots=[args.skills], auto_sync=False)
    if search:
        s = dataclasses.replace(lib.config.search, **search)
        lib.config = dataclasses.replace(lib.config, search=s)
        lib.searcher.s = s
    return lib


def run_repeat(lib: Library, reqs: list[dict], asks: int) -> dict:
    changed, examples = 0, []
    for r in reqs:
        tops = [[h.id for h in lib.search(r["query"], limit=10).hits[:3]] for _ in range(asks)]
        if any(t != tops[0] for t in tops[1:]):
            changed += 1
            if len(examples) < 5:
                examples.append({"qid": r["qid"], "tops": tops})
    return {"requests": len(reqs), "asks": asks, "top3_changed": changed, "examples": examples}


def run_spread(lib: Library, reqs: list[dict], corpus_id, names: dict[str, str]) -> dict:
    ids5, ids10, keys5, keys10, rows = set(), set(), set(), set(), []
    for r in reqs:
        hits = lib.search(r["query"], limit=10).hits
        ids5 |= {h.id for h in hits[:5]}
        ids10 |= {h.id for h in hits}
        keys5 |= {quality.name_key(h.name) for h in hits[:5]}
        keys10 |= {quality.name_key(h.name) for h in hits}
        if r["kind"] != "gap":
            rows.append(quality.measure([corpus_id(h.path) for h in hits], r["relevant"], names))
    m = quality.summarize(rows, None)
    return {"distinct_ids_top5": len(ids5), "distinct_ids_top10": len(ids10),
            "distinct_names_top5": len(keys5), "distinct_names_top10": len(keys10),
            "dndcg10": m["dndcg10"], "hit5": m["hit5"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--asks", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    args.skills = (args.corpus / "skills").resolve()
    reqs = quality.load_requests(args.corpus)

    t0 = time.perf_counter()
    base = Library(home=args.home, roots=[args.skills], auto_sync=False)
    base.sync()
    names = {r.path: r.name for r in base.list()}
    base.close()

    def corpus_id(path: str) -> str:
        return Path(path).resolve().relative_to(args.skills).as_posix()

    names = {corpus_id(p): n for p, n in names.items()}
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="skillshelf-repeat-") as tmp:
        tmp = Path(tmp)
        lib = open_copy(args, tmp, "repeat")
        out["repeat"] = run_repeat(lib, reqs, args.asks)
        lib.close()
        lib = open_copy(args, tmp, "spread-on")
        out["spread-on"] = run_spread(lib, reqs, corpus_id, names)
        lib.close()
        lib = open_copy(args, tmp, "spread-off", recency_window=0)
        out["spread-off"] = run_spread(lib, reqs, corpus_id, names)
        lib.close()
    rep = out["repeat"]
    print(f"repeat: {rep['top3_changed']} of {rep['requests']} requests changed their top 3 over "
          f"{rep['asks']} asks in a row")
    cols = ["distinct_ids_top5", "distinct_ids_top10", "distinct_names_top5", "distinct_names_top10", "dndcg10", "hit5"]
    print(f"{'run':12} " + " ".join(f"{c:>20}" for c in cols))
    for k in ("spread-on", "spread-off"):
        print(f"{k:12} " + " ".join(f"{out[k][c]:>20}" for c in cols))
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
