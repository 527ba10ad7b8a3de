"""A copy whose conflict draft waits in the review queue when upstream changes again: the draft is
replaced by the merge with upstream's newest text, and a rejected draft never leaves the copy called
up to date with a change it did not get. Run as the real console script over a local bare repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_sources_git import ALPHA, Upstream, edit_as_person, sk

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def _text(home: Path, name: str) -> str:
    r = sk(home, "show", name, "--json")
    assert r.returncode == 0, r.stderr
    return Path(json.loads(r.stdout)["path"]).read_text(encoding="utf-8")


def _ok(r) -> str:
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    return r.stdout


def _waiting(home: Path, upstream: Upstream, *pin: str) -> tuple[str, str]:
    """A person's copy of alpha; upstream changes the line they edited (a conflict draft waits), then
    another line (no conflict with the copy). Returns the two commits (short)."""
    _ok(sk(home, "sources", "add", upstream.url, "--name", "ops", *pin))
    edit_as_person(home, "alpha", "Step two: rotate each key.", "Step two: rotate each key by hand.")
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Step two: rotate each key.", "Step two: run rotate-all."))
    first = upstream.commit("conflict")[:7]
    upstream.push()
    assert "CONFLICT" in _ok(sk(home, "sources", "update", "ops", "--yes"))
    assert first in _ok(sk(home, "review", "list"))
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "Keep the old key for a day.", "Keep the old key for a day, wait 10 minutes."))
    second = upstream.commit("steps")[:7]
    upstream.push()
    return first, second


def test_a_newer_upstream_change_replaces_the_waiting_conflict_draft(tmp_path, upstream):
    home = tmp_path / "home"
    first, second = _waiting(home, upstream)
    out = _ok(sk(home, "sources", "update", "ops", "--yes"))
    listed = _ok(sk(home, "review", "list"))
    assert second in listed and first not in listed, listed
    assert f"the draft of upstream {first}" in out and f"merge of upstream {second}" in out, out
    assert len([ln for ln in listed.splitlines() if ln.startswith("alpha ")]) == 1, listed
    shown = _ok(sk(home, "review", "show", "alpha"))
    assert "+Keep the old key for a day, wait 10 minutes." in shown and "+Step two: run rotate-all." in shown, shown
    # approving it takes upstream's side of the conflict and its newest change
    _ok(sk(home, "review", "approve", "alpha"))
    text = _text(home, "alpha")
    assert "run rotate-all" in text and "wait 10 minutes" in text and "by hand" not in text
    assert "up to date" in _ok(sk(home, "sources", "update", "ops", "--dry-run"))


def test_a_rejected_conflict_draft_leaves_upstreams_clean_change_offered(tmp_path, upstream):
    home = tmp_path / "home"
    _waiting(home, upstream)
    _ok(sk(home, "sources", "update", "ops", "--yes"))
    _ok(sk(home, "review", "reject", "alpha", "--reason", "keep mine"))
    dry = _ok(sk(home, "sources", "update", "ops", "--dry-run"))
    assert "up to date" not in dry and "skills/alpha" in dry and "has not taken" in dry, dry
    assert "wait 10 minutes" not in _text(home, "alpha")
    _ok(sk(home, "sources", "update", "ops", "--yes"))
    text = _text(home, "alpha")
    assert "rotate each key by hand" in text and "wait 10 minutes" in text and "rotate-all" not in text, text
    assert "up to date" in _ok(sk(home, "sources", "update", "ops", "--dry-run"))
    assert "alpha" not in _ok(sk(home, "review", "list"))
    # the rejected conflict does not come back at upstream's next change
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "# Alpha", "# Alpha, the key rotation"))
    upstream.commit("title")
    upstream.push()
    out = _ok(sk(home, "sources", "update", "ops", "--yes"))
    assert "CONFLICT" not in out, out
    text = _text(home, "alpha")
    assert "the key rotation" in text and "by hand" in text and "wait 10 minutes" in text and "rotate-all" not in text


def test_a_pinned_sources_waiting_merge_is_replaced_without_losing_its_change(tmp_path, upstream):
    home = tmp_path / "home"
    first, second = _waiting(home, upstream, "--pin")
    out = _ok(sk(home, "sources", "update", "ops", "--yes"))
    assert second in _ok(sk(home, "review", "list")) and f"the draft of upstream {first}" in out, out
    _ok(sk(home, "review", "reject", "alpha", "--reason", "keep mine"))
    # the clean change the rejected draft carried is offered again: a pinned source's merge waits for review
    out = _ok(sk(home, "sources", "update", "ops", "--yes"))
    assert "review queue" in out and "has not taken" in out, out
    assert "+Keep the old key for a day, wait 10 minutes." in _ok(sk(home, "review", "show", "alpha"))
    # upstream changes again while that merge waits: the new draft holds both changes
    upstream.write("skills/alpha/SKILL.md", upstream.read("skills/alpha/SKILL.md").replace(
        "# Alpha", "# Alpha, the key rotation"))
    third = upstream.commit("title")[:7]
    upstream.push()
    out = _ok(sk(home, "sources", "update", "ops", "--yes"))
    assert f"the draft of upstream {second}" in out, out
    listed = _ok(sk(home, "review", "list"))
    assert third in listed and second not in listed, listed
    shown = _ok(sk(home, "review", "show", "alpha"))
    assert "+Keep the old key for a day, wait 10 minutes." in shown and "+# Alpha, the key rotation" in shown, shown
    assert "rotate-all" not in shown
    _ok(sk(home, "review", "approve", "alpha"))
    text = _text(home, "alpha")
    assert "by hand" in text and "wait 10 minutes" in text and "the key rotation" in text


def test_an_update_says_what_it_held_and_what_was_held_before(tmp_path, upstream):
    home = tmp_path / "home"
    _ok(sk(home, "sources", "add", upstream.url, "--name", "ops", "--pin"))
    upstream.write("skills/alpha/SKILL.md", ALPHA.replace("Step one", "Step 1"))
    upstream.commit("alpha")
    upstream.push()
    out = _ok(sk(home, "sources", "update", "ops", "--yes"))
    assert "1 skill(s) it changed held" in out and "from before" not in out, out
    upstream.write("skills/beta/SKILL.md", upstream.read("skills/beta/SKILL.md").replace("Run the", "Run, then, the"))
    upstream.commit("beta")
    upstream.push()
    out = _ok(sk(home, "sources", "update", "ops", "--yes"))
    assert "2 skill(s) held" not in out, out
    assert "1 skill(s) it changed held" in out and "1 other skill(s) of it still held from before" in out, out
