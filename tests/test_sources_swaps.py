"""Upstream gives a skill's folder to another skill (run as the real console script against local
bare repositories over ``file://``): two skills that swap folders are two moves, and a person's
copy follows its own skill, never merged with the other's text; a skill renamed in its folder, or
moved and renamed at once, is another skill: the copy stays as it is and the update says so.
A copy's lifecycle keys are its own, never upstream's, and an author's version is never dropped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest
from mcp import Client
from test_sources_git import Upstream, edit_as_person, git, sk
from test_sources_moves import _shown

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def _swap(up: Upstream) -> None:
    git(up.work, "mv", "skills/alpha", "skills/tmp")
    git(up.work, "mv", "skills/beta", "skills/alpha")
    git(up.work, "mv", "skills/tmp", "skills/beta")


def _plan(home: Path) -> dict:
    r = sk(home, "sources", "update", "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[0]


def test_two_skills_that_swap_folders_are_two_moves_and_the_copy_follows_its_own(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    _swap(upstream)
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md").replace(
        "Keep the old key for a day.", "Keep the old key for a week."))
    upstream.commit("swap alpha and beta")
    upstream.push()

    dry = sk(home, "sources", "update", "--dry-run")
    assert dry.returncode == 0 and "Traceback" not in dry.stderr, dry.stderr
    assert "moved    skills/beta  (from skills/alpha)" in dry.stdout
    assert "moved    skills/alpha  (from skills/beta)" in dry.stdout
    assert "  changed " not in dry.stdout and "CONFLICT" not in dry.stdout
    changes = {c["path"]: c for c in _plan(home)["changes"]}
    assert changes["skills/beta"]["copy"] == "alpha" and changes["skills/beta"]["edit"] == "merged"
    assert changes["skills/alpha"]["copy"] is None

    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "name: alpha" in text and "Rotate widget keys" in text and "gizmo" not in text
    assert "rotate each key (staging first)." in text and "Keep the old key for a week." in text
    assert _shown(home, "alpha")["metadata"]["origin"] == "jeff:skills/beta"
    assert "alpha" not in sk(home, "review", "list").stdout
    doc = sk(home, "doctor").stdout
    assert "(also: jeff:" not in doc, doc[-700:]

    # upstream's next change to alpha (in its new folder) merges; one to beta (in alpha's old one) does not
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md").replace("# Alpha", "# Alpha keys"))
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "Run the gizmo deploy.", "Run the gizmo deploy twice."))
    upstream.commit("edits")
    upstream.push()
    assert sk(home, "sources", "update", "--yes").returncode == 0
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "# Alpha keys" in text and "(staging first)" in text and "gizmo" not in text


def test_a_swap_of_two_copied_skills_keeps_each_copy_its_own_base(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    edit_as_person(home, "beta", "Run the gizmo deploy.", "Run the gizmo deploy (after the tests).")
    # a first update merged into both copies: each keeps the upstream text it was merged with as its base
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md") + "\nRotate at night.\n")
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md").replace(
        "to the staging cluster.", "to the staging cluster, one at a time."))
    upstream.commit("notes")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout + r.stderr
    _swap(upstream)
    upstream.commit("swap alpha and beta")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert _shown(home, "alpha")["metadata"]["origin"] == "jeff:skills/beta"
    assert _shown(home, "beta")["metadata"]["origin"] == "jeff:skills/alpha"
    bases = home / "sources" / ".bases" / "jeff"
    assert "Rotate at night." in (bases / "skills/beta/SKILL.md").read_text(encoding="utf-8")
    assert "one at a time" in (bases / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    # each copy's next upstream change merges with its own base
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md").replace("# Alpha", "# Alpha keys"))
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace("# Beta", "# Beta deploys"))
    upstream.commit("titles")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout + r.stderr
    a = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    b = (home / "skills/beta/SKILL.md").read_text(encoding="utf-8")
    assert "# Alpha keys" in a and "(staging first)" in a and "gizmo" not in a
    assert "# Beta deploys" in b and "(after the tests)" in b and "widget" not in b


def test_a_skill_renamed_in_its_folder_is_another_skill_and_the_copy_stays(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "name: alpha", "name: key-rotation").replace("Step three: check the logs.", "Step three: check alerts."))
    upstream.commit("rename alpha")
    upstream.push()
    changes = _plan(home)["changes"]
    assert [(c["change"], c["path"]) for c in changes] == [("removed", "skills/alpha"), ("added", "skills/alpha")]
    assert changes[0]["copy"] == "alpha" and changes[0]["edit"] == "kept"
    assert "now named key-rotation" in changes[0]["note"]
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "name: alpha" in text and "(staging first)" in text and "check alerts" not in text
    assert "alpha" not in sk(home, "review", "list").stdout
    # a later change of key-rotation (in the folder the copy's origin names, marked gone) is not merged into it
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace("# Alpha", "# Keys"))
    upstream.commit("title")
    upstream.push()
    changes = _plan(home)["changes"]
    assert changes[0]["copy"] is None and changes[0]["edit"] is None
    assert sk(home, "sources", "update", "--yes").returncode == 0
    assert "# Keys" not in (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")


def test_a_skill_moved_and_renamed_at_once_is_said_plainly(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    git(upstream.work, "mv", "skills/alpha", "skills/keys")
    upstream.write("skills/keys/SKILL.md", upstream.read("skills/keys/SKILL.md").replace("name: alpha", "name: keys"))
    upstream.commit("move and rename alpha")
    upstream.push()
    changes = {c["path"]: c for c in _plan(home)["changes"]}
    assert changes["skills/alpha"]["change"] == "removed" and changes["skills/keys"]["change"] == "added"
    note = changes["skills/alpha"]["note"]
    assert changes["skills/alpha"]["edit"] == "kept" and "skills/keys" in note and "does not follow it" in note
    dry = sk(home, "sources", "update", "--dry-run")
    assert "does not follow it" in dry.stdout


def _fix(home: Path, name: str, lesson: str) -> dict:
    """An agent's FIX through the MCP server (a real client, in process)."""
    async def go() -> dict:
        server = build_server(lambda: Library(home, write_policy="open", embedder=FakeEmbedder()))
        async with Client(server) as c:
            r = await c.call_tool("save_skill", {"action": "FIX", "target_skill_name": name, "lesson": lesson})
            assert not r.is_error and r.structured_content["status"] == "saved", r.content[0].text
            return dict(r.structured_content)
    return anyio.run(go)


