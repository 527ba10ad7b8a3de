"""``skillshelf rebuild`` where a person runs it: the old database named for what it is (healthy:
``.old-``, damaged: ``.damaged-``), the usage history carried into the new one (or said to stay
behind when the old file cannot be read), progress on a terminal, and Ctrl-C undoing the rebuild
with one line and exit 130."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

SCRIPT = Path(sys.executable).with_name("skillshelf")
if not SCRIPT.exists():  # an environment whose scripts live elsewhere
    SCRIPT = Path(shutil.which("skillshelf") or SCRIPT)


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    e.update(SKILLSHELF_EMBEDDER="fake", COLUMNS="200")
    return e


def sk(home: Path, *args: str) -> subprocess.CompletedProcess:
    p = subprocess.run([str(SCRIPT), "--home", str(home), *args], capture_output=True, text=True, env=env(),
                       timeout=300)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def used_home(h: Path) -> Path:
    """A home with five agents' searches, three reported as worked."""
    with Library.init(h, embedder=FakeEmbedder()) as lib:
        lib.sync()
        for i in range(5):
            qid = lib.search(f"fix a cors error in my api {i}", client="agent").query_id
            if i < 3:
                lib.report_outcome("cors-fix-nextjs-api", True, query_id=qid, client="agent")
    return h


def stats(h: Path) -> dict:
    return json.loads(sk(h, "stats", "--json").stdout)


def test_a_healthy_database_is_moved_aside_as_old_and_its_usage_history_carried_over(tmp_path):
    h = used_home(tmp_path / "h")
    before = stats(h)
    assert (before["queries"], before["reports"]) == (5, 3)
    p = sk(h, "rebuild", "--yes")
    assert p.returncode == 0, p.stderr
    assert "damaged" not in p.stdout, p.stdout
    moved = re.search(r"moved the old database \(healthy\) to (\S+)", p.stdout)
    assert moved and re.search(r"skillshelf\.db\.old-\d{8}-\d{6}$", moved.group(1)), p.stdout
    assert Path(moved.group(1)).exists()
    assert "carried the usage history over: 5 queries, 3 reports, 3 learned from" in p.stdout, p.stdout
    after = stats(h)
    assert (after["queries"], after["reports"], after["report_rate"]) == (5, 3, before["report_rate"])
    # what learning kept came along too: forgetting one client's reports finds them
    assert sk(h, "usage", "forget", "--client", "agent").stdout.strip() == "forgot 3 learned reports"


def _corrupt(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    size = db.stat().st_size
    with open(db, "r+b") as f:
        for off in range(4096, size, 4096 * 2):   # every other page but the header
            f.seek(off)
            f.write(os.urandom(4096))


def test_a_damaged_database_is_named_damaged_and_its_history_said_to_stay_behind(tmp_path):
    h = used_home(tmp_path / "h")
    _corrupt(h / "skillshelf.db")
    p = sk(h, "rebuild", "--yes")
    assert p.returncode == 0, p.stderr
    moved = re.search(r"moved the damaged database to (\S+) \(SQLite's check: ([^)]+)\)", p.stdout)
    assert moved and ".damaged-" in moved.group(1) and Path(moved.group(1)).exists(), p.stdout
    assert "the usage history stays in the old file (the file is damaged)" in p.stdout, p.stdout
    assert "indexed 3 skills" in p.stdout
    assert stats(h)["queries"] == 0


def test_ctrl_c_during_a_rebuild_puts_the_old_database_back_and_says_so(tmp_path):
    h = used_home(tmp_path / "h")
    for i in range(2500):       # enough files that the signal comes while they are read
        write_skill(h / "skills", f"extra-{i}", description=f"an extra skill number {i} about widgets")
    con = sqlite3.connect(h / "skillshelf.db")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    digest = hashlib.sha256((h / "skillshelf.db").read_bytes()).hexdigest()
    master, slave = pty.openpty()      # a terminal: the progress is drawn, Ctrl-C is SIGINT
    p = subprocess.Popen([str(SCRIPT), "--home", str(h), "rebuild", "--yes"], stdin=slave, stdout=slave,
                         stderr=slave, env=env(), start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while b"files" not in seen and time.monotonic() < deadline:    # the progress of the files read
        try:
            seen += os.read(master, 65536)
        except OSError:         # the rebuild ended before it drew any progress
            break
    assert b"files" in seen, seen
    p.send_signal(signal.SIGINT)
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    assert p.wait(timeout=60) == 130
    text = seen.decode(errors="replace")
    assert "Traceback" not in text
    assert f"stopped: nothing changed; the old database is back at {h / 'skillshelf.db'}" in text, text[-2000:]
    assert hashlib.sha256((h / "skillshelf.db").read_bytes()).hexdigest() == digest
    assert not list(h.glob("skillshelf.db.*-2*"))        # nothing left aside
    assert stats(h)["queries"] == 5


def test_a_server_opening_the_database_while_rebuild_moves_it_does_not_take_the_old_files_log(tmp_path, monkeypatch):
    """A running server keeps recent changes in the database's log (``-wal``); rebuild moves the file, then its
    log. A process that opens the database between the two moves finds a log with no file: SQLite took it for
    the new file's and the moved file lost every change the log held (its tables gone). The log is written into
    the file first, so the file moves whole."""
    from skillshelf.onboarding import rebuild as rb
    from skillshelf.store import Store

    path = tmp_path / "db.sqlite"
    server = Store(path)        # a server's open connection: closing ours does not fold the log then
    for i in range(200):
        server.set_meta(f"k{i}", "v" * 100)
    assert os.path.getsize(str(path) + "-wal") > 0
    real = os.replace

    def replace(src, dst):
        real(src, dst)
        if str(src) == str(path):       # the file has moved, its log not yet: another process opens it now
            other = sqlite3.connect(path)
            other.execute("PRAGMA journal_mode=WAL")
            other.execute("SELECT count(*) FROM sqlite_master").fetchone()
            other.close()

    monkeypatch.setattr(rb.os, "replace", replace)
    moved = rb.move_aside(path, "old")
    server.close()
    old = sqlite3.connect(moved)
    assert old.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert old.execute("SELECT count(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == 200
