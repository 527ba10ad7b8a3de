"""The export and import commands as a person runs them: summaries, --quiet, a dry run that
creates nothing, and pick's closing hint that keeps --for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import write_skill


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SKILLSHELF_EMBEDDER": "none", "SKILLSHELF_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "skillshelf.entry", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_export_quiet_prints_the_summary_only_and_keeps_every_copy(tmp_path):
    home = tmp_path / "home"
    a, b = tmp_path / "a", tmp_path / "b"
    write_skill(a, "tool", description="first copy")
    write_skill(b, "tool", description="second copy")
    assert cli(home, "--root", str(a), "--root", str(b), "sync").returncode == 0
    r = cli(home, "--root", str(a), "--root", str(b), "export", "--all", "--quiet", "--to", str(tmp_path / "x.zip"))
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.strip()]
    assert lines[-1].startswith("exported 2 of 2 skills"), r.stdout
    assert not [x for x in lines if " v1 " in x], r.stdout        # no line per skill
    r = cli(home, "--root", str(a), "--root", str(b), "export", "--all", "--to", str(tmp_path / "y.zip"))
    assert "→" in r.stdout          # the second copy went into a folder of its own, and says so


def test_import_dry_run_into_a_new_home_creates_nothing(tmp_path):
    src = tmp_path / "src"
    write_skill(src, "one", description="one skill")
    home = tmp_path / "never"
    r = cli(home, "import", str(src), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "would import" in r.stdout and "nothing was written" in r.stdout
    assert not home.exists()


def test_a_dry_run_says_what_would_not_be_imported_not_what_was_not(tmp_path):
    src = tmp_path / "src"
    write_skill(src, "one", description="one skill")
    write_skill(src, "bad", description="")
    r = cli(tmp_path / "home", "import", str(src), "--dry-run")
    assert r.returncode == 1
    assert "error: some skills would not be imported" in r.stderr and "were not imported" not in r.stderr, r.stderr


def test_import_quiet_lists_only_what_was_not_taken(tmp_path):
    src = tmp_path / "src"
    write_skill(src, "one", description="one skill")
    write_skill(src, "bad", description="")
    r = cli(tmp_path / "home", "import", str(src), "--quiet")
    assert "one" not in [ln.split()[-1] for ln in r.stdout.splitlines() if ln.startswith("  ")]
    assert "bad" in r.stdout


def test_import_points_to_where_the_findings_are(tmp_path):
    src = tmp_path / "src"
    (src / "odd").mkdir(parents=True)
    (src / "odd" / "SKILL.md").write_text("---\nname: odd\ndescription: A skill with a key the spec lacks.\n"
                                          "colour: blue\n---\n# odd\n\nText.\n", encoding="utf-8")
    home = tmp_path / "home"
    r = cli(home, "import", str(src), "--dry-run")
    assert r.returncode == 0, r.stderr
    note = next(ln for ln in r.stdout.splitlines() if ln.startswith("note:"))
    assert "1 finding in the skills to import" in note and f"`skillshelf validate {src}`" in note, note
    r = cli(home, "import", str(src))
    note = next(ln for ln in r.stdout.splitlines() if ln.startswith("note:"))
    assert "1 finding in the imported skills" in note and str(home / "skills") in note, note