def test_upstream_never_sets_a_copys_lifecycle_keys(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "without downtime.\n", "without downtime.\nmetadata:\n  status: merged\n  merged-into: beta\n"
        "  status-reason: folded into beta\n  ttl-days: '1'\n  team: keys\n"))
    upstream.commit("alpha merged into beta upstream")
    upstream.push()
    dry = sk(home, "sources", "update", "--dry-run")
    assert "metadata.team (none) → keys" in dry.stdout
    assert "upstream also changed metadata.status" in dry.stdout and "keeps as its own" in dry.stdout
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    meta = _shown(home, "alpha")["metadata"]
    assert meta["team"] == "keys"
    assert not {"status", "merged-into", "status-reason", "ttl-days"} & set(meta), meta
    assert json.loads(sk(home, "search", "rotate widget keys", "--json").stdout)["hits"][0]["id"] == \
        "workspace:alpha"
    assert _fix(home, "alpha", "rotate staging first")["version"] > int(meta["version"])


def test_an_authors_version_beside_an_older_one_is_kept_on_a_fix(tmp_path):
    home = tmp_path / "home"
    folder = home / "skills" / "gizmo"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: gizmo\ndescription: Deploy gizmos to staging.\nmetadata:\n"
                                     "  author-version: 1.1.0\n  version: 2.0-beta\n---\n\n# Gizmo\n\nDeploy.\n",
                                     encoding="utf-8")
    assert sk(home, "sync").returncode == 0
    res = _fix(home, "gizmo", "deploy twice")
    meta = _shown(home, "gizmo")["metadata"]
    assert meta["author-version"] == "2.0-beta" and meta["version"] == str(res["version"])
    assert "author-version: 1.1.0" in sk(home, "diff", "gizmo", "2", "3").stdout


def test_a_swap_moves_each_copys_waiting_conflict_with_it(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    edit_as_person(home, "beta", "Run the gizmo deploy.", "Run the gizmo deploy (after the tests).")
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "Step two: rotate each key.", "Step two: rotate each key at night."))
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md").replace(
        "Run the gizmo deploy.", "Run the gizmo deploy at noon."))
    upstream.commit("both sides change the same lines")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and r.stdout.count("CONFLICT") == 2, r.stdout + r.stderr
    _swap(upstream)
    upstream.commit("swap alpha and beta")
    upstream.push()
    assert sk(home, "sources", "update", "--yes").returncode == 0
    for name in ("alpha", "beta"):      # the person keeps their text
        assert sk(home, "review", "reject", name, "--reason", "mine").returncode == 0
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md").replace("# Alpha", "# Alpha keys"))
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace("# Beta", "# Beta deploys"))
    upstream.commit("titles")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout + r.stderr
    a = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    b = (home / "skills/beta/SKILL.md").read_text(encoding="utf-8")
    assert "# Alpha keys" in a and "(staging first)" in a and "at night" not in a
    assert "# Beta deploys" in b and "(after the tests)" in b and "at noon" not in b
