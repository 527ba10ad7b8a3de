"""A library whose database cannot be written (a read-only mount, a full disk) is still
read: a new process opens it read-only, searches and lists work, writes fail with a clear
error, and `doctor` says why."""

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.store import Store

SCRIPT = Path(sys.executable).with_name("skillshelf")


def test_a_database_that_cannot_be_written_is_opened_read_only(tmp_path, monkeypatch):
    root = tmp_path / "r"
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.close()

    def no_writes(self):   # what migrate() meets on a full disk or a read-only file system
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(Store, "migrate", no_writes)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    assert lib.store.read_only == "unable to open database file"
    res = lib.search("docker builds")
    assert res.hits[0].name == "docker-build" and "usage not recorded" in res.degraded
    assert "report_outcome" not in res.degraded          # it could not be recorded either
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        lib.store.db.execute("INSERT INTO meta VALUES ('x', 'y')")
    db = next(c for c in lib.doctor().checks if c.name == "database")
    assert db.status == "warn" and "read-only" in db.detail


def test_a_rebuild_that_cannot_build_the_new_index_puts_the_old_one_back(tmp_path, monkeypatch):
    """`rebuild` on a full disk: the old database was moved aside, the new one cannot be
    filled. The old file goes back, so the library that could be read still can."""
    root = tmp_path / "r"
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.close()

    def full(self, *a, **k):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Library, "sync", full)
    with pytest.raises(sqlite3.OperationalError):
        Library.rebuild(tmp_path / "h", roots=[root], embedder=FakeEmbedder())
    monkeypatch.undo()
    assert not list((tmp_path / "h").glob("skillshelf.db.damaged-*"))
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    assert lib.count() == 1 and lib.search("docker builds", log=False).hits[0].name == "docker-build"


def test_a_database_with_an_older_schema_is_not_opened_read_only(tmp_path, monkeypatch):
    s = Store(tmp_path / "db.sqlite")
    s.db.execute("DELETE FROM schema_migrations WHERE name = (SELECT MAX(name) FROM schema_migrations)")
    s.close()

    def no_writes(self):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(Store, "migrate", no_writes)
    from skillshelf.errors import StoreError

    with pytest.raises(StoreError, match="made by an older skillshelf and cannot be updated here"):
        Store(tmp_path / "db.sqlite")


ENV = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")} | {"SKILLSHELF_EMBEDDER": "none"}


def _init(home: Path) -> None:
    assert subprocess.run([str(SCRIPT), "--home", str(home), "init"], env=ENV, capture_output=True).returncode == 0


@contextlib.contextmanager
def read_only_view(src: Path, ro: Path):
    """``src`` seen through a read-only bind mount at ``ro`` (root can write anywhere else)."""
    ro.mkdir()
    mount = shutil.which("mount")
    if not mount or subprocess.run([mount, "--bind", str(src), str(ro)], capture_output=True).returncode:
        pytest.skip("needs a read-only bind mount (mount --bind, as root)")
    try:
        if subprocess.run([mount, "-o", "remount,ro,bind", str(ro)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only")
        yield ro
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)


@pytest.fixture
def read_only_home(tmp_path):
    _init(tmp_path / "src" / "h")
    with read_only_view(tmp_path / "src", tmp_path / "ro") as ro:
        yield ro / "h", ENV


def test_a_new_process_reads_a_library_on_a_read_only_file_system(read_only_home):
    home, env = read_only_home

    def sk(*args):
        return subprocess.run([str(SCRIPT), "--home", str(home), *args], env=env, capture_output=True, text=True,
                              timeout=120)

    p = sk("search", "fix a CORS error")
    assert p.returncode == 0 and "cors-fix-nextjs-api" in p.stdout and "Traceback" not in p.stderr, p.stderr
    p = sk("list")
    assert p.returncode == 0 and "docker-multi-stage-build" in p.stdout, p.stderr
    p = sk("doctor")
    assert "read-only" in p.stdout + p.stderr and "Traceback" not in p.stderr
    p = sk("report-outcome", "cors-fix-nextjs-api", "--worked")
    assert p.returncode == 1 and "Traceback" not in p.stderr and "read-only" in p.stderr, p.stderr
    # file writes (locks, skill files) refused by the file system: one line each, nothing changed
    for args in (("deprecate", "cors-fix-nextjs-api", "--reason", "old"), ("extend-ttl", "cors-fix-nextjs-api", "10"),
                 ("delete", "docker-multi-stage-build", "--yes"), ("rebuild", "--yes")):
        p = sk(*args)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and "Traceback" not in p.stderr and len(lines) == 1, (args, p.stderr)
        assert "cannot be written" in lines[0] and "read-only" in lines[0], lines[0]
    assert sk("search", "fix a CORS error").returncode == 0


def test_a_write_ahead_log_that_cannot_be_read_is_said(tmp_path):
    """A library left with recent changes in its write-ahead log (a process killed before
    the checkpoint) and no shared-memory file, seen read-only: SQLite cannot attach the log,
    and doctor says that those changes are not read."""
    src = tmp_path / "src"
    _init(src / "h")
    db = src / "h" / "skillshelf.db"
    code = ("import os, sqlite3; c = sqlite3.connect(%r); c.execute('PRAGMA wal_autocheckpoint=0');"
            " c.execute(\"INSERT INTO meta VALUES ('probe', 'x')\"); c.commit(); os._exit(0)" % str(db))
    subprocess.run([sys.executable, "-c", code], check=True)
    Path(str(db) + "-shm").unlink(missing_ok=True)
    assert Path(str(db) + "-wal").stat().st_size > 0
    with read_only_view(src, tmp_path / "ro") as ro:
        p = subprocess.run([str(SCRIPT), "--home", str(ro / "h"), "doctor"], env=ENV, capture_output=True, text=True,
                           timeout=120)
        assert "recent changes in skillshelf.db-wal are not read" in p.stdout, p.stdout + p.stderr


def test_doctor_notices_a_library_it_cannot_write_even_when_it_opens_normally(tmp_path):
    """Another process holds the library open (its shared-memory file exists), and this one
    sees it through a read-only mount: SQLite opens it normally, and only a write would fail.
    doctor takes the write lock for a moment and says so."""
    src = tmp_path / "src"
    _init(src / "h")
    db = src / "h" / "skillshelf.db"
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]);"
                               " c.execute('SELECT COUNT(*) FROM skills').fetchone(); print('ready', flush=True);"
                               " time.sleep(120)", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        assert Path(str(db) + "-shm").exists()
        with read_only_view(src, tmp_path / "ro") as ro:
            p = subprocess.run([str(SCRIPT), "--home", str(ro / "h"), "doctor"], env=ENV, capture_output=True,
                               text=True, timeout=120)
            assert "warn database" in p.stdout and "read-only here" in p.stdout, p.stdout + p.stderr
    finally:
        holder.kill()
        holder.wait()
