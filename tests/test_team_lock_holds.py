"""A team's ``skillshelf.lock`` says what the team's pins say, and a restore from it holds what the
team holds (a real PostgreSQL, the console script, an agent over a real MCP client). The lock a
team server exports carries ``pinned`` and, per held skill, what was reviewed (lock-version 2),
from the team store's pins; restored into a local home it holds the same skills; a pin or a
trust on one server reaches every server's export; a local lock restored into a team holds
there and on every server; a restore releases nothing."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import anyio
from mcp import Client
from teamlib import until
from test_held_restore import SECRET, agent_reads, ok, sk, skill, status, zip_of

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server

WAIT = 30.0


def lock_of(home: Path) -> dict:
    return tomllib.loads((home / "skillshelf.lock").read_text(encoding="utf-8"))


def skills_of(home: Path) -> dict[str, dict]:
    (src,) = lock_of(home)["source"]
    return {s["path"]: s for s in src["skill"]}


def team_ok(home: Path, url: str, *args: str) -> str:
    r = sk(home, "--store", url, *args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def team_reads(home: Path, url: str, name: str) -> tuple[bool, str]:
    """(whether an agent's get_skill on a server of the team is refused, its text)."""
    async def main():
        lib = lambda: Library(home, store=url, embedder=FakeEmbedder(), auto_sync=False)
        async with Client(build_server(lib)) as c:
            return await c.call_tool("get_skill", {"name": name})

    r = anyio.run(main)
    return r.is_error, r.content[0].text


def team_held(home: Path, url: str) -> int:
    lib = Library(home, store=url, embedder=FakeEmbedder(), auto_sync=False)
    try:
        return lib.supply.status()["held"]
    finally:
        lib.close()


def pinned_and_changed(tmp_path: Path, run) -> Path:
    """A zip source ``sp`` added pinned through ``run(*args)``, then updated upstream: alpha
    changed (a fetch-and-run line) and gamma new, both held; beta unchanged. Returns the zip."""
    coll = tmp_path / "coll"
    skill(coll, "alpha", "Step one: list the widgets.")
    skill(coll, "beta", "Run the gizmo deploy.")
    sp = zip_of(coll, tmp_path / "sp.zip")
    run("sources", "add", str(sp), "--name", "sp", "--pin")
    skill(coll, "alpha", f"Step one: list the widgets.\n\n{SECRET}")
    skill(coll, "gamma", "Brand new, never reviewed.")
    zip_of(coll, sp)
    run("sources", "update", "sp", "--yes")
    return sp


def test_a_team_homes_lock_says_what_was_reviewed_and_a_local_restore_holds_it(tmp_path, pg_url):
    a, here = tmp_path / "a", tmp_path / "here"
    pinned_and_changed(tmp_path, lambda *args: team_ok(a, pg_url, *args))
    assert team_held(a, pg_url) == 2
    lock = lock_of(a)
    assert lock["lock-version"] == 2 and lock["source"][0]["pinned"] is True
    skills = skills_of(a)
    assert skills["alpha"]["reviewed"] and skills["alpha"]["reviewed"] != skills["alpha"]["files"]
    assert skills["gamma"]["reviewed"] == [] and "reviewed" not in skills["beta"]
    shutil.copy(a / "skillshelf.lock", tmp_path / "team.lock")
    out = ok(here, "sources", "restore", str(tmp_path / "team.lock"))
    assert "held from agents: alpha, gamma" in out
    st = status(here)
    assert st["held"] == 2 and [p["root"] for p in st["pinned"]] == ["sp"]
    refused, text = agent_reads(here, "alpha")
    assert refused and "EXFILTRATE" not in text and "skillshelf trust alpha" in text
    assert agent_reads(here, "gamma")[0] and not agent_reads(here, "beta")[0]
    # the local home's lock says the same as the team's
    assert (here / "skillshelf.lock").read_text(encoding="utf-8") == (a / "skillshelf.lock").read_text(encoding="utf-8")


def test_a_pin_or_a_trust_on_one_server_reaches_every_servers_lock(tmp_path, pg_url):
    a, b = tmp_path / "a", tmp_path / "b"
    pinned_and_changed(tmp_path, lambda *args: team_ok(a, pg_url, *args))
    server_b = Library(b, store=pg_url, embedder=FakeEmbedder(), auto_sync=False)     # follows the team
    try:
        assert skills_of(b)["alpha"]["reviewed"] and skills_of(b)["gamma"]["reviewed"] == []
        team_ok(a, pg_url, "trust", "alpha", "--yes")
        assert "reviewed" not in skills_of(a)["alpha"]
        assert until(lambda: "reviewed" not in skills_of(b)["alpha"], WAIT) is not None, \
            "B's lock still says alpha was reviewed at its old files"
        assert skills_of(b)["gamma"]["reviewed"] == []
        shutil.copy(b / "skillshelf.lock", tmp_path / "b.lock")
        here = tmp_path / "here"
        ok(here, "sources", "restore", str(tmp_path / "b.lock"))
        assert status(here)["held"] == 1
        assert agent_reads(here, "gamma")[0] and not agent_reads(here, "alpha")[0]
        # unpinned on A: B's lock says so
        assert "pinned" in team_ok(a, pg_url, "sources", "list")
        team_ok(a, pg_url, "unpin", "sp", "--yes")         # the whole team's pin: asked, or --yes
        assert "pinned" not in team_ok(a, pg_url, "sources", "list")
        assert until(lambda: lock_of(b)["source"][0]["pinned"] is False, WAIT) is not None
        assert "reviewed" not in skills_of(b)["gamma"] and lock_of(b)["lock-version"] == 1
    finally:
        server_b.close()


def test_a_local_lock_restored_into_a_team_holds_there_and_on_every_server(tmp_path, pg_url):
    here, t, c = tmp_path / "here", tmp_path / "t", tmp_path / "c"
    pinned_and_changed(tmp_path, lambda *args: ok(here, *args))
    assert status(here)["held"] == 2
    shutil.copy(here / "skillshelf.lock", tmp_path / "local.lock")
    out = team_ok(t, pg_url, "sources", "restore", str(tmp_path / "local.lock"))
    assert "held from agents: alpha, gamma" in out
    assert team_held(t, pg_url) == 2
    refused, text = team_reads(t, pg_url, "alpha")
    assert refused and "EXFILTRATE" not in text
    assert team_reads(t, pg_url, "gamma")[0] and not team_reads(t, pg_url, "beta")[0]
    # the team's export says what the local lock said
    assert (t / "skillshelf.lock").read_text(encoding="utf-8") == (here / "skillshelf.lock").read_text(encoding="utf-8")
    # another server of the team holds them too, and its lock says so
    assert team_reads(c, pg_url, "alpha")[0] and team_reads(c, pg_url, "gamma")[0]
    assert skills_of(c)["gamma"]["reviewed"] == [] and skills_of(c)["alpha"]["reviewed"]
    # a trust on the team moves what the team's lock says was reviewed: the pins are the truth
    team_ok(t, pg_url, "trust", "gamma", "--yes")
    assert "reviewed" not in skills_of(t)["gamma"] and skills_of(t)["alpha"]["reviewed"]
    assert not team_reads(c, pg_url, "gamma")[0]
    assert "reviewed" not in skills_of(c)["gamma"]


def test_a_restore_into_a_team_releases_nothing(tmp_path, pg_url):
    a, other = tmp_path / "a", tmp_path / "other"
    sp = pinned_and_changed(tmp_path, lambda *args: team_ok(a, pg_url, *args))
    # the same source at the same commit, locked by a home that never pinned it
    ok(other, "sources", "add", str(sp), "--name", "sp")
    assert lock_of(other)["source"][0]["pinned"] is False
    assert lock_of(other)["source"][0]["commit"] == lock_of(a)["source"][0]["commit"]
    shutil.copy(other / "skillshelf.lock", tmp_path / "unpinned.lock")
    team_ok(a, pg_url, "sources", "restore", str(tmp_path / "unpinned.lock"))
    assert team_held(a, pg_url) == 2
    assert team_reads(a, pg_url, "alpha")[0] and team_reads(a, pg_url, "gamma")[0]
    skills = skills_of(a)
    assert lock_of(a)["source"][0]["pinned"] is True and skills["gamma"]["reviewed"] == []
