"""A person's files beside a source's links and hard links, and damaged records: what a third
review found after the first fixes. Each through the console script where a person stands, or
the library's own planning (an edit made while an update waits at its question)."""

from __future__ import annotations

import os
import shutil

import pytest
from test_sources_git import ALPHA, Upstream, sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

DELTA = "---\nname: delta\ndescription: Delta does the delta thing well.\n---\n\n# Delta\n\nStep.\n"


@pytest.fixture
def upstream(tmp_path):
    return Upstream(tmp_path / "up")


@pytest.mark.parametrize("earlier", [0, 5])
def test_a_file_written_in_place_at_the_prompt_that_upstream_now_lists_stays_upstreams(tmp_path, upstream, earlier):
    """An unlisted file, hard-linked into the new files, written in place while the update waits;
    the new commit makes its folder a skill (so the lock lists it). The person's text is kept
    aside and upstream's file stays where the lock says: `lock --check` passes."""
    upstream.write("skills/delta/notes.md", "upstream's notes\n")
    upstream.commit("notes")
    upstream.push()
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    upstream.write("skills/delta/SKILL.md", DELTA)
    upstream.commit("delta")
    upstream.push()
    notes = home / "sources" / "ops" / "skills" / "delta" / "notes.md"
    with Library(home=home, embedder=FakeEmbedder(), auto_sync=False) as lib:
        with lib.sources.planning(["ops"]) as plans:
            with open(notes, "a", encoding="utf-8") as f:
                f.write("mine\n")
            if earlier:
                st = notes.stat()
                os.utime(notes, (st.st_atime, st.st_mtime - earlier))
            lib.sources.apply(plans[0])
    r = sk(home, "lock", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert notes.read_text(encoding="utf-8") == "upstream's notes\n"
    kept = [p.read_text(encoding="utf-8") for p in (home / "sources" / ".kept").rglob("notes.md")]
    assert "upstream's notes\nmine\n" in kept


def test_a_link_a_person_pointed_elsewhere_is_not_taken_as_upstreams(tmp_path, upstream):
    os.symlink("../alpha/SKILL.md", upstream.work / "skills" / "beta" / "ref.md")
    upstream.commit("link")
    upstream.push()
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    link = home / "sources" / "ops" / "skills" / "beta" / "ref.md"
    mine = tmp_path / "mine.md"
    mine.write_text("# my private notes\n", encoding="utf-8")
    link.unlink()
    os.symlink(str(mine), link)
    upstream.write("README.md", "changed\n")
    upstream.commit("readme")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.readlink(link) == "../alpha/SKILL.md"


def test_a_persons_file_over_a_dangling_link_is_never_written_through_it(tmp_path, upstream):
    (upstream.work / "docs").mkdir()
    os.symlink("../skills/alpha/notes.md", upstream.work / "docs" / "x.md")
    upstream.commit("link")
    upstream.push()
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "ops").returncode == 0
    x = home / "sources" / "ops" / "docs" / "x.md"
    x.unlink(missing_ok=True)
    x.write_text("my own x\n", encoding="utf-8")
    upstream.write("README.md", "changed\n")
    upstream.commit("readme")
    upstream.push()
    r = sk(home, "sources", "update", "ops", "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (home / "sources" / "ops" / "skills" / "alpha" / "notes.md").exists()
    assert sk(home, "lock", "--check").returncode == 0
    kept = [p.read_text(encoding="utf-8") for p in (home / "sources" / ".kept").rglob("x.md")]
    assert kept == ["my own x\n"]


@pytest.mark.parametrize("damaged", [".trees/coll.json", ".state.json"])
def test_a_record_nested_thousands_deep_is_no_traceback(tmp_path, damaged):
    up = tmp_path / "coll"
    (up / "skills" / "alpha").mkdir(parents=True)
    (up / "skills" / "alpha" / "SKILL.md").write_text(ALPHA, encoding="utf-8")
    (up / "README.md").write_text("a collection\n", encoding="utf-8")
    home = tmp_path / "home"
    assert sk(home, "sources", "add", str(up), "--name", "coll").returncode == 0
    (home / "sources" / damaged).parent.mkdir(parents=True, exist_ok=True)
    (home / "sources" / damaged).write_text("[" * 100_000, encoding="utf-8")
    (home / "sources" / "coll" / "skills" / "alpha" / ".mine").write_text("mine\n", encoding="utf-8")
    (up / "skills" / "alpha" / "SKILL.md").write_text(ALPHA.replace("for a day", "for a week"), encoding="utf-8")
    for args in (("sources", "list"), ("doctor",), ("lock", "--check"), ("sources", "update", "coll", "--yes")):
        r = sk(home, *args)
        assert "Traceback" not in r.stderr, (args, r.stderr[-2000:])
    assert (home / "sources" / "coll" / "skills" / "alpha" / ".mine").read_text(encoding="utf-8") == "mine\n"


def test_a_lock_nested_thousands_deep_is_a_clear_error(tmp_path):
    home = tmp_path / "home"
    (home).mkdir()
    (home / "skillshelf.lock").write_text("a = " + "[" * 100_000, encoding="utf-8")
    for args in (("sources", "list"), ("lock", "--check")):
        r = sk(home, *args)
        assert "Traceback" not in r.stderr, (args, r.stderr[-2000:])
    r = sk(home, "sources", "restore", str(home / "skillshelf.lock"))
    assert r.returncode != 0 and "Traceback" not in r.stderr and "skillshelf.lock" in r.stderr, r.stderr
