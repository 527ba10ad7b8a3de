"""What `skillshelf sync` prints: changes named, invalid files already reported only counted,
and a Ctrl-C that says what was kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import write_skill


def _env(home: Path) -> dict:
    return {**os.environ, "SKILLSHELF_EMBEDDER": "none", "SKILLSHELF_HOME": str(home)}


def run(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skillshelf.entry", *args], capture_output=True, text=True,
                          env=_env(home), timeout=300)


def test_invalid_files_are_named_once_then_counted(tmp_path):
    root = tmp_path / "root"
    write_skill(root, "good", description="works")
    bad = root / "bad" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    home = tmp_path / "home"
    first = run(home, "--root", str(root), "sync")
    assert first.returncode == 0, first.stderr
    assert f"invalid {bad}" in first.stdout
    second = run(home, "--root", str(root), "sync")
    assert f"invalid {bad}" not in second.stdout
    assert "1 invalid file unchanged since the last sync" in second.stdout
    bad.write_text("---\nname: bad\ndescription: fixed now\n---\nbody\n", encoding="utf-8")
    third = run(home, "--root", str(root), "sync")
    assert f"no longer invalid: {bad}" in third.stdout


def test_ctrl_c_during_sync_says_what_was_kept(tmp_path):
    root = tmp_path / "root"
    for i in range(2500):
        write_skill(root, f"s{i:05d}", description=f"skill number {i} about topic {i % 97}",
                    body="## Steps\n\n" + " ".join(f"w{i}x{j}" for j in range(300)) + "\n")
    home = tmp_path / "home"
    p = subprocess.Popen([sys.executable, "-m", "skillshelf.entry", "--root", str(root), "sync"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(home) | {"COLUMNS": "400"})
    seen = []
    for line in p.stderr:            # a plain line per phase (stderr is a pipe): interrupt while reading
        seen.append(line)
        if line.startswith("reading"):
            break
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    err = "".join(seen) + err
    assert p.returncode == 130, (out, err)
    # the command that finishes it names the root this one was given
    assert "stopped: kept" in err and f"run `skillshelf --root {root} sync` to finish" in err, err
    done = run(home, "--root", str(root), "sync")          # the next sync completes it
    assert done.returncode == 0, done.stderr
    assert run(home, "--root", str(root), "list", "--json").stdout.count('"id"') == 2500


def test_an_unchanged_sync_does_not_load_the_model(tmp_path):
    """The bundled model loads only when a text needs a vector: an unchanged sync (a new
    process on an up-to-date library) reads a few rows and is done."""
    from skillshelf import Library

    root = tmp_path / "root"
    write_skill(root, "alpha", description="Fix CORS errors in API routes")
    with Library(home=tmp_path / "home", roots=[root], auto_sync=False) as lib:
        assert lib.sync().embedded > 0                 # the first sync embeds (and loads the model)
    with Library(home=tmp_path / "home", roots=[root], auto_sync=False) as lib:
        rep = lib.sync()
        assert not rep.changed and rep.embedded == 0
        assert lib.model._embedder is None             # never loaded
        assert lib.search("cors errors", log=False).hits[0].name == "alpha"   # a query loads it
        assert lib.model._embedder is not None
