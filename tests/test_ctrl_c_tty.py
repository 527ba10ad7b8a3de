"""Ctrl+C in a terminal: the console script runs in a pseudo-terminal made here (it needs no
terminal of its own), as the session leader with the pty as its controlling terminal, and
Ctrl+C is the byte ^C written to the pty, so the line discipline sends SIGINT to the whole
foreground process group, whatever the server is doing (blocked reading stdin, mid-sync).

The pty's master is read without select(): on some kernels a reader parked on the master
delays the reaping of a child that has already exited, which would look like a hang."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write_skill


def _no_pty() -> str | None:
    """Why no pseudo-terminal can be made here, or None."""
    if sys.platform == "win32":
        return "a POSIX pseudo-terminal"
    try:
        a, b = os.openpty()
    except OSError as exc:
        return f"no pseudo-terminal: {exc}"
    os.close(a)
    os.close(b)
    return None


NO_PTY = _no_pty()
pytestmark = pytest.mark.skipif(NO_PTY is not None, reason=NO_PTY or "")

SCRIPT = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
GOODBYE = "skillshelf: stopping (Ctrl+C again stops at once)"
# become a session leader with the pty as controlling terminal, then run the command
LEADER = ("import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
          "os.execvp(sys.argv[1], sys.argv[1:])")


class Terminal:
    """A command run in a new pseudo-terminal; ``text`` is all it wrote (stdout and stderr)."""

    def __init__(self, args: list[str], env: dict[str, str]):
        import fcntl

        master, slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-c", LEADER, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, close_fds=True)
        os.close(slave)
        fcntl.fcntl(master, fcntl.F_SETFL, os.O_NONBLOCK)
        self.master = master
        self.raw = b""

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace").replace("\r\n", "\n")

    def pump(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:         # nothing yet (EAGAIN), or the other side closed (EIO)
                return
            if not chunk:
                return
            self.raw += chunk

    def wait_for(self, marker: str, timeout: float = 60, required: bool = True) -> None:
        end = time.monotonic() + timeout
        while marker not in self.text:
            if self.proc.poll() is not None or time.monotonic() > end:
                self.pump()
                if not required and self.proc.poll() is None:
                    return
                raise AssertionError(f"never said {marker!r}; it said:\n{self.text[-3000:]}")
            self.pump()
            time.sleep(0.05)

    def ctrl_c(self) -> None:
        os.write(self.master, b"\x03")

    def ended_within(self, seconds: float) -> float | None:
        """Seconds until the process ended, or None if it still runs after ``seconds``."""
        t0 = time.monotonic()
        while self.proc.poll() is None:
            if time.monotonic() - t0 > seconds:
                return None
            self.pump()
            time.sleep(0.05)
        self.pump()
        return time.monotonic() - t0

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "SKILLSHELF_HOME": str(home), "SKILLSHELF_EMBEDDER": "none", "TERM": "dumb"}
    for k in ("SKILLSHELF_HTTP_TOKEN", "SKILLSHELF_STORE", "SKILLSHELF_TOKEN"):
        env.pop(k, None)
    return env


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stopped_by_ctrl_c(term: Terminal, within: float = 4.0) -> str:
    took = term.ended_within(within)
    assert took is not None, f"still running {within} s after Ctrl+C; it said:\n{term.text[-3000:]}"
    after = term.text
    assert term.proc.returncode == 130, after[-3000:]
    assert GOODBYE in after, after[-3000:]
    assert "Traceback" not in after and "terminate called" not in after, after[-3000:]
    return after


def test_ctrl_c_stops_the_stdio_server_in_a_terminal(tmp_path):
    """The stdio server read stdin in a worker thread that no cancellation ends: the first
    Ctrl+C was never enough (the event loop waited for a line that never came). From a
    terminal it also said nothing at all; now it says what it is and how to stop it."""
    term = Terminal([SCRIPT, "serve"], _env(tmp_path / "home"))
    try:
        term.wait_for("Ctrl+C stops it", timeout=20, required=False)
        time.sleep(0.5)                  # blocked reading stdin by now
        term.ctrl_c()
        said = _stopped_by_ctrl_c(term)
        assert "skillshelf MCP server on stdio: an MCP client starts this command; Ctrl+C stops it\n" in said
    finally:
        term.close()


def test_the_stdio_server_says_nothing_on_stderr_to_a_client(tmp_path):
    """Started by an MCP client (stdin a pipe), the terminal's line is not said."""
    proc = subprocess.run([SCRIPT, "serve"], input=b"", capture_output=True, env=_env(tmp_path / "home"),
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b"Ctrl+C" not in proc.stderr and proc.stdout == b""


def test_ctrl_c_stops_the_dashboard_in_the_middle_of_a_sync(tmp_path):
    """Ctrl+C while the dashboard's first sync runs: one line, exit 130 within seconds, no
    traceback. The process used to exit through the interpreter's finalisation with the sync
    and its threads still running: a traceback from the sync, an abort in the model's
    runtime, and no word that it was stopping."""
    root = tmp_path / "root"
    for i in range(1500):
        write_skill(root, f"s{i:05d}", description=f"skill number {i} about topic {i % 97}",
                    body="## Steps\n\n" + " ".join(f"w{i}x{j}" for j in range(200)) + "\n")
    term = Terminal([SCRIPT, "--root", str(root), "dashboard", "--port", str(_free_port())],
                    _env(tmp_path / "home"))
    try:
        term.wait_for("skillshelf dashboard at http://127.0.0.1:")
        time.sleep(0.5)                  # the first sync is under way
        term.ctrl_c()
        _stopped_by_ctrl_c(term)
    finally:
        term.close()


def test_a_second_ctrl_c_ends_the_process_at_once(tmp_path):
    """While the first Ctrl+C's stop is still under way (here it never ends), a second one
    ends the process at once with 130."""
    script = ("import sys, time\n"
              "from skillshelf.net import CtrlC\n"
              "with CtrlC(lambda: time.sleep(60)):\n"
              "    print('ready', flush=True)\n"
              "    time.sleep(60)\n")
    term = Terminal([sys.executable, "-c", script], {**os.environ, "TERM": "dumb"})
    try:
        term.wait_for("ready")
        term.ctrl_c()
        term.wait_for(GOODBYE, timeout=5)
        assert term.ended_within(0.5) is None       # the first one's stop runs
        term.ctrl_c()
        took = term.ended_within(2)
        assert took is not None and took < 1, term.text
        assert term.proc.returncode == 130
        assert term.text.count(GOODBYE) == 1 and "Traceback" not in term.text
    finally:
        term.close()


@pytest.mark.parametrize("args", [["dashboard", "--port", "99999"], ["serve", "--http", "--port", "99999"],
                                  ["dashboard", "--port", "0"], ["serve", "--http", "--port", "0"]])
def test_a_port_out_of_range_is_a_usage_error_for_both_servers(tmp_path, args):
    proc = subprocess.run([SCRIPT, *args], capture_output=True, text=True, env=_env(tmp_path / "home"),
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "out of range" in lines[0] and "65535" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_stopped_sync_says_how_to_finish_with_the_root_it_was_given(tmp_path):
    """A sync of a root given with --root, stopped: the command it suggests carries that root
    (and the home). `skillshelf sync` alone syncs the saved roots only, and took the skills of
    the one-off root out of the index."""
    root = tmp_path / "big root"
    for i in range(3000):
        write_skill(root, f"s{i:05d}", description=f"skill number {i} about topic {i % 97}",
                    body="## Steps\n\n" + " ".join(f"w{i}x{j}" for j in range(200)) + "\n")
    home = tmp_path / "home"
    env = _env(home) | {"COLUMNS": "400"}
    env.pop("SKILLSHELF_HOME")
    term = Terminal([SCRIPT, "--home", str(home), "--root", str(root), "sync"], env)
    try:
        term.wait_for("reading", timeout=120)
        term.ctrl_c()
        took = term.ended_within(30)
        assert took is not None and term.proc.returncode == 130, term.text[-3000:]
        said = " ".join(term.text.split())       # the line as printed, wrapped or not
        assert f"run `skillshelf --home {home} --root '{root}' sync` to finish" in said, said[-2000:]
        assert "with the same --root" in said and "Traceback" not in said
    finally:
        term.close()
