"""A sync's progress: on a terminal, no count that is not known yet ("0/?") and a rate and time
left once the library reports counts; anywhere else (a pipe, a log, CI), a plain line per
phase instead of nothing until the end."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

from conftest import write_skill
from test_cli_entry import sk

from skillshelf.cli import progress
from skillshelf.cli.common import _SafeConsole


def _screen() -> tuple[io.StringIO, _SafeConsole]:
    screen = io.StringIO()
    return screen, _SafeConsole(file=screen, force_terminal=True, force_interactive=True, width=160)


def _frames(screen: io.StringIO) -> list[str]:
    """The lines the live display drew (terminal control sequences taken out)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", screen.getvalue())          # colours
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", text)           # cursor moves, erased lines
    return [line for line in text.replace("\r", "\n").split("\n") if line.strip()]


def test_a_terminal_shows_no_unknown_count_and_the_rate_of_the_finishing_phase():
    """The model embeds beside the reading and reports its counts (cumulative, the total
    growing while files are read); after the last file, "embedding (finishing)" keeps that
    count and shows texts/s and the time left."""
    screen, console = _screen()
    with progress.SyncProgress(console, embedding=True) as prog:
        time.sleep(0.15)                       # finding the files: no count yet
        for i in range(6):
            prog.on_files(i, 5)
            prog.on_texts(i * 10, (i + 1) * 12)
            time.sleep(0.12)
        for done in range(60, 120, 6):         # the last files' texts, still with the model
            prog.on_texts(done, 120)
            time.sleep(0.12)
        prog.on_texts(120, 120)
    frames = _frames(screen)
    assert not [f for f in frames if "?" in f], [f for f in frames if "?" in f]
    assert any("finding skill files" in f for f in frames)
    assert any("reading · lexical index" in f and "files/s" in f for f in frames)
    assert any("embedding (beside reading)" in f for f in frames)
    # while files are read the total grows: no time left is promised there
    assert not [f for f in frames if "embedding (beside reading)" in f and "left" in f]
    finishing = [f for f in frames if "embedding (finishing)" in f]
    assert any("texts/s" in f and "left" in f and "/120" in f for f in finishing), finishing


def test_a_finishing_phase_without_counts_shows_its_time_and_no_count():
    screen, console = _screen()
    with progress.SyncProgress(console, embedding=True) as prog:
        for i in range(4):
            prog.on_files(i, 3)
        time.sleep(0.3)                        # the model finishes what it embedded beside the files
        for done in (32, 64, 96, 128):
            prog.on_texts(done, 128)
            time.sleep(0.15)
    frames = _frames(screen)
    assert not [f for f in frames if "?" in f]
    assert any("embedding (finishing)" in f and "0:00" in f and "/128" not in f for f in frames)
    assert any("embedding (finishing)" in f and "/128" in f and "texts/s" in f for f in frames)


def test_plain_lines_name_each_phase_with_its_rate_and_time_left(monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.05)
    out = io.StringIO()
    console = _SafeConsole(file=out, force_terminal=False, force_interactive=False, width=200)
    with progress.SyncProgress(console, embedding=True) as prog:
        for i in range(5):
            prog.on_files(i, 4)
            time.sleep(0.06)
        for done in (10, 20, 30, 40):
            prog.on_texts(done, 40)
            time.sleep(0.06)
    lines = out.getvalue().splitlines()
    assert lines[0] == "reading 4 files · lexical index (meanwhile the model embeds what no cache holds)"
    assert any(re.fullmatch(r"reading: \d/4 files · [\d,]+ files/s · ~0:0\d left", x) for x in lines), lines
    assert "embedding (finishing): the texts of the files read last that no cache holds" in lines
    assert any(re.fullmatch(r"embedding \(finishing\): \d\d/40 texts · [\d,]+ texts/s · ~0:0\d left", x)
               for x in lines), lines
    assert "\x1b" not in out.getvalue()


