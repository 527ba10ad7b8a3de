"""Ctrl+C during `sources update`: fetching (nothing changed, said so), before the lock moves
(nothing changed), after it moved (the source is in place: finish the index; where a person's
files went is said). In process through ``cli.run``, the Ctrl+C raised where it would land."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_sources_git import ALPHA, Upstream, git, lock_of, sk

from skillshelf.library import Library
from skillshelf.supply.kept_edits import KeptEdits
from skillshelf.supply.sources import Sources

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> tuple[Path, Upstream]:
    up = Upstream(tmp_path / "up")
    home = tmp_path / "home"
    assert sk(home, "sources", "add", up.url, "--name", "ops").returncode == 0
    up.write("skills/alpha/SKILL.md", ALPHA.replace("Keep the old key for a day.", "Keep the old key a week."))
    up.commit("a week")
    up.push()
    (home / "sources" / "ops" / "skills" / "alpha" / ".mine").write_text("mine\n", encoding="utf-8")
    monkeypatch.setenv("SKILLSHELF_HOME", str(home))
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "fake")
    return home, up


def update(capsys) -> tuple[int, str, str]:
    from skillshelf.cli import run

    capsys.readouterr()
    code = run(["sources", "update", "ops", "--yes"])
    o = capsys.readouterr()
    return code, o.out, o.err


def ctrl_c(*_a, **_k):
    raise KeyboardInterrupt


def test_ctrl_c_while_fetching_says_nothing_was_changed(home, capsys, monkeypatch):
    h, _ = home
    before = lock_of(h)
    monkeypatch.setattr(Sources, "_plan", ctrl_c)
    code, _, err = update(capsys)
    assert code == 130 and "stopped: nothing was changed" in err, err
    assert lock_of(h) == before


def test_ctrl_c_before_the_lock_moves_says_nothing_was_changed(home, capsys, monkeypatch):
    h, _ = home
    before = lock_of(h)
    monkeypatch.setattr(KeptEdits, "keep_unlisted", ctrl_c)
    code, _, err = update(capsys)
    assert code == 130 and "stopped: nothing was changed" in err, err
    assert lock_of(h) == before
    assert (h / "sources" / "ops" / "skills" / "alpha" / ".mine").read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("where", ["putting the files in place", "indexing"])
def test_ctrl_c_after_the_lock_moved_says_so_and_where_your_files_went(home, capsys, monkeypatch, where):
    h, up = home
    if where == "indexing":      # a Ctrl-C the sync did not turn into its own stop (the last embedding batch)
        monkeypatch.setattr(Library, "sync", ctrl_c)
    else:
        monkeypatch.setattr(Sources, "_installed", lambda self, entry: ctrl_c())   # just after the lock is written
    code, out, err = update(capsys)
    assert code == 130, err
    assert "stopped while indexing: the source is in place and locked; run `skillshelf sync`" in err, err
    assert "your file sources/ops/skills/alpha/.mine" in out and "carried into the new files" in out, out
    assert lock_of(h)["source"][0]["commit"] == git(up.work, "rev-parse", "HEAD")
    assert (h / "sources" / "ops" / "skills" / "alpha" / ".mine").read_text(encoding="utf-8") == "mine\n"
