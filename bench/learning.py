"""Learning from outcomes: does what the library learns from one wording of a request carry
over to another wording, and leave other requests alone?

    python bench/learning.py --corpus ../shared/corpus --home .bench-home [--seeds 3] [--tries 1]

Works on a copy of the home's database in a temporary folder (the home is untouched).
For each seed:
  1. no history: score the second wordings (requests-dev-paraphrases.jsonl);
  2. replay the first wordings (requests-dev.jsonl, all 131, gaps too) as an agent would:
     search (logged), pick the first hit, report it worked when its grade is >= 2, failed
     otherwise, 10 % of reports flipped as noise (``--tries N``: on a failure the agent
     tries the next hit, up to N); then score the second wordings again;
  3. two-fold control: forget everything, replay only one half of the first wordings, score
     the second wordings of the *other* half (their own request was never reported; only
     related requests were), and swap the halves.
Measures: distinct nDCG@10 and Hit@5 over the target and free requests (as bench/quality.py),
gap requests flagged; per-request changes; requests with no similar history (no reported
request within ``search.learning_similarity``) separately.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from quality import load_requests, measure  # noqa: E402

from skillshelf import Library  # noqa: E402


def copy_db(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src / "skillshelf.db") as a, sqlite3.connect(dst / "skillshelf.db") as b:
        a.backup(b)


def poison(lib, pairs, cid) -> None:
    targets = [(f, p) for f, p in pairs if f["kind"] == "target"][:20]
    others = [f for f, _ in pairs]
    same_top3 = other_top3 = 0
    moves = []
    plain3 = {o["qid"]: [h.name for h in lib.search(o["query"], limit=3, log=False).hits] for o in others}
    for f, p in targets:
        lib.forget_learning(everything=True)
        hits = lib.search(f["query"], limit=10, log=False).hits
        bad = next((h for h in hits[5:] if f["relevant"].get(cid(h.path), 0) == 0), None)
        if bad is None:
            continue
        before = [h.name for h in lib.search(p["query"], limit=10, log=False).hits]
        for _ in range(20):
            res = lib.search(f["query"], limit=10, client="mallory")
            lib.report_outcome(bad.id, True, query_id=res.query_id, client="mallory")
        after = [h.name for h in lib.search(p["query"], limit=10, log=False).hits]
        moves.append((before.index(bad.name) + 1 if bad.name in before else 11,
                      after.index(bad.name) + 1 if bad.name in after else 11))
        same_top3 += bad.name in after[:3]
        for o in others:
            if o["qid"] != f["qid"] and bad.name not in plain3[o["qid"]] \
                    and bad.name in [h.name for h in lib.search(o["query"], limit=3, log=False).hits]:
                other_top3 += 1     # put there by the false reports
    lib.forget_learning(everything=True)
    print(f"poisoned skills: {len(moves)}; rank in the second wording before -> after 20 false reports: "
          + ", ".join(f"{a}->{b}" for a, b in moves))
    print(f"in the top 3 of the poisoned request's second wording: {same_top3} of {len(moves)};"
          f" put in the top 3 of another request (of {len(others) - 1} each): {other_top3}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tries", type=int, default=1, help="hits an agent tries before giving up (default 1)")
    ap.add_argument("--noise", type=float, default=0.10)
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                    help="override a search setting, e.g. learning_weight=0.3 (for the record only)")
    ap.add_argument("--ceiling", action="store_true",
                    help="also measure what a perfect learner could do with the same reports (no noise: a skill"
                         " that worked moves to the top of the second wording's list, one that failed leaves it)")
    ap.add_argument("--poison", action="store_true",
                    help="only the poisoning check: for each of the first 20 target requests, one client sends 20"
                         " false 'worked' reports for an ungraded skill at rank 6-10 of its list; where does that"
                         " skill land for the second wording, and in how many other requests' top 3 is it?")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    skills_dir = (args.corpus / "skills").resolve()
    first = load_requests(args.corpus)
    second = {r["qid"]: r for r in (json.loads(x) for x in
                                     (args.corpus / "requests-dev-paraphrases.jsonl").read_text().splitlines() if x)}
    pairs = [(r, second[r["qid"] + "-p"]) for r in first if r["qid"] + "-p" in second]

    tmp = Path(tempfile.mkdtemp(prefix="skillshelf-learning-"))
    copy_db(args.home, tmp)
    lib = Library(home=tmp, roots=[skills_dir], auto_sync=False)
    over = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        cur = getattr(lib.config.search, k)
        over[k] = type(cur)(v) if not isinstance(cur, bool) else v.lower() in ("1", "true", "yes")
    s = dataclasses.replace(lib.config.search, recency_window=0, **over)
    lib.config = dataclasses.replace(lib.config, search=s)
    lib.searcher.s = s
    lib.sync()
    emb, reason = lib._embedder_state()
    if emb is None:
        raise SystemExit(f"learning needs the embedder: {reason}")

    def cid(path: str) -> str:
        return Path(path).resolve().relative_to(skills_dir).as_posix()

    names = {cid(r.path): r.name for r in lib.list()}

    def score(reqs) -> dict[str, dict]:
        out = {}
        for r in reqs:
            res = lib.search(r["query"], limit=10, log=False)
            m = measure([cid(h.path) for h in res.hits], r["relevant"], names) if r["kind"] != "gap" else {}
            m["flagged"] = not res.confident
            m["why"] = sum(1 for h in res.hits if h.why)
            out[r["qid"]] = m
        return out

    def replay(reqs, rng: random.Random) -> int:
        n = 0
        for r in reqs:
            res = lib.search(r["query"], limit=10, client="bench-agent")
            for h in res.hits[: args.tries]:
                worked = r["relevant"].get(cid(h.path), 0) >= 2
                if rng.random() < args.noise:
                    worked = not worked
                lib.report_outcome(h.id, worked, query_id=res.query_id, client="bench-agent")
                n += 1
                if worked:
                    break
        return n

    def summary(sc: dict[str, dict], qids) -> dict[str, float]:
        rows = [sc[q] for q in qids if "dndcg10" in sc[q]]
        gaps = [sc[q]["flagged"] for q in qids if "dndcg10" not in sc[q]]
        good = [sc[q]["flagged"] for q in qids if "dndcg10" in sc[q]]
        return {"n": len(rows), "dndcg10": float(np.mean([x["dndcg10"] for x in rows])) if rows else 0.0,
                "hit5": float(np.mean([x["hit5"] for x in rows])) if rows else 0.0,
                "hit1": float(np.mean([x["hit1"] for x in rows])) if rows else 0.0,
                "gaps_flagged": float(np.mean(gaps)) if gaps else None,
                "good_flagged": float(np.mean(good)) if good else None}

    def similar_history(reqs_second, learned_from) -> set[str]:
        """Second wordings with a reported first wording within learning_similarity."""
        if not learned_from:
            return set()
        a = np.vstack([emb.embed(r["query"]) for r in learned_from])
        out = set()
        for r in reqs_second:
            if float((a @ emb.embed(r["query"])).max()) >= s.learning_similarity:
                out.add(r["qid"])
        return out

    seconds = [p for _, p in pairs]
    lib.forget_learning(everything=True)
    if args.poison:
        poison(lib, pairs, cid)
        return
    base = score(seconds)
    ceiling, noisy = None, []
    if args.ceiling:
        from quality import name_key

        off = dataclasses.replace(s, learn_from_outcomes=False)
        lib.searcher.s = off
        lists = [([cid(h.path) for h in lib.search(f["query"], limit=10, log=False).hits],
                  [cid(h.path) for h in lib.search(p["query"], limit=30, log=False).hits], f, p)
                 for f, p in pairs if p["kind"] != "gap"]
        lib.searcher.s = s

        def oracle(rng: random.Random | None) -> tuple[float, float]:
            """A learner that acts perfectly on each report it gets (worked: to the top of the
            second wording's list; failed: out of it), with reports flipped at the replay's
            noise rate when ``rng`` is given."""
            vals, plain = [], []
            for shown, ranked, f, p in lists:
                ranked = list(ranked)
                plain.append(measure(ranked[:10], p["relevant"], names)["dndcg10"])
                for d in shown[: args.tries]:
                    same = [i for i, x in enumerate(ranked) if name_key(names.get(x, x)) == name_key(names.get(d, d))]
                    worked = f["relevant"].get(d, 0) >= 2
                    if rng is not None and rng.random() < args.noise:
                        worked = not worked
                    if worked:
                        if same:
                            ranked.insert(0, ranked.pop(same[0]))
                        break
                    for i in reversed(same):
                        ranked.append(ranked.pop(i))
                vals.append(measure(ranked[:10], p["relevant"], names)["dndcg10"])
            # the lift, against the same lists (a 30-hit list's first 10 differ a little from a 10-hit list)
            return float(np.mean(vals)), float(np.mean(vals)) - float(np.mean(plain))

        ceiling = oracle(None)
        noisy = [oracle(random.Random(seed))[1] for seed in range(args.seeds)]
    all_q = [p["qid"] for p in seconds]
    report: dict = {"settings": {k: getattr(s, k) for k in ("learn_from_outcomes", "learning_weight",
                                                             "learning_similarity", "learning_half_life_days",
                                                             "learning_client_cap")},
                    "tries": args.tries, "noise": args.noise, "no_history": summary(base, all_q), "seeds": [],
                    "ceiling_dndcg10": ceiling, "ceiling_trusting_noisy_reports": noisy if args.ceiling else None}
    print(f"no history: {report['no_history']}", file=sys.stderr)
    for seed in range(args.seeds):
        rng = random.Random(seed)
        # full replay
        lib.forget_learning(everything=True)
        n_rep = replay([f for f, _ in pairs], rng)
        full = score(seconds)
        better = sum(1 for q in all_q if "dndcg10" in base[q] and full[q]["dndcg10"] > base[q]["dndcg10"] + 1e-9)
        worse = sum(1 for q in all_q if "dndcg10" in base[q] and full[q]["dndcg10"] < base[q]["dndcg10"] - 1e-9)
        # two-fold control
        order = list(range(len(pairs)))
        random.Random(1000 + seed).shuffle(order)
        halves = [order[: len(order) // 2], order[len(order) // 2:]]
        ctrl: dict[str, dict] = {}
        nosim: set[str] = set()
        for h in (0, 1):
            lib.forget_learning(everything=True)
            replay([pairs[i][0] for i in halves[h]], rng)
            other = [pairs[i][1] for i in halves[1 - h]]
            ctrl.update(score(other))
            nosim |= {p["qid"] for p in other} - similar_history(other, [pairs[i][0] for i in halves[h]])
        row = {"seed": seed, "reports": n_rep, "full": summary(full, all_q), "better": better, "worse": worse,
               "held_out_half": summary(ctrl, all_q),
               "no_similar_history": {"n": len([q for q in nosim if "dndcg10" in base[q]]),
                                      "before": summary(base, sorted(nosim)), "after": summary(ctrl, sorted(nosim))},
               "hits_with_why": sum(full[q]["why"] for q in all_q)}
        report["seeds"].append(row)
        print(json.dumps(row), file=sys.stderr)
    lib.forget_learning(everything=True)

    def mean(path):
        vals = []
        for row in report["seeds"]:
            v = row
            for k in path:
                v = v[k]
            vals.append(v)
        return float(np.mean(vals))

    b = report["no_history"]
    print(f"{'':34} {'distinct nDCG@10':>17} {'Hit@5':>7} {'Hit@1':>7} {'gaps flagged':>13} {'good flagged':>13}")
    print(f"{'second wording, no history':34} {b['dndcg10']:17.4f} {b['hit5']:7.3f} {b['hit1']:7.3f}"
          f" {b['gaps_flagged']:13.3f} {b['good_flagged']:13.3f}")
    print(f"{'after replaying the first (mean)':34} {mean(('full', 'dndcg10')):17.4f} {mean(('full', 'hit5')):7.3f}"
          f" {mean(('full', 'hit1')):7.3f} {mean(('full', 'gaps_flagged')):13.3f} {mean(('full', 'good_flagged')):13.3f}")
    print(f"{'held-out half (own request unseen)':34} {mean(('held_out_half', 'dndcg10')):17.4f}"
          f" {mean(('held_out_half', 'hit5')):7.3f} {mean(('held_out_half', 'hit1')):7.3f}"
          f" {mean(('held_out_half', 'gaps_flagged')):13.3f} {mean(('held_out_half', 'good_flagged')):13.3f}")
    ns = [(r["no_similar_history"]["before"]["dndcg10"], r["no_similar_history"]["after"]["dndcg10"],
           r["no_similar_history"]["n"]) for r in report["seeds"]]
    print(f"lift: {mean(('full', 'dndcg10')) - b['dndcg10']:+.4f} distinct nDCG@10; per seed better/worse requests: "
          + ", ".join(f"{r['better']}/{r['worse']}" for r in report["seeds"]))
    if ceiling is not None:
        print(f"ceiling (a perfect learner, no noise, the same picks): {ceiling[0]:.4f} (lift {ceiling[1]:+.4f})")
        print(f"the same learner trusting each noisy report (seeds 0-{args.seeds - 1}): lift "
              + ", ".join(f"{x:+.4f}" for x in noisy) + f" (mean {float(np.mean(noisy)):+.4f})")
    print("no similar history (held-out half, no reported request within learning_similarity): "
          + ", ".join(f"n={n} {x:.4f} -> {y:.4f} ({y - x:+.4f})" for x, y, n in ns))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