def test_plain_lines_say_when_finding_the_files_takes_long_and_nothing_when_it_is_quick(monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_FINDING_AFTER", 0.1)
    out = io.StringIO()
    console = _SafeConsole(file=out, force_terminal=False, force_interactive=False, width=200)
    with progress.SyncProgress(console, embedding=False) as prog:
        time.sleep(0.3)                        # a large library's first look
        prog.on_files(0, 2)
        prog.on_files(2, 2)
    assert out.getvalue().splitlines()[:2] == ["finding skill files", "reading 2 files · lexical index"]
    out = io.StringIO()
    console = _SafeConsole(file=out, force_terminal=False, force_interactive=False, width=200)
    with progress.SyncProgress(console, embedding=False):
        pass                                   # an unchanged library, found at once
    time.sleep(0.3)
    assert out.getvalue() == ""


def test_sync_into_a_pipe_says_its_phases(tmp_path: Path):
    """The console script with stderr to a pipe: a line per phase, no live display, and
    nothing at all for a sync that changes nothing."""
    root = tmp_path / "coll"
    for i in range(12):
        write_skill(root, f"skill-{i:02d}", description=f"Handles task number {i} well")
    home = tmp_path / "home"
    p = sk("--root", str(root), "sync", home=home, embedder="fake")
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if not x.startswith("note: there was no library")]
    assert lines[0] == "reading 12 files · lexical index (meanwhile the model embeds what no cache holds)", p.stderr
    assert "embedding (finishing): the texts of the files read last that no cache holds" in lines
    assert "\x1b" not in p.stderr and "Traceback" not in p.stderr
    assert p.stdout.startswith("added 12 ")
    p = sk("--root", str(root), "sync", home=home, embedder="fake")
    assert p.returncode == 0 and p.stderr == "" and p.stdout.startswith("added 0 ")


def _sync_on_a_terminal(tmp_path: Path, columns: int, skills: int,
                        command: tuple[str, ...] = ("sync",)) -> tuple[int, list[str]]:
    """The console script's ``sync`` with stderr on a pseudo-terminal ``columns`` wide (the live
    display), the bundled model embedding: its exit code and the lines the display drew."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    from test_cli_entry import SCRIPT

    root = tmp_path / "coll"
    words = ["cache", "queue", "token", "schema", "deploy", "index", "parser", "render", "upload", "retry"]
    for i in range(skills):
        w = " ".join(words[(i + k) % len(words)] for k in range(4))
        write_skill(root, f"skill-{i:03d}", description=f"How to {w} for case {i}",
                    body=f"# Steps\n\n{w} and then {w} again, in {i} steps.\n" * 20)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    env |= {"COLUMNS": str(columns), "TERM": "xterm", "SKILLSHELF_EMBEDDER": "minilm"}
    proc = subprocess.Popen([str(SCRIPT), "--home", str(tmp_path / "home"), "--root", str(root), *command],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:            # the other end closed
            break
        if not chunk:
            break
        raw += chunk
    os.close(master)
    proc.stdout.read()
    code = proc.wait(timeout=300)
    screen = io.StringIO(raw.decode("utf-8", "replace"))
    return code, _frames(screen)


def test_sync_on_an_80_column_terminal_shows_the_embedding_rate_and_time_left_and_whole_counts(tmp_path):
    """The real console script on an 80-column terminal, the bundled model: while the model
    embeds (beside the reading, then finishing) the line shows texts/s, and the time left once
    the count is final; every count is whole (not "16/5,3…") and no line is wider than the
    terminal (files/s never wraps onto a line of its own)."""
    code, frames = _sync_on_a_terminal(tmp_path, 80, 300)
    assert code == 0, frames
    assert "Traceback" not in "\n".join(frames)
    live = [f for f in frames if not f.startswith(("note:", "added "))]
    assert not [f for f in live if "…" in f], [f for f in live if "…" in f]
    assert not [f for f in live if len(f) > 80], [f for f in live if len(f) > 80]
    # a rate is never alone on a line
    assert not [f for f in live if re.fullmatch(r"\s*(files|texts)/s.*", f)], live
    embedding = [f for f in live if f.startswith("embedding")]
    assert embedding, frames
    texts = r"\d[\d,]*/600 +[\d,]+ texts/s"
    assert any(re.search(texts, f) for f in embedding), embedding
    finishing = [f for f in embedding if f.startswith("embedding (finishing)")]
    assert any(re.search(texts + r" +\d+:\d\d ~\d+:\d\d left", f) for f in finishing), finishing


def test_a_command_that_indexes_first_shows_that_on_a_terminal(tmp_path):
    """`doctor` (or a first search) in a home whose root was never synced indexes it before it
    answers: on a terminal that shows as a sync does, instead of a silent wait."""
    code, frames = _sync_on_a_terminal(tmp_path, 120, 300, command=("doctor",))
    assert code == 0, frames
    assert any("reading · lexical index" in f for f in frames), frames
