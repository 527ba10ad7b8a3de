"""A person's copy of a source's skill follows upstream (a new user's walk, run as the real console
script against local bare repositories over ``file://``): a skill upstream moves to another folder
takes the copy with it and its change is merged; an edit of a pinned source's held skill is said
to go aside before the update is applied, and the way back it names keeps upstream's change; a
copy's ``metadata.version`` is always text, the author's version is kept, and an update says what
it did with upstream's version."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_sources_git import ALPHA, Upstream, edit_as_person, git, lock_of, sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def _move(up: Upstream, src: str, dst: str) -> None:
    (up.work / dst).parent.mkdir(parents=True, exist_ok=True)
    git(up.work, "mv", src, dst)


def _shown(home: Path, name: str) -> dict:
    r = sk(home, "show", name, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# --- 1. a skill moved upstream ------------------------------------------------------------------

def test_a_skill_moved_upstream_takes_your_copy_with_it_and_its_change_merges(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key (staging first).")
    _move(upstream, "skills/alpha", "skills/backend/alpha")
    upstream.write("skills/backend/alpha/SKILL.md", upstream.read("skills/backend/alpha/SKILL.md").replace(
        "Keep the old key for a day.", "Keep the old key for a week."))
    upstream.commit("move alpha under backend")
    upstream.push()

    dry = sk(home, "sources", "update", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "moved    skills/backend/alpha  (from skills/alpha)  (SKILL.md)" in dry.stdout
    assert "removed  skills/alpha" not in dry.stdout and "added    skills/backend/alpha" not in dry.stdout
    assert "upstream's change merged" in dry.stdout and "your copy follows it" in dry.stdout
    plan = json.loads(sk(home, "sources", "update", "--dry-run", "--json").stdout)[0]
    (c,) = plan["changes"]
    assert (c["change"], c["path"], c["moved_from"], c["edit"]) == ("moved", "skills/backend/alpha", "skills/alpha",
                                                                    "merged")

    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "rotate each key (staging first)." in text and "Keep the old key for a week." in text
    shown = _shown(home, "alpha")
    assert shown["metadata"]["origin"] == "jeff:skills/backend/alpha"
    assert "your copy of jeff:skills/backend/alpha" in sk(home, "show", "alpha").stdout
    hist = sk(home, "history", "alpha").stdout
    assert "moved jeff:skills/alpha to jeff:skills/backend/alpha" in hist and "merged upstream" in hist
    # the base is kept under the new folder, none is left under the old one
    bases = home / "sources" / ".bases" / "jeff"
    assert "week" in (bases / "skills/backend/alpha/SKILL.md").read_text(encoding="utf-8")
    assert not (bases / "skills/alpha").exists()

    # upstream's next change merges into the copy from the new folder
    upstream.write("skills/backend/alpha/SKILL.md", upstream.read("skills/backend/alpha/SKILL.md").replace(
        "# Alpha", "# Alpha, the key rotation"))
    upstream.commit("title")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "staging first" in text and "a week" in text and "the key rotation" in text

    # the dashboard's page of the copy links to the skill it is a copy of, which exists
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from skillshelf.web import create_app
    lib = Library(home=home, embedder=FakeEmbedder())
    try:
        with TestClient(create_app(lib, port=7788), base_url="http://127.0.0.1:7788") as client:
            page = client.get("/skill/workspace:alpha")
            assert page.status_code == 200
            link = re.search(r'fork of</dt><dd><a href="([^"]+)"', page.text)
            assert link is not None and "backend" in link.group(1), page.text[:2000]
            assert client.get(link.group(1)).status_code == 200
    finally:
        lib.close()


def test_a_move_alone_or_a_rename_is_said_as_it_is(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key by hand.")
    before = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    _move(upstream, "skills/alpha", "skills/ops/alpha")                  # the same text, moved
    _move(upstream, "skills/beta", "skills/ops/gizmo")                   # another name: not the same skill
    upstream.write("skills/ops/gizmo/SKILL.md", upstream.read("skills/ops/gizmo/SKILL.md").replace(
        "name: beta", "name: gizmo"))
    upstream.commit("reorganise")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0, r.stderr
    assert "moved    skills/ops/alpha  (from skills/alpha)\n" in r.stdout
    assert "removed  skills/beta" in r.stdout and "added    skills/ops/gizmo" in r.stdout
    assert "your copy alpha: kept (moved upstream from skills/alpha; your copy follows it" in r.stdout
    after = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert after.replace("jeff:skills/ops/alpha", "jeff:skills/alpha").split("version")[0] == before.split("version")[0]
    assert _shown(home, "alpha")["metadata"]["origin"] == "jeff:skills/ops/alpha"
    assert lock_of(home)["source"][0]["commit"] == git(upstream.work, "rev-parse", "HEAD")


# --- 2. an in-place edit of a pinned source's held skill ----------------------------------------

def test_an_edit_of_a_held_skill_is_said_to_go_aside_and_the_way_back_keeps_upstreams_change(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "mkt", "--pin").returncode == 0
    first = git(upstream.work, "rev-parse", "HEAD")
    md = home / "sources/mkt/skills/alpha/SKILL.md"
    md.write_text(md.read_text(encoding="utf-8").replace("Step one: list the widgets.",
                                                          "Step one: list the widgets by owner."), encoding="utf-8")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    upstream.commit("a week")
    upstream.push()

    dry = sk(home, "sources", "update", "mkt", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "becomes the workspace copy" not in dry.stdout           # what applying does is said before
    assert "is copied to sources/.kept/mkt/" in dry.stdout and "held until you trust it" in dry.stdout
    assert "`skillshelf trust mkt:skills/alpha`" in dry.stdout

    r = sk(home, "sources", "update", "mkt", "--yes")
    assert r.returncode == 0, r.stderr
    kept = next((home / "sources/.kept/mkt").glob("*/skills/alpha"))
    assert "by owner" in (kept / "SKILL.md").read_text(encoding="utf-8")
    # the way back the update names, step by step
    said = re.search(r"`skillshelf sources update mkt --to (\w+) --yes`.*copy (\S+)/ over sources/mkt/skills/alpha/"
                     r".*`skillshelf trust mkt:skills/alpha`.*`skillshelf sources update mkt --to '' --yes`", r.stdout)
    assert said is not None, r.stdout
    assert first.startswith(said.group(1)) and said.group(2) == str(kept)
    assert sk(home, "sources", "update", "mkt", "--to", said.group(1), "--yes").returncode == 0
    shutil.copytree(kept, home / "sources/mkt/skills/alpha", dirs_exist_ok=True)
    assert sk(home, "trust", "mkt:skills/alpha", "--yes").returncode == 0
    r = sk(home, "sources", "update", "mkt", "--to", "", "--yes")
    assert r.returncode == 0 and "is now the workspace copy alpha" in r.stdout, r.stdout + r.stderr
    assert sk(home, "review", "approve", "alpha").returncode == 0      # a pinned source's merge waits for a person
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "by owner" in text and "Keep the old key a week." in text   # upstream's change is not undone
    assert lock_of(home)["source"][0]["commit"] == git(upstream.work, "rev-parse", "HEAD")


def test_trusting_a_held_edit_before_the_update_makes_it_a_copy_upstream_merges_into(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "mkt", "--pin").returncode == 0
    md = home / "sources/mkt/skills/alpha/SKILL.md"
    md.write_text(md.read_text(encoding="utf-8").replace("Step three", "Step 3"), encoding="utf-8")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    upstream.commit("a week")
    upstream.push()
    assert sk(home, "trust", "mkt:skills/alpha", "--yes").returncode == 0
    dry = sk(home, "sources", "update", "mkt", "--dry-run")
    assert "becomes the workspace copy alpha" in dry.stdout and "held" not in dry.stdout.split("changed")[0]
    assert sk(home, "sources", "update", "mkt", "--yes").returncode == 0
    assert sk(home, "review", "approve", "alpha").returncode == 0
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "Step 3" in text and "a week" in text


# --- 3. metadata.version ------------------------------------------------------------------------

def _with_meta(name: str, meta: str) -> str:
    return ALPHA.replace("name: alpha", f"name: {name}").replace("downtime.\n---", f"downtime.\nmetadata:\n{meta}---")


def test_a_copys_version_is_text_and_the_authors_version_is_kept_and_merged(tmp_path, upstream):
    home = tmp_path / "home"
    upstream.write("skills/golang-pro/SKILL.md", _with_meta("golang-pro", '  version: "1.1.0"\n  author: jeff\n'))
    upstream.write("skills/rust-pro/SKILL.md", _with_meta("rust-pro", "  version: 1\n"))
    upstream.commit("two more")
    upstream.push()
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    for name in ("golang-pro", "rust-pro"):
        edit_as_person(home, name, "Step two: rotate each key.", "Step two: rotate each key (staging first).")

    # a number written by hand stays a number, written as text: the project's own check finds nothing
    rust = (home / "skills/rust-pro/SKILL.md").read_text(encoding="utf-8")
    assert re.search(r"^  version: ['\"]2['\"]$", rust, re.MULTILINE), rust
    v = sk(home, "validate", str(home / "skills/rust-pro/SKILL.md"))
    assert v.returncode == 0 and "not-string" not in v.stdout, v.stdout
    # the author's version is not a version number here: it is kept beside skillshelf's
    go = _shown(home, "golang-pro")["metadata"]
    assert go["version"] == "2" and go["author-version"] == "1.1.0", go

    # upstream changes only its version: the update says so and takes it, as the author's
    upstream.write("skills/golang-pro/SKILL.md", _with_meta("golang-pro", '  version: "9.9.9"\n  author: jeff\n'))
    upstream.commit("9.9.9")
    upstream.push()
    dry = sk(home, "sources", "update", "--dry-run")
    assert "already has upstream's change" not in dry.stdout
    assert "your copy golang-pro: upstream's change merged into it (upstream's version 1.1.0 → 9.9.9)" in dry.stdout
    assert sk(home, "sources", "update", "--yes").returncode == 0
    go = _shown(home, "golang-pro")
    assert go["metadata"]["author-version"] == "9.9.9" and go["version"] == 3
    assert "staging first" in go["body"]
    v = sk(home, "validate", str(home / "skills/golang-pro/SKILL.md"))
    assert v.returncode == 0 and "warning" not in v.stdout, v.stdout

    # history and rollback go on by skillshelf's numbers; the original's text keeps its author's version
    r = sk(home, "rollback", "golang-pro", "1")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    go = _shown(home, "golang-pro")
    assert go["version"] == 4 and go["metadata"]["author-version"] == "1.1.0"
    assert go["metadata"]["origin"] == "jeff:skills/golang-pro"


def test_an_update_that_changes_only_what_the_copy_keeps_as_its_own_says_so(tmp_path, upstream):
    home = tmp_path / "home"
    upstream.write("skills/alpha/SKILL.md", _with_meta("alpha", '  created: "2025-01-01"\n'))
    upstream.commit("dated")
    upstream.push()
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key by hand.")
    upstream.write("skills/alpha/SKILL.md", _with_meta("alpha", '  created: "2025-02-02"\n  license-note: MIT\n'))
    upstream.commit("redated, and a note")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0, r.stderr
    assert "already has upstream's change" not in r.stdout
    assert "metadata.license-note (none) → MIT" in r.stdout, r.stdout
    meta = _shown(home, "alpha")["metadata"]
    assert meta["license-note"] == "MIT" and meta["created"] != "2025-02-02"

    upstream.write("skills/alpha/SKILL.md", _with_meta("alpha", '  created: "2025-03-03"\n  license-note: MIT\n'))
    upstream.commit("redated again")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert "already has upstream's change" not in r.stdout
    assert "upstream changed only metadata.created, which your copy keeps as its own" in r.stdout, r.stdout


def test_a_conflict_waiting_in_the_review_queue_moves_with_the_skill(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "jeff").returncode == 0
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key by hand.")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Step two: rotate each key.", "Step two: run rotate-all."))
    upstream.commit("conflict")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert "CONFLICT" in r.stdout, r.stdout
    _move(upstream, "skills/alpha", "skills/backend/alpha")
    upstream.commit("move")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "moved    skills/backend/alpha  (from skills/alpha)" in r.stdout, r.stdout + r.stderr
    assert _shown(home, "alpha")["metadata"]["origin"] == "jeff:skills/backend/alpha"
    # the person keeps theirs: upstream's text is the next base at the new folder, so a later change merges
    assert sk(home, "review", "reject", "alpha", "--reason", "keep mine").returncode == 0
    upstream.write("skills/backend/alpha/SKILL.md", upstream.read("skills/backend/alpha/SKILL.md") + "\nMore notes.\n")
    upstream.commit("more")
    upstream.push()
    r = sk(home, "sources", "update", "--yes")
    assert r.returncode == 0 and "CONFLICT" not in r.stdout, r.stdout
    text = (home / "skills/alpha/SKILL.md").read_text(encoding="utf-8")
    assert "by hand" in text and "More notes." in text and "rotate-all" not in text
    assert not (home / "sources/.bases/.pending/jeff/skills/alpha/draft.json").exists()
