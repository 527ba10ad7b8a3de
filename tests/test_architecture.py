"""The house rules, checked: the layers written as import-linter contracts hold, every module
is placed in a layer, SQL lives only in the storage package, and no module grows past ~700
lines."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "src" / "skillshelf"
MAX_LINES = 720          # "about 700": split a module by noun before it passes this


def _modules() -> list[str]:
    out = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


def _contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    r = subprocess.run([exe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_every_module_has_a_place_in_the_layers():
    layers = next(c for c in _contracts() if c["id"] == "layers")["layers"]
    placed = set()
    for layer in layers:
        placed.update(m.strip().strip("()") for m in re.split(r"[|:]", layer))
    missing = []
    for mod in _modules():
        if mod == "skillshelf":
            continue
        # a module is placed when it or one of its packages is a layer
        parts = mod.split(".")
        if not any(".".join(parts[:i]) in placed for i in range(2, len(parts) + 1)):
            missing.append(mod)
    assert not missing, f"put these modules in a layer of pyproject.toml's import contracts: {missing}"


def test_sql_lives_in_the_storage_package():
    calls = re.compile(r"\.(execute|executemany|executescript)\(")
    outside = []
    for p in PKG.rglob("*.py"):
        if (PKG / "store") in p.parents:
            continue
        for no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if calls.search(line):
                outside.append(f"{p.relative_to(PKG)}:{no}: {line.strip()[:80]}")
    assert not outside, "SQL outside skillshelf.store:\n" + "\n".join(outside)


def test_no_module_is_a_god_module():
    big = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not big, f"split these modules by noun: {big}"


def test_library_is_a_facade_not_a_mixin_tower():
    tree = ast.parse((PKG / "library.py").read_text(encoding="utf-8"))
    lib = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Library")
    assert lib.bases == [], "Library composes its services; it inherits from none"
