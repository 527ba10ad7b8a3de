"""Data safety: hostile skill text, special files, concurrent writers, failed writes.

Each test here reproduces a way the library once lost data, wrote outside its home or
stopped working over one file."""

from __future__ import annotations

import datetime as _dt
import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.errors import NotFoundError, ValidationError, WriteError
from skillshelf.skill import parse
from skillshelf.text import headings

BODY = "## When to Use\n\nwhen\n\n## Solution\n\nold solution\n"


def make(tmp_path: Path, **kw) -> Library:
    kw.setdefault("embedder", "none")
    kw.setdefault("write_policy", "open")
    return Library(home=tmp_path / "home", auto_sync=False, **kw)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(folder.rglob("*"))}


# --- names from files are never paths ---------------------------------------------------------

@pytest.mark.parametrize("bad", ["'../../victim'", "'..'", "'../victim'", "'/tmp/x'"])
def test_delete_and_lifecycle_stay_inside_home(tmp_path, bad):
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "data.txt").write_text("precious")
    lib = make(tmp_path)
    home = lib.config.home
    lib.save("ARCHIVE", name="normal-skill", description="d", body="## S\n\nb\n")   # history/ exists
    write_skill(lib.config.workspace, "foo", name=bad, description="hostile name")
    lib.sync()
    before = snapshot(tmp_path / "victim")
    outside_before = sorted(p.name for p in tmp_path.iterdir())
    rec = lib.get("workspace:foo")
    assert any(f["rule"].startswith("name.") for f in rec.findings)   # reported invalid
    for call in (lambda: lib.deprecate("workspace:foo", "old"), lambda: lib.rollback("workspace:foo", 1),
                 lambda: lib.extend_ttl("workspace:foo", 5)):
        with pytest.raises(Exception):
            call()
    lib.delete("workspace:foo")
    assert snapshot(tmp_path / "victim") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == outside_before
    assert home.is_dir() and (home / "skillshelf.db").is_file()
    assert not (tmp_path / "history").exists() and not (tmp_path / "locks").exists()


def test_delete_never_removes_the_workspace_itself(tmp_path):
    lib = make(tmp_path)
    (lib.config.workspace / "SKILL.md").write_text("---\nname: skills\ndescription: root skill\n---\nbody\n")
    write_skill(lib.config.workspace, "other", description="another")
    lib.sync()
    with pytest.raises(ValidationError):
        lib.delete("workspace:.")
    assert (lib.config.workspace / "other" / "SKILL.md").is_file()


def test_delete_cli_subprocess_refuses_to_leave_home(tmp_path):
    home = tmp_path / "home"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.txt").write_text("precious")
    write_skill(home / "skills", "foo", name="'../../victim'", description="hostile")
    (home / "history" / "other").mkdir(parents=True)
    env = {**os.environ, "SKILLSHELF_HOME": str(home), "SKILLSHELF_EMBEDDER": "none"}
    run = subprocess.run([sys.executable, "-m", "skillshelf.entry", "delete", "workspace:foo", "--yes"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert (victim / "data.txt").read_text() == "precious"
    assert (home / "skillshelf.db").is_file()


# --- one bad file never stops the rest -------------------------------------------------------------

BAD_FILES = {
    "bad-date": "---\nname: bad-date\ndescription: d\nmetadata: {created: 2024-13-45}\n---\nbody\n",
    "recursive": "---\nname: recursive\ndescription: d\nx: &a [*a]\n---\nbody\n",
    "big-version": "---\nname: big-version\ndescription: d\nmetadata:\n  version: '99999999999999999999'\n---\nb\n",
    "big-ttl": "---\nname: big-ttl\ndescription: d\nmetadata:\n  ttl-days: '99999999999'\n  created: 2024-01-01\n---\nb\n",
    "bomb": "---\nname: bomb\ndescription: d\na: &a [x,x,x,x,x,x,x,x,x]\n"
            + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}" if i > 1 else "*a"] * 9) + "]\n"
                      for i in range(1, 10)) + "---\nb\n",
    "unhashable": "---\nname: unhashable\ndescription: d\n? [a, b]\n: c\n---\nb\n",
}


