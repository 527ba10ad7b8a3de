"""The audit's learned model of intent: fit its weights, and measure it leaving each fixture set out.

    python bench/audit_intent.py --corpus ../shared/corpus --fit            # writes supply/intent_weights.json
    python bench/audit_intent.py --corpus ../shared/corpus --loso           # leave-one-set-out recall
    python bench/audit_intent.py --corpus ../shared/corpus --loso --old-rules tuning=DIR heldout-v1=DIR …

Positives are the sentences of the hostile fixtures that carry a request in words
(``tests/fixtures/audit/intent-labels.json``, by intent); the other sentences of a hostile fixture
are left out. Negatives are the candidate sentences of the benign fixtures and of every SKILL.md of
the corpus (background: its text is never shipped, only the weights fitted on it). One logistic
regression per intent over the bundled MiniLM embedding, fitted by Newton's method from zero with
an L2 penalty (deterministic: the same sentences give the same weights).

``--loso``: for each fixture set, the weights are fitted without that set's skills (positives and
negatives) and the set is audited by the current rules plus that model, as the library does
(``audit_folder``); the corpus's sentences are scored in two halves, each by weights fitted on the
other half. ``--old-rules SET=DIR`` also combines the model with the risks the rules of the day a
set was written gave it (a source tree of that commit, ``DIR/src``): what the rules plus the model
would have caught on a set neither had seen."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import unicodedata
from dataclasses import replace
from pathlib import Path

import numpy as np

from skillshelf.embeddings.minilm import MiniLMEmbedder
from skillshelf.supply import file_audit as audit
from skillshelf.supply.intent_model import (
    KINDS,
    WEIGHTS_FILE,
    SentenceModel,
    Weights,
    at_stake,
    candidates,
    sentence_text,
)
from skillshelf.supply.skill_audit import audit_folder

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "audit"
SETS = ("tuning", "heldout-v1", "heldout-v2", "heldout-v3", "heldout-v4", "heldout-v5", "heldout-v6", "heldout-v7")
L2 = 0.5
POSITIVE_WEIGHT = 0.1        # the positives of an intent weigh this share of the negatives together
HIGH, MEDIUM = 0.9, 0.5
RANK = audit.RANK


def shown(text: str) -> str:
    """Text as a model reads it: tag characters spelled out, other invisible characters removed."""
    out = []
    for ch in text:
        o = ord(ch)
        if 0xE0020 <= o <= 0xE007E:
            out.append(chr(o - 0xE0000))
        elif unicodedata.category(ch) != "Cf" and not (0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF):
            out.append(ch)
    return "".join(out)


def _words(s: str) -> set[str]:
    return set("".join(c if c.isalnum() else " " for c in s.lower()).split())


def fixture_sentences() -> list[dict]:
    """Every candidate sentence of the fixture sets' Markdown files: set, part, skill, text, intents
    and label (an intent, ``benign``, or ``neutral`` for a hostile skill's other sentences)."""
    labels = json.loads((FIXTURES / "intent-labels.json").read_text())["labels"]
    rows = []
    for name in SETS:
        for part in ("hostile", "benign"):
            for d in sorted(p for p in (FIXTURES / name / part).iterdir() if p.is_dir()):
                mine = [(k, _words(s)) for k, s in labels.get(f"{name}/{d.name}", [])]
                for f in sorted(d.rglob("*")):
                    if not f.is_file() or audit.file_kind(f.name) != "markdown":
                        continue
                    data = shown(f.read_text("utf-8", "replace")).encode()
                    for a, b, kinds in candidates(data):
                        text = sentence_text(data, a, b)
                        y = "benign"
                        if part == "hostile":
                            w, y = _words(text), "neutral"
                            for k, lw in mine:
                                if w and lw and (len(w & lw) / len(w | lw) >= 0.5 or lw <= w):
                                    y = k
                                    break
                        rows.append({"set": name, "part": part, "skill": d.name, "s": text, "k": kinds, "y": y})
    return rows


def corpus_sentences(root: Path) -> list[dict]:
    rows = []
    for md in sorted(root.rglob("SKILL.md")):
        data = md.read_bytes()
        for a, b, kinds in candidates(data):
            rows.append({"skill": str(md.parent.relative_to(root)), "s": sentence_text(data, a, b), "k": kinds})
    return rows


class Vectors:
    """Each text's MiniLM vector, embedded once (and kept in ``cache`` between runs when given)."""

    def __init__(self, embedder: MiniLMEmbedder, cache: Path | None):
        self.embedder, self.cache = embedder, cache
        self.index: dict[str, int] = {}
        self.vecs = np.zeros((0, 384), np.float32)
        if cache and cache.with_suffix(".json").exists():
            kept = json.loads(cache.with_suffix(".json").read_text())
            if kept.get("model") == embedder.model_id:
                self.index = {t: i for i, t in enumerate(kept["texts"])}
                self.vecs = np.load(cache.with_suffix(".npy"))

    def __call__(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.index]
        if todo:
            self.vecs = np.vstack([self.vecs, self.embedder.embed_batch(todo)])
            self.index.update({t: len(self.index) + i for i, t in enumerate(todo)})
            if self.cache:
                np.save(self.cache.with_suffix(".npy"), self.vecs)
                self.cache.with_suffix(".json").write_text(json.dumps(
                    {"model": self.embedder.model_id, "texts": sorted(self.index, key=self.index.__getitem__)}))
        return self.vecs[[self.index[t] for t in texts]]


def fit_one(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = L2, iters: int = 12) -> tuple[np.ndarray, float]:
    """Weighted L2-penalised logistic regression by Newton's method from zero (the bias is not penalised)."""
    x1 = np.hstack([x, np.ones((len(x), 1))]).astype(np.float64)
    w = np.zeros(x1.shape[1])
    reg = np.eye(x1.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(x1 @ w)))
        grad = x1.T @ (weight * (p - y)) + reg @ w
        hess = (x1 * (weight * p * (1 - p))[:, None]).T @ x1 + reg
        w -= np.linalg.solve(hess, grad)
    return w[:-1], float(w[-1])


