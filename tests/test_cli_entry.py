"""The real console script, run as a subprocess: exit codes, one-line errors, the serve path.

These defects live in the entry point (``skillshelf.entry:main`` and ``cli.main``), which
``CliRunner`` bypasses; every test here runs ``skillshelf`` itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_skill

SCRIPT = Path(sys.executable).with_name("skillshelf")
if not SCRIPT.exists():  # an environment whose scripts live elsewhere
    SCRIPT = Path(shutil.which("skillshelf") or SCRIPT)


def sk(*args: str, home: Path | None = None, input: str | None = None, env: dict | None = None,
       embedder: str = "none", timeout: float = 60) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    e["SKILLSHELF_EMBEDDER"] = embedder
    e["COLUMNS"] = "200"
    e.update(env or {})
    base = [str(SCRIPT)] + (["--home", str(home)] if home else [])
    return subprocess.run(base + list(args), capture_output=True, text=True, input=input, env=e, timeout=timeout)


def one_line(p: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.fixture
def lib_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    assert sk("init", home=home).returncode == 0
    return home


def test_failures_exit_non_zero(tmp_path, lib_home):
    bad = tmp_path / "Bad Skill"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Bad Skill\ndescription: x\n---\n")
    p = sk("validate", str(bad))
    assert p.returncode == 1 and "FAIL" in p.stdout
    p = sk("validate", str(bad), "--json")
    assert p.returncode == 1 and '"valid": false' in p.stdout
    # answering "n" is not a success: nothing happened
    p = sk("delete", "cors-fix-nextjs-api", home=lib_home, input="n\n")
    assert p.returncode == 1 and (lib_home / "skills" / "cors-fix-nextjs-api").is_dir()
    p = sk("prune-usage", "--before", "2020-01-01", home=lib_home, input="n\n")
    assert p.returncode == 1
    p = sk("list", "--bogus", home=lib_home)
    assert p.returncode == 2 and "No such option" in p.stderr


def test_a_saved_root_that_disappears_is_a_warning_and_a_failed_doctor(tmp_path):
    """(The whole behaviour is in test_cli.py; here the exit codes and stderr of the script.)"""
    home = tmp_path / "home"
    coll = tmp_path / "coll"
    write_skill(coll, "zebra-care", description="Care for zebras")
    assert sk("--root", str(tmp_path), "init", "--no-samples", home=home).returncode == 0
    assert sk("roots", "add", str(coll), home=home).returncode == 0
    shutil.rmtree(coll)
    p = sk("list", "--json", home=home)
    assert p.returncode == 0 and p.stdout.startswith("[")
    assert one_line(p).startswith(f"warning: skill root {coll} (saved in {home / 'config.toml'}) does not exist")
    p = sk("doctor", home=home)
    assert p.returncode == 1 and "Traceback" not in p.stderr and f"roots remove {coll}" in p.stdout


def test_an_unusable_or_new_home_is_said_on_stderr(tmp_path):
    p = sk("list", home=tmp_path / "typo-home")
    assert p.returncode == 0 and "created a new, empty one" in one_line(p) and str(tmp_path / "typo-home") in p.stderr
    p = sk("list", home=tmp_path / "typo-home")
    assert p.stderr == ""      # said once, when it was created
    p = sk("list", home=Path("/proc/skillshelf-x"))
    assert p.returncode == 1
    assert one_line(p).startswith("error: cannot create the library home /proc/skillshelf-x")


def test_a_home_whose_database_was_deleted_is_not_called_a_new_empty_library(tmp_path):
    """Deleting the database loses the usage history, not the library: the note says a new index of the files
    is made, not that there was no library (which sends a person looking for a typo in --home)."""
    home = tmp_path / "h"
    assert sk("init", home=home).returncode == 0
    for f in home.glob("skillshelf.db*"):
        f.unlink()
    p = sk("list", home=home)
    assert p.returncode == 0 and "cors-fix-nextjs-api" in p.stdout
    assert one_line(p) == (f"note: there was no database at {home / 'skillshelf.db'}; a new one indexes the files "
                           "(the usage history starts empty)")
    assert "new, empty" not in p.stderr


def test_sync_with_the_bundled_model_shows_its_phases(tmp_path):
    root = tmp_path / "coll"
    for i, topic in enumerate(("docker layers", "cors headers", "git rebase")):
        write_skill(root, f"s{i}", description=f"How to handle {topic}")
    tty = {"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"}
    p = sk("--root", str(root), "sync", home=tmp_path / "home", embedder="minilm", env=tty, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert "reading · lexical index" in p.stderr and "embedding" in p.stderr
    assert "added 3" in p.stdout and re.search(r"embedded [1-9]", p.stdout)
    assert p.stdout.rstrip().endswith("s)")


def test_serve_refuses_bad_ports_and_arguments_before_announcing_a_url(tmp_path):
    import socket

    home = tmp_path / "home"
    for port in ("99999", "70000", "0"):
        p = sk("serve", "--http", "--port", port, home=home, timeout=20)
        assert p.returncode == 2 and "http://" not in p.stderr
        assert one_line(p) == f"error: port {port} is out of range: use a port from 1 to 65535 (default 8765) — " \
                              "see `skillshelf serve --help`"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = sk("serve", "--http", "--port", str(port), home=home, timeout=20)
    assert p.returncode == 1 and "http://" not in p.stderr
    assert one_line(p) == f"error: port {port} on 127.0.0.1 is already in use — pass another --port, or stop " \
                          "the program that uses it"
    # one usage message, not argparse's and then click's
    p = sk("serve", "--bogus", home=home, timeout=20)
    assert p.returncode == 2 and one_line(p).startswith("error: No such option: --bogus")
    p = sk("serve", home=Path("/proc/skillshelf-x"), timeout=20)
    assert p.returncode == 1 and one_line(p).startswith("error: cannot create the library home")


def test_help_lists_only_real_commands():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "skillshelf.entry", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0
    assert "countarguments" not in r.stdout.lower()
    for cmd in ("search", "rebuild", "install", "export", "import", "dashboard"):
        assert cmd in r.stdout


def test_bytes_damaged_inside_a_stored_body_name_rebuild(lib_home):
    """A stored body whose bytes are no longer UTF-8 passes SQLite's quick_check and fails
    only when read: the read says the index is damaged and that `rebuild` fixes it."""
    import sqlite3

    db = sqlite3.connect(lib_home / "skillshelf.db")
    db.execute("UPDATE skills SET body = CAST(X'6F6BFFFE0A' AS TEXT) WHERE name = 'cors-fix-nextjs-api'")
    db.commit()
    db.close()
    p = sk("show", "cors-fix-nextjs-api", home=lib_home)
    line = one_line(p)
    assert p.returncode == 1 and "damaged" in line and "skillshelf rebuild" in line
    p = sk("rebuild", "--yes", home=lib_home)
    assert p.returncode == 0, p.stderr
    p = sk("show", "cors-fix-nextjs-api", home=lib_home)
    assert p.returncode == 0 and "CORS" in p.stdout


def test_mcp_message_for_a_damaged_value_names_rebuild():
    import sqlite3

    from skillshelf.mcp.server import _message

    msg = _message(sqlite3.OperationalError("Could not decode to UTF-8 column 'body' with text 'ok\ufffd'"))
    assert "skillshelf rebuild" in msg
    assert "skillshelf rebuild" in _message(sqlite3.DatabaseError("database disk image is malformed"))


def test_list_sorts_names_as_a_person_reads_them(tmp_path):
    """`list` orders by name whatever its case (the dashboard does): 'Zed' after 'beta', 'Alpha' first."""
    root = tmp_path / "r"
    for rel, name in (("zed", "Zed"), ("beta", "beta"), ("alpha", "Alpha"), ("alpha-two", "alpha-two")):
        write_skill(root, rel, name=name)
    home = tmp_path / "h"
    assert sk("roots", "add", str(root), home=home).returncode == 0
    r = sk("list", "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert [s["name"] for s in json.loads(r.stdout)] == ["Alpha", "alpha-two", "beta", "Zed"]
