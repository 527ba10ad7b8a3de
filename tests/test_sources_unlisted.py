"""A person's files in a source's folder that the lock does not list: an update never writes one
into the new lock as upstream's, never deletes one when it cannot put the folder back, and a
damaged record of an archive's tree does not stop it. Run as the real console script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_sources_git import ALPHA, Upstream, git, lock_of, sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import SkillshelfError

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

DELTA = "---\nname: delta\ndescription: Delta does the delta thing well.\n---\n\n# Delta\n\nStep.\n"
NOTES = "my own notes about delta\n"


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def _notes_then_upstream_makes_delta_a_skill(home: Path, upstream: Upstream) -> Path:
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    folder = home / "sources" / "ops" / "skills" / "delta"
    folder.mkdir()
    (folder / "notes.md").write_text(NOTES, encoding="utf-8")     # no SKILL.md there: the lock does not list it
    assert sk(home, "lock", "--check").returncode == 0
    upstream.write("skills/delta/SKILL.md", DELTA)
    upstream.commit("delta")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return folder


def test_a_persons_file_in_a_folder_upstream_makes_a_skill_is_not_locked_as_upstreams(tmp_path, upstream):
    home = tmp_path / "home"
    folder = _notes_then_upstream_makes_delta_a_skill(home, upstream)
    delta = next(s for s in lock_of(home)["source"][0]["skill"] if s["path"] == "skills/delta")
    assert [f["path"] for f in delta["files"]] == ["SKILL.md"], delta
    # the folder is what the lock says, and the person's notes are kept aside, whole
    assert (folder / "SKILL.md").read_text(encoding="utf-8") == DELTA
    assert not (folder / "notes.md").exists()
    r = sk(home, "lock", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    kept = list((home / "sources" / ".kept" / "ops").rglob("notes.md"))
    assert [p.read_text(encoding="utf-8") for p in kept] == [NOTES]


def test_the_lock_after_that_update_restores_elsewhere(tmp_path, upstream):
    home = tmp_path / "home"
    _notes_then_upstream_makes_delta_a_skill(home, upstream)
    r = sk(tmp_path / "home2", "sources", "restore", str(home / "skillshelf.lock"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "home2" / "sources" / "ops" / "skills" / "delta" / "SKILL.md").is_file()


def test_a_persons_change_to_an_unlisted_upstream_file_is_not_locked_when_it_becomes_listed(tmp_path, upstream):
    upstream.write("skills/delta/notes.md", "upstream's notes\n")      # no SKILL.md: not listed
    upstream.commit("notes")
    upstream.push()
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    notes = home / "sources" / "ops" / "skills" / "delta" / "notes.md"
    notes.write_text("upstream's notes, and mine\n", encoding="utf-8")
    upstream.write("skills/delta/SKILL.md", DELTA)
    upstream.commit("delta")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert notes.read_text(encoding="utf-8") == "upstream's notes\n"
    assert sk(home, "lock", "--check").returncode == 0
    kept = list((home / "sources" / ".kept" / "ops").rglob("notes.md"))
    assert [p.read_text(encoding="utf-8") for p in kept] == ["upstream's notes, and mine\n"]


def test_when_the_folder_cannot_be_put_back_the_persons_files_are_kept(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    folder = home / "sources" / "ops"
    (folder / "skills" / "alpha" / ".my-notes").write_text("my precious notes\n", encoding="utf-8")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    upstream.commit("a week")
    upstream.push()
    with Library(home=home, embedder=FakeEmbedder(), auto_sync=False) as lib:
        real = lib.sources.kept.late

        def late_then_an_editor_saves(plan, previous, since):
            out = real(plan, previous, since)
            # an editor saving a file of the source while its folder is aside makes the folder again
            (folder / "skills" / "beta").mkdir(parents=True)
            (folder / "skills" / "beta" / "SKILL.md").write_text("saved\n", encoding="utf-8")
            return out

        lib.sources.kept.late = late_then_an_editor_saves
        with pytest.raises(SkillshelfError) as err, lib.sources.planning(["ops"]) as plans:
            lib.sources.apply(plans[0])
    notes = [p for p in home.rglob(".my-notes") if ".tmp" not in p.parts]
    assert [p.read_text(encoding="utf-8") for p in notes] == ["my precious notes\n"]
    kept = notes[0].parents[2]       # .kept/ops/<time>/skills/alpha/.my-notes
    assert kept.parent == home / "sources" / ".kept" / "ops"
    assert str(kept) in err.value.message and err.value.fix
    assert (kept / "skills" / "beta" / "scripts" / "deploy.sh").is_file()     # the whole old folder
    assert lock_of(home)["source"][0]["commit"] != git(upstream.work, "rev-parse", "HEAD")


def _archive_source(tmp_path: Path) -> tuple[Path, Path]:
    up = tmp_path / "coll"
    (up / "skills" / "alpha").mkdir(parents=True)
    (up / "skills" / "alpha" / "SKILL.md").write_text(ALPHA, encoding="utf-8")
    (up / "README.md").write_text("a collection\n", encoding="utf-8")
    home = tmp_path / "home"
    assert sk(home, "sources", "add", str(up), "--name", "coll").returncode == 0
    return up, home


@pytest.mark.parametrize("damage", [
    {"README.md": {"sha256": "x"}},                 # not a list
    {"README.md": ["sha256", "ab"]},                # two, not three
    {"README.md": ["md5", "ab", 3]},                # a kind no tree has
    {"README.md": ["git-sha1", "ab", 3]},           # a kind an archive's record never has
    {"README.md": ["sha256", "ab", "many"]},
    {"README.md": ["sha256", "ab", -4]},
])
def test_a_damaged_record_of_an_archives_tree_keeps_every_file_and_says_so(tmp_path, damage):
    up, home = _archive_source(tmp_path)
    man = home / "sources" / ".trees" / "coll.json"
    data = json.loads(man.read_text(encoding="utf-8"))
    data["files"].update(damage)
    man.write_text(json.dumps(data), encoding="utf-8")
    (home / "sources" / "coll" / "skills" / "alpha" / ".mine").write_text("mine\n", encoding="utf-8")
    (up / "skills" / "alpha" / "SKILL.md").write_text(ALPHA.replace("for a day", "a week"), encoding="utf-8")
    r = sk(home, "sources", "update", "coll", "--yes")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    out = r.stdout + r.stderr
    assert out.count("coll.json") == 1, out
    mine = home / "sources" / "coll" / "skills" / "alpha" / ".mine"
    assert mine.read_text(encoding="utf-8") == "mine\n"
    assert sk(home, "lock", "--check").returncode == 0


@pytest.mark.parametrize("submodules", [False, True])
def test_a_persons_file_in_a_submodules_folder_is_kept(tmp_path, upstream, submodules):
    from test_sources_git import _with_submodule

    sub = Upstream(tmp_path / "sub")
    _with_submodule(upstream, sub, "vendor")
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops", *(["--submodules"] if submodules else [])
              ).returncode == 0
    mine = home / "sources" / "ops" / "vendor" / "skills" / "alpha" / ".mine"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("mine\n", encoding="utf-8")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    git(upstream.work, "add", "skills/alpha/SKILL.md")       # (``commit``'s add -A would drop the gitlink)
    git(upstream.work, "commit", "-q", "-m", "a week")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert "vendor/skills/alpha/.mine" in r.stdout and "removed" not in r.stdout
    assert mine.read_text(encoding="utf-8") == "mine\n"      # carried into the new files (no file there)
    assert sk(home, "lock", "--check").returncode == 0


def test_when_even_the_kept_folder_cannot_be_made_the_old_folder_stays_marked_and_named(tmp_path):
    from skillshelf.supply import swap

    base = tmp_path / "sources"
    (base / ".tmp" / "ops-1" / "previous" / "skills").mkdir(parents=True)
    (base / ".tmp" / "ops-1" / "previous" / "skills" / ".mine").write_text("mine\n", encoding="utf-8")
    (base / ".tmp" / "ops-1" / "tree").mkdir()              # the new files, half made
    (base / "ops").mkdir()                                  # made again while the update ran
    (base / "ops" / "saved.md").write_text("an editor's save\n", encoding="utf-8")
    (base / ".kept").write_text("not a folder\n", encoding="utf-8")
    with pytest.raises(SkillshelfError) as err:
        swap.put_back(base, "ops", base / ".tmp" / "ops-1" / "previous", base / "ops")
    tmp = base / ".tmp" / "ops-1"
    assert "could not be moved to" in err.value.message and str(tmp / "previous") in err.value.message
    assert f"delete {tmp}" in err.value.fix
    assert (tmp / swap.KEEP).exists() and not (tmp / "tree").exists()
    assert (tmp / "previous" / "skills" / ".mine").read_text(encoding="utf-8") == "mine\n"


def test_a_dry_run_names_the_persons_unlisted_files_and_what_the_update_will_do_with_each(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    folder = home / "sources" / "ops" / "skills"
    (folder / "alpha" / ".my-notes").write_text("my notes\n", encoding="utf-8")       # hidden: never listed
    (folder / "delta").mkdir()
    (folder / "delta" / "notes.md").write_text(NOTES, encoding="utf-8")    # listed once delta is a skill
    upstream.write("skills/delta/SKILL.md", DELTA)
    upstream.commit("delta")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    carried = next(ln for ln in lines if "skills/alpha/.my-notes" in ln)
    kept = next(ln for ln in lines if "skills/delta/notes.md" in ln)
    assert "will be carried into the new files" in carried, r.stdout
    assert "will be copied under" in kept and str(home / "sources" / ".kept" / "ops") in kept, r.stdout
    assert not (home / "sources" / ".kept").exists()        # a dry run writes nothing
    assert "dry run: nothing was changed (apply with `skillshelf sources update ops --yes`)" in r.stdout
    plan = json.loads(sk(home, "sources", "update", "ops", "--dry-run", "--json").stdout)[0]
    assert {u["file"]: bool(u["kept"]) for u in plan["unlisted"]} == {"skills/alpha/.my-notes": False,
                                                                      "skills/delta/notes.md": True}
    # applying does what the dry run said
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stderr
    assert (folder / "alpha" / ".my-notes").read_text(encoding="utf-8") == "my notes\n"
    assert not (folder / "delta" / "notes.md").exists()
    assert [p.read_text(encoding="utf-8") for p in (home / "sources" / ".kept" / "ops").rglob("notes.md")] == [NOTES]
