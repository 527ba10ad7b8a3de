"""A new user's walk through sources (a git repository over ``file://``, ``sources add / update /
restore``, ``review``): a person's work is never dropped, and what a command did is said. Run as
the real console script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_sources_git import ALPHA, Upstream, edit_as_person, git, lock_of, sk

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def _path_shown(home: Path, name: str) -> Path:
    r = sk(home, "show", name, "--json")
    assert r.returncode == 0, r.stderr
    return Path(json.loads(r.stdout)["path"])


def _text(home: Path, name: str) -> str:
    r = sk(home, "show", name, "--json")
    assert r.returncode == 0, r.stderr
    return Path(json.loads(r.stdout)["path"]).read_text(encoding="utf-8")


def test_an_edit_in_the_sources_folder_becomes_a_workspace_copy_and_upstream_merges_into_it(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    path = _path_shown(home, "alpha")
    assert path == home / "sources" / "ops" / "skills" / "alpha" / "SKILL.md"
    # the person edits the file `show` printed, and adds a file beside it
    path.write_text(path.read_text(encoding="utf-8").replace("Step one: list the widgets.",
                                                              "Step one: list the widgets by owner."),
                    encoding="utf-8")
    (path.parent / "notes.md").write_text("my notes\n", encoding="utf-8")
    # upstream changes another line of the same skill
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    upstream.commit("a week")
    upstream.push()

    dry = sk(home, "sources", "update", "ops", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "your edit of sources/ops/skills/alpha" in dry.stdout
    assert "becomes the workspace copy alpha" in dry.stdout
    assert "put back" in dry.stdout and "are put back (e.g." not in dry.stdout

    doc = sk(home, "doctor")
    assert "workspace copy" in doc.stdout + doc.stderr

    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "your edit of sources/ops/skills/alpha" in r.stdout and "is now the workspace copy alpha" in r.stdout
    # the edit is in the workspace copy, upstream's change merged into it
    text = _text(home, "alpha")
    assert "Step one: list the widgets by owner." in text
    assert "Keep the old key a week." in text
    shown = json.loads(sk(home, "show", "alpha", "--json").stdout)
    assert shown["kind"] == "workspace" and "sources" not in Path(shown["path"]).parts, shown
    assert (Path(shown["path"]).parent / "notes.md").read_text(encoding="utf-8") == "my notes\n"
    # the source's folder is the locked commit again
    assert sk(home, "lock", "--check").returncode == 0
    # the base kept is upstream's text: the next upstream change merges cleanly
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "# Alpha", "# Alpha, the key rotation"))
    upstream.commit("twice")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    text = _text(home, "alpha")
    assert "by owner" in text and "a week" in text and "the key rotation" in text


def test_an_edit_beside_an_existing_copy_is_copied_aside_and_named(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    src = home / "sources" / "ops" / "skills" / "alpha" / "SKILL.md"
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key by hand.")
    src.write_text(src.read_text(encoding="utf-8").replace("Step one", "Step 1"), encoding="utf-8")
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "your edit of sources/ops/skills/alpha" in r.stdout and "copied to " in r.stdout
    kept = next((home / "sources" / ".kept" / "ops").glob("*/skills/alpha/SKILL.md"))
    assert "Step 1" in kept.read_text(encoding="utf-8")
    assert str(kept.parent.parent.parent) in r.stdout
    assert "rotate each key by hand" in _text(home, "alpha")


def test_a_new_skill_folder_in_a_source_is_copied_aside(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    mine = home / "sources" / "ops" / "skills" / "mine"
    mine.mkdir()
    (mine / "SKILL.md").write_text("---\nname: mine\ndescription: My own skill.\n---\n\nHello.\n", encoding="utf-8")
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "your edit of sources/ops/skills/mine" in r.stdout
    assert list((home / "sources" / ".kept" / "ops").glob("*/skills/mine/SKILL.md"))
    assert not mine.exists()
    assert lock_of(home)["source"][0]["commit"] == git(upstream.work, "rev-parse", "HEAD")


def _conflict(home: Path, upstream: Upstream) -> None:
    """A person's copy of alpha with two edits; upstream changes one of the same lines."""
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key by hand.")
    edit_as_person(home, "alpha", "Keep the old key for a day.", "Keep the old key for a day, then shred it.")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Step two: rotate each key.", "Step two: run rotate-all."))
    upstream.commit("conflict")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0 and "CONFLICT" in r.stdout, r.stdout + r.stderr


