"""A change committed through another server is indexed here folder by folder: the follower's
index step syncs the skill folders the change rewrote, not a walk of every root. What one
server saves is found on the other, what it deletes leaves the other's index (and a read-only
copy of the same name then wins there), and the other's roots are never walked for it."""

from __future__ import annotations

import pytest
from conftest import write_skill
from teamlib import BODY, close, found, team_library, until

from skillshelf.search import sync as indexmod


@pytest.fixture
def servers(tmp_path, pg_url):
    ro = tmp_path / "ro"
    for i in range(20):
        write_skill(ro, f"other-{i}", description=f"an unrelated skill number {i}")
    write_skill(ro, "cors-fix", description="A read-only note on CORS headers")
    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url, roots=[ro])
    b.list()        # (its first read: the start's catching up, a walk of its copy, is done before the walks counted)
    yield a, b, ro
    close(a)
    close(b)


@pytest.fixture
def walks(monkeypatch):
    """(root path, folder) of every walk a sync starts, in either server."""
    calls: list[tuple[str, str]] = []
    real = indexmod.discover

    def spy(root, exclude=(), under="."):
        calls.append((str(root.path), under))
        return real(root, exclude, under)

    monkeypatch.setattr(indexmod, "discover", spy)
    return calls


def of(b, ro, calls) -> list[tuple[str, str]]:
    """The walks of B's roots (A's own syncs walk A's)."""
    mine = {str(b.config.workspace), str(ro)}
    return [c for c in calls if c[0] in mine]


def test_a_save_through_one_server_is_indexed_on_the_other_without_walking_its_roots(servers, walks):
    a, b, ro = servers
    a.save("ARCHIVE", name="cors-api", description="Fix CORS errors in API routes", body=BODY, author="ann")
    assert until(lambda: found(b, "fix CORS errors in API routes", "cors-api")) is not None
    assert of(b, ro, walks) == [(str(b.config.workspace), "cors-api")]
    assert b.get("cors-api").kind == "workspace"
    # the text is embedded just after it is indexed: wait for the vector, never for a walk
    assert until(lambda: (lambda st: st["vectors"] == st["skills"])(b.indexer.embedder_status())) is not None
    # a fix is indexed the same way
    walks.clear()
    a.save("FIX", target_skill_name="cors-api", lesson="Set Access-Control-Allow-Credentials too")
    assert until(lambda: "Allow-Credentials" in b.read("cors-api")[1]) is not None
    assert set(of(b, ro, walks)) == {(str(b.config.workspace), "cors-api")}


def test_a_delete_through_one_server_leaves_the_others_index(servers, walks):
    a, b, ro = servers
    a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    # the team's skill wins the name over B's read-only copy
    assert until(lambda: b.get("cors-fix").kind == "workspace") is not None
    walks.clear()
    a.delete("cors-fix")
    assert until(lambda: b.get("cors-fix").kind != "workspace") is not None
    assert b.get("cors-fix").description == "A read-only note on CORS headers"
    assert not [r for r in b.list() if r.kind == "workspace" and r.name == "cors-fix"]
    assert of(b, ro, walks) == [(str(b.config.workspace), "cors-fix")]
    assert b.sync().changed is False             # a whole sync finds nothing left to do


def test_the_followers_whole_comparison_still_syncs_every_root(servers, walks):
    _, b, ro = servers
    b._team.mirror._stop.set()                  # (the copy's edit watcher would bring it in before the
    b._team.mirror._edit_thread.join(5)         # comparison: this is about the comparison)
    write_skill(b.config.workspace, "hand-made", description="written into the copy by hand")
    b._team.mirror._reconciled = -1e9           # the safety net's turn at the next pass
    assert until(lambda: not (b.config.workspace / "hand-made").exists()) is not None
    assert until(lambda: (str(ro), ".") in walks) is not None
