"""Audit a folder of skills: findings per severity and rule, the time the audit adds to a
first index, samples for a person to read, and every rule caught on the hostile fixtures.

    python bench/audit.py --corpus ../shared/corpus [--first-index 40] [--sample 20] [--seed 7] [--rules-only]

Three timings over every SKILL.md folder of the corpus:

- **SKILL.md only**: ``audit.audit_bytes`` of each SKILL.md's bytes already in memory (what the rules, and
  the model of intent unless ``--rules-only``, cost);
- **first index**: ``Auditor.audit_skill`` of each skill into a new SQLite store, given the
  SKILL.md bytes as a sync has them, in transactions of 500 skills as a sync's (the walk of
  the folder, the other files, the rows);
- **unchanged**: ``Auditor.refresh`` of every skill again (a walk and a stat per file).

Then pinning the corpus as one root (``Pins.pin_root``: every file hashed, each SKILL.md kept,
each skill audited) and a refresh of the pins with nothing changed.

The audit reads prose with the learned model of intent over the bundled MiniLM model, as the library
does by default (the model's load is left out of the timings); ``--rules-only`` leaves it out.
``--first-index`` is the seconds a first index of the same corpus takes on this machine
(``bench/first_index.py``, BENCHMARKS.md): the audit's share of it is printed against the goal of
10 %. Then ``--sample`` random high findings and as many random skills without any finding, for
a person to read, and the hostile set of tests/fixtures/audit (every rule must be caught, no
benign look-alike high)."""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

from skillshelf.catalog.roots import Root, discover
from skillshelf.store import Store
from skillshelf.supply import file_audit as audit
from skillshelf.supply.pins import Pins
from skillshelf.supply.skill_audit import Auditor, audit_folder

REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="../shared/corpus", help="the corpus folder (holding skills/) or a skills folder")
    ap.add_argument("--first-index", type=float, default=40.0, help="seconds of a first index of this corpus here")
    ap.add_argument("--sample", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rules-only", action="store_true", help="without the learned model of intent")
    a = ap.parse_args()
    sys.path.insert(0, str(REPO / "bench"))
    from audit_recall import sentence_model

    model = sentence_model(a.rules_only)
    if model is not None:
        model.score(["load the model before timing"])
    root = Path(a.corpus)
    root = root / "skills" if (root / "skills").is_dir() else root
    found, _ = discover(Root(root, "other", "corpus"))
    skills = {f.id: f for f in found}
    datas = {sid: Path(f.file).read_bytes() for sid, f in skills.items()}
    n = len(skills)
    print(f"{n:,} skills, {sum(map(len, datas.values())) / 1e6:.1f} MB of SKILL.md")

    t0 = time.perf_counter()
    per_rules = []
    for sid, data in datas.items():
        t1 = time.perf_counter()
        audit.audit_bytes(data, Path(skills[sid].file).name, sentences=model)
        per_rules.append(time.perf_counter() - t1)
    rules_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="skillshelf-audit-") as tmp:
        store = Store(Path(tmp) / "index.db")
        auditor = Auditor(store, sentences=model)
        results = {}
        per_skill = []
        ids = list(skills)
        if model is not None:
            model.cache.clear()               # sentences met in the pass above are not scored from memory
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, n, 500):          # in the sync's transactions of 500 files
            with store.tx() as tx:
                for sid in ids[start:start + 500]:
                    t1 = time.perf_counter()
                    results[sid] = auditor.audit_skill(sid, skills[sid].file, skill_md_bytes=datas[sid], tx=tx)
                    per_skill.append(time.perf_counter() - t1)
        first_s, first_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        changed = auditor.refresh((sid, f.file) for sid, f in skills.items())
        again_s = time.perf_counter() - t0
        counts = auditor.counts()
        pins = Pins(store)
        t0 = time.perf_counter()
        pinned = pins.pin_root(Root(root, "other", "corpus"))
        pin_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        moved = pins.refresh(found)
        pin_again_s = time.perf_counter() - t0
        store.close()

    print(f"SKILL.md only:{rules_s:6.2f} s  ({1000 * rules_s / n:.3f} ms per skill; p50 {1000 * pct(per_rules, .5):.3f}, "
          f"p99 {1000 * pct(per_rules, .99):.2f}, max {1000 * max(per_rules):.1f} ms)")
    print(f"first index:  {first_s:6.2f} s  ({1000 * first_s / n:.3f} ms per skill; p50 {1000 * pct(per_skill, .5):.3f}, "
          f"p99 {1000 * pct(per_skill, .99):.2f}, max {1000 * max(per_skill):.1f} ms) = "
          f"{100 * first_s / a.first_index:.1f} % of a {a.first_index:.0f} s first index (goal <= 10 %); "
          f"{first_cpu:.2f} s CPU")
    print(f"unchanged:    {again_s:6.2f} s  (re-audited {len(changed)})")
    print(f"pin the root: {pin_s:6.2f} s  ({pinned.skills:,} skills, {pinned.files:,} files); refresh of the pins: "
          f"{pin_again_s:.2f} s (held {len(moved['held'])})")

    by_risk = collections.Counter(r.risk for r in results.values())
    print("\nskills by risk: " + ", ".join(f"{s} {by_risk.get(s, 0):,}" for s in audit.SEVERITIES)
          + f"  (store: {counts})")
    rules = collections.Counter((f.rule, f.severity) for r in results.values() for f in r.findings)
    skills_per = collections.Counter((f.rule, f.severity) for r in results.values() for f in {(x.rule, x.severity): x
                                                                                             for x in r.findings}.values())
    print(f"\n{'rule':28} {'severity':8} {'findings':>8} {'skills':>7}")
    for (rule, sev), c in sorted(rules.items(), key=lambda kv: (-audit.RANK[kv[0][1]], kv[0][0])):
        print(f"{rule:28} {sev:8} {c:8,} {skills_per[(rule, sev)]:7,}")

    rng = random.Random(a.seed)
    highs = [(sid, f) for sid, r in results.items() for f in r.findings if f.severity == "high"]
    print(f"\n{min(a.sample, len(highs))} random high findings of {len(highs)}:")
    for sid, f in rng.sample(highs, min(a.sample, len(highs))):
        print(f"- {sid}  {f.file}:{f.line}  {f.rule}: {f.message}\n    {f.excerpt}")
    clean = sorted(sid for sid, r in results.items() if not r.findings)
    print(f"\n{min(a.sample, len(clean))} random skills without any finding (of {len(clean):,}), to read:")
    for sid in rng.sample(clean, min(a.sample, len(clean))):
        print(f"- {skills[sid].file}")

    fixtures = REPO / "tests" / "fixtures" / "audit"
    caught: dict[str, set[str]] = collections.defaultdict(set)
    print("\nhostile set (tests/fixtures/audit/hostile): fixture -> risk, rules")
    for d in sorted((fixtures / "hostile").iterdir()):
        fs, _ = audit_folder(d / "SKILL.md")
        for f in fs:
            caught[f.rule].add(f.severity)
        print(f"  {d.name:24} {audit.risk(fs):6} {', '.join(sorted({f.rule for f in fs}))}")
    missing = set(audit.RULES) - set(caught) - {"files.outside-link", "files.not-audited"}
    print(f"rules caught: {len(caught)} of {len(audit.RULES)} (files.outside-link and files.not-audited are made on the "
          f"fly in tests/test_audit.py); missing here: {sorted(missing) or 'none'}")
    bad = []
    for d in sorted((fixtures / "benign").iterdir()):
        fs, _ = audit_folder(d / "SKILL.md")
        if audit.risk(fs) == "high":
            bad.append(d.name)
    print(f"benign look-alikes flagged high: {bad or 'none'}")
    sys.exit(1 if missing or bad else 0)


if __name__ == "__main__":
    main()