def test_malformed_files_are_reported_and_the_rest_is_indexed(tmp_path):
    root = tmp_path / "root"
    for name, text in BAD_FILES.items():
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(text)
    write_skill(root, "good", description="a good skill about docker builds")
    lib = make(tmp_path, roots=[root])
    t0 = time.monotonic()
    rep = lib.sync()
    assert time.monotonic() - t0 < 20   # the alias bomb is refused, not expanded
    names = {r.name for r in lib.list()}
    assert "good" in names
    invalid = {Path(i.path).parent.name: i.rule for i in rep.invalid}
    assert invalid["recursive"] == "yaml.too-complex" and invalid["bomb"] == "yaml.aliases"
    assert "unhashable" in invalid
    # lenient where a value is merely odd: indexed, with a warning, and no huge numbers anywhere
    assert {"bad-date", "big-version", "big-ttl"} <= names
    assert lib.get("big-version").version == 1 and lib.get("big-ttl").expires_on is None
    # and saving an unrelated skill still works
    res = lib.save("ARCHIVE", name="fresh-skill", description="new", body="## Solution\n\nx\n")
    assert res.status == "saved"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_are_refused_without_blocking(tmp_path):
    root = tmp_path / "root"
    (root / "fifo").mkdir(parents=True)
    os.mkfifo(root / "fifo" / "SKILL.md")
    (root / "zero").mkdir()
    os.symlink("/dev/zero", root / "zero" / "SKILL.md")
    (root / "huge").mkdir()
    with open(root / "huge" / "SKILL.md", "wb") as f:
        f.write(b"---\nname: huge\ndescription: d\n---\n")
        f.truncate(50_000_000)   # sparse: 50 MB on paper
    write_skill(root, "good", description="fine")
    lib = make(tmp_path, roots=[root])
    rep = lib.sync()
    rules = {Path(i.path).parent.name: i.rule for i in rep.invalid}
    assert rules == {"fifo": "file.not-regular", "zero": "file.not-regular", "huge": "file.too-large"}
    assert [r.name for r in lib.list()] == ["good"]
    # validate reads the same way
    out = Library.validate_paths([root / "zero" / "SKILL.md"])
    assert out[0][1][0].rule == "file.not-regular"


def test_heading_parsing_is_linear():
    line = "#" + " " * 20000 + "x" + " " * 20000
    t0 = time.perf_counter()
    headings("\n".join([line] * 5))
    assert time.perf_counter() - t0 < 1.0
    assert headings("## Title ##\n#nope\n####### seven\n##\tTab\n") == [(2, "Title"), (2, "Tab")]


def test_a_long_line_under_propose_does_not_freeze(tmp_path):
    lib = make(tmp_path, write_policy="propose")
    body = "## Solution\n\nsteps\n\n" + "#" + " " * 3000 + "x\n"     # (headings alone are refused as empty)
    t0 = time.perf_counter()
    res = lib.save("ARCHIVE", name="spaces", description="d", body=body)
    assert res.status == "draft" and time.perf_counter() - t0 < 5


# --- what a write may contain ---------------------------------------------------------------------

def test_lessons_cannot_grow_a_skill_past_the_limit(tmp_path):
    lib = make(tmp_path, max_body_bytes=20_000)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    with pytest.raises(ValidationError, match="lesson is"):
        lib.save("FIX", target_skill_name="guide", lesson="x" * 3000)
    for i in range(30):
        try:
            lib.save("FIX", target_skill_name="guide", lesson=f"lesson {i} " + "y" * 1900)
        except ValidationError as exc:
            assert "would grow" in str(exc)
            break
    else:
        pytest.fail("lessons grew the body past the limit")
    assert len(Path(lib.get("guide").path).read_bytes()) < 25_000


