"""The team workspace against a real PostgreSQL: two ``Library`` objects with their own homes
on one database are two servers. What one saves, the other finds within 2 s; what one
deprecates or deletes, the other hides; their writers never give a version twice nor lose an
acknowledged change; a failed transaction leaves nothing half-written."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from teamlib import BODY, close, found, review, team_library, until

from skillshelf.errors import ConflictError, NotFoundError, StoreError, ValidationError
from skillshelf.files import MAX_RESOURCE_BYTES


@pytest.fixture
def servers(tmp_path, pg_url):
    libs = [team_library(tmp_path / "a", pg_url), team_library(tmp_path / "b", pg_url)]
    yield libs
    for lib in libs:
        close(lib)


def rows(pg_url: str, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(pg_url) as conn:
        return conn.execute(sql, params).fetchall()


# --- what one server saves, every server finds ------------------------------------------------

def test_a_skill_saved_through_one_server_is_found_on_another_within_2s(servers, pg_url):
    a, b = servers
    assert not found(b, "fix CORS errors in an API", "cors-fix")
    a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY, author="ann")
    took = until(lambda: found(b, "fix CORS errors in an API", "cors-fix"), timeout=2.0)
    assert took is not None, "the skill saved through A never reached B's search"
    # B's copy is the committed bytes, and B reads it like any workspace skill
    assert (b.config.workspace / "cors-fix" / "SKILL.md").read_bytes() == \
        bytes(rows(pg_url, "SELECT text FROM skills WHERE name = 'cors-fix'")[0][0])
    rec, body = b.read("cors-fix")
    assert rec.kind == "workspace" and "Send the CORS headers." in body


def test_a_deprecation_through_one_server_hides_the_skill_on_every_other(servers):
    a, b = servers
    a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    assert until(lambda: found(b, "CORS errors API routes", "cors-fix")) is not None
    a.deprecate("cors-fix", "superseded by the gateway's CORS settings")
    assert until(lambda: not found(b, "CORS errors API routes", "cors-fix")) is not None
    assert b.get("cors-fix").active is False
    b.restore("cors-fix", reason="the gateway is gone")          # and back, through the other one
    assert until(lambda: found(a, "CORS errors API routes", "cors-fix")) is not None
    assert [e["action"] for e in a.history("cors-fix")["changelog"]] == ["ARCHIVE", "INACTIVE", "RESTORE"]


def test_a_deprecation_of_a_read_only_skill_through_one_server_hides_it_on_every_other(tmp_path, pg_url):
    """A read-only root is the same checkout on every server; the owner's decision about one
    of its skills is the team's (an overlay in the store), its file is never changed."""
    from conftest import write_skill

    root = tmp_path / "checkout"
    md = write_skill(root, "web/cors-root", description="Fix CORS errors in API routes", body=BODY)
    before = md.read_bytes()
    a = team_library(tmp_path / "a", pg_url, roots=[root])
    b = team_library(tmp_path / "b", pg_url, roots=[root])
    try:
        assert found(b, "CORS errors API routes", "cors-root")
        a.deprecate("cors-root", "the gateway answers CORS now")
        assert until(lambda: not found(b, "CORS errors API routes", "cors-root")) is not None
        b.restore("cors-root")
        assert until(lambda: found(a, "CORS errors API routes", "cors-root")) is not None
        assert md.read_bytes() == before
    finally:
        close(a)
        close(b)


