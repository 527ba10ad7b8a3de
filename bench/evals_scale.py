"""`eval --all` at scale: 20 queries for each of 200 skills of the 5.3k corpus, searched as agents search, against
plain search speed. Runs on the home `bench/evals.py` built (a copy of the corpus, indexed with the bundled model).

    python bench/evals_scale.py --home DIR [--skills 200] [--queries 20] [--seed 34] [--json out.json]

The queries are generated from the skills' own text, not written by hand (they measure speed; their recall says
little about quality): for each sampled skill, ten should-trigger queries (its name in words, clauses of its
description, its section headings as requests) and ten should-not ones (five near misses: the description openings
of skills whose names share a word with it, in other folders; five of skills picked at random). They are given
to the evals service in place of eval files (nothing is written into the corpus copy).

Timings over the same queries (batched and unbatched alternated, ``--rounds`` times each, as the load varies):
  batched   `eval --all` as it runs: every query embedded in batches first, each search given its vector;
  unbatched the same run with the batch turned off: each search embeds its own query (as before);
  plain     `Library.search(q, limit=10, log=False)` per query, the way an agent's search runs (for per-query ms);
  and the query embedding alone, in one batch and one at a time.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from skillshelf import Library

WORD = re.compile(r"[a-z0-9]+")


def clauses(text: str) -> list[str]:
    parts = re.split(r"(?<=[.;:!?])\s+|\s+(?:Use (?:this |it )?when|Use for|when)\s+", text)
    return [" ".join(p.split()[:16]).strip(" .;:") for p in parts if len(p.split()) >= 3]


def headings(body: str) -> list[str]:
    out = []
    for line in body.splitlines():
        m = re.match(r"#{2,3}\s+(.+)", line)
        if m and 2 <= len(m.group(1).split()) <= 10:
            out.append(m.group(1).strip(" #*`"))
    return out


def generate(recs: list, sample: list, n: int, rng: random.Random) -> dict[str, list]:
    """skill id -> n queries (half should trigger, half should not)."""
    by_word: dict[str, list] = {}
    for r in recs:
        for w in set(WORD.findall(r.name.lower())):
            if len(w) > 3:
                by_word.setdefault(w, []).append(r)
    out: dict[str, list] = {}
    for rec in sample:
        half = n // 2
        pos = [" ".join(WORD.findall(rec.name.lower()))]
        pos += clauses(rec.description)
        pos += [f"help me with {h.lower()}" for h in headings(rec.body)]
        pos = list(dict.fromkeys(q for q in pos if q))
        rng.shuffle(pos)
        while len(pos) < half:       # a short description: windows of its words
            words = rec.description.split()
            at = rng.randrange(max(len(words) - 6, 1))
            pos.append(" ".join(words[at:at + 8]))
        near = [r for w in set(WORD.findall(rec.name.lower())) for r in by_word.get(w, [])
                if r.name != rec.name and Path(r.path).parent.parent != Path(rec.path).parent.parent]
        rng.shuffle(near)
        others = near[:half // 2] + rng.sample(recs, half)
        neg = []
        for r in others:
            if r.name == rec.name:
                continue
            cs = clauses(r.description) or [r.description[:80]]
            neg.append(cs[0])
        neg = list(dict.fromkeys(neg))[:half]
        out[rec.id] = ([SimpleNamespace(query=q, should_trigger=True, split="eval") for q in pos[:half]]
                       + [SimpleNamespace(query=q, should_trigger=False, split="eval") for q in neg])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--skills", type=int, default=200)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--plain", type=int, default=1000, help="queries timed through plain search")
    ap.add_argument("--rounds", type=int, default=2, help="batched and unbatched runs, alternated (the load varies)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    lib = Library(home=args.home, auto_sync=False)
    rng = random.Random(args.seed)
    recs = list(lib.list(include_inactive=False))
    sample = rng.sample(recs, args.skills)
    sets = generate(recs, sample, args.queries, rng)
    nq = sum(len(v) for v in sets.values())
    print(f"{lib.count()} skills; {len(sets)} sampled, {nq} queries "
          f"({sum(q.should_trigger for v in sets.values() for q in v)} should trigger)", file=sys.stderr)

    ids = set(sets)

    by_folder = {str(Path(r.folder)): sets[r.id] for r in sample}

    def generated(folder):      # the generated sets in place of eval files; every other skill keeps none
        qs = by_folder.get(str(Path(folder)))
        return SimpleNamespace(present=qs is not None, queries=qs or [], findings=[])

    lib.evals._authored = generated
    lib.evals.evidence.worked_names = lambda: set()     # the bench home has no usage log to learn from
    lib.search("warm the model and the search state", log=False)

    embed = lib.evals._embed
    out: dict[str, float | int] = {"skills": lib.count(), "sampled": len(sets), "queries": nq}
    rounds = [(f"{name}{i}", batch) for i in range(1, args.rounds + 1)
              for name, batch in (("batched", embed), ("unbatched", None))]
    for label, batch in rounds:
        lib.evals._embed = batch
        t0 = time.perf_counter()
        run = lib.evals.run([], everything=True, k=args.k)
        wall = time.perf_counter() - t0
        assert {r.id for r in run.results} == ids, "every sampled skill evaluated"
        searches = sum(len(v) for v in sets.values())
        out[f"{label}_s"] = round(wall, 2)
        out[f"{label}_ms_per_query"] = round(wall * 1000 / searches, 2)
        pos = sum(r.positives for r in run.results)
        found = sum(r.found for r in run.results)
        neg = sum(r.negatives for r in run.results)
        fal = sum(len(r.false_triggers) for r in run.results)
        print(f"{label}: eval --all {wall:.1f} s, {wall * 1000 / searches:.1f} ms per query; recall@{args.k} "
              f"{found}/{pos} = {found / pos:.2f}, false triggers {fal}/{neg} = {fal / neg:.2f}, "
              f"{sum(r.passed for r in run.results)} of {len(run.results)} pass, {len(run.collisions)} collisions",
              file=sys.stderr)
        out[f"{label}_recall"] = round(found / pos, 3)
        out[f"{label}_false"] = round(fal / neg, 3)
        out["collisions"] = len(run.collisions)
    lib.evals._embed = embed

    # the embedding alone, batched and one by one, over the same queries
    emb = lib.model.state()[0]
    qs = [q.query for v in sets.values() for q in v]
    t0 = time.perf_counter()
    emb.embed_batch(qs)
    out["embed_batch_ms_per_query"] = round((time.perf_counter() - t0) * 1000 / len(qs), 2)
    t0 = time.perf_counter()
    for q in qs[:500]:
        emb.embed(q)
    out["embed_one_ms_per_query"] = round((time.perf_counter() - t0) * 1000 / 500, 2)

    # plain search against a search given its vector, paired query by query (each pair in a random order), so
    # the load on a shared machine falls on both alike
    plain = rng.sample(qs, min(args.plain, len(qs)))
    vecs = dict(zip(plain, emb.embed_batch(plain)))
    own: list[float] = []
    given: list[float] = []
    for q in plain:
        for with_vector in rng.sample([False, True], 2):
            t = time.perf_counter()
            lib.search(q, limit=10, log=False, query_vector=vecs[q] if with_vector else None)
            (given if with_vector else own).append((time.perf_counter() - t) * 1000)
    for label, times in (("plain", own), ("given_vector", given)):
        out[f"{label}_p50_ms"] = round(statistics.median(times), 2)
        out[f"{label}_mean_ms"] = round(statistics.fmean(times), 2)
        out[f"{label}_p95_ms"] = round(sorted(times)[int(len(times) * 0.95)], 2)
    out["paired_saving_p50_ms"] = round(statistics.median(a - b for a, b in zip(own, given)), 2)
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
