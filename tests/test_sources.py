import os

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.catalog.roots import Root, discover, make_roots
from skillshelf.errors import ConfigError


def test_recursive_discovery_skips_vendor_dirs(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "a/b/deep-skill")
    write_skill(root, "node_modules/pkg/hidden")
    write_skill(root, ".git/x/hidden2")
    (root / "lower").mkdir()
    (root / "lower" / "skill.md").write_text("---\nname: lower\ndescription: d\n---\n")
    venv = root / "env1"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("")
    write_skill(venv, "lib/inside")
    found, notes = discover(Root(root, "other", "r"))
    ids = sorted(f.id for f in found)
    assert ids == ["r:a/b/deep-skill", "r:lower"]


def test_symlink_loop_is_survived_and_reported(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "one")
    os.symlink(root, root / "one" / "loop")
    linked = tmp_path / "elsewhere"
    write_skill(linked, "two")
    os.symlink(linked, root / "link")
    found, notes = discover(Root(root, "other", "r"))
    assert sorted(f.id for f in found) == ["r:link/two", "r:one"]
    assert any("loop" in n for n in notes)


def test_missing_root_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError) as exc:
        make_roots(tmp_path / "ws", [tmp_path / "nope"])
    assert "does not exist" in str(exc.value)


def test_root_labels_are_unique(tmp_path):
    a = tmp_path / "x" / "skills"
    b = tmp_path / "y" / "skills"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    labels = [r.label for r in make_roots(tmp_path / "ws", [a, b])]
    assert len(set(labels)) == 3


def test_duplicate_names_kept_and_precedence_is_deterministic(tmp_path):
    r1 = tmp_path / "r1"
    r2 = tmp_path / "r2"
    write_skill(r1, "deep/nested/dup", name="dup", description="deep copy")
    write_skill(r1, "dup", description="shallow copy")
    write_skill(r2, "dup", description="other root copy")
    lib = Library(home=tmp_path / "h", roots=[r1, r2], embedder="none", auto_sync=False)
    lib.sync()
    assert len([r for r in lib.list() if r.name == "dup"]) == 3
    # shallower wins inside the other roots; ties broken by id, never walk order
    assert lib.get("dup").description == "shallow copy"
    clash = [c for c in lib.clashes() if c.name == "dup"][0]
    assert clash.winner == lib.get("dup").id and len(clash.others) == 2
    # the workspace beats every other root
    write_skill(lib.config.workspace, "dup", description="workspace copy")
    lib.sync()
    assert lib.get("dup").description == "workspace copy"
    # any copy stays reachable by id
    assert lib.get("r2:dup").description == "other root copy"


def test_canonical_prefix_wins(tmp_path):
    r1 = tmp_path / "r1"
    write_skill(r1, "a/dup", name="dup", description="a")
    write_skill(r1, "b/dup", name="dup", description="b")
    lib = Library(home=tmp_path / "h", roots=[r1], embedder="none", auto_sync=False, canonical_prefixes=["b/"])
    lib.sync()
    assert lib.get("dup").description == "b"


def test_client_folders_are_found_with_project_before_user(tmp_path):
    from skillshelf.catalog.roots import client_roots

    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    write_skill(home / ".claude" / "skills", "tip", description="user copy")
    write_skill(project / ".agents" / "skills", "tip", description="project copy")
    write_skill(home / ".claude" / "plugins" / "market" / "plug" / "skills", "plug-tip", description="from a plugin")
    (project / "sub").mkdir()
    roots = client_roots(home=home, cwd=project / "sub")  # the git root above the cwd is the project
    kinds = {r.label: r.kind for r in roots}
    assert kinds["project-agents"] == "project" and kinds["user-claude"] == "user"
    assert any(k == "plugin" for k in kinds.values())
    from skillshelf.catalog.roots import discover, precedence_key

    found = [f for r in roots for f in discover(r)[0]]
    tips = sorted((f for f in found if f.rel == "tip"), key=lambda f: precedence_key(f.root.kind, f.rel, f.id, []))
    assert tips[0].root.kind == "project"