def test_changes_through_two_servers_build_on_each_other(servers, pg_url):
    a, b = servers
    a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    # B changes it at once, before its follower may have brought it in: the lock brings it first
    r2 = b.save("FIX", target_skill_name="cors-fix", lesson="preflight requests need OPTIONS")
    r3 = a.save("FIX", target_skill_name="cors-fix", lesson="credentials need an exact origin")
    assert (r2.version, r3.version) == (2, 3)
    text = a.skill_text("cors-fix")
    assert "preflight requests need OPTIONS" in text and "credentials need an exact origin" in text
    r4 = b.rollback("cors-fix", 1, author="bob")
    assert r4.version == 4
    h = a.history("cors-fix")
    assert h["versions"] == [1, 2, 3, 4]
    assert [e["action"] for e in h["changelog"]] == ["ARCHIVE", "FIX", "FIX", "ROLLBACK"]
    assert "+- v3: credentials need an exact origin" in b.diff("cors-fix", 2, 3)
    assert rows(pg_url, "SELECT version FROM skills WHERE name = 'cors-fix'") == [(4,)]
    assert until(lambda: "preflight" not in (a.config.workspace / "cors-fix" / "SKILL.md").read_text()) is not None


def test_a_server_whose_copy_lags_plans_from_the_latest_committed_version(tmp_path, pg_url):
    """B follows nothing here: its copy is as old as its last own write. Every change it makes
    is planned from the latest committed version all the same (brought in under the lock)."""
    a = team_library(tmp_path / "a", pg_url)
    b = team_library(tmp_path / "b", pg_url, follow=False)
    try:
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
        a.save("FIX", target_skill_name="cors-fix", lesson="first from A")
        assert b.save("FIX", target_skill_name="cors-fix", lesson="first from B").version == 3
        a.save("FIX", target_skill_name="cors-fix", lesson="second from A")
        res = b.save("FIX", target_skill_name="cors-fix", lesson="second from B")
        assert res.version == 5
        text = Path(res.path).read_text()
        assert all(x in text for x in ("first from A", "first from B", "second from A", "second from B"))
        assert b.deprecate("cors-fix", "replaced")["status"] == "inactive"
        assert a.history("cors-fix")["versions"] == [1, 2, 3, 4, 5, 6]
    finally:
        close(a)
        close(b)


