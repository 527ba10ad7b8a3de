"""Shared pieces of the robustness benches: the ``skillshelf`` command and its environment,
bounded subprocess runs (timeout, peak memory, traceback detection), folder snapshots to
catch writes outside the home, MCP stdio servers whose pid is known (so a hung one can be
killed), and a raw JSON-RPC client for the Streamable HTTP transport.

Nothing here imports ``skillshelf``: the benches drive it from the outside, so they can
also be pointed at another source tree (``--src``, which sets ``PYTHONPATH`` for every
process they start).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# Cap on what a child process may map (address space): a YAML bomb or /dev/zero read then
# fails inside the child instead of taking the machine down. Generous: the model and
# onnxruntime map well over 1 GB of address space without touching it.
CHILD_AS_LIMIT = 6 * 1024 ** 3


def skillshelf_exe() -> str:
    """The console script of the interpreter running the bench (the project's venv)."""
    here = Path(sys.executable).parent / "skillshelf"
    return str(here) if here.exists() else (shutil.which("skillshelf") or "skillshelf")


def child_env(home: Path | None, *, embedder: str = "none", policy: str | None = "open",
              src: str | Path | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every process a bench starts: its own home, no inherited roots."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    if home is not None:
        env["SKILLSHELF_HOME"] = str(home)
    env["SKILLSHELF_EMBEDDER"] = embedder
    if policy:
        env["SKILLSHELF_WRITE_POLICY"] = policy
    env["PYTHONUNBUFFERED"] = "1"
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    src = src or os.environ.get("SKILLSHELF_BENCH_SRC")
    if src:
        env["PYTHONPATH"] = str(Path(src).resolve()) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def has_traceback(*texts: str | bytes | None) -> bool:
    for t in texts:
        if t is None:
            continue
        if isinstance(t, bytes):
            t = t.decode("utf-8", "replace")
        if "Traceback (most recent call last)" in t:
            return True
    return False


@dataclass
class Run:
    """One finished (or killed) subprocess."""

    argv: list[str]
    rc: int | None
    out: str
    err: str
    seconds: float
    timed_out: bool
    maxrss_mb: float

    @property
    def traceback(self) -> bool:
        return has_traceback(self.out, self.err)

    @property
    def text(self) -> str:
        return self.out + self.err


def _read_capped(f, cap: int) -> str:
    f.seek(0)
    data = f.read(cap + 1)
    s = data[:cap].decode("utf-8", "replace")
    return s + ("\n[... output cut ...]" if len(data) > cap else "")


def _limit_child() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS_LIMIT, CHILD_AS_LIMIT))


def run(argv: list[str], env: dict[str, str], *, timeout: float = 5.0, stdin: bytes | None = None,
        cwd: str | Path | None = None, cap: int = 1 << 20, limit_memory: bool = True) -> Run:
    """Run ``argv`` in its own session with a hard timeout (the whole process group is
    killed), output captured through files (no pipe can fill up) and cut at ``cap`` bytes,
    and the child's own peak RSS read from ``wait4``."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=fo, stderr=fe,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             start_new_session=True, preexec_fn=_limit_child if limit_memory else None)
        if stdin is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                p.stdin.write(stdin)
            with contextlib.suppress(OSError):
                p.stdin.close()
        timed_out = False
        status, usage = None, None
        while True:
            pid, st, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                status, usage = st, ru
                break
            if time.perf_counter() - t0 > timeout:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                _, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        secs = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        # anything left in the group (a server's helper) goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        return Run(list(argv), None if timed_out else p.returncode, _read_capped(fo, cap), _read_capped(fe, cap),
                   secs, timed_out, usage.ru_maxrss / 1024 if usage else 0.0)


def cli(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 5.0, **kw: Any) -> Run:
    """``skillshelf --home HOME ARGS`` with ``run``'s guarantees."""
    return run([skillshelf_exe(), "--home", str(home), *args], env or child_env(home), timeout=timeout, **kw)


# --- snapshots: writes outside the home ----------------------------------------------------

