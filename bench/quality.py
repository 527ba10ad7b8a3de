"""Search quality on the labelled corpus requests, for skillshelf and four baselines.

    python bench/quality.py --corpus ../shared/corpus [--home DIR] [--json out.json]

Measures (see the corpus' REQUESTS.md): distinct nDCG@10, nDCG@10, Hit@1, Hit@5, MRR@10,
gap-flag rate (gap requests flagged "no confident match") and false-gap rate.
Baselines, computed in the same run over the same files:
  bm25-meta   BM25 over name + description
  dense-desc  cosine over the description alone (bundled MiniLM)
  rrf-meta    the two above fused by RRF k=60 (what Skills Lab does)
  bm25-body   BM25 over name + description + body (a plain full-text engine)
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from skillshelf import Library
from skillshelf.text import sha256, tokenize


def name_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", (name or "").lower())


def load_requests(corpus: Path) -> list[dict]:
    return [json.loads(line) for line in (corpus / "requests-dev.jsonl").read_text().splitlines() if line.strip()]


# --- measures ---------------------------------------------------------------------------

def dcg(gains: list[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def measure(ranked: list[str], rel: dict[str, int], names: dict[str, str]) -> dict[str, float]:
    ranked = ranked[:10]
    gains = [2 ** rel.get(d, 0) - 1 for d in ranked]
    ideal = sorted((2 ** g - 1 for g in rel.values()), reverse=True)[:10]
    ndcg = dcg(gains) / dcg(ideal) if ideal and dcg(ideal) > 0 else 0.0
    # distinct: copies (same name key) credited once; ideal holds each name once at its best grade
    seen: set[str] = set()
    dgains = []
    for d in ranked:
        k = name_key(names.get(d, d))
        if k in seen:
            dgains.append(0.0)
            continue
        seen.add(k)
        dgains.append(2 ** rel.get(d, 0) - 1)
    best: dict[str, int] = {}
    for d, g in rel.items():
        k = name_key(names.get(d, d))
        best[k] = max(best.get(k, 0), g)
    dideal = sorted((2 ** g - 1 for g in best.values()), reverse=True)[:10]
    dndcg = dcg(dgains) / dcg(dideal) if dideal and dcg(dideal) > 0 else 0.0
    top = max(rel.values()) if rel else 0
    hit1 = 1.0 if ranked[:1] and rel.get(ranked[0], 0) == top else 0.0
    hit5 = 1.0 if any(rel.get(d, 0) == top for d in ranked[:5]) else 0.0
    mrr = 0.0
    for i, d in enumerate(ranked):
        if rel.get(d, 0) >= 2:
            mrr = 1.0 / (i + 1)
            break
    return {"dndcg10": dndcg, "ndcg10": ndcg, "hit1": hit1, "hit5": hit5, "mrr10": mrr}


def summarize(rows: list[dict[str, float]], flags: list[tuple[str, bool]] | None) -> dict[str, float]:
    out = {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]} if rows else {}
    if flags is not None:
        gaps = [f for kind, f in flags if kind == "gap"]
        other = [f for kind, f in flags if kind != "gap"]
        out["gap_flag_rate"] = round(sum(gaps) / len(gaps), 4) if gaps else None
        out["false_gap_rate"] = round(sum(other) / len(other), 4) if other else None
    return out


# --- baselines --------------------------------------------------------------------------

class BM25:
    """Okapi BM25 (k1=1.5, b=0.75, bm25s' defaults) over our tokenizer."""

    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.post: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lens = []
        for i, d in enumerate(docs):
            tf = Counter(tokenize(d))
            lens.append(sum(tf.values()))
            for t, c in tf.items():
                self.post[t].append((i, c))
        self.n = len(docs)
        self.len = np.array(lens, dtype=np.float32)
        self.avg = float(self.len.mean()) if self.n else 1.0
        self.arr = {t: (np.array([p[0] for p in v]), np.array([p[1] for p in v], dtype=np.float32))
                    for t, v in self.post.items()}

    def search(self, q: str, k: int = 100) -> list[int]:
        scores = np.zeros(self.n, dtype=np.float32)
        for t in set(tokenize(q)):
            if t not in self.arr:
                continue
            ids, tf = self.arr[t]
            idf = math.log(1 + (self.n - len(ids) + 0.5) / (len(ids) + 0.5))
            denom = tf + self.k1 * (1 - self.b + self.b * self.len[ids] / self.avg)
            scores[ids] += idf * tf * (self.k1 + 1) / denom
        top = np.argsort(-scores)[:k]
        return [int(i) for i in top if scores[i] > 0]


def rrf(lists: list[list[int]], k: int = 60) -> list[int]:
    s: dict[int, float] = defaultdict(float)
    for lst in lists:
        for r, d in enumerate(lst):
            s[d] += 1.0 / (k + r + 1)
    return sorted(s, key=lambda d: -s[d])


def cached_vectors(lib: Library, texts: list[str]) -> np.ndarray:
    """Embed with the library's embedder, reusing its embeddings table as a cache."""
    emb, reason = lib._embedder_state()
    if emb is None:
        raise SystemExit(f"dense baseline needs the embedder: {reason}")
    db = lib.store.db
    hashes = [sha256("bench-desc:" + t) for t in texts]
    have = {r[0]: r[1] for r in db.execute("SELECT text_hash, vector FROM embeddings WHERE model_id=?",
                                          (emb.model_id,)) if r[0] in set(hashes)}
    need = [(h, t) for h, t in zip(hashes, texts) if h not in have]
    need = list(dict(need).items())
    for i in range(0, len(need), 256):
        part = need[i:i + 256]
        vecs = emb.embed_batch([t for _, t in part])
        with lib.store.tx() as tx:
            tx.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?,?)",
                           [(h, emb.model_id, v.shape[0], v.astype("<f4").tobytes()) for (h, _), v in zip(part, vecs)])
        for (h, _), v in zip(part, vecs):
            have[h] = v.astype("<f4").tobytes()
        print(f"  embedded {min(i + 256, len(need))}/{len(need)} descriptions", file=sys.stderr)
    return np.vstack([np.frombuffer(have[h], dtype="<f4") for h in hashes])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home", type=Path)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--sq8", action="store_true", help="force the faiss 8-bit vector index (search.sq8_above=1)")
    ap.add_argument("--dump", type=Path, help="write per-request features for calibration (JSONL)")
    args = ap.parse_args()

    skills_dir = (args.corpus / "skills").resolve()
    reqs = load_requests(args.corpus)
    t0 = time.perf_counter()
    lib = Library(home=args.home, roots=[skills_dir], auto_sync=False)
    # Measure retrieval, not the anti-repeat policy: queries logged earlier in this home
    # would otherwise push recently recommended skills down.
    import dataclasses

    no_recency = dataclasses.replace(lib.config.search, recency_window=0, **({"sq8_above": 1} if args.sq8 else {}))
    lib.config = dataclasses.replace(lib.config, search=no_recency)
    lib.searcher.s = no_recency
    rep = lib.sync()
    print(f"sync: +{rep.added} ~{rep.updated} -{rep.removed}, embedded {rep.embedded} in {time.perf_counter() - t0:.1f}s",
          file=sys.stderr)

    def corpus_id(path: str) -> str:
        return Path(path).resolve().relative_to(skills_dir).as_posix()

    records = lib.list()
    names = {corpus_id(r.path): r.name for r in records}
    results: dict[str, dict] = {}

    # skillshelf
    rows, flags, lat, dump = [], [], [], []
    for r in reqs:
        res = lib.search(r["query"], limit=10, log=False)
        lat.append(res.latency_ms)
        ranked = [corpus_id(h.path) for h in res.hits]
        flags.append((r["kind"], not res.confident))
        if r["kind"] != "gap":
            rows.append(measure(ranked, r["relevant"], names))
        if args.dump:
            dump.append({"qid": r["qid"], "kind": r["kind"], "confident": res.confident,
                         "top": [(h.name, h.score, h.match) for h in res.hits[:3]]})
    results["skillshelf"] = summarize(rows, flags)
    results["skillshelf"]["p50_ms"] = round(float(np.percentile(lat, 50)), 2)

    if not args.no_baselines:
        ids = [corpus_id(r.path) for r in records]
        meta_docs = [f"{r.name} {r.description}" for r in records]
        body_docs = [f"{r.name} {r.description} {r.body}" for r in records]
        bm_meta = BM25(meta_docs)
        bm_body = BM25(body_docs)
        dvec = cached_vectors(lib, [r.description for r in records])
        emb, _ = lib._embedder_state()
        for name, fn in [
            ("bm25-meta", lambda q: bm_meta.search(q)),
            ("dense-desc", lambda q: list(np.argsort(-(dvec @ emb.embed(q)))[:100])),
            ("rrf-meta", lambda q: rrf([bm_meta.search(q), list(np.argsort(-(dvec @ emb.embed(q)))[:100])])),
            ("bm25-body", lambda q: bm_body.search(q)),
        ]:
            rows = []
            for r in reqs:
                if r["kind"] == "gap":
                    continue
                ranked = [ids[i] for i in fn(r["query"])[:10]]
                rows.append(measure(ranked, r["relevant"], names))
            results[name] = summarize(rows, None)

    cols = ["dndcg10", "ndcg10", "hit1", "hit5", "mrr10", "gap_flag_rate", "false_gap_rate"]
    print(f"{'method':12} " + " ".join(f"{c:>14}" for c in cols))
    for name, m in results.items():
        print(f"{name:12} " + " ".join(f"{m.get(c, ''):>14}" if m.get(c) is not None else f"{'-':>14}" for c in cols))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if args.dump:
        args.dump.write_text("\n".join(json.dumps(d) for d in dump))


if __name__ == "__main__":
    main()