def test_a_rejected_conflict_does_not_come_back_and_later_changes_merge(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    _conflict(home, upstream)
    r = sk(home, "review", "reject", "alpha", "--reason", "keep mine")
    assert r.returncode == 0, r.stderr
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "# Alpha", "# Alpha, the key rotation"))
    upstream.commit("twice")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "CONFLICT" not in r.stdout and "merged" in r.stdout, r.stdout
    text = _text(home, "alpha")
    assert "rotate each key by hand" in text and "then shred it" in text and "the key rotation" in text
    assert "rotate-all" not in text
    assert "alpha" not in sk(home, "review", "list").stdout


def test_approving_a_conflict_keeps_the_persons_other_edits_and_says_what_it_replaced(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    _conflict(home, upstream)
    show = sk(home, "review", "show", "alpha")
    assert show.returncode == 0, show.stderr
    assert "-Step two: rotate each key by hand." in show.stdout and "+Step two: run rotate-all." in show.stdout
    assert "-Keep the old key for a day, then shred it." not in show.stdout
    r = sk(home, "review", "approve", "alpha")
    assert r.returncode == 0, r.stderr
    assert "replaced 1 part(s)" in r.stdout and "rotate each key by hand" in r.stdout
    assert "skillshelf history alpha" in r.stdout
    text = _text(home, "alpha")
    assert "run rotate-all" in text and "then shred it" in text and "by hand" not in text
    # decided: upstream's later change elsewhere merges cleanly
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "# Alpha", "# Alpha, the key rotation"))
    upstream.commit("twice")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout
    text = _text(home, "alpha")
    assert "run rotate-all" in text and "then shred it" in text and "the key rotation" in text


BROKEN = "---\nname: gamma\ndescription: [unclosed\n---\n\nBody.\n"


def test_a_skill_that_cannot_be_read_is_named_by_add_update_and_list(tmp_path, upstream):
    home = tmp_path / "home"
    upstream.write("skills/gamma/SKILL.md", BROKEN)
    upstream.commit("gamma")
    upstream.push()
    r = sk(home, "sources", "add", upstream.url, "--name", "ops")
    assert r.returncode == 0, r.stderr
    assert "added ops: 3 skills (1 cannot be read) from" in r.stdout     # as `sources list` counts them
    assert "1 skill could not be read" in r.stdout and "skills/gamma/SKILL.md:" in r.stdout
    assert "skillshelf validate " in r.stdout and "fix it upstream" in r.stdout
    r = sk(home, "sources", "list")
    assert "3 skills (1 cannot be read)" in r.stdout and "skills/gamma/SKILL.md" in r.stdout
    upstream.write("skills/delta/SKILL.md", BROKEN.replace("gamma", "delta"))
    upstream.commit("delta")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "added    skills/delta" in r.stdout and "skills/delta/SKILL.md:" in r.stdout
    assert "1 skill could not be read" in r.stdout


def test_restore_brings_a_home_that_has_the_sources_to_the_lock(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    first = lock_of(home)["source"][0]["commit"]
    pulled = tmp_path / "pulled.lock"
    shutil.copy(home / "skillshelf.lock", pulled)
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md") + "\nMore.\n")
    second = upstream.commit("more")
    upstream.push()
    assert sk(home, "sources", "update", "ops", "--yes").returncode == 0
    assert lock_of(home)["source"][0]["commit"] == second
    # a person's edit in the source's folder, then the lock pulled from version control is restored
    path = home / "sources" / "ops" / "skills" / "alpha" / "SKILL.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Step one", "Step 1"), encoding="utf-8")
    r = sk(home, "sources", "restore", str(pulled))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "already used" not in r.stderr
    assert f"moved ops from {second[:12]} to {first[:12]}" in r.stdout
    assert "is now the workspace copy alpha" in r.stdout
    assert lock_of(home)["source"][0]["commit"] == first
    assert lock_of(home)["source"][0].get("ref", "") == ""          # the lock's ref, not the commit
    assert "More." not in (home / "sources/ops/skills/beta/SKILL.md").read_text(encoding="utf-8")
    assert "Step 1" in _text(home, "alpha")
    r = sk(home, "sources", "restore", str(pulled))
    assert r.returncode == 0 and "ops: already at" in r.stdout, r.stdout + r.stderr


