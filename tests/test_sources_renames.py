"""Upstream renames or removes the skill a person's copy was made from (run as the real console script
against local bare repositories over ``file://``): a rename is another skill, so the copy stays as it is,
and its frontmatter says what became of its original (``metadata.origin-gone``, naming the skill upstream
has there now). ``show``, the dashboard's page and the update say so; the copy is not merged with
upstream any more, and a copy of the renamed skill is merged from that skill's own text."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_sources_git import ALPHA, Upstream, edit_as_person, git, sk
from test_sources_moves import _shown

from skillshelf import Library, skill as skillmod
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.evolution import changes
from skillshelf.supply import upstream_merge

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def _plan(home: Path) -> dict:
    r = sk(home, "sources", "update", "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[0]


def _page(home: Path, sid: str) -> str:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from skillshelf.web import create_app
    lib = Library(home=home, embedder=FakeEmbedder())
    try:
        with TestClient(create_app(lib, port=7788), base_url="http://127.0.0.1:7788") as client:
            page = client.get(f"/skill/{sid}")
            assert page.status_code == 200
            return page.text
    finally:
        lib.close()


def test_a_copy_of_a_skill_renamed_in_its_folder_says_so_and_is_merged_no_more(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "name: alpha", "name: key-rotation").replace("Step three: check the logs.", "Step three: check alerts."))
    renamed = upstream.commit("rename alpha")
    upstream.push()

    dry = sk(home, "sources", "update", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "your copy alpha: kept" in dry.stdout and "origin marked gone" in dry.stdout
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "name: alpha" in text and "(staging first)" in text and "check alerts" not in text

    # the copy's frontmatter says what became of its original, and names the skill upstream has there now
    meta = _shown(home, "alpha")["metadata"]
    assert meta["origin"] == "jeff:skills/alpha"          # what it was made from stays
    gone = meta["origin-gone"]
    assert f"renamed it key-rotation at {renamed[:7]}" in gone and "jeff:skills/alpha is that skill now" in gone
    shown = sk(home, "show", "alpha")
    assert shown.returncode == 0, shown.stderr
    assert f"origin   jeff:skills/alpha: upstream renamed it key-rotation at {renamed[:7]}" in shown.stdout
    assert "renamed it key-rotation" in sk(home, "history", "alpha").stdout
    # the dashboard no longer links the copy to key-rotation as if it were its original
    page = _page(home, "workspace:alpha")
    fork = re.search(r"fork of</dt><dd([^>]*)>(.*?)</dd>", page, re.DOTALL)
    assert fork is not None and "<a " not in fork.group(2) and "renamed it key-rotation" in fork.group(2)
    assert "gone upstream" in page

    # key-rotation's later change is not said of the copy, nor merged into it
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace("# Alpha", "# Keys"))
    upstream.commit("title")
    upstream.push()
    (c,) = _plan(home)["changes"]
    assert (c["change"], c["copy"], c["edit"]) == ("changed", None, None)
    assert sk(home, "sources", "update", "--yes").returncode == 0
    assert "# Keys" not in (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")

    # a person's copy of key-rotation (the same folder) is merged from key-rotation's own text, never alpha's
    edit_as_person(home, "key-rotation", "Step one: list the widgets.", "Step one: list the widgets (all regions).")
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "Keep the old key for a day.", "Keep the old key for a week."))
    upstream.commit("a week")
    upstream.push()
    (c,) = _plan(home)["changes"]
    assert (c["copy"], c["edit"]) == ("key-rotation", "merged"), c
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout + r.stderr
    keys = (home / "skills/key-rotation/SKILL.md").read_text(encoding="utf-8")
    assert "(all regions)" in keys and "a week" in keys and "# Keys" in keys and "staging first" not in keys
    alpha = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "a week" not in alpha and "(staging first)" in alpha
    assert "origin-gone" not in keys


def test_a_copy_of_a_skill_moved_and_renamed_or_removed_names_what_upstream_added(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    edit_as_person(home, "beta", "Run the gizmo deploy.", "Run the gizmo deploy (after the tests).")
    git(upstream.work, "mv", "skills/alpha", "skills/keys")
    upstream.write("skills/keys/SKILL.md", upstream.read("skills/keys/SKILL.md").replace("name: alpha", "name: keys"))
    git(upstream.work, "rm", "-r", "-q", "skills/beta")
    commit = upstream.commit("move and rename alpha, remove beta")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr

    alpha = _shown(home, "alpha")["metadata"]
    assert alpha["origin"] == "jeff:skills/alpha"
    assert f"upstream removed it at {commit[:7]}" in alpha["origin-gone"]
    assert "keys at jeff:skills/keys" in alpha["origin-gone"] and "if one is it renamed" in alpha["origin-gone"]
    shown = sk(home, "show", "alpha").stdout
    assert "origin   jeff:skills/alpha: upstream removed it" in shown and "keys at jeff:skills/keys" in shown
    beta = _shown(home, "beta")["metadata"]
    assert beta["origin-gone"].startswith(f"upstream removed it at {commit[:7]}")
    assert "(after the tests)" in (home / "skills/beta/SKILL.md").read_text(encoding="utf-8")
    page = _page(home, "workspace:alpha")
    assert 'href="/skill/jeff' not in page.split("fork of", 1)[1].split("</dd>", 1)[0]

    # the update after says nothing more of either copy
    upstream.write("skills/keys/SKILL.md", upstream.read("skills/keys/SKILL.md").replace("# Alpha", "# Keys"))
    upstream.commit("title")
    upstream.push()
    (c,) = _plan(home)["changes"]
    assert c["copy"] is None and c["edit"] is None


def test_upstream_never_marks_a_live_copy_gone(tmp_path):
    up = Upstream(tmp_path / "up")
    up.write("skills/alpha/SKILL.md", ALPHA.replace(
        "without downtime.\n", "without downtime.\nmetadata:\n  origin-gone: upstream removed it long ago\n"))
    up.commit("alpha says it is gone")
    up.push()
    home = tmp_path / "home"
    assert sk(home, "sources", "add", up.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    assert "origin-gone" not in _shown(home, "alpha")["metadata"]        # a copy's own, never the original's
    up.write("skills/alpha/SKILL.md", up.read("skills/alpha/SKILL.md").replace(
        "upstream removed it long ago", "upstream removed it again").replace("for a day", "for a week"))
    up.commit("a week")
    up.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout + r.stderr
    assert "upstream also changed metadata.origin-gone" in r.stdout
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "a week" in text and "(staging first)" in text and "origin-gone" not in text


def test_the_keys_an_upstream_merge_sets_are_written_once():
    assert changes.UPSTREAM_TOP is upstream_merge.UPSTREAM_TOP is skillmod.UPSTREAM_TOP
    assert changes.OWN_KEYS is upstream_merge.OWN_KEYS is skillmod.OWN_KEYS


def test_a_copy_left_naming_a_renamed_skill_before_is_marked_at_the_next_change(tmp_path, upstream):
    """A home whose copy's origin already named a folder upstream gave another skill (renamed before the
    copy could say so): the next change there marks it, and it is not merged."""
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "name: alpha", "name: key-rotation"))
    upstream.commit("rename alpha")
    upstream.push()
    assert sk(home, "sources", "update", "--yes").returncode == 0
    copy = home / "skills/alpha/SKILL.md"
    copy.write_text("\n".join(ln for ln in copy.read_text(encoding="utf-8").splitlines()
                              if "origin-gone" not in ln) + "\n", encoding="utf-8")
    assert sk(home, "sync").returncode == 0
    assert "origin-gone" not in _shown(home, "alpha")["metadata"]
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace("# Alpha", "# Keys"))
    title = upstream.commit("title")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "your copy alpha: kept" in r.stdout, r.stdout + r.stderr
    gone = _shown(home, "alpha")["metadata"]["origin-gone"]
    assert f"upstream's skill in jeff:skills/alpha is named key-rotation at {title[:7]}" in gone
    assert "# Keys" not in copy.read_text(encoding="utf-8")
