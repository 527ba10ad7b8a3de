"""Sources in a team store (a real PostgreSQL, two or three servers, a local bare git repository
over ``file://``): the sources and their lock live in the store; a curator's ``sources add``,
``update`` and ``remove`` (the real CLI on server A) move the team's lock, and server B fetches
the locked commit itself, checks it against the lock and serves its skills, learning of it from
the change stream; a server started later fetches what it lacks at start. A fetch that does not
match the team's lock is refused and named by ``doctor``; readers' and agents' tokens cannot
add, update or remove a source."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from teamlib import team_library, until
from test_sources_git import ALPHA, Upstream, git, sk

from skillshelf.access import Caller
from skillshelf.errors import ConflictError, ForbiddenError
from skillshelf.supply import lock as lockmod

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

WAIT = 30.0


def cli(home: Path, url: str, *args: str):
    r = sk(home, "--store", url, *args, timeout=180)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def skill_text(lib, name: str) -> str | None:
    """The text ``lib`` serves for ``name`` from the source ``coll`` (None: not served)."""
    try:
        rec = lib.get(name)
    except Exception:  # noqa: BLE001 -- not found
        return None
    return rec.body if rec.id.startswith("coll:") else None


def locked_commit(home: Path) -> str | None:
    p = home / lockmod.LOCK_NAME
    if not p.exists():
        return None
    got = [s for s in tomllib.loads(p.read_text(encoding="utf-8")).get("source", []) if s["label"] == "coll"]
    return got[0]["commit"] if got else None


@pytest.fixture
def up(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def test_a_curators_add_update_and_remove_reach_every_server(tmp_path, pg_url, up):
    home_a, home_b, home_c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    b = team_library(home_b, pg_url)
    c = None
    try:
        assert skill_text(b, "alpha") is None
        # A curator adds the collection on server A, with the real CLI (the owner of the store URL)
        r = cli(home_a, pg_url, "sources", "add", up.url, "--name", "coll", "--path", "skills")
        assert r.returncode == 0, r.stdout + r.stderr
        first = git(up.work, "rev-parse", "HEAD")
        assert first[:12] in r.stdout
        # ... B learns it from the change stream, fetches that commit itself and serves its skills
        assert until(lambda: skill_text(b, "alpha") is not None, WAIT) is not None, "B never served the source"
        assert "rotate each key" in skill_text(b, "alpha")
        assert [(e.label, e.commit) for e in b.sources.entries()] == [("coll", first)]
        assert (home_b / "sources" / "coll" / "alpha" / "SKILL.md").read_text(encoding="utf-8") == ALPHA
        assert b.sources.check() == []                       # every file as the team's lock says
        assert locked_commit(home_b) == first                # the home's lock: an export of the team's
        assert (home_b / lockmod.LOCK_NAME).read_text() == (home_a / lockmod.LOCK_NAME).read_text()
        assert sk(home_b, "lock", "--check").returncode == 0

        # upstream moves; the curator's update on A moves the team's lock; B follows
        up.write("skills/alpha/SKILL.md", ALPHA.replace("rotate each key", "rotate each key twice"))
        up.write("skills/gamma/SKILL.md", "---\nname: gamma\ndescription: Prune stale gadget caches nightly.\n"
                                          "---\n\n# Gamma\n\nPrune them.\n")
        second = up.commit("second")
        up.push()
        r = cli(home_a, pg_url, "sources", "update", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert second[:12] in r.stdout
        moved = until(lambda: "rotate each key twice" in (skill_text(b, "alpha") or "")
                      and skill_text(b, "gamma") is not None, WAIT)
        assert moved is not None, "B did not move to the new commit"
        assert [(e.label, e.commit) for e in b.sources.entries()] == [("coll", second)]
        assert locked_commit(home_b) == second
        assert b.sources.check() == []

        # a server started now fetches the locked commit at start, before it answers
        c = team_library(home_c, pg_url)
        assert "rotate each key twice" in (skill_text(c, "gamma") and skill_text(c, "alpha") or "")
        assert locked_commit(home_c) == second

        # the curator removes it on A: gone from B (and C), folder, root and lock entry; a file a person
        # wrote in B's folder is kept there first
        (home_b / "sources" / "coll" / "alpha" / "NOTES.md").write_text("b's notes\n", encoding="utf-8")
        r = cli(home_a, pg_url, "sources", "remove", "coll", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        for lib, home in ((b, home_b), (c, home_c)):
            assert until(lambda lib=lib: skill_text(lib, "alpha") is None, WAIT) is not None
            assert not (home / "sources" / "coll").exists()
            assert lib.sources.entries() == [] and locked_commit(home) is None
        kept = [p.read_text(encoding="utf-8") for p in (home_b / "sources" / ".kept").rglob("NOTES.md")]
        assert kept == ["b's notes\n"]
        assert not (home_c / "sources" / ".kept").exists()
    finally:
        b.close()
        if c is not None:
            c.close()


def test_a_fetch_that_does_not_match_the_team_lock_is_refused_and_named(tmp_path, pg_url, up):
    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.sources.add(up.url, label="coll", path="skills")
        first = git(up.work, "rev-parse", "HEAD")
        assert until(lambda: skill_text(b, "alpha") is not None, WAIT) is not None
        # the team's lock names a new commit, but with the old files' digests (a lock that lies)
        up.write("skills/alpha/SKILL.md", ALPHA.replace("rotate each key", "EXFILTRATE each key"))
        second = up.commit("second")
        up.push()
        (entry,) = a.sources.entries()
        lying = lockmod.SourceEntry(**{**entry.__dict__, "commit": second})
        a._shared.sources.replace(lockmod.documents([lying]), expect=lockmod.documents([entry]), by="mallory")
        refused = until(lambda: any(ch.status == "fail" and "coll" in ch.detail for ch in b.sources.checks()), WAIT)
        assert refused is not None, [ch.detail for ch in b.sources.checks()]
        detail = next(ch.detail for ch in b.sources.checks() if ch.status == "fail")
        assert "alpha/SKILL.md" in detail and second[:12] in detail
        # B keeps serving what it had: the files of the first commit, never the unlocked text
        assert "EXFILTRATE" not in (skill_text(b, "alpha") or "")
        assert "rotate each key" in skill_text(b, "alpha")
        assert (tmp_path / "b" / "sources" / "coll" / "alpha" / "SKILL.md").read_text(encoding="utf-8") == ALPHA
        assert b.sources._state()["coll"]["installed"] == first
    finally:
        a.close()
        b.close()


def test_readers_and_agents_cannot_add_update_or_remove_sources(tmp_path, pg_url, up):
    a = team_library(tmp_path / "a", pg_url)
    try:
        for role in ("reader", "agent"):
            who = Caller(f"{role}-1", role)
            with pytest.raises(ForbiddenError):
                a.sources.add(up.url, label="coll", path="skills", caller=who)
        assert a.sources.entries() == [] and not (tmp_path / "a" / "sources" / "coll").exists()
        a.sources.add(up.url, label="coll", path="skills")      # the owner (the CLI) may
        for role in ("reader", "agent"):
            who = Caller(f"{role}-1", role)
            with pytest.raises(ForbiddenError):
                a.sources.remove("coll", caller=who)
            with pytest.raises(ForbiddenError), a.sources.planning(["coll"], caller=who):
                pass
        assert [e.label for e in a.sources.entries()] == ["coll"]
    finally:
        a.close()


def test_two_curators_cannot_both_move_one_source(tmp_path, pg_url, up):
    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.sources.add(up.url, label="coll", path="skills")
        assert until(lambda: skill_text(b, "alpha") is not None, WAIT) is not None
        up.write("skills/alpha/SKILL.md", ALPHA.replace("rotate each key", "rotate each key twice"))
        second = up.commit("second")
        up.push()
        (before,) = a.sources.entries()
        with a.sources.planning(["coll"]) as plans_a:
            with b.sources.planning(["coll"]) as plans_b:       # both planned from the same commit
                b.sources.apply(plans_b[0])
            with pytest.raises(ConflictError):
                a.sources.apply(plans_a[0])
        assert [e.commit for e in a.sources.entries()] == [second]
        # the store's own compare-and-set: a change made from a lock read before is refused
        stale = lockmod.SourceEntry(**{**before.__dict__, "ref": "elsewhere"})
        with pytest.raises(ConflictError):
            a._shared.sources.replace(lockmod.documents([stale]), expect=lockmod.documents([before]), by="late")
        assert [(e.commit, e.ref) for e in b.sources.entries()] == [(second, "")]
        # A follows B's update like any server
        assert until(lambda: "rotate each key twice" in (skill_text(a, "alpha") or ""), WAIT) is not None
    finally:
        a.close()
        b.close()


def test_a_home_that_joins_a_team_keeps_its_own_lock(tmp_path, pg_url, up):
    from skillshelf import Library
    from skillshelf.embeddings.fake import FakeEmbedder

    home = tmp_path / "mine"
    lib = Library(home=home, embedder=FakeEmbedder(), auto_sync=False)
    try:
        lib.sources.add(up.url, label="mine", path="skills")
    finally:
        lib.close()
    before = (home / lockmod.LOCK_NAME).read_text(encoding="utf-8")
    joined = team_library(home, pg_url)
    try:
        assert joined.sources.entries() == []                  # the team's lock is the team's
        assert (home / (lockmod.LOCK_NAME + ".local")).read_text(encoding="utf-8") == before
        warn = [ch.detail for ch in joined.sources.checks() if ch.status == "warn" and "mine" in ch.detail]
        assert warn and "not in the team's lock" in warn[0], [ch.detail for ch in joined.sources.checks()]
        assert (home / "sources" / "mine" / "alpha" / "SKILL.md").is_file()     # still this server's root
    finally:
        joined.close()


def test_a_server_whose_copy_drifted_still_takes_the_next_commit(tmp_path, pg_url, up):
    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.sources.add(up.url, label="coll", path="skills")
        assert until(lambda: skill_text(b, "alpha") is not None, WAIT) is not None
        # someone edited B's copy of the source by hand; the next commit is made from B's folder ...
        beta = tmp_path / "b" / "sources" / "coll" / "beta" / "SKILL.md"
        beta.write_text(beta.read_text(encoding="utf-8") + "\nA local edit.\n", encoding="utf-8")
        up.write("skills/alpha/SKILL.md", ALPHA.replace("rotate each key", "rotate each key twice"))
        second = up.commit("second")
        up.push()
        with a.sources.planning(["coll"]) as plans:
            a.sources.apply(plans[0])
        # ... and checked against the lock: the drifted file is caught, the whole tree taken, nothing refused
        assert until(lambda: b.sources._state().get("coll", {}).get("installed") == second, WAIT) is not None
        assert "A local edit." not in beta.read_text(encoding="utf-8")
        # the edit was copied aside first, not dropped
        kept = list((tmp_path / "b" / "sources" / ".kept" / "coll").glob("*/beta/SKILL.md"))
        assert kept and "A local edit." in kept[0].read_text(encoding="utf-8")
        assert b.sources.check() == [] and not [ch for ch in b.sources.checks() if ch.status == "fail"]
    finally:
        a.close()
        b.close()


def test_a_fetch_that_failed_is_tried_again_without_a_restart(tmp_path, pg_url, up, monkeypatch):
    """B could not fetch the team's source (its host was away): it fetches it again by itself,
    sooner at first and less often while it keeps failing, without waiting for a restart or
    for the lock to move."""
    from skillshelf.supply.fetch import SourceError
    from skillshelf.team import Team

    monkeypatch.setattr(Team, "SOURCE_RETRY", (0.3, 1.0))
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    b = team_library(home_b, pg_url)
    try:
        real = b.sources._fetch
        tries = []

        def away(*args, **kw):
            tries.append(1)
            raise SourceError("cannot fetch: the host is away", fix="try again later")

        monkeypatch.setattr(b.sources, "_fetch", away)
        r = cli(home_a, pg_url, "sources", "add", up.url, "--name", "coll", "--path", "skills")
        assert r.returncode == 0, r.stdout + r.stderr
        assert until(lambda: len(tries) >= 3, WAIT) is not None, "B did not try again"
        assert skill_text(b, "alpha") is None and b.sources.failed_follows() == ["coll"]
        assert any("could not fetch the team's lock" in c.detail and "tries again" in c.detail
               for c in b.sources.shared.checks(b.sources.entries()))
        monkeypatch.setattr(b.sources, "_fetch", real)       # the host is back
        assert until(lambda: skill_text(b, "alpha") is not None, WAIT) is not None, "B never fetched it"
        assert b.sources.failed_follows() == [] and b.sources.check() == []
    finally:
        b.close()


def _kept_texts(home: Path, rel: str) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in (home / "sources" / ".kept").glob(f"coll*/**/{rel}")]


def test_a_persons_edit_survives_a_fetch_that_failed_first(tmp_path, pg_url, up, monkeypatch):
    """B's folder holds the first commit and a person's edit; the team's lock moves, B's first
    fetch of it fails: the home's lock stays at the commit the folder holds (a lock moves only
    after its folder), and once the fetch works the edit is kept in sources/.kept, not dropped."""
    from skillshelf.supply.fetch import SourceError

    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.sources.add(up.url, label="coll", path="skills")
        first = git(up.work, "rev-parse", "HEAD")
        assert until(lambda: skill_text(b, "alpha") is not None, WAIT) is not None
        beta = tmp_path / "b" / "sources" / "coll" / "beta" / "SKILL.md"
        beta.write_text(beta.read_text(encoding="utf-8") + "\nMy own step.\n", encoding="utf-8")
        real = b.sources._fetch
        tries = []

        def away(*args, **kw):
            tries.append(1)
            raise SourceError("cannot fetch: the host is away", fix="try again later")

        monkeypatch.setattr(b.sources, "_fetch", away)
        up.write("skills/alpha/SKILL.md", ALPHA.replace("rotate each key", "rotate each key twice"))
        second = up.commit("second")
        up.push()
        r = cli(tmp_path / "a", pg_url, "sources", "update", "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert until(lambda: tries and b.sources.failed_follows() == ["coll"], WAIT) is not None
        # the home's lock still names what the folder holds
        assert locked_commit(tmp_path / "b") == first
        monkeypatch.setattr(b.sources, "_fetch", real)       # the host is back
        b.sources.follow(["coll"])
        assert b.sources._state()["coll"]["installed"] == second
        assert locked_commit(tmp_path / "b") == second
        assert "My own step." not in beta.read_text(encoding="utf-8")
        kept = _kept_texts(tmp_path / "b", "beta/SKILL.md")
        assert kept and "My own step." in kept[0], list((tmp_path / "b" / "sources").rglob("*"))
    finally:
        a.close()
        b.close()


def test_an_edit_is_kept_even_when_the_homes_lock_names_the_next_commit(tmp_path, pg_url, up):
    """The edit check compares the folder with the commit it holds (the git cache), not with the
    home's lock: a lock exported ahead of its folder (an older version did) drops nothing."""
    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url, follow=False)
    try:
        a.sources.add(up.url, label="coll", path="skills")
        b.sources.follow(None)
        assert b.sources.check() == []
        beta = tmp_path / "b" / "sources" / "coll" / "beta" / "SKILL.md"
        beta.write_text(beta.read_text(encoding="utf-8") + "\nMy own step.\n", encoding="utf-8")
        (beta.parent / ".my-notes").write_text("hidden notes\n", encoding="utf-8")
        up.write("skills/alpha/SKILL.md", ALPHA.replace("rotate each key", "rotate each key twice"))
        up.commit("second")
        up.push()
        with a.sources.planning(["coll"]) as plans:
            a.sources.apply(plans[0])
        # the home's lock written ahead of the folder, as an older version did
        lockmod.write(tmp_path / "b" / lockmod.LOCK_NAME, a.sources.entries())
        b.sources.follow(["coll"])
        assert b.sources.check() == []
        kept = _kept_texts(tmp_path / "b", "beta/SKILL.md")
        assert kept and "My own step." in kept[0]
        assert _kept_texts(tmp_path / "b", "beta/.my-notes") == ["hidden notes\n"]
    finally:
        a.close()
        b.close()