def fit(fixture: list[dict], background: list[dict], vectors: Vectors, model_id: str, held: str | None = None) -> Weights:
    negs = sorted({r["s"] for r in fixture if r["y"] == "benign" and r["set"] != held} | {r["s"] for r in background})
    xn = vectors(negs)
    ws, bs = [], []
    for kind in KINDS:
        pos = sorted({r["s"] for r in fixture if r["y"] == kind and r["set"] != held})
        x = np.vstack([vectors(pos), xn])
        y = np.r_[np.ones(len(pos)), np.zeros(len(negs))]
        weight = np.r_[np.full(len(pos), POSITIVE_WEIGHT * len(negs) / max(len(pos), 1)), np.ones(len(negs))]
        w, b = fit_one(x, y, weight)
        ws.append(w)
        bs.append(b)
    return Weights(model_id.split("-onnx")[0], KINDS, np.asarray(ws, np.float32), np.asarray(bs, np.float32), HIGH, MEDIUM)


def risks(folder: Path, model: SentenceModel | None) -> dict[str, str]:
    out = {}
    for part in ("hostile", "benign"):
        for d in sorted(p for p in (folder / part).iterdir() if p.is_dir()):
            out[f"{part}/{d.name}"] = audit.risk(audit_folder(d / "SKILL.md", sentences=model)[0])
    return out