@pytest.mark.parametrize("field,value", [("description", "red \x1b[31m text"), ("description", "nul\x00"),
                                         ("body", "## S\n\n\x1b]0;title\x07"), ("display_name", "a\x9bb"),
                                         ("lesson", "bell\x07")])
def test_control_characters_are_refused_on_write(tmp_path, field, value):
    lib = make(tmp_path)
    args = dict(name="ctl", description="d", body="## S\n\nb\n")
    args[field] = value
    with pytest.raises(ValidationError, match="control character"):
        lib.save("ARCHIVE", **args)
    assert not (lib.config.workspace / "ctl").exists()


def test_writes_keep_the_file_mode(tmp_path):
    old = os.umask(0o022)
    try:
        lib = make(tmp_path)
        lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
        path = Path(lib.get("guide").path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o644      # the umask's mode, not mkstemp's 0600
        path.chmod(0o640)
        lib.save("FIX", target_skill_name="guide", lesson="keep my mode")
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_a_fix_that_changes_nothing_is_refused(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    with pytest.raises(ValidationError, match="needs something to change"):
        lib.save("FIX", target_skill_name="guide", author="agent")      # the MCP adapter always sends one
    with pytest.raises(ValidationError, match="leaves guide as it is"):
        lib.save("FIX", target_skill_name="guide", body=BODY, author="agent")
    assert lib.get("guide").version == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_fix_into_a_read_only_folder_is_one_clear_error(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    folder = lib.config.workspace / "guide"
    before = (folder / "SKILL.md").read_bytes()
    folder.chmod(0o555)
    try:
        with pytest.raises(WriteError, match="cannot write .*writable"):
            lib.save("FIX", target_skill_name="guide", lesson="never lands")
    finally:
        folder.chmod(0o755)
    assert (folder / "SKILL.md").read_bytes() == before


def test_extreme_ttl_is_refused(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    with pytest.raises(ValidationError, match="days must be"):
        lib.extend_ttl("guide", 999_999_999)


# --- the library's own folders are never skills ---------------------------------------------------

def test_a_home_inside_a_root_does_not_serve_drafts(tmp_path):
    root = tmp_path / "root"
    write_skill(root, "real", description="a real skill")
    lib = Library(home=root / ".skillshelf", roots=[root], embedder="none", write_policy="propose",
                  auto_sync=False)
    lib.sync()
    lib.save("ARCHIVE", name="unapproved", description="a draft", body="## S\n\nb\n")
    lib.save("ARCHIVE", name="later", description="another draft", body="## S\n\nb\n")
    rep = lib.sync()
    names = sorted(r.name for r in lib.list())
    assert names == ["real"], names
    assert any("own home" in n for n in rep.notes)


def test_interrupted_writes_leave_no_temp_files_after_sync(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    stale = lib.config.workspace / "guide" / ".tmp-abc123"
    stale.write_text("")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = lib.config.workspace / "guide" / ".tmp-inflight"
    fresh.write_text("")
    rep = make(tmp_path).sync()      # the next process to open the library cleans up
    assert not stale.exists() and fresh.exists()
    assert any("interrupted write" in n for n in rep.notes)


# --- read-only roots: the owner's decisions are an overlay, never a fork -------------------------------

def test_deprecate_and_ttl_on_a_read_only_skill_use_the_overlay(tmp_path):
    root = tmp_path / "root"
    src = write_skill(root, "cors-fix", description="Fix CORS errors in API routes",
                      extra="category: web\ncolor: blue\n")
    before = src.read_bytes()
    lib = make(tmp_path, roots=[root])
    lib.sync()
    assert [h.name for h in lib.search("fix CORS errors", log=False).hits][:1] == ["cors-fix"]
    res = lib.extend_ttl("cors-fix", 10)
    want = (_dt.date.today() + _dt.timedelta(days=10)).isoformat()
    assert res["expires_on"] == want and lib.get("cors-fix").expires_on == want
    res = lib.extend_ttl("cors-fix", 30)
    want = (_dt.date.today() + _dt.timedelta(days=40)).isoformat()
    assert res["expires_on"] == want and lib.get("cors-fix").expires_on == want
    lib.deprecate("cors-fix", "we use a proxy now")
    assert src.read_bytes() == before                           # the other collection's file is untouched
    assert not (lib.config.workspace / "cors-fix").exists()     # and not forked
    assert "cors-fix" not in [h.name for h in lib.search("fix CORS errors", log=False).hits]
    assert lib.get("cors-fix").active is False
    lib.sync()                                                   # survives a re-index of the file
    src.write_text(src.read_text() + "\nmore\n")
    lib.sync()
    assert lib.get("cors-fix").active is False and lib.get("cors-fix").expires_on == want


def test_a_fork_keeps_every_key_and_rolls_back(tmp_path):
    root = tmp_path / "root"
    write_skill(root, "cors-fix", description="Fix CORS", extra="category: web\ncolor: blue\n")
    lib = make(tmp_path, roots=[root])
    lib.sync()
    lib.save("FIX", target_skill_name="cors-fix", lesson="use the proxy", by="person")
    text = (lib.config.workspace / "cors-fix" / "SKILL.md").read_text()
    assert "category: web" in text and "color: blue" in text
    lib.save("FIX", target_skill_name="cors-fix", lesson="second", by="person")
    res = lib.rollback("cors-fix", 2)
    assert res.version == 4


def test_extend_ttl_prints_what_it_stores(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY, ttl_days=30)
    exp0 = _dt.date.fromisoformat(lib.get("guide").expires_on)
    res = lib.extend_ttl("guide", 10)
    want = (exp0 + _dt.timedelta(days=10)).isoformat()
    assert res["expires_on"] == want and want in res["message"] and lib.get("guide").expires_on == want
    res = lib.extend_ttl("guide", 30)
    want = (exp0 + _dt.timedelta(days=40)).isoformat()
    assert res["expires_on"] == want and lib.get("guide").expires_on == want


# --- concurrent writers -------------------------------------------------------------------------------

WORKER = textwrap.dedent("""
    import json, sys
    from skillshelf import Library
    from skillshelf.errors import SkillshelfError
    home, who, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    lib = Library(home=home, embedder="none", write_policy="open", auto_sync=False)
    acks, fails = [], []
    for i in range(n):
        try:
            if mode == "fix":
                ref = ("workspace:shared" if i % 2 else "shared")
                r = lib.save("FIX", target_skill_name=ref, lesson=f"marker-{who}-{i}")
                acks.append([r.name, r.version, f"marker-{who}-{i}"])
            elif mode == "archive":
                r = lib.save("ARCHIVE", name=f"new-{who}-{i}", description="d", body="## S\\n\\nb\\n")
                acks.append([r.name, r.version, ""])
            elif mode == "merge":
                r = lib.save("MERGE", name=f"merged-{who}-{i}", source_skill_names=["shared", f"src-{who}-{i}"],
                             description="merged")
                acks.append([r.name, r.version, ""])
        except SkillshelfError as exc:
            fails.append([i, str(exc)])
    print(json.dumps({"acks": acks, "fails": fails}))
""")


def _workers(tmp_path: Path, home: Path, specs: list[tuple[str, int, str]]) -> list[dict]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [subprocess.Popen([sys.executable, str(script), str(home), who, str(n), mode],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for who, n, mode in specs]
    out = []
    for p in procs:
        so, se = p.communicate(timeout=240)
        assert p.returncode == 0, se
        out.append(json.loads(so.strip().splitlines()[-1]))
    return out


def _all_text(home: Path, name: str) -> str:
    texts = [(home / "skills" / name / "SKILL.md").read_text()]
    texts += [p.read_text() for p in (home / "history" / name).glob("v*.md")]
    return "\n".join(texts)


def test_concurrent_fixes_by_name_and_id_lose_nothing(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="shared", description="shared skill", body=BODY)
    home = lib.config.home
    results = _workers(tmp_path, home, [(f"w{k}", 8, "fix") for k in range(4)])
    acks = [a for r in results for a in r["acks"]]
    assert acks, results
    text = _all_text(home, "shared")
    lost = [m for _, _, m in acks if m not in text]
    assert lost == []
    versions = [v for _, v, _ in acks]
    assert len(versions) == len(set(versions)), "a version number was acknowledged twice"
    kept = sorted(int(p.stem[1:]) for p in (home / "history" / "shared").glob("v*.md"))
    assert kept == list(range(1, max(kept) + 1))
    for r in results:   # nothing failed, or failures were honest refusals (not a lost write)
        assert all("failed" not in f[1].lower() for f in r["fails"]), r["fails"]


def test_concurrent_archives_are_never_reported_failed(tmp_path):
    lib = make(tmp_path)
    lib.sync()
    home = lib.config.home
    results = _workers(tmp_path, home, [(f"w{k}", 6, "archive") for k in range(3)])
    fails = [f for r in results for f in r["fails"]]
    assert fails == []
    lib2 = make(tmp_path)
    lib2.sync()
    assert len([r for r in lib2.list() if r.name.startswith("new-")]) == 18


def test_merge_locks_its_sources_against_a_concurrent_fix(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="shared", description="shared skill", body=BODY)
    for k in range(2):
        for i in range(4):
            lib.save("ARCHIVE", name=f"src-m{k}-{i}", description="a source", body="## S\n\nsrc\n")
    home = lib.config.home
    results = _workers(tmp_path, home, [("f0", 8, "fix"), ("m0", 4, "merge"), ("m1", 4, "merge")])
    fix_acks = results[0]["acks"]
    text = _all_text(home, "shared")
    assert [m for _, _, m in fix_acks if m not in text] == []
    kept = sorted(int(p.stem[1:]) for p in (home / "history" / "shared").glob("v*.md"))
    assert kept == list(range(1, max(kept) + 1))
    assert len(set(kept)) == len(kept)


LOCK_WORKER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from skillshelf.files import locked
    home, n = Path(sys.argv[1]), int(sys.argv[2])
    counter = home / "counter"
    for i in range(n):
        # a read, a pause and a write: without mutual exclusion increments are lost
        with locked(home, "counter", f"once-{os.getpid()}-{i}"):
            value = int(counter.read_text())
            os.sched_yield()
            counter.write_text(str(value + 1))
""")


def test_locks_exclude_each_other_and_leave_no_lock_files(tmp_path):
    # released lock files are removed; a waiter that got the lock of a removed file must
    # notice and lock the new one, or two processes would hold "the" lock at once
    home = tmp_path / "home"
    home.mkdir()
    (home / "counter").write_text("0")
    procs = [subprocess.Popen([sys.executable, "-c", LOCK_WORKER, str(home), "150"], stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    for p in procs:
        _, se = p.communicate(timeout=240)
        assert p.returncode == 0, se
    assert int((home / "counter").read_text()) == 4 * 150
    assert sorted((home / "locks").iterdir()) == []


def test_saves_of_names_that_do_not_exist_leave_no_lock_files(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="shared", description="shared skill", body=BODY)
    for i in range(60):
        with pytest.raises(NotFoundError):
            lib.save("FIX", target_skill_name=f"no-such-skill-{i}", lesson="x")
    lib.save("FIX", target_skill_name="shared", lesson="kept")
    assert sorted((lib.config.home / "locks").iterdir()) == []


def test_parse_never_raises_on_yaml_oddities():
    for text in ["---\n!!python/object:os.system x\n---\n", "---\n: :\n---\n", "---\n[1, 2\n---\n",
                 "---\nname: !!int abc\ndescription: d\n---\n", "---\n" + "a: " * 500 + "\n---\n"]:
        assert parse(text).skill is None


# --- the database is an index: damage is named, deletion is survived ----------------------------------

def _corrupt(db: Path) -> None:
    size = db.stat().st_size
    with open(db, "r+b") as f:
        for off in range(4096, size, 4096 * 2):   # overwrite every other page but the header
            f.seek(off)
            f.write(os.urandom(4096))


def test_a_damaged_database_is_named_and_rebuilt_from_the_files(tmp_path):
    from skillshelf.errors import StoreError

    lib = make(tmp_path)
    for i in range(40):
        write_skill(lib.config.workspace, f"skill-{i}", description=f"skill number {i} about docker",
                    body="## S\n\n" + "text " * 400)
    lib.sync()
    lib.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    lib.close()
    db = lib.config.db_path
    _corrupt(db)
    with pytest.raises(StoreError, match="damaged.*skillshelf rebuild"):
        lib2 = make(tmp_path)
        lib2.sync()
        lib2.list()
        lib2.search("docker", log=False)
    lib3, moved = Library.rebuild(tmp_path / "home", embedder="none", auto_sync=False)
    assert moved is not None and moved.exists()
    assert lib3.count() == 40 and lib3.store.quick_check() == "ok"


def test_a_database_deleted_under_a_running_library_is_recreated(tmp_path):
    lib = make(tmp_path)
    write_skill(lib.config.workspace, "one", description="first skill about docker")
    lib.sync()
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(lib.config.db_path) + suffix)
        if p.exists():
            p.unlink()
    lib.sync()
    assert [r.name for r in lib.list()] == ["one"]
    assert lib.config.db_path.exists()


def test_reads_keep_working_when_the_index_cannot_be_written(tmp_path, monkeypatch, capsys):
    import sqlite3

    from skillshelf.search import sync as indexmod

    lib = Library(home=tmp_path / "home", embedder="none", auto_sync=True)
    write_skill(lib.config.workspace, "one", description="first skill")
    lib.sync()

    def full(*a, **k):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(indexmod, "sync", full)
    lib.indexer.expire()
    assert lib.get("one").name == "one"
    assert [r.name for r in lib.list()] == ["one"]
    assert "serving it as it is" in capsys.readouterr().err


def test_cli_names_a_damaged_database_and_rebuilds_it(tmp_path):
    home = tmp_path / "home"
    for i in range(40):
        write_skill(home / "skills", f"skill-{i}", description=f"skill number {i} about docker",
                    body="## S\n\n" + "text " * 400)
    env = {**os.environ, "SKILLSHELF_HOME": str(home), "SKILLSHELF_EMBEDDER": "none"}

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "skillshelf.entry", *args], env=env, capture_output=True,
                              text=True, timeout=120)

    assert cli("sync").returncode == 0
    import sqlite3

    con = sqlite3.connect(home / "skillshelf.db")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    _corrupt(home / "skillshelf.db")
    for args in (("doctor",), ("list",), ("search", "docker")):
        r = cli(*args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "skillshelf rebuild" in (r.stderr + r.stdout), (args, r.stderr)
    r = cli("rebuild", "--yes")
    assert r.returncode == 0 and "indexed 40 skills" in r.stdout, r.stderr
    r = cli("doctor", "--json")
    checks = {c["name"]: c["status"] for c in json.loads(r.stdout)["checks"]}
    assert checks["database"] == "ok"


def test_a_link_to_a_folder_above_the_root_is_not_walked(tmp_path):
    lib = make(tmp_path)
    write_skill(lib.config.workspace, "real", description="a real skill")
    os.symlink("/", lib.config.workspace / "rootlink")
    os.symlink(tmp_path, lib.config.workspace / "uplink")
    rep = lib.sync()
    assert [r.name for r in lib.list()] == ["real"]
    assert sum("links to a folder above the root" in n for n in rep.notes) == 2


def test_bidi_overrides_are_refused_on_write(tmp_path):
    lib = make(tmp_path)
    with pytest.raises(ValidationError, match="U\\+202E"):
        lib.save("ARCHIVE", name="bidi", description="safe \u202eexe.txt", body="## S\n\nb\n")
