"""What an idle server costs, and how soon it sees an edit.

Starts ``skillshelf serve`` (stdio MCP) on a library, lets it settle (the model and the search
state loaded, the start-up rescan done), then reads the process's CPU time (user + system, all
threads, from /proc) over ``--seconds`` of idleness: no request is sent meanwhile. Then it
writes a new skill (a made-up word in its description) into the library's workspace and asks
``search_skills`` every 50 ms until the skill is found: the edit's latency; then an edit of its
description, then its deletion, timed the same way.

    python bench/idle.py --home .bench-home          # a library already synced
    python bench/idle.py --root ../shared/corpus/skills   # builds a temporary one first (minutes)
    python bench/idle.py --home .bench-home --mode library   # Library.start_indexing in this process

``--mode library`` measures the same in this process (``Library.start_indexing``, what the
dashboard runs), reading this process's CPU time; searches go through ``search_nowait``.
Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Server:
    """``skillshelf serve`` over stdio, spoken to in plain JSON-RPC lines."""

    def __init__(self, home: Path, roots: list[Path]):
        exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
        args = [exe, "--home", str(home)] + [a for r in roots for a in ("--root", str(r))] + ["serve"]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
                                     text=True, bufsize=1)
        self.pid = self.proc.pid
        self._id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench-idle", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict) -> dict:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"the server exited (code {self.proc.wait()})")
            msg = json.loads(line)
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise SystemExit(f"{method}: {msg['error']}")
                return msg["result"]

    def search(self, query: str) -> str:
        res = self.call("tools/call", {"name": "search_skills", "arguments": {"query": query, "limit": 3}})
        return json.dumps(res)

    def cpu(self) -> float:
        return proc_cpu(self.pid)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class InProcess:
    """``Library.start_indexing`` in this process (what the dashboard runs)."""

    def __init__(self, home: Path, roots: list[Path]):
        from skillshelf import Library

        self.lib = Library(home=home, roots=roots or None)
        self.lib.start_indexing()

    def search(self, query: str) -> str:
        res = self.lib.search_nowait(query, limit=3)
        return json.dumps([h.name for h in res.hits])

    def cpu(self) -> float:
        return self_cpu()

    def close(self) -> int:
        t0 = time.perf_counter()
        self.lib.close()
        print(f"  close() returned after {time.perf_counter() - t0:.2f} s")
        return 0


def settle(target, *, quiet: float = 0.05, window: float = 3.0, limit: float = 30.0) -> float:
    """Wait until the target uses under ``quiet`` of a core over ``window`` seconds (start-up
    done), at most ``limit`` seconds (a server that never goes quiet); returns the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        c0 = target.cpu()
        time.sleep(window)
        if (target.cpu() - c0) / window < quiet:
            break
    return time.perf_counter() - t0


def seen(target, query: str, want: bool, name: str, timeout: float = 60.0) -> float:
    """Seconds from now until a search for ``query`` finds (``want``) or no longer finds ``name``."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if (name in target.search(query)) == want:
            return time.perf_counter() - t0
        time.sleep(0.05)
    return float("inf")


def write_skill(folder: Path, name: str, description: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / ".SKILL.md.tmp"
    tmp.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nSteps.\n", encoding="utf-8")
    os.replace(tmp, folder / "SKILL.md")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, help="a library home (already synced); default: a temporary one")
    ap.add_argument("--root", type=Path, action="append", default=[], help="a root for this run (repeatable)")
    ap.add_argument("--seconds", type=float, default=30.0, help="the idle window")
    ap.add_argument("--mode", choices=("serve", "library"), default="serve")
    a = ap.parse_args()
    tmp = None
    home = a.home
    roots = [r.resolve() for r in a.root]
    if home is None:
        if not roots:
            ap.error("give --home (a synced library) or --root (to build a temporary one)")
        tmp = Path(tempfile.mkdtemp(prefix="skillshelf-idle-"))
        home = tmp / "home"
        from skillshelf import Library

        t0 = time.perf_counter()
        with Library(home=home, roots=roots, auto_sync=False) as lib:
            lib.sync()
            print(f"built a library of {lib.count():,} skills in {time.perf_counter() - t0:.0f} s")
    home = home.resolve()
    workspace = home / "skills"
    probe = f"bench-idle-{uuid.uuid4().hex[:8]}"
    word = "zorblatt" + uuid.uuid4().hex[:6]
    try:
        t0 = time.perf_counter()
        target = Server(home, roots) if a.mode == "serve" else InProcess(home, roots)
        print(f"{a.mode}: started in {time.perf_counter() - t0:.2f} s")
        target.search("warm up the model")
        waited = settle(target)
        print(f"settled after {waited:.1f} s more")
        c0, w0 = target.cpu(), time.perf_counter()
        time.sleep(a.seconds)
        used, wall = target.cpu() - c0, time.perf_counter() - w0
        print(f"idle: {used:.2f} s CPU over {wall:.1f} s ({100 * used / wall:.1f} % of a core; "
              f"{used * 30 / wall:.2f} s per 30 s)")
        folder = workspace / probe
        write_skill(folder, probe, f"Polish the {word} lantern before dusk")
        print(f"new skill seen by search after {seen(target, word, True, probe):.2f} s")
        word2 = "quendril" + uuid.uuid4().hex[:6]
        write_skill(folder, probe, f"Polish the {word2} lantern before dusk")
        print(f"edited description seen after {seen(target, word2, True, probe):.2f} s")
        shutil.rmtree(folder)
        print(f"deleted skill gone after {seen(target, word2, False, probe):.2f} s")
        print(f"exit code on close: {target.close()}")
    finally:
        shutil.rmtree(workspace / probe, ignore_errors=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
