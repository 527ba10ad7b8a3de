"""A restore never releases a hold at this home, and a repair of a damaged lock leaves no source
behind that no lock lists: the console script, and an agent's read over a real MCP client.

A lock that says a source is not pinned, or pinned with no ``reviewed`` (an older lock, or a
teammate's), says nothing of what its writer held: this home keeps its pin and its holds, and the
restore names them. A lock that carries ``reviewed`` is lock-version 2, so an older skillshelf
refuses it rather than restore it with nothing held."""

from __future__ import annotations

import dataclasses
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from test_held_restore import SECRET, agent_reads, ok, sk, skill, status, zip_of

from skillshelf.supply import lock as lockmod


@pytest.fixture
def held_home(tmp_path) -> tuple[Path, str]:
    """A home that pinned the zip source ``sp`` and holds ``alpha`` (changed upstream since);
    its lock's text."""
    coll = tmp_path / "coll"
    skill(coll, "alpha", "Step one.")
    skill(coll, "beta", "Run.")
    sp = zip_of(coll, tmp_path / "sp.zip")
    h = tmp_path / "h"
    ok(h, "sources", "add", str(sp), "--name", "sp", "--pin")
    skill(coll, "alpha", f"Step one.\n\n{SECRET}")
    zip_of(coll, sp)
    ok(h, "sources", "update", "sp", "--yes")
    assert status(h)["held"] == 1 and agent_reads(h, "alpha")[0]
    return h, (h / "skillshelf.lock").read_text()


def _without_reviewed(text: str) -> str:
    return re.sub(r"reviewed = \[\n.*?\n\]\n", "", text, flags=re.DOTALL).replace("lock-version = 2", "lock-version = 1")


def test_a_lock_that_says_unpinned_keeps_this_homes_pin_and_hold(tmp_path, held_home):
    h, text = held_home
    mate = _without_reviewed(text).replace("pinned = true", "pinned = false")
    (tmp_path / "mate.lock").write_text(mate)
    r = sk(h, "sources", "restore", str(tmp_path / "mate.lock"))
    assert r.returncode == 0, r.stderr
    assert "sp: kept pinned here" in r.stdout and "held from agents: alpha" in r.stdout
    assert status(h)["held"] == 1
    refused, said = agent_reads(h, "alpha")
    assert refused and "EXFILTRATE" not in said
    assert not agent_reads(h, "beta")[0]
    lock = tomllib.loads((h / "skillshelf.lock").read_text())        # the home's lock says what is so
    assert lock["source"][0]["pinned"] is True
    assert any("reviewed" in k for k in lock["source"][0]["skill"])


def test_a_pinned_lock_without_reviewed_repins_at_this_homes_own_pin(tmp_path, held_home):
    h, text = held_home
    (tmp_path / "old.lock").write_text(_without_reviewed(text))
    r = sk(h, "sources", "restore", str(tmp_path / "old.lock"))
    assert r.returncode == 0, r.stderr
    assert "held from agents: alpha" in r.stdout
    assert status(h)["held"] == 1
    refused, said = agent_reads(h, "alpha")
    assert refused and "EXFILTRATE" not in said
    ok(h, "sync")                                    # a sync does not release it either
    assert agent_reads(h, "alpha")[0]
    out = ok(h, "trust", "alpha", "--yes")           # a person does
    assert not agent_reads(h, "alpha")[0], out


def test_a_lock_with_reviewed_is_version_2_and_one_without_stays_version_1(held_home):
    _, text = held_home
    assert "lock-version = 2" in text and "reviewed = [" in text
    got = lockmod.parse(text)
    assert lockmod.parse(lockmod.render(got)) == got
    plain = lockmod.render([dataclasses.replace(e, skills=[dataclasses.replace(s, reviewed=None) for s in e.skills])
                            for e in got])
    assert "lock-version = 1" in plain
    with pytest.raises(lockmod.ValidationError, match="unknown lock-version 3"):
        lockmod.parse(text.replace("lock-version = 2", "lock-version = 3"))
    with pytest.raises(lockmod.ValidationError, match="unknown lock-version"):
        lockmod.parse(text.replace("lock-version = 2", "lock-version = true"))


def test_a_repair_moves_aside_a_source_the_good_lock_does_not_name(tmp_path):
    coll, c2, h = tmp_path / "coll", tmp_path / "c2", tmp_path / "h"
    skill(coll, "alpha", "Step one.")
    skill(c2, "gamma", "Gamma steps.")
    ok(h, "sources", "add", str(coll), "--name", "mkt", "--pin")
    shutil.copy(h / "skillshelf.lock", tmp_path / "good.lock")
    ok(h, "sources", "add", str(c2), "--name", "other", "--pin")
    (h / "sources" / "other" / "gamma" / "mine.md").write_text("my notes\n")
    with open(h / "skillshelf.lock", "a") as f:
        f.write("garbage [[[\n")
    r = sk(h, "sources", "restore", str(tmp_path / "good.lock"))
    assert r.returncode == 0, r.stderr
    assert "other: not in" in r.stdout and ".kept/other/" in r.stdout
    kept = list((h / "sources" / ".kept" / "other").glob("*/gamma/mine.md"))
    assert kept and kept[0].read_text() == "my notes\n"           # the person's file is kept
    assert not (h / "sources" / "other").exists()
    assert "other:gamma" not in ok(h, "list")                      # no longer served
    doctor = sk(h, "doctor").stdout
    assert "sources/other" not in doctor and "pinned roots: mkt\n" in doctor     # no root, no pin left
    out = ok(h, "sources", "add", str(c2), "--name", "other")       # the label is free again
    assert "added other" in out
    assert "removed other" in ok(h, "sources", "remove", "other", "--yes")