def test_a_skill_created_through_two_servers_at_once_is_created_once(servers, pg_url):
    a, b = servers
    results: list[object] = []

    def archive(lib, who):
        try:
            results.append(lib.save("ARCHIVE", name="twin", description=f"made by {who}", body=BODY))
        except ConflictError as exc:
            results.append(exc)

    threads = [threading.Thread(target=archive, args=(lib, who)) for lib, who in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    saved = [r for r in results if not isinstance(r, Exception)]
    assert len(saved) == 1 and len(results) == 2
    assert "exists already" in str(next(r for r in results if isinstance(r, Exception)))
    assert rows(pg_url, "SELECT version FROM history WHERE name = 'twin'") == [(1,)]


# --- no lost change, no version twice ---------------------------------------------------------

def test_concurrent_fixes_through_two_servers_lose_nothing_and_give_no_version_twice(servers, pg_url):
    a, b = servers
    a.save("ARCHIVE", name="hot-skill", description="A skill every agent improves at once", body=BODY)
    acked: list[tuple[str, int]] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def work(lib, who: str) -> None:
        for i in range(6):
            lesson = f"lesson {who} number {i}"
            try:
                res = lib.save("FIX", target_skill_name="hot-skill", lesson=lesson, author=who)
            except Exception as exc:  # noqa: BLE001 -- counted: a refused change is not acknowledged
                with lock:
                    errors.append(exc)
                continue
            with lock:
                acked.append((lesson, res.version))

    threads = [threading.Thread(target=work, args=(lib, f"{tag}{n}")) for lib, tag in ((a, "a"), (b, "b"))
               for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors[:3]
    assert len(acked) == 36
    versions = [v for _, v in acked]
    assert len(set(versions)) == len(versions), "a version number was given twice"
    kept = [v for (v,) in rows(pg_url, "SELECT version FROM history WHERE name = 'hot-skill' ORDER BY version")]
    assert kept == list(range(1, 38))                   # contiguous, none twice
    entries = [json.loads(e) for (e,) in rows(pg_url, "SELECT entry FROM changelog WHERE name = 'hot-skill'")]
    assert sum(e["action"] == "FIX" for e in entries) == len(acked)
    final = bytes(rows(pg_url, "SELECT text FROM skills WHERE name = 'hot-skill'")[0][0]).decode()
    missing = [lesson for lesson, _ in acked if lesson not in final]
    assert not missing, f"acknowledged changes lost: {missing}"
    # both copies end equal to the database
    for lib in (a, b):
        assert until(lambda lib=lib: (lib.config.workspace / "hot-skill" / "SKILL.md").read_text() == final)


def test_a_change_planned_from_an_old_version_is_refused_with_nothing_written(servers, pg_url):
    """The lock can go with its connection (PostgreSQL restarted under it): the commit itself
    refuses a change whose plan was made from a version that is no longer the latest."""
    import hashlib

    a, b = servers
    a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    v1 = bytes(rows(pg_url, "SELECT text FROM skills WHERE name = 'cors-fix'")[0][0])
    v2 = v1.replace(b"version: '1'", b"version: '2'") + b"\nB's change, acknowledged\n"
    with a._team.lock("skill:cors-fix"):
        a._team.workspace.refresh(["cors-fix"])          # A plans from v1 ...
        # ... and another server commits v2 as if A's lock had gone with a restart
        b._team.store.commit("cors-fix", v2, 2, base=hashlib.sha256(v1).hexdigest())
        with pytest.raises(ConflictError) as e:
            a._team.workspace.write("cors-fix", v1.decode().replace("version: '1'", "version: '3'") + "\nstale\n", 3)
    assert "nothing was written" in e.value.message
    assert rows(pg_url, "SELECT version FROM history ORDER BY version") == [(1,), (2,)]
    assert bytes(rows(pg_url, "SELECT text FROM skills")[0][0]) == v2
    # and a version number is never given twice, whatever the base
    with pytest.raises(ConflictError) as e:
        b._team.store.commit("cors-fix", v2 + b"again", 2, base=hashlib.sha256(v2).hexdigest())
    assert "given by another server" in e.value.message
    assert bytes(rows(pg_url, "SELECT text FROM skills")[0][0]) == v2


def test_a_fix_whose_transaction_fails_leaves_no_half_written_skill(servers, pg_url):
    a, b = servers
    a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    assert until(lambda: (b.config.workspace / "cors-fix").is_dir())
    # the database refuses the changelog row of this one change: the whole transaction goes
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN IF NEW.entry LIKE '%refuse this%' "
                     "THEN RAISE EXCEPTION 'refused by a trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON changelog FOR EACH ROW EXECUTE FUNCTION refuse()")
    md_a = (a.config.workspace / "cors-fix" / "SKILL.md").read_bytes()
    md_b = (b.config.workspace / "cors-fix" / "SKILL.md").read_bytes()
    seq = rows(pg_url, "SELECT max(seq) FROM changes")
    with pytest.raises(StoreError) as e:
        a.save("FIX", target_skill_name="cors-fix", lesson="never written", reason="refuse this")
    assert "refused by a trigger" in e.value.message
    # nothing of it anywhere: not the row, not the version, not the change, not either copy
    assert rows(pg_url, "SELECT version FROM skills") == [(1,)]
    assert rows(pg_url, "SELECT version FROM history") == [(1,)]
    assert rows(pg_url, "SELECT max(seq) FROM changes") == seq
    assert (a.config.workspace / "cors-fix" / "SKILL.md").read_bytes() == md_a
    time.sleep(1.2)                                     # a poll of B's follower
    assert (b.config.workspace / "cors-fix" / "SKILL.md").read_bytes() == md_b
    assert "never written" not in a.skill_text("cors-fix")
    assert a.save("FIX", target_skill_name="cors-fix", lesson="written").version == 2


def test_postgres_restarted_midway_the_next_write_succeeds(tmp_path, pg_cluster):
    if pg_cluster is None:
        pytest.skip("needs the throwaway cluster (SKILLSHELF_TEST_PG points at a server this test cannot restart)")
    url = pg_cluster.new_database(schema=True)
    a, b = team_library(tmp_path / "a", url), team_library(tmp_path / "b", url)
    try:
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
        assert until(lambda: found(b, "CORS errors API routes", "cors-fix"))
        pg_cluster.restart()
        # the first request after the restart may meet a connection the restart cut: one clear error
        try:
            r = a.save("FIX", target_skill_name="cors-fix", lesson="after the restart")
        except StoreError as exc:
            assert "try again" in exc.fix
            r = a.save("FIX", target_skill_name="cors-fix", lesson="after the restart")
        assert r.version == 2
        # B follows again without being restarted itself
        assert until(lambda: "after the restart" in (b.config.workspace / "cors-fix" / "SKILL.md").read_text(),
                     timeout=10) is not None
        assert b.save("FIX", target_skill_name="cors-fix", lesson="from B after the restart").version == 3
    finally:
        close(a)
        close(b)


# --- lifecycle through the team store ---------------------------------------------------------

def test_delete_through_one_server_removes_the_skill_everywhere(servers, pg_url):
    a, b = servers
    a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    a.save("FIX", target_skill_name="cors-fix", lesson="one more")
    assert until(lambda: found(b, "CORS errors API routes", "cors-fix"))
    b.delete("cors-fix")
    assert until(lambda: not (a.config.workspace / "cors-fix").exists()) is not None
    assert until(lambda: not found(a, "CORS errors API routes", "cors-fix")) is not None
    with pytest.raises(NotFoundError):
        a.get("cors-fix")
    assert rows(pg_url, "SELECT deleted FROM skills WHERE name = 'cors-fix'") == [(True,)]
    assert rows(pg_url, "SELECT count(*) FROM history WHERE name = 'cors-fix'") == [(0,)]
    # the name is free again, its versions start over (as in a local library)
    assert a.save("ARCHIVE", name="cors-fix", description="CORS again", body=BODY).version == 1


def test_merge_through_one_server_retires_its_sources_on_every_server(servers):
    a, b = servers
    a.save("ARCHIVE", name="cors-headers", description="Send CORS headers from an API", body=BODY)
    a.save("ARCHIVE", name="cors-preflight", description="Answer CORS preflight OPTIONS requests", body=BODY)
    res = b.save("MERGE", name="cors-all", source_skill_names="cors-headers, cors-preflight",
                 description="Everything about CORS in APIs")
    assert res.version == 1
    assert until(lambda: found(a, "everything about CORS", "cors-all")) is not None
    assert until(lambda: not a.get("cors-headers").active and not a.get("cors-preflight").active) is not None
    assert a.get("cors-headers").metadata.get("merged-into") == "cors-all"


def test_drafts_are_one_queue_for_every_server(tmp_path, pg_url):
    a = team_library(tmp_path / "a", pg_url, write_policy="propose")
    b = team_library(tmp_path / "b", pg_url, write_policy="propose")
    try:
        res = review(a).propose({"action": "ARCHIVE", "name": "cors-fix", "description": "Fix CORS errors in APIs",
                                 "body": BODY, "author": "agent-1"})
        assert res.status == "draft" and Path(res.path) == a.config.drafts / "cors-fix" / "SKILL.md"
        listed = review(b).list()
        assert [d["name"] for d in listed] == ["cors-fix"] and listed[0]["author"] == "agent-1"
        assert until(lambda: (b.config.drafts / "cors-fix" / "SKILL.md").is_file()) is not None
        with pytest.raises(ConflictError):                       # one draft per name, whichever server
            review(b).propose({"action": "ARCHIVE", "name": "cors-fix", "description": "d", "body": BODY})
        saved = review(b).approve("cors-fix", reviewer="carol")
        assert saved.status == "saved" and saved.version == 1
        assert review(a).list() == []
        with pytest.raises(NotFoundError):                       # approved once, not twice
            review(a).approve("cors-fix")
        assert until(lambda: found(a, "fix CORS errors", "cors-fix")) is not None
        assert until(lambda: not (a.config.drafts / "cors-fix").exists()) is not None
        review(a).propose({"action": "FIX", "target_skill_name": "cors-fix", "lesson": "a wrong idea"})
        review(b).reject("cors-fix", "not true")
        assert review(a).list() == []
        assert json.loads(rows(pg_url, "SELECT entry FROM draft_rejections")[0][0])["reason"] == "not true"
    finally:
        close(a)
        close(b)


# --- each server's copy ---------------------------------------------------------------------

def test_a_server_started_later_gets_every_skill_and_only_what_the_store_has(tmp_path, pg_url):
    a = team_library(tmp_path / "a", pg_url)
    try:
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
        a.save("ARCHIVE", name="old-skill", description="Something retired", body=BODY)
        with a._team.lock("skill:with-files"):
            a._team.workspace.refresh(["with-files"])
            a._team.workspace.write("with-files", "---\nname: with-files\ndescription: a skill with references\n"
                                   "---\n\n# Body\n", 1,
                                   files={"references/notes.md": b"# Notes\n", "scripts/run.sh": b"echo hi\n"})
        # B was here before: a stale copy of a deleted skill, a folder made by hand, a stray file
        bws = tmp_path / "b" / "team" / "workspace"
        (bws / "old-skill").mkdir(parents=True)
        (bws / "old-skill" / "SKILL.md").write_text("---\nname: old-skill\ndescription: stale\n---\nx\n")
        (bws / "by-hand").mkdir()
        (bws / "by-hand" / "SKILL.md").write_text("---\nname: by-hand\ndescription: made here\n---\nx\n")
        (bws / "cors-fix").mkdir()
        (bws / "cors-fix" / "notes.txt").write_text("mine")
        a.delete("old-skill")
        b = team_library(tmp_path / "b", pg_url)
        try:
            assert sorted(p.name for p in bws.iterdir()) == ["cors-fix", "with-files"]
            assert (bws / "with-files" / "references" / "notes.md").read_bytes() == b"# Notes\n"
            assert (bws / "with-files" / "scripts" / "run.sh").read_bytes() == b"echo hi\n"
            assert not (bws / "cors-fix" / "notes.txt").exists()
            aside = tmp_path / "b" / "team" / "set-aside"
            kept = {p.relative_to(aside).parts[1:] for p in aside.rglob("*") if p.is_file()}
            # moved aside, never deleted (a text the store never kept, in a deleted skill's folder, too: it
            # may be a person's edit)
            assert kept == {("by-hand", "SKILL.md"), ("cors-fix", "notes.txt"), ("old-skill", "SKILL.md")}
            assert {r.name for r in b.list()} == {"cors-fix", "with-files"}
        finally:
            close(b)
    finally:
        close(a)


def test_a_folder_written_into_a_servers_copy_is_added_to_the_store_with_its_files(servers, pg_url):
    """What an import or ``init``'s samples write into the folder reaches the store (and
    every server) through ``Team.adopt``."""
    a, b = servers
    folder = a.config.workspace / "by-import"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: by-import\ndescription: Rotate TLS certificates without "
                                     "downtime\nmetadata:\n  version: '3'\n---\n\n# Rotate\n")
    (folder / "references" / "steps.md").write_text("1. issue\n2. swap\n")
    assert a._team.adopt(["by-import"], author="import") == {"by-import": 3}
    assert until(lambda: found(b, "rotate TLS certificates", "by-import")) is not None
    assert (b.config.workspace / "by-import" / "references" / "steps.md").read_text() == "1. issue\n2. swap\n"
    assert [e["action"] for e in b.history("by-import")["changelog"]] == ["IMPORT"]
    assert b.save("FIX", target_skill_name="by-import", lesson="drain first").version == 4
    assert a._team.adopt(["by-import"]) == {"by-import": None}      # the store has it: nothing twice
    assert rows(pg_url, "SELECT version FROM history WHERE name = 'by-import' ORDER BY version") == [(3,), (4,)]


