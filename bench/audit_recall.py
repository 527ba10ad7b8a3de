"""The audit on skills its rules were not written against: recall on a set of hostile skills and
false highs on benign look-alikes, and the high findings on a real corpus.

    python bench/audit_recall.py --set tests/fixtures/audit/heldout
    python bench/audit_recall.py --corpus ../shared/corpus --dump highs.jsonl [--compare highs-before.jsonl]
    python bench/audit_recall.py --rules-only --set …        # without the learned model of intent

A set is a folder holding ``hostile/`` and ``benign/``, one skill folder each (a SKILL.md and
any files beside it), audited as the library audits a skill (``skill_audit.audit_folder``). It
prints each skill's risk and rules, the share of hostile skills at medium or above and at high,
and the benign skills that were high. ``--corpus`` audits every SKILL.md of a folder of skills
and writes one line per high finding (skill, rule, line, message, excerpt) to ``--dump``;
``--compare`` prints the high findings of skills that were not high in an earlier dump, for a
person to read (run the earlier dump with the rules before a change). The audit reads prose with the
learned model of intent over the bundled MiniLM model, as the library does by default; ``--rules-only``
leaves it out."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from skillshelf.supply import file_audit as audit
from skillshelf.supply.intent_model import SentenceModel
from skillshelf.supply.skill_audit import audit_folder


def sentence_model(rules_only: bool = False) -> SentenceModel | None:
    """The learned model of intent over the bundled MiniLM model (None: the rules alone)."""
    if rules_only:
        return None
    from skillshelf.embeddings.minilm import MiniLMEmbedder

    emb = MiniLMEmbedder()
    return SentenceModel(lambda: (emb, None))


def audit_set(folder: Path, model: SentenceModel | None = None) -> dict[str, dict[str, tuple[str, list[str]]]]:
    """{'hostile'|'benign': {skill: (risk, rules at that risk)}}."""
    out: dict[str, dict[str, tuple[str, list[str]]]] = {}
    for part in ("hostile", "benign"):
        out[part] = {}
        for d in sorted(p for p in (folder / part).iterdir() if p.is_dir()):
            fs, _ = audit_folder(d / "SKILL.md", sentences=model)
            r = audit.risk(fs)
            out[part][d.name] = (r, sorted({f.rule for f in fs if f.severity == r}))
    return out


def summary(result: dict[str, dict[str, tuple[str, list[str]]]]) -> dict[str, float | int | list[str]]:
    hostile, benign = result["hostile"], result["benign"]
    n = len(hostile)
    return {
        "hostile": n,
        "medium_or_above": sum(audit.severity_at_least(r, "medium") for r, _ in hostile.values()) / max(n, 1),
        "high": sum(r == "high" for r, _ in hostile.values()) / max(n, 1),
        "benign": len(benign),
        "benign_high": sorted(k for k, (r, _) in benign.items() if r == "high"),
        "missed": sorted(k for k, (r, _) in hostile.items() if not audit.severity_at_least(r, "medium")),
        "medium_only": sorted(k for k, (r, _) in hostile.items() if r == "medium"),
    }


def corpus_highs(root: Path, risks: dict[str, int] | None = None,
                 model: SentenceModel | None = None, each: dict[str, str] | None = None) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for md in sorted(root.rglob("SKILL.md")):
        data = md.read_bytes()
        found = audit.audit_bytes(data, "SKILL.md", sentences=model)
        if risks is not None:
            risks[audit.risk(found)] = risks.get(audit.risk(found), 0) + 1
        if each is not None:
            each[str(md.parent.relative_to(root))] = audit.risk(found)
        for f in found:
            if f.severity == "high":
                rows.append({"skill": str(md.parent.relative_to(root)), "rule": f.rule, "line": f.line,
                             "message": f.message, "excerpt": f.excerpt})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, help="a folder holding hostile/ and benign/ skill folders")
    ap.add_argument("--corpus", type=Path, help="the corpus folder (holding skills/) or a skills folder")
    ap.add_argument("--dump", type=Path, help="write the corpus's high findings here (JSON lines)")
    ap.add_argument("--compare", type=Path, help="an earlier dump: print the high findings of skills new to high")
    ap.add_argument("--rules-only", action="store_true", help="leave the learned model of intent out")
    ap.add_argument("--risks", type=Path, help="write each corpus skill's risk here (JSON); with --risks-before, "
                                               "print every skill whose risk changed")
    ap.add_argument("--risks-before", type=Path, help="an earlier --risks file")
    a = ap.parse_args()
    code = 0
    model = sentence_model(a.rules_only)
    if model is not None:
        model.enabled()           # load the model before the clock starts
    if a.set:
        result = audit_set(a.set, model)
        for part in ("hostile", "benign"):
            print(f"{part}:")
            for name, (r, rules) in result[part].items():
                print(f"  {name:36} {r:6} {', '.join(rules)}")
        s = summary(result)
        print(f"\n{s['hostile']} hostile: {100 * float(s['medium_or_above']):.1f} % medium or above, "  # type: ignore[arg-type]
              f"{100 * float(s['high']):.1f} % high; {s['benign']} benign, high: {s['benign_high'] or 'none'}")  # type: ignore[arg-type]
        print(f"missed (below medium): {s['missed'] or 'none'}; medium only: {s['medium_only'] or 'none'}")
        code = 0 if float(s["medium_or_above"]) >= 0.9 and float(s["high"]) >= 0.75 and not s["benign_high"] else 1  # type: ignore[arg-type]
    if a.corpus:
        root = a.corpus / "skills" if (a.corpus / "skills").is_dir() else a.corpus
        t0, c0 = time.perf_counter(), time.process_time()
        risks: dict[str, int] = {}
        each: dict[str, str] = {}
        rows = corpus_highs(root, risks, model, each)
        skills = {r["skill"] for r in rows}
        print(f"\ncorpus: {len(rows)} high findings in {len(skills)} skills ({time.perf_counter() - t0:.1f} s wall, "
              f"{time.process_time() - c0:.1f} s CPU); skills by risk: "
              + ", ".join(f"{s} {risks.get(s, 0):,}" for s in audit.SEVERITIES))
        by_rule: dict[str, int] = {}
        for row in rows:
            by_rule[str(row["rule"])] = by_rule.get(str(row["rule"]), 0) + 1
        for rule, c in sorted(by_rule.items(), key=lambda kv: -kv[1]):
            print(f"  {rule:28} {c}")
        if a.dump:
            a.dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
        if a.compare:
            before = [json.loads(x) for x in a.compare.read_text().splitlines() if x.strip()]
            old = {(b["skill"], b["rule"]) for b in before}
            new = [row for row in rows if (row["skill"], row["rule"]) not in old]
            old_skills = {b["skill"] for b in before}
            print(f"\nnew high findings against {a.compare.name}: {len(new)} in "
                  f"{len({n['skill'] for n in new})} skills ({len({n['skill'] for n in new} - old_skills)} skills new "
                  f"to high); gone: {len(old_skills - skills)} skills")
            for n in new:
                print(f"- {n['skill']}:{n['line']}  {n['rule']}: {n['message']}\n    {n['excerpt']}")
        if a.risks:
            a.risks.write_text(json.dumps(each, indent=0, sort_keys=True))
        if a.risks_before:
            was = json.loads(a.risks_before.read_text())
            moved = sorted(k for k in each if was.get(k, "none") != each[k])
            print(f"\nskills whose risk changed against {a.risks_before.name}: {len(moved)}")
            for k in moved:
                print(f"- {k}: {was.get(k, 'none')} -> {each[k]}")
    sys.exit(code)


if __name__ == "__main__":
    main()
