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


# --- the layout: a folder per part -------------------------------------------------------------
CORE = {"errors", "version", "text", "files", "decisions", "skill", "config", "net", "access", "checks"}
TOP = CORE | {"library", "entry"}                      # the core values, the facade, the console script
PARTS = ["store", "embeddings", "catalog", "usage", "search", "evolution", "supply", "judge", "team", "onboarding"]


def test_the_top_level_holds_only_core_values_the_facade_and_the_entry_point():
    top = {p.stem for p in PKG.glob("*.py")} - {"__init__"}
    assert top == TOP, f"put these modules in a part: {sorted(top - TOP)}; missing: {sorted(TOP - top)}"
    assert {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()} == set(PARTS) | {"cli", "mcp", "web"}


def test_each_part_says_what_it_owns_and_what_it_may_use():
    """The ``May use:`` line of each part's docstring names exactly the parts its contract allows."""
    contracts = {c["id"]: c for c in _contracts()}
    for part in PARTS + ["mcp"]:
        doc = ast.get_docstring(ast.parse((PKG / part / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert "May use:" in doc, f"{part}/__init__.py: say what the part owns and what it may use"
        if part == "mcp":
            continue
        contract = contracts[f"part-{part}"]
        forbidden = {m.split(".")[1] for m in contract["forbidden_modules"]}
        allowed = set(PARTS) - forbidden - {part}
        may_use = doc.split("May use:", 1)[1]
        named = {p for p in PARTS if f"``{p}``" in may_use}
        assert named == allowed, (part, "docstring names", named, "contract allows", allowed)


def test_every_part_has_its_own_contract():
    ids = {c["id"] for c in _contracts()}
    assert {f"part-{p}" for p in PARTS} <= ids


def test_no_two_modules_of_the_core_and_the_parts_read_as_the_same():
    """A name says what a module does; the same name twice (``history`` here and ``history`` there) makes a
    reader open both. ``store/`` names its modules after what they store, the adapters after what they serve."""
    seen: dict[str, str] = {}
    clashes = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG)
        if p.stem == "__init__" or rel.parts[0] in ("store", "cli", "web", "mcp"):
            continue
        if p.stem in seen:
            clashes.append(f"{seen[p.stem]} and {rel}")
        seen.setdefault(p.stem, str(rel))
    assert not clashes, clashes


def test_the_shared_state_is_typed_by_protocols():
    tree = ast.parse((PKG / "store" / "__init__.py").read_text(encoding="utf-8"))
    shared = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Shared")
    fields = {n.target.id: ast.unparse(n.annotation) for n in shared.body if isinstance(n, ast.AnnAssign)}
    assert "Any" not in " ".join(fields.values()), fields


def test_both_stores_satisfy_the_protocols(tmp_path):
    """Every method a protocol names exists on the SQLite class and on its PostgreSQL twin, with the same
    parameters (the type checker in CI checks the facade's use of them)."""
    import inspect

    from skillshelf.store import (catalog, judge, learning, overlay, pg_judge, pg_learning, pg_overlay, pg_pins,
                                  pg_sources, pg_usage, pg_vectors, pins, protocols, usage, vectors)

    pairs = {protocols.UsageLogStore: (usage.UsageLog, pg_usage.PgUsageLog),
             protocols.UsageReadStore: (catalog.UsageReads, pg_usage.PgUsageReads),
             protocols.LearningStore: (learning.LearningMemory, pg_learning.PgLearningMemory),
             protocols.JudgeLogStore: (judge.JudgeLog, pg_judge.PgJudgeLog),
             protocols.OverlayStore: (overlay.Overlays, pg_overlay.PgOverlays),
             protocols.PinStore: (pins.PinnedContent, pg_pins.PgPinnedContent),
             protocols.TrustStore: (pg_pins.PgTrusts,),
             protocols.SourceLockStore: (pg_sources.PgSourceLocks,),
             protocols.VectorCacheStore: (vectors.VectorCache, pg_vectors.PgVectorCache)}
    for proto, classes in pairs.items():
        names = [n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")]
        assert names, proto
        for cls in classes:
            for n in names:
                assert hasattr(cls, n), f"{cls.__name__} lacks {n} of {proto.__name__}"
                want = list(inspect.signature(getattr(proto, n)).parameters)
                have = list(inspect.signature(getattr(cls, n)).parameters)
                assert have == want, (cls.__name__, n, have, want)


def test_the_type_check_passes():
    exe = shutil.which("mypy") or str(Path(sys.executable).with_name("mypy"))
    if not Path(exe).exists():
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    r = subprocess.run([exe, "src/skillshelf"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