def snapshot(base: Path, *, exclude: list[Path] = (), hash_limit: int = 1 << 20) -> dict[str, tuple]:
    """Every entry under ``base`` (symlinks not followed) as (kind, size, mtime_ns, digest),
    excluding the ``exclude`` subtrees. Used before and after a case to find writes outside."""
    base = Path(base)
    skip = {str(Path(p)) for p in exclude}
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        if dirpath in skip:
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skip]
        rel_dir = os.path.relpath(dirpath, base)
        out[rel_dir] = ("dir",)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            rel = os.path.relpath(p, base)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                digest = ""
                if st.st_size <= hash_limit:
                    with contextlib.suppress(OSError), open(p, "rb") as f:
                        digest = hashlib.sha256(f.read()).hexdigest()[:16]
                out[rel] = ("file", st.st_size, st.st_mtime_ns, digest, stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("special", stat.S_IFMT(st.st_mode))
    return out


def diff_snapshots(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    changes = []
    for k in sorted(set(before) | set(after)):
        if k not in after:
            changes.append(f"removed {k}")
        elif k not in before:
            changes.append(f"created {k}")
        elif before[k] != after[k]:
            changes.append(f"changed {k}")
    return changes


def tree_digest(paths: list[Path]) -> dict[str, str]:
    """sha256 of every file under each path (missing paths map to 'missing')."""
    out: dict[str, str] = {}
    for base in paths:
        base = Path(base)
        if not base.exists():
            out[str(base)] = "missing"
            continue
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink())
        for p in files:
            try:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                out[str(p)] = "unreadable"
    return out


# --- skills on disk -------------------------------------------------------------------------

def skill_text(name: str, description: str, body: str, *, version: int = 1, extra_meta: str = "",
               raw_name: str | None = None) -> str:
    n = raw_name if raw_name is not None else name
    return (f"---\nname: {n}\ndescription: {json.dumps(description)}\nmetadata:\n  version: '{version}'\n"
            f"  created: '2025-01-01'\n{extra_meta}---\n\n{body.strip()}\n")


def write_skill(workspace: Path, name: str, description: str, body: str, **kw: Any) -> Path:
    d = Path(workspace) / name
    d.mkdir(parents=True, exist_ok=True)
    p = d / "SKILL.md"
    p.write_text(skill_text(name, description, body, **kw), encoding="utf-8")
    return p


DEFAULT_BODY = ("## When to Use\n\nWhen the {topic} step fails in CI.\n\n## Solution\n\n1. Check the {topic} logs.\n"
                "2. Retry with a clean cache.\n\n## Verification\n\nThe pipeline is green.\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- MCP over stdio, with a known pid ------------------------------------------------------

@dataclass
class ToolCall:
    ok: bool                 # a result came back and it is not an error
    is_error: bool           # a result came back flagged isError
    text: str
    structured: dict | None
    seconds: float
    timed_out: bool = False
    exception: str = ""      # the client raised (protocol error, server gone)


class StdioServer:
    """``skillshelf serve`` (stdio) driven by the official SDK client. The server is
    started through ``sh -c 'echo $$ > pidfile; exec ...'`` so its pid is known and a hung
    server can be killed with SIGKILL. Its stderr goes to a file (tracebacks are looked for
    there)."""

    def __init__(self, home: Path, env: dict[str, str], workdir: Path, tag: str = "srv",
                 args: list[str] | None = None, mem_limit_mb: int | None = None):
        self.home, self.env, self.tag = home, env, tag
        self.mem_limit_mb = mem_limit_mb
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.pidfile = self.workdir / f"{tag}.pid"
        self.errpath = self.workdir / f"{tag}.stderr"
        self.args = args or ["serve"]
        self._stack: contextlib.AsyncExitStack | None = None
        self.session = None
        self._errf = None

    @property
    def pid(self) -> int | None:
        try:
            return int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None

    async def start(self, timeout: float = 60.0) -> "StdioServer":
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._errf = open(self.errpath, "a", encoding="utf-8")
        ulimit = f"ulimit -v {self.mem_limit_mb * 1024} 2>/dev/null; " if self.mem_limit_mb else ""
        params = StdioServerParameters(
            command="/bin/sh", args=["-c", f'{ulimit}echo $$ > "{self.pidfile}"; exec "$0" "$@"', skillshelf_exe(),
                                     "--home", str(self.home), *self.args], env=self.env)
        self._stack = contextlib.AsyncExitStack()
        await self._stack.__aenter__()
        r, w = await self._stack.enter_async_context(stdio_client(params, errlog=self._errf))
        self.session = await self._stack.enter_async_context(ClientSession(r, w))
        with anyio.fail_after(timeout):
            await self.session.initialize()
        return self

    async def call(self, tool: str, args: dict[str, Any], timeout: float = 30.0) -> ToolCall:
        import anyio

        t0 = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                res = await self.session.call_tool(tool, args)
        except TimeoutError:
            return ToolCall(False, False, "", None, time.perf_counter() - t0, timed_out=True)
        except Exception as exc:  # the client's own error: protocol error, server gone
            return ToolCall(False, False, "", None, time.perf_counter() - t0, exception=f"{type(exc).__name__}: {exc}")
        text = "\n".join(getattr(c, "text", "") or "" for c in (res.content or []))
        is_err = bool(getattr(res, "is_error", False))
        return ToolCall(not is_err, is_err, text, getattr(res, "structured_content", None), time.perf_counter() - t0)

    async def read_resource(self, uri: str, timeout: float = 5.0) -> ToolCall:
        import anyio

        t0 = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                res = await self.session.read_resource(uri)
        except TimeoutError:
            return ToolCall(False, False, "", None, time.perf_counter() - t0, timed_out=True)
        except Exception as exc:
            return ToolCall(False, True, f"{type(exc).__name__}: {exc}", None, time.perf_counter() - t0)
        parts = []
        for c in getattr(res, "contents", []) or []:
            parts.append(getattr(c, "text", None) or f"<blob {len(getattr(c, 'blob', '') or '')} b64 chars>")
        return ToolCall(True, False, "\n".join(parts)[:200_000], None, time.perf_counter() - t0)

    def kill(self) -> None:
        pid = self.pid
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def peak_rss_mb(self) -> float:
        pid = self.pid
        if not pid:
            return 0.0
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stderr_text(self, start: int = 0) -> str:
        try:
            with open(self.errpath, "rb") as f:
                f.seek(start)
                return f.read(2_000_000).decode("utf-8", "replace")
        except OSError:
            return ""

    def stderr_size(self) -> int:
        try:
            return self.errpath.stat().st_size
        except OSError:
            return 0

    async def stop(self, *, kill: bool = False) -> None:
        if kill:
            self.kill()
        if self._stack is not None:
            stack, self._stack = self._stack, None
            try:
                await stack.aclose()
            except Exception:
                self.kill()
        if self._errf is not None:
            self._errf.close()
            self._errf = None


# --- MCP over Streamable HTTP, raw JSON-RPC -----------------------------------------------------

PROTOCOL = "2025-11-25"


class HttpServer:
    """``skillshelf serve --http`` on a free loopback port, spoken to with raw JSON-RPC."""

    def __init__(self, home: Path, env: dict[str, str], workdir: Path, extra_args: list[str] | None = None):
        self.home, self.env = home, env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.errpath = Path(workdir) / f"http-{self.port}.stderr"
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen | None = None
        self.session_id: str | None = None

    def start(self, timeout: float = 60.0) -> "HttpServer":
        import httpx

        self._errf = open(self.errpath, "ab")
        self.proc = subprocess.Popen([skillshelf_exe(), "--home", str(self.home), "serve", "--http", "--port",
                                      str(self.port), *self.extra_args], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=self._errf, stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_limit_child)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"HTTP server exited: {self.stderr_text()[-2000:]}")
            try:
                httpx.get(self.url, timeout=0.5)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        self.initialize()
        return self

    def headers(self, session: bool = True) -> dict[str, str]:
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "MCP-Protocol-Version": PROTOCOL}
        if session and self.session_id:
            h["Mcp-Session-Id"] = self.session_id
        return h

    def initialize(self) -> None:
        import httpx

        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                           "clientInfo": {"name": "robustness", "version": "1"}}}
        r = httpx.post(self.url, json=init, headers=self.headers(False), timeout=30)
        r.raise_for_status()
        self.session_id = r.headers.get("mcp-session-id")
        httpx.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                   headers=self.headers(), timeout=30)

    def post(self, body: bytes | dict | list, *, headers: dict[str, str] | None = None, timeout: float = 5.0,
             session: bool = True) -> tuple[int | None, list[dict], str, float, bool]:
        """(status, JSON-RPC messages, raw text, seconds, timed out). SSE answers are unpacked."""
        import httpx

        h = self.headers(session)
        if headers:
            for k, v in headers.items():
                if v is None:
                    h.pop(k, None)
                else:
                    h[k] = v
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        t0 = time.perf_counter()
        try:
            r = httpx.post(self.url, content=data, headers=h, timeout=timeout)
        except httpx.TimeoutException:
            return None, [], "", time.perf_counter() - t0, True
        except httpx.HTTPError as exc:
            return None, [], f"{type(exc).__name__}: {exc}", time.perf_counter() - t0, False
        text = r.text[:1_000_000]
        return r.status_code, parse_messages(text), text, time.perf_counter() - t0, False

    def call_tool(self, name: str, args: Any, *, rid: int = 1, timeout: float = 5.0):
        return self.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                          "params": {"name": name, "arguments": args}}, timeout=timeout)

    def alive(self) -> bool:
        st, msgs, _, _, to = self.post({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}, timeout=10)
        return st == 200 and any("result" in m for m in msgs)

    def stderr_text(self) -> str:
        try:
            return self.errpath.read_bytes()[-2_000_000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stderr_size(self) -> int:
        try:
            return self.errpath.stat().st_size
        except OSError:
            return 0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        with contextlib.suppress(Exception):
            self._errf.close()


def parse_messages(text: str) -> list[dict]:
    """JSON-RPC messages from a JSON body or an SSE stream."""
    text = text.strip()
    if not text:
        return []
    if text[0] in "{[":
        try:
            obj = json.loads(text)
            return obj if isinstance(obj, list) else [obj]
        except json.JSONDecodeError:
            return []
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line[5:].strip()))
    return out


def fmt_table(rows: list[list[Any]], header: list[str]) -> str:
    cols = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in cols[1:]:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


@dataclass
class Tally:
    """Per-category counts for the summary table."""

    cases: int = 0
    tracebacks: int = 0
    hangs: int = 0
    lost: int = 0
    outside: int = 0
    wrong: int = 0
    examples: list[str] = field(default_factory=list)


def import_skillshelf(src: str | Path | None = None):
    """``skillshelf`` imported in this process, from ``src`` (a ``src/`` folder) when given."""
    src = src or os.environ.get("SKILLSHELF_BENCH_SRC")
    if src:
        sys.path.insert(0, str(Path(src).resolve()))
    import skillshelf  # noqa: F401
    from skillshelf import skill

    return skill