def test_a_team_servers_old_folder_is_kept_when_it_cannot_be_put_back(tmp_path, pg_url, up, monkeypatch):
    """Between moving a server's folder aside and putting the new one in place, something made
    the folder again (an editor saving a file): the new one cannot take its place, and the old
    one cannot go back. It is kept whole in sources/.kept/, never removed with the temporary folder."""
    import os

    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.sources.add(up.url, label="coll", path="skills")
        assert until(lambda: skill_text(b, "alpha") is not None, WAIT) is not None
        dest = (tmp_path / "b" / "sources" / "coll").resolve()
        real = os.rename

        def editor_saves_meanwhile(src, dst, *args, **kw):
            if Path(dst).resolve() == dest and Path(src).name != "previous" and not dest.exists():
                dest.mkdir()
                (dest / "notes.md").write_text("saved by an editor\n", encoding="utf-8")
            return real(src, dst, *args, **kw)

        monkeypatch.setattr(os, "rename", editor_saves_meanwhile)
        up.write("skills/alpha/SKILL.md", ALPHA.replace("rotate each key", "rotate each key twice"))
        up.commit("second")
        up.push()
        with a.sources.planning(["coll"]) as plans:
            a.sources.apply(plans[0])
        kept = tmp_path / "b" / "sources" / ".kept" / "coll"
        assert until(lambda: list(kept.glob("*/alpha/SKILL.md")), WAIT), "the old folder was not kept"
        old = list(kept.glob("*/alpha/SKILL.md"))[0].read_text(encoding="utf-8")
        assert "rotate each key" in old and "twice" not in old
        assert (dest / "notes.md").read_text(encoding="utf-8") == "saved by an editor\n"
    finally:
        monkeypatch.undo()
        a.close()
        b.close()