def test_a_skill_whose_text_is_not_a_kept_version_is_kept_once_in_the_store(servers, pg_url):
    """A skill copied in with a hand edit its history never kept (SKILL.md says v1, history's
    v1 says something else): the first change keeps the edit as a new version, in the store,
    once; the next reads find nothing more to keep."""
    import hashlib

    import psycopg

    a, b = servers
    v1 = b"---\nname: edited\ndescription: Rotate TLS certificates\nmetadata:\n  version: '1'\n---\n\n# One\n"
    edit = v1.replace(b"# One", b"# One, edited by hand")
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO skills (name, text, version, sha256) VALUES ('edited', %s, 1, %s)",
                     (edit, hashlib.sha256(edit).hexdigest()))
        conn.execute("INSERT INTO history (name, version, text) VALUES ('edited', 1, %s)", (v1,))
        conn.execute("INSERT INTO changes (kind, key) VALUES ('skill', 'edited')")
    assert until(lambda: (a.config.workspace / "edited").is_dir()) is not None
    a.sync()

    def b_knows() -> bool:           # B follows the store on its own thread: wait for it, not for luck
        try:
            return b.history("edited")["versions"] == [1, 2]
        except NotFoundError:
            return False
    assert until(b_knows) is not None
    for _ in range(3):
        h = a.history("edited")
        assert h["versions"] == [1, 2]
        assert b.history("edited")["versions"] == [1, 2]
    (text,), = rows(pg_url, "SELECT text FROM skills WHERE name = 'edited'")
    assert b"edited by hand" in bytes(text) and b"version: '2'" in bytes(text)
    assert until(lambda: (b.config.workspace / "edited" / "SKILL.md").read_bytes() == bytes(text)) is not None
    assert [e["action"] for e in a.history("edited")["changelog"]] == ["EDIT"]