def test_restore_refuses_another_source_under_the_same_label_and_a_file_that_is_not_a_lock(tmp_path, upstream):
    home = tmp_path / "home"
    other = Upstream(tmp_path / "other")
    assert sk(home, "sources", "add", other.url, "--name", "ops").returncode == 0
    theirs = tmp_path / "theirs"
    assert sk(theirs, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    r = sk(home, "sources", "restore", str(theirs / "skillshelf.lock"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "'ops' is a source from" in r.stderr and "sources remove ops" in r.stderr
    readme = tmp_path / "README.md"
    readme.write_text("# a project\n\nSome words.\n", encoding="utf-8")
    r = sk(home, "sources", "restore", str(readme))
    assert r.returncode != 0 and "is not a skillshelf.lock" in r.stderr and "Traceback" not in r.stderr
    toml = tmp_path / "settings.toml"
    toml.write_text("name = 'x'\n", encoding="utf-8")
    r = sk(home, "sources", "restore", str(toml))
    assert r.returncode != 0 and "is not a skillshelf.lock" in r.stderr and "unknown lock-version" not in r.stderr


def _names(home: Path) -> list[str]:
    r = sk(home, "list", "--json")
    assert r.returncode == 0, r.stderr
    return sorted(s["name"] for s in json.loads(r.stdout))


def test_a_moved_or_copied_home_reads_its_own_sources(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    assert "sources/ops" in (home / "config.toml").read_text(encoding="utf-8")
    assert str(home) not in (home / "config.toml").read_text(encoding="utf-8")     # relative to the home
    moved = tmp_path / "moved"
    home.rename(moved)
    assert _names(moved) == ["alpha", "beta"]
    doc = sk(moved, "doctor")
    assert "ops" in doc.stdout and "not a root" not in doc.stdout and "missing" not in doc.stdout.lower(), doc.stdout
    copy = tmp_path / "copy"
    shutil.copytree(moved, copy, symlinks=True)
    (moved / "sources" / "ops" / "skills" / "alpha" / "SKILL.md").write_text(
        ALPHA.replace("Rotate widget keys", "Rotate the original's keys"), encoding="utf-8")
    r = sk(copy, "roots", "list")
    assert str(copy / "sources" / "ops") in r.stdout and str(moved) not in r.stdout


def test_an_older_homes_absolute_source_roots_after_a_move_and_a_copy(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    cfg = home / "config.toml"        # as an older version wrote it
    cfg.write_text(cfg.read_text(encoding="utf-8").replace('"sources/ops"', json.dumps(str(home / "sources/ops"))),
                   encoding="utf-8")
    assert str(home / "sources/ops") in cfg.read_text(encoding="utf-8")
    copy = tmp_path / "copy"
    shutil.copytree(home, copy, symlinks=True)
    doc = sk(copy, "doctor")
    assert f"the root {home / 'sources/ops'} is in another skillshelf home" in doc.stdout, doc.stdout
    assert f"skillshelf roots add {copy / 'sources/ops'}" in doc.stdout
    moved = tmp_path / "moved"
    home.rename(moved)
    assert _names(moved) == ["alpha", "beta"]
    doc = sk(moved, "doctor")
    assert "which has gone (the home was moved)" in doc.stdout and str(moved / "sources/ops") in doc.stdout
    r = sk(moved, "roots", "remove", str(home / "sources/ops"))
    assert r.returncode == 0, r.stderr
    r = sk(moved, "roots", "add", str(moved / "sources/ops"))
    assert r.returncode == 0, r.stderr
    assert str(moved) not in (moved / "config.toml").read_text(encoding="utf-8")
    assert "which has gone" not in sk(moved, "doctor").stdout


def test_small_things_a_new_user_met(tmp_path, upstream):
    import zipfile

    home = tmp_path / "home"
    archive = tmp_path / "ops.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("ops-main/skills/alpha/SKILL.md", ALPHA)
        z.writestr("ops-main/README.md", "a collection\n")
    # the archive's single top folder is stepped into: --path with it says so and what to pass
    r = sk(home, "sources", "add", str(archive), "--path", "ops-main/skills", "--name", "zipped")
    assert r.returncode == 1 and "top folder ops-main/" in r.stderr and "pass --path skills" in r.stderr, r.stderr
    assert sk(home, "sources", "add", str(archive), "--path", "skills", "--name", "zipped").returncode == 0
    # an unchanged source put back (a file edited there) is up to date, not "updated"
    (home / "sources/zipped/alpha/SKILL.md").write_text(ALPHA.replace("Step one", "Step 1"), encoding="utf-8")
    r = sk(home, "sources", "update", "zipped", "--yes")
    assert r.returncode == 0, r.stderr
    assert "zipped: up to date at" in r.stdout and "lock moved" not in r.stdout, r.stdout
    # without a terminal, remove says what it would have asked
    r = sk(home, "sources", "remove", "zipped")
    assert r.returncode == 1 and "remove zipped (1 skills from" in r.stderr and "read the above" not in r.stderr
    # a local working tree: uncommitted edits are not fetched, and the update says so
    assert sk(home, "sources", "add", str(upstream.work), "--name", "local").returncode == 0
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md") + "\nNot committed.\n")
    r = sk(home, "sources", "update", "local", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"uncommitted changes in {upstream.work} (1 file) are not fetched" in r.stdout, r.stdout
    # list says when it last looked upstream
    assert sk(home, "sources", "update", "local", "--dry-run").returncode == 0
    r = sk(home, "sources", "list")
    assert "0 commits behind upstream (as of " in r.stdout and "--dry-run` looks again" in r.stdout, r.stdout


def test_a_persons_own_workspace_skill_of_the_same_name_is_never_written_over(tmp_path, upstream):
    """An edit in the source's folder of a skill whose name a person's own workspace skill has
    goes aside (the workspace folder holds another skill), and an agent's FIX of the source's
    skill is refused: before, both wrote the copy over the person's skill, with no version kept."""
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    mine = home / "skills" / "alpha" / "SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("---\nname: alpha\ndescription: My own alpha, nothing to do with the source's.\n---\n\n"
                    "My own alpha steps.\n", encoding="utf-8")
    assert sk(home, "sync").returncode == 0
    from skillshelf import Library
    from skillshelf.embeddings.fake import FakeEmbedder
    from skillshelf.errors import ConflictError

    with Library(home, write_policy="open", embedder=FakeEmbedder(), auto_sync=False) as lib:
        with pytest.raises(ConflictError, match="its own skill named 'alpha'"):
            lib.save("FIX", target_skill_name="ops:skills/alpha", lesson="Check the key's age first", by="agent")
    assert "My own alpha steps." in mine.read_text(encoding="utf-8")
    src = home / "sources" / "ops" / "skills" / "alpha" / "SKILL.md"
    src.write_text(src.read_text(encoding="utf-8") + "\nMy edit in the source's folder.\n", encoding="utf-8")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    upstream.commit("a week")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "My own alpha steps." in mine.read_text(encoding="utf-8")
    kept = list((home / "sources" / ".kept" / "ops").rglob("SKILL.md"))
    assert kept and "My edit in the source's folder." in kept[0].read_text(encoding="utf-8")


def test_an_update_keeps_a_persons_files_the_lock_does_not_list(tmp_path, upstream):
    """Hidden files, node_modules and files over the size bound are not in the lock: the old
    commit's tree tells a person's from upstream's. A person's is carried into the new files (or
    kept in sources/.kept when the new tree has a file there) and named; upstream's removed one goes."""
    upstream.write("skills/beta/.upstream-hidden", "upstream's own\n")
    upstream.commit("hidden")
    upstream.push()
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    folder = home / "sources" / "ops" / "skills"
    (folder / "alpha" / ".my-notes").write_text("my notes\n", encoding="utf-8")
    (folder / "beta" / "node_modules" / "mine").mkdir(parents=True)
    (folder / "beta" / "node_modules" / "mine" / "index.js").write_text("// mine\n", encoding="utf-8")
    (folder / "beta" / "big.bin").write_bytes(b"x" * 5_000_001)
    (folder / "beta" / ".upstream-hidden").write_text("upstream's own, edited by me\n", encoding="utf-8")
    # an edit the lock sees too: the new tree is exported whole, not made from the folder
    beta = folder / "beta" / "SKILL.md"
    beta.write_text(beta.read_text(encoding="utf-8") + "\nMy step.\n", encoding="utf-8")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    upstream.write("skills/beta/.upstream-hidden", "upstream's own, changed upstream\n")
    upstream.commit("a week")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert (folder / "alpha" / ".my-notes").read_text(encoding="utf-8") == "my notes\n"
    assert (folder / "beta" / "node_modules" / "mine" / "index.js").read_text(encoding="utf-8") == "// mine\n"
    assert (folder / "beta" / "big.bin").stat().st_size == 5_000_001
    assert "sources/ops/skills/alpha/.my-notes" in r.stdout and "carried into the new files" in r.stdout
    # upstream's file there now: the person's version is kept aside, named
    assert (folder / "beta" / ".upstream-hidden").read_text(encoding="utf-8") == "upstream's own, changed upstream\n"
    kept = list((home / "sources" / ".kept" / "ops").glob("*/skills/beta/.upstream-hidden"))
    assert kept and kept[0].read_text(encoding="utf-8") == "upstream's own, edited by me\n"
    assert str(kept[0]) in r.stdout
    assert sk(home, "lock", "--check").returncode == 0
    # the next update leaves upstream's unlisted files alone and carries the person's again
    upstream.write("skills/beta/.upstream-hidden", "gone soon\n")
    upstream.commit("again")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert (folder / "alpha" / ".my-notes").is_file() and (folder / "beta" / "big.bin").is_file()
    assert ".upstream-hidden" not in r.stdout


def test_a_missing_root_in_another_homes_sources_stays_that_homes(tmp_path, upstream):
    """An absolute root into ANOTHER home's sources/ (that home is still there) is never read as
    this home's folder of that label when it goes missing: doctor names it missing."""
    other, home = tmp_path / "other", tmp_path / "home"
    assert sk(other, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    theirs = other / "sources" / "ops"
    assert sk(home, "roots", "add", str(theirs)).returncode == 0
    assert str(theirs) in (home / "config.toml").read_text(encoding="utf-8")
    shutil.rmtree(theirs)                            # the other home drops its folder; it is still a home
    r = sk(home, "roots", "list")
    assert r.returncode == 0, r.stderr
    assert str(theirs) in r.stdout, r.stdout         # the root is still that path, not re-read as this home's
    doc = sk(home, "doctor")
    assert str(theirs) in doc.stdout and "does not exist" in doc.stdout, doc.stdout
    assert "Traceback" not in doc.stderr


def test_two_keeps_in_one_second_keep_both(tmp_path, upstream, monkeypatch):
    """Two updates of one label within a second each keep their own folder in sources/.kept."""
    import datetime as real_dt
    import importlib

    from skillshelf import Library
    from skillshelf.embeddings.fake import FakeEmbedder

    class Frozen(real_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return real_dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=tz)

    frozen = type("dt", (), {"datetime": Frozen, "UTC": real_dt.UTC})
    for name in ("skillshelf.supply.kept_edits", "skillshelf.supply.person_files"):
        try:
            monkeypatch.setattr(importlib.import_module(name), "_dt", frozen, raising=False)
        except ImportError:
            pass
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key by hand.")
    src = home / "sources" / "ops" / "skills" / "alpha" / "SKILL.md"
    with Library(home=home, embedder=FakeEmbedder(), auto_sync=False) as lib:
        for text in ("Step 1, first edit", "Step 1, second edit"):
            src.write_text(src.read_text(encoding="utf-8").replace("Step one", text), encoding="utf-8")
            with lib.sources.planning(["ops"]) as plans:
                lib.sources.apply(plans[0])
            assert [k.action for k in plans[0].kept] == ["aside"]
    kept = sorted(p.read_text(encoding="utf-8") for p in (home / "sources" / ".kept" / "ops").glob("*/skills/alpha/SKILL.md"))
    assert len(kept) == 2 and "first edit" in kept[0] and "second edit" in kept[1], kept


DEPLOY = "#!/bin/sh\necho one\necho two\necho three\necho four\necho five\n"


def test_edits_made_while_the_update_waits_at_its_prompt_are_kept(tmp_path, upstream):
    """A person answers "apply?" minutes later, having edited meanwhile: a workspace copy's file
    changed since the plan is not overwritten by the planned merge, and an in-place write to a
    source file the new tree links to is kept, never carried into the new tree."""
    import os
    import pty
    import subprocess
    import threading
    import time

    from test_sources_git import SCRIPT

    upstream.write("skills/beta/scripts/deploy.sh", DEPLOY)
    upstream.commit("longer deploy")
    upstream.push()
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    edit_as_person(home, "beta", "Run the gizmo deploy.", "Run the gizmo deploy, then check it.")
    copy = Path(json.loads(sk(home, "show", "beta", "--json").stdout)["path"]).parent
    (copy / "scripts").mkdir(exist_ok=True)
    (copy / "scripts" / "deploy.sh").write_text(DEPLOY.replace("echo five", "echo five by me"), encoding="utf-8")
    upstream.write("skills/beta/scripts/deploy.sh", DEPLOY.replace("echo one", "echo one upstream"))
    upstream.commit("deploy")
    upstream.push()

    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    env.update(SKILLSHELF_EMBEDDER="fake", COLUMNS="200", SKILLSHELF_HOME=str(home))
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(SCRIPT), "sources", "update", "ops"], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    os.close(slave)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(iter(lambda: proc.stdout.read1(4096), b"")), daemon=True)
    reader.start()
    try:
        t0 = time.monotonic()
        while b"apply the update of ops?" not in b"".join(got):
            assert time.monotonic() - t0 < 60 and proc.poll() is None, b"".join(got) + proc.stderr.read()
            time.sleep(0.05)
        assert "merged" in b"".join(got).decode(), b"".join(got)
        # while the question waits: the copy's file changed where upstream's change is too ...
        (copy / "scripts" / "deploy.sh").write_text(DEPLOY.replace("echo one", "echo one by me"), encoding="utf-8")
        # ... and an in-place write to a file of the source's folder upstream did not change
        src = home / "sources" / "ops" / "skills" / "beta" / "SKILL.md"
        with open(src, "r+", encoding="utf-8") as f:
            text = f.read()
            f.seek(0)
            f.write(text + "\nWritten in place while it waited.\n")
        os.write(master, b"y\n")
        proc.wait(timeout=120)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    stdout, stderr = b"".join(got).decode(), proc.stderr.read().decode()
    assert proc.returncode == 0, stdout + stderr
    assert "Traceback" not in stderr
    # the person's later text stays; the conflict is said
    assert (copy / "scripts" / "deploy.sh").read_text(encoding="utf-8") == DEPLOY.replace("echo one", "echo one by me")
    assert "deploy.sh kept as you left it" in stdout, stdout
    # the source's folder is upstream's; the in-place write is kept aside, named
    assert "Written in place" not in src.read_text(encoding="utf-8")
    assert sk(home, "lock", "--check").returncode == 0
    kept = [p.read_text(encoding="utf-8") for p in (home / "sources" / ".kept" / "ops").glob("*/skills/beta/SKILL.md")]
    assert any("Written in place while it waited." in t for t in kept), kept


def test_an_edit_saved_during_the_keep_step_is_kept(tmp_path, upstream):
    """A person saves a source file again while the update is making their earlier edit a
    workspace copy: the file is looked at again once the folder is moved aside, and kept."""
    from skillshelf import Library
    from skillshelf.embeddings.fake import FakeEmbedder

    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    src = home / "sources" / "ops" / "skills" / "alpha" / "SKILL.md"
    src.write_text(src.read_text(encoding="utf-8").replace("Step one", "Step 1"), encoding="utf-8")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    upstream.commit("a week")
    upstream.push()
    with Library(home=home, embedder=FakeEmbedder(), auto_sync=False) as lib:
        real = lib.sources.kept.keep

        def keep_then_save(plan, drift):
            out = real(plan, drift)
            src.write_text(src.read_text(encoding="utf-8") + "\nSaved during the keep step.\n", encoding="utf-8")
            return out

        lib.sources.kept.keep = keep_then_save
        with lib.sources.planning(["ops"]) as plans:
            lib.sources.apply(plans[0])
    kept = [p.read_text(encoding="utf-8") for p in (home / "sources" / ".kept" / "ops").glob("*/skills/alpha/SKILL.md")]
    assert any("Saved during the keep step." in t for t in kept), kept
    named = plans[0].as_dict()["unlisted"]        # (what the CLI prints)
    assert [u["file"] for u in named] == ["skills/alpha/SKILL.md"] and named[0]["kept"], named
    assert "Step 1" in _text(home, "alpha")                  # the earlier edit: the workspace copy
    assert sk(home, "lock", "--check").returncode == 0


def test_restoring_a_lock_without_the_pin_keeps_this_homes_pin(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops", "--pin").returncode == 0
    assert lock_of(home)["source"][0]["pinned"] is True
    pulled = tmp_path / "pulled.lock"
    pulled.write_text((home / "skillshelf.lock").read_text(encoding="utf-8").replace("pinned = true", "pinned = false"),
                      encoding="utf-8")
    r = sk(home, "sources", "restore", str(pulled))
    assert r.returncode == 0, r.stderr
    assert "ops: kept pinned here" in r.stdout            # a restore never releases what this home pinned
    assert lock_of(home)["source"][0]["pinned"] is True
    assert sk(home, "unpin", "ops").returncode == 0         # a person unpins
    assert lock_of(home)["source"][0]["pinned"] is False
    listed = json.loads(sk(home, "sources", "list", "--json").stdout)
    assert [s["pinned"] for s in listed] == [False], listed
    r = sk(home, "sources", "restore", str(home / "skillshelf.lock"))     # and back: the pin comes back
    assert r.returncode == 0, r.stderr
    pulled.write_text(pulled.read_text(encoding="utf-8").replace("pinned = false", "pinned = true"), encoding="utf-8")
    assert sk(home, "sources", "restore", str(pulled)).returncode == 0
    assert lock_of(home)["source"][0]["pinned"] is True


def test_an_archive_sources_update_tells_a_persons_files_from_what_the_archive_held(tmp_path):
    """For an archive (here a folder source), what it held when it was put in place tells its own
    files the lock does not list (one outside any skill) from a person's: the person's is carried,
    upstream's removed one goes."""
    up = tmp_path / "coll"
    (up / "skills" / "alpha").mkdir(parents=True)
    (up / "skills" / "alpha" / "SKILL.md").write_text(ALPHA, encoding="utf-8")
    (up / "skills" / "NOTES.txt").write_text("upstream's\n", encoding="utf-8")
    (up / "README.md").write_text("a collection\n", encoding="utf-8")
    home = tmp_path / "home"
    r = sk(home, "sources", "add", str(up), "--name", "coll")
    assert r.returncode == 0, r.stderr
    top = home / "sources" / "coll"
    assert (top / "skills" / "NOTES.txt").is_file()
    folder = top / "skills" / "alpha"
    (folder / ".mine").write_text("mine\n", encoding="utf-8")
    (top / "MY-NOTES.txt").write_text("mine too\n", encoding="utf-8")
    (up / "skills" / "NOTES.txt").unlink()
    (up / "skills" / "alpha" / "SKILL.md").write_text(ALPHA.replace("for a day", "a week"), encoding="utf-8")
    r = sk(home, "sources", "update", "coll", "--yes")
    assert r.returncode == 0, r.stderr
    assert (folder / ".mine").read_text(encoding="utf-8") == "mine\n"
    assert (top / "MY-NOTES.txt").read_text(encoding="utf-8") == "mine too\n"
    assert "sources/coll/skills/alpha/.mine" in r.stdout and "sources/coll/MY-NOTES.txt" in r.stdout
    assert not (top / "skills" / "NOTES.txt").exists() and "NOTES.txt (" not in r.stdout.replace("MY-NOTES.txt (", "")
    assert "a week" in (folder / "SKILL.md").read_text(encoding="utf-8")
