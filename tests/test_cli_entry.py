"""The real console script, run as a subprocess: exit codes, one-line errors, the serve path.

These defects live in the entry point (``skillshelf.entry:main`` and ``cli.main``), which
``CliRunner`` bypasses; every test here runs ``skillshelf`` itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_skill

SCRIPT = Path(sys.executable).with_name("skillshelf")
if not SCRIPT.exists():  # an environment whose scripts live elsewhere
    SCRIPT = Path(shutil.which("skillshelf") or SCRIPT)


def sk(*args: str, home: Path | None = None, input: str | None = None, env: dict | None = None,
       embedder: str = "none", timeout: float = 60) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    e["SKILLSHELF_EMBEDDER"] = embedder
    e["COLUMNS"] = "200"
    e.update(env or {})
    base = [str(SCRIPT)] + (["--home", str(home)] if home else [])
    return subprocess.run(base + list(args), capture_output=True, text=True, input=input, env=e, timeout=timeout)


def one_line(p: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.fixture
def lib_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    assert sk("init", home=home).returncode == 0
    return home


def test_failures_exit_non_zero(tmp_path, lib_home):
    bad = tmp_path / "Bad Skill"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Bad Skill\ndescription: x\n---\n")
    p = sk("validate", str(bad))
    assert p.returncode == 1 and "FAIL" in p.stdout
    p = sk("validate", str(bad), "--json")
    assert p.returncode == 1 and '"valid": false' in p.stdout
    good = sk("validate", str(lib_home / "skills"))
    assert good.returncode == 0, good.stderr
    # answering "n" is not a success: nothing happened
    p = sk("delete", "cors-fix-nextjs-api", home=lib_home, input="n\n")
    assert p.returncode == 1 and (lib_home / "skills" / "cors-fix-nextjs-api").is_dir()
    p = sk("prune-usage", "--before", "2020-01-01", home=lib_home, input="n\n")
    assert p.returncode == 1
    p = sk("show", "nope", home=lib_home)
    assert p.returncode == 1 and one_line(p).startswith("error: no skill named 'nope'")
    p = sk("list", "--bogus", home=lib_home)
    assert p.returncode == 2 and "No such option" in p.stderr
