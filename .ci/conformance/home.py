"""Make the home the conformance suite runs against: one skill with everything a host must
verify -- a licence and other frontmatter keys, supporting files in folders, 260 reference
files (more than any page holds) and a nested skill -- and no other skill, so the suite's
"first listed skill" is that one. Usage: python home.py FOLDER (the home is FOLDER/home)."""

import sys
from pathlib import Path

from skillshelf import Library

SKILL = """---
name: pdf-processing
description: Extract text and tables from PDF files, fill PDF forms and assemble documents. Use when a task
  reads, fills or merges PDFs.
license: Apache-2.0
compatibility: needs python3 and pypdf
allowed-tools: Bash(python3:*) Read
metadata:
  version: "2.1.0"
  author: skillshelf tests
---

# PDF processing

Run `scripts/extract.py` on the file. Pick a template from `templates/`; the references in
`references/` cover each form field by field.
"""

NESTED = """---
name: regional
description: Regional invoice templates (EU VAT, UK) for the PDF processing skill
---

# Regional templates

Use `eu-invoice.md` for EU customers.
"""


def main(folder: Path) -> None:
    skill = folder / "skills" / "pdf-processing"
    (skill / "scripts").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "templates" / "regional").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (skill / "scripts" / "extract.py").write_text("import sys\nprint(open(sys.argv[1], 'rb').read(4))\n")
    (skill / "templates" / "invoice.md").write_text("# Invoice\n\n| item | amount |\n")
    for i in range(260):
        (skill / "references" / f"form-{i:03d}.md").write_text(f"# Form {i}\n\nField {i}: fill it in.\n")
    (skill / "templates" / "regional" / "SKILL.md").write_text(NESTED, encoding="utf-8")
    (skill / "templates" / "regional" / "eu-invoice.md").write_text("# EU invoice\n\nVAT number required.\n")
    lib = Library.init(folder / "home", samples=False, embedder="none", auto_sync=False)
    lib.add_root(folder / "skills")
    lib.close()
    with Library(folder / "home", embedder="none", auto_sync=False) as lib:    # opened again: with the new root
        lib.sync()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
