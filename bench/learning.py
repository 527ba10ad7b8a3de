"""Learning from outcomes: several agents use the library on one wording of each request and
report what worked; does the next wording of the same need rank better, how close does it
come to a learner that trusts the reports, and are other requests left alone?

    python bench/learning.py --corpus ../shared/corpus --home .bench-home [--seeds 3] [--json out.json]
    python bench/learning.py --corpus ../shared/corpus --home .bench-home --poison

Works on a copy of the home's database in a temporary folder (the home is untouched; a missing
home is built first). Recency is off. For each seed:
  1. no history: the second wordings (requests-dev-paraphrases.jsonl) are scored;
  2. three agents (three client ids, ``--agents``) each ask every first wording
     (requests-dev.jsonl, all 131, gaps too) once, in an order of their own: search (logged),
     read the top 5 (``--read``), use the first useful hit (grade >= 2 in the labels) and
     report it worked, or else use the first hit and report it failed; 10 % of the reports are
     flipped (``--noise``, seeded). A later agent sees what the earlier ones taught;
  3. the second wordings are scored again (the library), and the ceiling is computed;
  4. two-fold control: the agents replay only one half of the first wordings, the other
     half's second wordings are scored (their own request was never reported), halves swap.
Measures: distinct nDCG@10, Hit@1 and Hit@5 over the target and free requests (bench/quality.py's
``measure``), gap requests flagged, served requests flagged.

The ceiling is the oracle that trusts the reports' net verdict: for a second wording, every
report on a *similar* first wording counts +1 (worked) or -1 (failed) for its skill (copies
counted as one); in the second wording's plain list (learning off, 30 hits) each skill with a
positive net goes to the top (the largest net first, ties in list order) and each skill with a
negative net leaves the list. "Similar" is the library's own notion: a first wording whose
request vector has cosine >= ``search.learning_similarity`` with the second wording's (the
oracle sees what the library sees: the reports and the request vectors; it only acts on them
without bounds, weights or caps). Which reports: the agents' reports depend on what they were
shown, so a learner that spoils its own later reports would lower an oracle run on them. The
ceiling is therefore, per seed and measure, the higher of the oracle on the reports the library
got and the oracle on the reports the same agents (same orders and flips) give when they are
shown the plain lists, which no learner can lower. For the record: the oracle counting only the
second wording's own first wording (which the labels know and the library does not), and the
oracle acting as the library (the agents see its lists while it trusts each report live).

Requests with no similar history (no first wording within ``learning_similarity``) must rank
exactly as without history: their top-10 lists (ids and scores) are compared, and the changed
ones counted.

``--poison``: only the poisoning check (one client sends 20 false "worked" reports).
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
from quality import load_requests, measure, name_key  # noqa: E402

from skillshelf import Library  # noqa: E402

METRICS = ("dndcg10", "hit1", "hit5")


def copy_db(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(src / "skillshelf.db") as a, sqlite3.connect(dst / "skillshelf.db") as b:
        a.backup(b)


def poison(lib, pairs, cid) -> dict:
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
    most = max((a - b for a, b in moves if a <= 10), default=0)
    print(f"most places lifted (from inside the top 10): {most}")
    return {"moves": moves, "same_top3": same_top3, "other_top3": other_top3, "most_places": most}


def oracle(plain: list[str], net: dict[str, int], names: dict[str, str]) -> list[str]:
    """The second wording's plain list, reordered by trusting the net verdict: skills with a
    positive net first (largest net first, then list order; one copy each), skills with a
    negative net (all copies) out."""
    key = [name_key(names.get(x, x)) for x in plain]
    up = sorted({k for k in key if net.get(k, 0) > 0}, key=lambda k: (-net[k], key.index(k)))
    first = [plain[key.index(k)] for k in up]
    rest = [x for x, k in zip(plain, key) if net.get(k, 0) == 0 or (net[k] > 0 and x not in first)]
    return first + rest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--agents", type=int, default=3, help="agents (client ids) that each ask every first wording")
    ap.add_argument("--read", type=int, default=5, help="hits an agent reads for a useful one (default 5)")
    ap.add_argument("--noise", type=float, default=0.10, help="share of reports flipped (default 0.10)")
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                    help="override a search setting, e.g. learning_weight=0.3 (for the record only)")
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

    if not (args.home / "skillshelf.db").exists():
        print(f"building the bench home {args.home} (embeds the corpus once)", file=sys.stderr)
        with Library(home=args.home, roots=[skills_dir], auto_sync=False) as built:
            built.sync()
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
    lib.forget_learning(everything=True)
    if args.poison:
        out = poison(lib, pairs, cid)
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))
        return

    firsts = [f for f, _ in pairs]
    seconds = [p for _, p in pairs]
    scored = [p["qid"] for p in seconds if p["kind"] != "gap"]

    def score(reqs) -> dict[str, dict]:
        out = {}
        for r in reqs:
            res = lib.search(r["query"], limit=10, log=False)
            m = measure([cid(h.path) for h in res.hits], r["relevant"], names) if r["kind"] != "gap" else {}
            m["flagged"] = not res.confident
            m["why"] = sum(1 for h in res.hits if h.why)
            m["list"] = [(h.id, round(float(h.score), 9)) for h in res.hits]
            m["names"] = [h.name for h in res.hits]
            m["whys"] = [h.why for h in res.hits]
            out[r["qid"]] = m
        return out

    def summary(sc: dict[str, dict], qids) -> dict[str, float | None]:
        rows = [sc[q] for q in qids if "dndcg10" in sc[q]]
        gaps = [sc[q]["flagged"] for q in qids if "dndcg10" not in sc[q]]
        good = [sc[q]["flagged"] for q in qids if "dndcg10" in sc[q]]
        out: dict[str, float | None] = {"n": len(rows)}
        out.update({k: float(np.mean([x[k] for x in rows])) if rows else 0.0 for k in METRICS})
        out["gaps_flagged"] = float(np.mean(gaps)) if gaps else None
        out["served_flagged"] = float(np.mean(good)) if good else None
        return out

    # which first wordings are similar to each second wording, as the library sees it
    fvec = np.vstack([emb.embed(f["query"]) for f in firsts]).astype(np.float32)
    fvec /= np.linalg.norm(fvec, axis=1, keepdims=True)
    similar: dict[str, list[str]] = {}
    for p in seconds:
        v = np.asarray(emb.embed(p["query"]), dtype=np.float32)
        sims = fvec @ (v / (float(np.linalg.norm(v)) or 1.0))
        similar[p["qid"]] = [firsts[i]["qid"] for i in np.flatnonzero(sims >= s.learning_similarity)]
    own = {p["qid"]: [f["qid"]] for f, p in pairs}
    sims_ff = fvec @ fvec.T
    similar_first = {f["qid"]: [firsts[j]["qid"] for j in np.flatnonzero(sims_ff[i] >= s.learning_similarity)]
                     for i, f in enumerate(firsts)}
    no_similar = [p["qid"] for p in seconds if not similar[p["qid"]]]

    # no history; the oracle's plain lists (learning off: the same order with an empty memory)
    base = score(seconds)
    lib.searcher.s = dataclasses.replace(s, learn_from_outcomes=False)
    plain30 = {p["qid"]: [cid(h.path) for h in lib.search(p["query"], limit=30, log=False).hits]
               for p in seconds if p["kind"] != "gap"}
    plain30_first = {f["qid"]: [cid(h.path) for h in lib.search(f["query"], limit=30, log=False).hits]
                     for f in firsts}
    lib.searcher.s = s
    by_qid = {p["qid"]: p for p in seconds}
    plain_oracle = {k: float(np.mean([measure(plain30[q][:10], by_qid[q]["relevant"], names)[k] for q in scored]))
                    for k in METRICS}

    def replay(rng: random.Random, reqs=None) -> list[dict]:
        reports = []
        for a in range(args.agents):
            client = f"agent-{a + 1}"
            order = list(firsts if reqs is None else reqs)
            rng.shuffle(order)
            for f in order:
                res = lib.search(f["query"], limit=10, client=client)
                if not res.hits:
                    continue
                read = res.hits[: args.read]
                used = next((h for h in read if f["relevant"].get(cid(h.path), 0) >= 2), None)
                worked = used is not None
                used = used or read[0]
                flipped = rng.random() < args.noise
                said = worked != flipped
                lib.report_outcome(used.id, said, query_id=res.query_id, client=client)
                reports.append({"client": client, "qid": f["qid"], "skill": cid(used.path),
                                "key": name_key(used.name), "worked": said, "flipped": flipped})
        return reports

    def net_of(by_first: dict[str, list[dict]], near: list[str]) -> dict[str, int]:
        net: dict[str, int] = {}
        for fq in near:
            for r in by_first.get(fq, []):
                net[r["key"]] = net.get(r["key"], 0) + (1 if r["worked"] else -1)
        return net

    def ceiling(reports: list[dict], near: dict[str, list[str]], detail: dict | None = None) -> dict[str, float]:
        by_first: dict[str, list[dict]] = {}
        for r in reports:
            by_first.setdefault(r["qid"], []).append(r)
        vals = []
        for q in scored:
            net = net_of(by_first, near[q])
            vals.append(measure(oracle(plain30[q], net, names)[:10], by_qid[q]["relevant"], names))
            if detail is not None:
                detail[q] = {"net": {k: v for k, v in net.items() if v}, "oracle": {k: vals[-1][k] for k in METRICS}}
        return {k: float(np.mean([v[k] for v in vals])) for k in METRICS}

    def oracle_replay(rng: random.Random, near_first: dict[str, list[str]] | None) -> list[dict]:
        """The replay without the library's learner (the same agents, orders and flips as the
        library's replay with the same seed): each agent sees the first wording's plain list,
        or with ``near_first`` that list reordered by the oracle on the reports so far."""
        reports: list[dict] = []
        by_first: dict[str, list[dict]] = {}
        for a in range(args.agents):
            client = f"agent-{a + 1}"
            order = list(firsts)
            rng.shuffle(order)
            for f in order:
                shown = plain30_first[f["qid"]] if near_first is None else \
                    oracle(plain30_first[f["qid"]], net_of(by_first, near_first[f["qid"]]), names)
                if not shown:
                    continue
                read = shown[: args.read]
                used = next((d for d in read if f["relevant"].get(d, 0) >= 2), None)
                worked = used is not None
                used = used or read[0]
                flipped = rng.random() < args.noise
                r = {"client": client, "qid": f["qid"], "skill": used, "key": name_key(names.get(used, used)),
                     "worked": worked != flipped, "flipped": flipped}
                reports.append(r)
                by_first.setdefault(f["qid"], []).append(r)
        return reports

    report: dict = {"settings": {k: getattr(s, k) for k in dataclasses.asdict(s) if k.startswith("learn")},
                    "agents": args.agents, "read": args.read, "noise": args.noise,
                    "similar": "cosine of request vectors >= learning_similarity",
                    "no_history": summary(base, list(by_qid)), "oracle_plain_lists": plain_oracle,
                    "no_similar_history_n": len(no_similar), "seeds": []}
    print(f"no history: {report['no_history']}", file=sys.stderr)
    for seed in range(args.seeds):
        rng = random.Random(seed)
        lib.forget_learning(everything=True)
        reports = replay(rng)
        full = score(seconds)
        better = sum(1 for q in scored if full[q]["dndcg10"] > base[q]["dndcg10"] + 1e-9)
        worse = sum(1 for q in scored if full[q]["dndcg10"] < base[q]["dndcg10"] - 1e-9)
        changed = [q for q in no_similar if full[q]["list"] != base[q]["list"]]
        # two-fold control: the agents replay one half of the first wordings; the other half's
        # second wordings are scored (their own request was never reported, related ones may
        # have been); then the halves swap
        order = list(range(len(pairs)))
        random.Random(1000 + seed).shuffle(order)
        halves = [order[: len(order) // 2], order[len(order) // 2:]]
        held: dict[str, dict] = {}
        unrelated: list[str] = []
        for h in (0, 1):
            lib.forget_learning(everything=True)
            told = {firsts[i]["qid"] for i in halves[h]}
            replay(rng, [firsts[i] for i in halves[h]])
            other = [seconds[i] for i in halves[1 - h]]
            held.update(score(other))
            unrelated += [p["qid"] for p in other if not told & set(similar[p["qid"]])]
        held_changed = [q for q in unrelated if held[q]["list"] != base[q]["list"]]
        # the ceiling: the oracle on the reports the library got, and on the reports the agents
        # give when they see the plain lists (fixed: no learner can lower it by spoiling its own
        # reports); the goal is judged against the higher of the two
        detail_lib: dict[str, dict] = {}
        ceil_libs = ceiling(reports, similar, detail_lib)
        plain_reports = oracle_replay(random.Random(seed), None)
        detail: dict[str, dict] = {}
        ceil_plain = ceiling(plain_reports, similar, detail)
        for q in scored:
            detail[q].update(before={k: base[q][k] for k in METRICS}, library={k: full[q][k] for k in METRICS},
                             ranked=[names.get(h, h) for h in plain30[q]], net_library=detail_lib[q]["net"],
                             oracle_library=detail_lib[q]["oracle"], shown=full[q]["names"], whys=full[q]["whys"],
                             plain10=base[q]["names"])
        ceil = {k: max(ceil_libs[k], ceil_plain[k]) for k in METRICS}
        ceil_own = ceiling(plain_reports, own)
        # the oracle as the library (the agents see its lists): trusting each report live
        ceil_live = ceiling(oracle_replay(random.Random(seed), similar_first), similar)
        lib_sum = summary(full, list(by_qid))
        row = {"seed": seed, "reports": len(reports), "worked": sum(r["worked"] for r in reports),
               "flipped": sum(r["flipped"] for r in reports), "library": lib_sum, "better": better, "worse": worse,
               "ceiling": ceil, "oracle_on_library_reports": ceil_libs, "oracle_on_plain_reports": ceil_plain,
               "ceiling_own_wording": ceil_own, "oracle_live": ceil_live,
               "gain": {k: lib_sum[k] - report["no_history"][k] for k in METRICS},
               "ceiling_gain": {k: ceil[k] - plain_oracle[k] for k in METRICS},
               "no_similar_history_changed": changed,
               "held_out_half": summary(held, list(by_qid)),
               "held_out_no_similar_history": {"n": len(unrelated), "changed": held_changed,
                                               "before": summary(base, unrelated),
                                               "after": summary(held, unrelated)},
               "hits_with_why": sum(full[q]["why"] for q in by_qid), "requests": detail,
               "report_log": {"library": reports, "plain": plain_reports}}
        row["share_of_ceiling"] = {k: (row["gain"][k] / row["ceiling_gain"][k]) if abs(row["ceiling_gain"][k]) > 1e-3
                                   else None
                                   for k in METRICS}
        report["seeds"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("no_similar_history_changed",
                                                                    "held_out_no_similar_history", "requests",
                                                                    "report_log")}),
              file=sys.stderr)
    lib.forget_learning(everything=True)
    lib.close()

    def mean(*path) -> float:
        vals = []
        for row in report["seeds"]:
            v = row
            for k in path:
                v = v[k]
            vals.append(v)
        return float(np.mean(vals))

    b = report["no_history"]
    gain = {k: mean("gain", k) for k in METRICS}
    cgain = {k: mean("ceiling_gain", k) for k in METRICS}
    report["mean"] = {"library": {k: mean("library", k) for k in (*METRICS, "gaps_flagged", "served_flagged")},
                      "ceiling": {k: mean("ceiling", k) for k in METRICS},
                      "ceiling_own_wording": {k: mean("ceiling_own_wording", k) for k in METRICS},
                      "oracle_on_library_reports": {k: mean("oracle_on_library_reports", k) for k in METRICS},
                      "oracle_on_plain_reports": {k: mean("oracle_on_plain_reports", k) for k in METRICS},
                      "oracle_live": {k: mean("oracle_live", k) for k in METRICS},
                      "gain": gain, "ceiling_gain": cgain,
                      "share_of_ceiling": {k: gain[k] / cgain[k] if abs(cgain[k]) > 1e-3 else None
                                           for k in METRICS}}
    n = len(report["seeds"])
    print(f"second wordings: {b['n']} target + free requests, {len(by_qid) - b['n']} gaps; {args.agents} agents,"
          f" top {args.read} read, {args.noise:.0%} of reports flipped; seeds 0-{n - 1}")
    print(f"{'':44} {'dNDCG@10':>9} {'Hit@1':>7} {'Hit@5':>7} {'gaps flagged':>13} {'served flagged':>15}")
    print(f"{'no history':44} {b['dndcg10']:9.4f} {b['hit1']:7.3f} {b['hit5']:7.3f}"
          f" {b['gaps_flagged']:13.3f} {b['served_flagged']:15.3f}")
    m = report["mean"]["library"]
    print(f"{'library, after the reports (mean)':44} {m['dndcg10']:9.4f} {m['hit1']:7.3f} {m['hit5']:7.3f}"
          f" {m['gaps_flagged']:13.3f} {m['served_flagged']:15.3f}")
    print(f"{'  per seed':44} " + " / ".join(f"{r['library']['dndcg10']:.4f}" for r in report["seeds"])
          + "   Hit@1 " + " / ".join(f"{r['library']['hit1']:.3f}" for r in report["seeds"]))
    print(f"{'oracle lists, no history (30-hit plain lists)':44} {plain_oracle['dndcg10']:9.4f}"
          f" {plain_oracle['hit1']:7.3f} {plain_oracle['hit5']:7.3f}")
    for label, key in (("ceiling (higher of the next two, per seed)", "ceiling"),
                       ("  oracle on the library's reports", "oracle_on_library_reports"),
                       ("  oracle on the plain lists' reports", "oracle_on_plain_reports"),
                       ("  the same, own first wording only (record)", "ceiling_own_wording"),
                       ("  oracle as the library, live (record)", "oracle_live")):
        c = report["mean"][key]
        print(f"{label:44} {c['dndcg10']:9.4f} {c['hit1']:7.3f} {c['hit5']:7.3f}")
    print(f"{'gain: library':44} {gain['dndcg10']:+9.4f} {gain['hit1']:+7.3f} {gain['hit5']:+7.3f}")
    print(f"{'gain: ceiling':44} {cgain['dndcg10']:+9.4f} {cgain['hit1']:+7.3f} {cgain['hit5']:+7.3f}")
    sh = report["mean"]["share_of_ceiling"]
    print(f"{'library gain / ceiling gain':44} " + " ".join(
        f"{(f'{sh[k]:.0%}' if sh[k] is not None else '-'):>{w}}" for k, w in zip(METRICS, (9, 7, 7))))
    print("per seed better/worse requests: " + ", ".join(f"{r['better']}/{r['worse']}" for r in report["seeds"])
          + "; reports (flipped): " + ", ".join(f"{r['reports']} ({r['flipped']})" for r in report["seeds"]))
    m = {k: mean("held_out_half", k) for k in METRICS}
    print(f"{'held-out half (own request never reported)':44} {m['dndcg10']:9.4f} {m['hit1']:7.3f} {m['hit5']:7.3f}")
    print(f"requests with no similar history, all first wordings reported: {len(no_similar)}; changed: "
          + ", ".join(str(len(r["no_similar_history_changed"])) for r in report["seeds"]))
    print("held-out halves, requests with no similar reported request (top 10 compared, ids and scores): "
          + ", ".join(f"{len(r['held_out_no_similar_history']['changed'])} of {r['held_out_no_similar_history']['n']}"
                      f" changed" for r in report["seeds"]))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
