"""What the optional model judge adds, on the labelled development requests.

    python bench/judge.py --corpus ../shared/corpus [--home DIR] [--json out.json]
        [--backend ollama|openai|local] [--url URL] [--model NAME] [--model-path FILE]
        [--timeout S] [--top N] [--requests N]
    python bench/judge.py --corpus ../shared/corpus --derived    # the derived-reranker experiment

The judge is the one the library's configuration names (config.toml [judge] in --home, or
SKILLSHELF_JUDGE / SKILLSHELF_JUDGE_URL / SKILLSHELF_JUDGE_MODEL / SKILLSHELF_JUDGE_API_KEY),
or the one given by the flags. With none configured the script says so and measures nothing
(exit code 2).

Measures, per request, the plain shortlist (limit 10, recency off, nothing logged) and:
  rerank       distinct nDCG@10, Hit@1, Hit@5, MRR@10 of the plain order and of the judged
               order (target and free requests; gap requests have no relevant skill), the
               judge's latency (p50 / p95), timeouts, errors and invented names dropped
  soft filter  over the top N (judge.soft_filter_top, default 4) of the plain order:
               precision of "likely" (share of the hits marked likely that are useful,
               grade >= 2) against the precision of the unfiltered top N and of the
               calibrated match; recall of likely; on gap requests, how often anything
               is marked likely (there the right answer is "weak" throughout)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality import load_requests, measure, summarize  # noqa: E402

from skillshelf import Library  # noqa: E402
from skillshelf.config import JudgeConfig  # noqa: E402
from skillshelf.judge.backends import make_backend  # noqa: E402


def pct(values: list[float], p: float) -> float | None:
    return round(float(np.percentile(values, p)), 1) if values else None


def derived(lib: Library, reqs: list[dict], corpus_id, names: dict[str, str]) -> dict:
    """The experiment of BENCHMARKS.md ("a reranker derived from what ships"): re-score the
    plain top 10 with the bundled bi-encoder by the best cosine over name + whole description
    and 120-token windows over the whole body (up to 6)."""
    emb, reason = lib._embedder_state()
    if emb is None:
        raise SystemExit(f"--derived needs the bundled embedder: {reason}")
    tok = emb._tok
    cache: dict[str, np.ndarray] = {}
    rows: dict[str, list] = {k: [] for k in ("plain", "derived", "rrf", "blend")}
    lat = []
    for r in reqs:
        if r["kind"] == "gap":
            continue
        res = lib.search(r["query"], limit=10, log=False)
        ranked = [corpus_id(h.path) for h in res.hits]
        rows["plain"].append(measure(ranked, r["relevant"], names))
        t0 = time.perf_counter()
        q = emb.embed(r["query"])
        sc = []
        for h in res.hits:
            if h.id not in cache:
                rec = lib.store.db.execute("SELECT name, description, body FROM skills WHERE id=?", (h.id,)).fetchone()
                ids = tok.encode(rec["body"] or "", add_special_tokens=False).ids
                texts = [f"{rec['name']}: {rec['description']}"] + [tok.decode(ids[i:i + 120])
                                                                    for i in range(0, min(len(ids), 720), 120)]
                cache[h.id] = emb.embed_batch(texts, max_tokens=128)
            sc.append(float((cache[h.id] @ q).max()))
        lat.append((time.perf_counter() - t0) * 1000)
        n = len(ranked)
        by = sorted(range(n), key=lambda i: -sc[i])
        rk = {i: k for k, i in enumerate(by)}
        rows["derived"].append(measure([ranked[i] for i in by], r["relevant"], names))
        rows["rrf"].append(measure([ranked[i] for i in sorted(range(n), key=lambda i: -(1 / (60 + i) + 1 / (60 + rk[i])))],
                                   r["relevant"], names))
        rows["blend"].append(measure([ranked[i] for i in sorted(range(n), key=lambda i: -(sc[i] - 0.02 * i))],
                                     r["relevant"], names))
    out = {k: summarize(v, None) for k, v in rows.items()}
    out["latency_ms"] = {"p50": pct(lat, 50), "p95": pct(lat, 95), "note": "each skill's windows embedded once"}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--backend", choices=("ollama", "openai", "local"))
    ap.add_argument("--url")
    ap.add_argument("--model")
    ap.add_argument("--model-path", help="local: the ONNX cross-encoder file")
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--top", type=int, help="soft filter: how many top hits are judged (default judge.soft_filter_top)")
    ap.add_argument("--requests", type=int, default=0, help="only the first N requests (0: all)")
    ap.add_argument("--skip", default="", help="comma list of what not to run: rerank, filter")
    ap.add_argument("--derived", action="store_true",
                    help="instead: the reranker derived from the bundled bi-encoder (BENCHMARKS.md), no judge needed")
    args = ap.parse_args()

    skills_dir = (args.corpus / "skills").resolve()
    reqs = load_requests(args.corpus)
    if args.requests:
        reqs = reqs[: args.requests]
    lib = Library(home=args.home, roots=[skills_dir], auto_sync=False)
    jc = lib.config.judge
    flags = {k: v for k, v in dict(backend=args.backend, url=args.url, model=args.model, model_path=args.model_path,
                                   timeout=args.timeout, soft_filter_top=args.top).items() if v is not None}
    if flags:
        jc = dataclasses.replace(jc, **flags)
    if args.derived:
        search = dataclasses.replace(lib.config.search, recency_window=0)
        lib.config = dataclasses.replace(lib.config, search=search)
        lib.searcher.s = search
        lib.sync()

        def cid(path: str) -> str:
            return Path(path).resolve().relative_to(skills_dir).as_posix()

        out = derived(lib, reqs, cid, {cid(r.path): r.name for r in lib.list()})
        for k, v in out.items():
            print(f"{k:8} {v}")
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))
        return 0
    if jc.backend in ("none", ""):
        print("no model judge is configured (judge.backend is 'none'): nothing measured.\n"
              "Set [judge] backend / url / model in the home's config.toml, SKILLSHELF_JUDGE=ollama|openai|local with "
              "SKILLSHELF_JUDGE_MODEL (and _URL, _API_KEY), or pass --backend/--url/--model.", file=sys.stderr)
        return 2
    # measure retrieval and the judge, not the anti-repeat policy
    search = dataclasses.replace(lib.config.search, recency_window=0)
    lib.config = dataclasses.replace(lib.config, search=search, judge=jc)
    lib.searcher.s = search
    t0 = time.perf_counter()
    rep = lib.sync()
    print(f"sync: +{rep.added} ~{rep.updated} -{rep.removed} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    backend = make_backend(jc)      # the one the library's judge makes from the same settings
    up, detail = backend.probe(timeout=5.0)
    print(f"judge: {backend.label} ({detail})", file=sys.stderr)
    if not up:
        print("the judge is not reachable: nothing measured", file=sys.stderr)
        return 2

    def corpus_id(path: str) -> str:
        return Path(path).resolve().relative_to(skills_dir).as_posix()

    names = {corpus_id(r.path): r.name for r in lib.list()}
    skip = set(filter(None, args.skip.split(",")))
    plain_rows, judged_rows = [], []
    rr_lat, f_lat = [], []
    status: dict[str, dict[str, int]] = {"rerank": {}, "filter": {}}
    invented = 0
    top_n = max(1, int(jc.soft_filter_top))
    marked = useful_marked = shown = useful_shown = calib = useful_calib = useful_total = useful_found = 0
    gap_reqs = gap_flagged = 0
    per_request = []
    for k, r in enumerate(reqs, 1):
        plain = lib.search(r["query"], limit=10, log=False)
        ranked = [corpus_id(h.path) for h in plain.hits]
        rel = r["relevant"]
        row = {"qid": r["qid"], "kind": r["kind"]}
        if r["kind"] != "gap":
            plain_rows.append(measure(ranked, rel, names))
        if "rerank" not in skip:
            jr = lib.judge_hits(plain, "rerank")
            status["rerank"][jr.judge.split(":")[0]] = status["rerank"].get(jr.judge.split(":")[0], 0) + 1
            invented += len(jr.invented)
            if jr.judge == "ok":
                rr_lat.append(jr.judge_latency_ms)
            if r["kind"] != "gap":
                judged_rows.append(measure([corpus_id(h.path) for h in jr.hits], rel, names))
            row["rerank"] = {"status": jr.judge, "pick": jr.pick, "ms": round(jr.judge_latency_ms)}
        if "filter" not in skip:
            jf = lib.judge_hits(plain, "filter")
            st = jf.judge.split(":")[0]
            status["filter"][st] = status["filter"].get(st, 0) + 1
            if jf.judge == "ok":
                f_lat.append(jf.judge_latency_ms)
                top = plain.hits[:top_n]
                likely = [h for h in top if jf.verdicts.get(h.id) and jf.verdicts[h.id].verdict == "likely"]
                if r["kind"] == "gap":
                    gap_reqs += 1
                    gap_flagged += bool(likely)
                else:
                    good = {h.id for h in top if rel.get(corpus_id(h.path), 0) >= 2}
                    shown += len(top)
                    useful_shown += len(good)
                    marked += len(likely)
                    useful_marked += sum(h.id in good for h in likely)
                    calib += sum(h.match == "likely" for h in top)
                    useful_calib += sum(h.match == "likely" and h.id in good for h in top)
                    useful_total += len(good)
                    useful_found += sum(h.id in good for h in likely)
            row["filter"] = {"status": jf.judge, "ms": round(jf.judge_latency_ms)}
        per_request.append(row)
        if k % 10 == 0:
            print(f"  {k}/{len(reqs)} requests", file=sys.stderr)

    out: dict = {"judge": backend.label, "requests": len(reqs), "plain": summarize(plain_rows, None)}
    if "rerank" not in skip:
        out["rerank"] = summarize(judged_rows, None) | {"status": status["rerank"], "p50_ms": pct(rr_lat, 50),
                                                         "p95_ms": pct(rr_lat, 95), "invented_dropped": invented}
    if "filter" not in skip:
        out["soft_filter"] = {
            "top": top_n, "status": status["filter"], "p50_ms": pct(f_lat, 50), "p95_ms": pct(f_lat, 95),
            "precision_likely": round(useful_marked / marked, 3) if marked else None,
            "precision_unfiltered": round(useful_shown / shown, 3) if shown else None,
            "precision_calibrated_match": round(useful_calib / calib, 3) if calib else None,
            "recall_likely": round(useful_found / useful_total, 3) if useful_total else None,
            "likely_per_request": round(marked / max(1, len(plain_rows)), 2),
            "gap_requests_with_a_likely": round(gap_flagged / gap_reqs, 3) if gap_reqs else None,
        }
    cols = ["dndcg10", "hit1", "hit5", "mrr10"]
    print(f"\njudge {backend.label} on {len(reqs)} requests")
    print(f"{'order':8} " + " ".join(f"{c:>9}" for c in cols))
    for name in ("plain", "rerank"):
        if name in out:
            print(f"{name:8} " + " ".join(f"{out[name][c]:>9}" for c in cols))
    if "rerank" in out:
        print(f"rerank: {out['rerank']['status']}, latency p50 {out['rerank']['p50_ms']} ms, "
              f"p95 {out['rerank']['p95_ms']} ms, invented names dropped {invented}")
    if "soft_filter" in out:
        print("soft filter: " + json.dumps(out["soft_filter"]))
    if args.json:
        out["per_request"] = per_request
        args.json.write_text(json.dumps(out, indent=2))
    lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