def test_a_skill_file_over_the_cap_is_refused(servers, pg_url):
    a, _ = servers
    with a._team.lock("skill:big"):
        a._team.workspace.refresh(["big"])
        with pytest.raises(ValidationError) as e:
            a._team.workspace.write("big", "---\nname: big\ndescription: d\n---\n\nb\n", 1,
                                   files={"references/huge.bin": b"x" * (MAX_RESOURCE_BYTES + 1)})
        with pytest.raises(ValidationError):
            a._team.workspace.write("big", "---\nname: big\ndescription: d\n---\n\nb\n", 1,
                                   files={"../outside.md": b"x"})
    assert "limit" in e.value.message
    assert rows(pg_url, "SELECT count(*) FROM skills") == [(0,)]


def test_a_change_committed_after_a_later_one_is_not_missed(servers, pg_url):
    """Change numbers are taken in one order and committed in another: a follower that saw
    a later number asks again for the earlier one until it commits."""
    import hashlib

    import psycopg

    a, b = servers
    text = b"---\nname: late-skill\ndescription: Committed after a later change\n---\n\n# Late\n"
    slow = psycopg.connect(pg_url)
    try:
        slow.execute("INSERT INTO skills (name, text, version, sha256) VALUES ('late-skill', %s, 1, %s)",
                     (text, hashlib.sha256(text).hexdigest()))
        slow.execute("INSERT INTO history (name, version, text) VALUES ('late-skill', 1, %s)", (text,))
        slow.execute("INSERT INTO changes (kind, key) VALUES ('skill', 'late-skill')")   # its number, not committed
        a.save("ARCHIVE", name="early-skill", description="Committed first with a later number", body=BODY)
        assert until(lambda: (b.config.workspace / "early-skill").is_dir()) is not None
        time.sleep(1.2)                                 # B has read past the open transaction's number
        slow.commit()
        assert until(lambda: (b.config.workspace / "late-skill" / "SKILL.md").is_file(), timeout=3) is not None
    finally:
        slow.close()
