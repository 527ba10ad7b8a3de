"""Verdict agreement between `skillshelf validate` and the reference validator skills-ref.

    python bench/validator_agreement.py --corpus ../shared/corpus

A verdict is "valid" (no error-level finding) or "invalid". Disagreements are grouped by
the rules that decided our verdict, so each difference can be explained.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from skills_ref.validator import validate as ref_validate

from skillshelf import skill as skillmod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    args = ap.parse_args()
    files = sorted((args.corpus / "skills").rglob("SKILL.md"))
    agree = 0
    ours_only: Counter[str] = Counter()
    ref_only: Counter[str] = Counter()
    for f in files:
        parsed = skillmod.parse(f.read_bytes(), folder_name=f.parent.name)
        our_errors = [x for x in parsed.findings if x.severity in ("fatal", "error")]
        ref_errors = ref_validate(f.parent)
        if bool(our_errors) == bool(ref_errors):
            agree += 1
        elif our_errors:
            ours_only[",".join(sorted({x.rule for x in our_errors}))] += 1
        else:
            ref_only[ref_errors[0][:80]] += 1
    n = len(files)
    print(f"{n} files; verdicts agree on {agree} ({agree / n:.1%})")
    print("invalid for skillshelf only:", dict(ours_only.most_common(10)))
    print("invalid for skills-ref only:", dict(ref_only.most_common(10)))


if __name__ == "__main__":
    main()