def old_risks(name: str, tree: Path) -> dict[str, str]:
    code = ("import json,sys; from pathlib import Path; from skillshelf.supply.skill_audit import audit_folder; "
            "from skillshelf.supply.file_audit import risk; S=Path(sys.argv[1]); print(json.dumps({f'{p}/{d.name}': "
            "risk(audit_folder(d/'SKILL.md')[0]) for p in ('hostile','benign') for d in sorted((S/p).iterdir()) if d.is_dir()}))")
    out = subprocess.run([sys.executable, "-c", code, str(FIXTURES / name)], capture_output=True, text=True, check=True,
                         cwd="/", env={"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


def combine(r: dict[str, str], model: dict[str, tuple[float, bool]], medium: float, high: float) -> dict[str, str]:
    """A skill's risk with the model's best sentence added (``model``: skill -> (score, whether a sentence
    at medium puts something grave at stake)), without the context rules (quotes, teaching)."""
    out = {}
    for k, v in r.items():
        p, stake = model.get(k, (0.0, False))
        m = "high" if p >= high or (stake and p >= medium) else "medium" if p >= medium else "none"
        out[k] = v if RANK[v] >= RANK[m] else m
    return out


def line(name: str, r: dict[str, str]) -> str:
    h = [v for k, v in r.items() if k.startswith("hostile/")]
    b = [k.split("/", 1)[1] for k, v in r.items() if k.startswith("benign/") and v == "high"]
    return (f"{name:11} {len(h):3} hostile: {100 * sum(RANK[v] >= 2 for v in h) / len(h):5.1f} % medium+, "
            f"{100 * sum(v == 'high' for v in h) / len(h):5.1f} % high; benign high: {', '.join(b) or 'none'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="the corpus folder (holding skills/) or a skills folder")
    ap.add_argument("--fit", action="store_true", help=f"fit on every set and write {WEIGHTS_FILE.name}")
    ap.add_argument("--loso", action="store_true", help="leave each set out in turn")
    ap.add_argument("--old-rules", nargs="*", default=[], help="SET=DIR: a source tree of the rules a set was written after")
    ap.add_argument("--thresholds", nargs="*", default=[f"{MEDIUM}/{HIGH}"], help="MEDIUM/HIGH pairs to report")
    ap.add_argument("--cache", type=Path, help="keep the sentences' vectors here between runs (a path without suffix)")
    a = ap.parse_args()
    root = a.corpus / "skills" if (a.corpus / "skills").is_dir() else a.corpus
    emb = MiniLMEmbedder()
    vectors = Vectors(emb, a.cache)
    t0 = time.perf_counter()
    fixture, background = fixture_sentences(), corpus_sentences(root)
    vectors([r["s"] for r in fixture] + [r["s"] for r in background])
    counts = {k: sum(r["y"] == k for r in fixture) for k in (*KINDS, "neutral", "benign")}
    print(f"sentences: fixtures {counts}, corpus {len(background):,} ({time.perf_counter() - t0:.1f} s)")
    if a.fit:
        w = fit(fixture, background, vectors, emb.model_id)
        WEIGHTS_FILE.write_text(json.dumps(w.as_dict()) + "\n")
        print(f"wrote {WEIGHTS_FILE} ({w.digest})")
    if a.loso:
        old = dict(x.split("=", 1) for x in a.old_rules)
        pairs = [tuple(float(v) for v in x.split("/")) for x in a.thresholds]
        total: dict[str, list[int]] = {}
        for name in SETS:
            w = fit(fixture, background, vectors, emb.model_id, held=name)
            scored = SentenceModel(lambda: emb, w)
            rows = [r for r in fixture if r["set"] == name]
            p = scored.score([r["s"] for r in rows])
            best: dict[str, tuple[float, bool]] = {}
            for r, pr in zip(rows, p):
                key = f"{r['part']}/{r['skill']}"
                score, kind = max((float(pr[KINDS.index(k)]), k) for k in r["k"])
                stake = at_stake(kind, r["s"].lower().encode())
                got = best.get(key, (0.0, False))
                best[key] = (max(got[0], score), got[1] or (stake and score >= min(m for m, _ in pairs)))
            runs = [("rules now", risks(FIXTURES / name, None))]
            for medium, high in pairs:
                model = SentenceModel(lambda: emb, replace(w, medium=medium, high=high))
                model.cache = scored.cache          # the same scores: only the thresholds differ
                runs.append((f"rules now + model without this set {medium}/{high}", risks(FIXTURES / name, model)))
            if name in old:
                then = old_risks(name, Path(old[name]))
                runs.append(("rules of its day", then))
                for medium, high in pairs:
                    runs.append((f"rules of its day + model without this set {medium}/{high}, ungraded",
                                 combine(then, best, medium, high)))
            for label, r in runs:
                print(line(name, r) + f"   [{label}]")
                t = total.setdefault(label.replace(", ungraded", ""), [0, 0, 0, 0])
                h = [v for k, v in r.items() if k.startswith("hostile/")]
                t[0] += len(h)
                t[1] += sum(RANK[v] >= 2 for v in h)
                t[2] += sum(v == "high" for v in h)
                t[3] += sum(v == "high" for k, v in r.items() if k.startswith("benign/"))
        print("\nall sets together:")
        for label, (n, m, h, b) in total.items():
            print(f"  {label:58} {n} hostile: {100 * m / n:5.1f} % medium+, {100 * h / n:5.1f} % high; {b} benign high")
        skills = sorted({r["skill"] for r in background})
        half = set(skills[::2])
        a_rows = [r for r in background if r["skill"] in half]
        b_rows = [r for r in background if r["skill"] not in half]
        scores: dict[str, float] = {}
        for train, test in ((a_rows, b_rows), (b_rows, a_rows)):
            p = SentenceModel(lambda: emb, fit(fixture, train, vectors, emb.model_id)).score([r["s"] for r in test])
            for r, pr in zip(test, p):
                scores[r["skill"]] = max(scores.get(r["skill"], 0.0), max(float(pr[KINDS.index(k)]) for k in r["k"]))
        for medium, high in pairs:
            print(f"corpus {medium}/{high}, each half scored by weights fitted on the other (before the context rules): "
                  f"{sum(v >= high for v in scores.values())} skills with a sentence at high, "
                  f"{sum(medium <= v < high for v in scores.values())} more at medium")

if __name__ == "__main__":
    main()
