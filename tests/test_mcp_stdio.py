"""The stdio server's end: when the client closes stdin the process stops its background work
and exits 0, whatever was still running (a request, the indexing, onnxruntime in a thread).
It aborted (exit -6, "terminate called without an active exception") when a native thread
was still running as the interpreter finalised.

The client here writes JSON-RPC lines itself, as an MCP client does over stdio, so that it
can send what the SDK's client would refuse to encode (a lone surrogate) and close stdin
with requests still under way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from conftest import write_skill
from mcp import Client

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server

EXE = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stdio-test", "version": "1"}}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    h = tmp_path_factory.mktemp("stdio") / "h"
    Library.init(h, embedder="none", auto_sync=False).sync()
    for i in range(4):
        write_skill(h / "skills", f"docker-tip-{i}", description=f"Docker build tip {i}: cache layers")
    Library(h, auto_sync=False).sync()   # embedded with the bundled model
    return h


class StdioClient:
    """A server process spoken to in newline-delimited JSON-RPC."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.messages: list[dict] = []
        self._got = threading.Condition()
        self._err: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._err.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._got:
                self.messages.append(json.loads(line))
                self._got.notify_all()

    def send(self, method: str, params: dict | None = None, id: int | None = None) -> None:
        msg: dict = {"jsonrpc": "2.0", "method": method}
        if id is not None:
            msg["id"] = id
        if params is not None:
            msg["params"] = params
        # json.dumps escapes a lone surrogate as \ud800, as a JavaScript client would send it
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self, id: int, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        with self._got:
            while True:
                for m in self.messages:
                    if m.get("id") == id:
                        return m
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to request {id}; stderr: {self.stderr()[-2000:]}"
                self._got.wait(left)

    def initialize(self) -> None:
        self.send("initialize", INIT, id=0)
        assert "result" in self.answer(0)
        self.send("notifications/initialized")

    def close_stdin(self, timeout: float = 20) -> tuple[int, float]:
        """Close stdin as a client ends a session: (exit code, seconds until the exit)."""
        t0 = time.monotonic()
        self.proc.stdin.close()
        code = self.proc.wait(timeout)
        return code, time.monotonic() - t0

    def stderr(self) -> str:
        time.sleep(0.1)   # the reader thread drains what the process wrote before it exited
        return b"".join(self._err).decode(errors="replace")


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "SKILLSHELF_HOME": str(home), "SKILLSHELF_WRITE_POLICY": "open"}


def _check_clean_exit(code: int, seconds: float, stderr: str) -> None:
    assert "terminate called" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    assert code == 0, (code, stderr[-3000:])
    # MCP clients wait ~2 s after closing stdin before they kill the server
    assert seconds < 4.0, seconds


SURROGATE_SAVE = {"name": "save_skill", "arguments": {
    "action": "ARCHIVE", "description": "Clean up \ud800 temp files after a build", "body": "## Solution\n\nrm\n"}}
SEARCH = {"name": "search_skills", "arguments": {"query": "docker build cache layers"}}


@pytest.mark.parametrize("wait_for_answers", [False, True, False, True])
def test_closing_stdin_exits_0_with_requests_under_way(home, wait_for_answers):
    c = StdioClient([EXE, "serve"], _env(home))
    c.initialize()
    save = dict(SURROGATE_SAVE, arguments=dict(SURROGATE_SAVE["arguments"], name=f"clean-up-{time.time_ns()}"))
    c.send("tools/call", save, id=1)
    c.send("tools/call", SEARCH, id=2)
    c.send("resources/read", {"uri": "skill://workspace/cors-fix-nextjs-api/%00"}, id=3)
    if wait_for_answers:
        saved, found, read = c.answer(1), c.answer(2), c.answer(3)
        # the SDK cannot parse the line: it dropped it, and the client waited for ever
        assert saved["error"]["code"] == -32602, saved
        assert "params.arguments.description holds a lone UTF-16 surrogate" in saved["error"]["message"]
        assert found["result"]["isError"] is False and found["result"]["structuredContent"]["hits"]
        assert read["error"]["code"] == -32602, read          # a bad URI, not code 0 and a traceback
    _check_clean_exit(*c.close_stdin(), c.stderr())


def test_closing_stdin_exits_0_while_the_first_index_embeds(tmp_path):
    """A new library over a root: the background indexing is reading and embedding when the
    client goes away."""
    root = tmp_path / "root"
    for i in range(300):
        write_skill(root, f"c{i % 10}/skill-{i}", description=f"How to do task number {i} with docker and git",
                    body="## Steps\n\n" + " ".join(f"step{j} of task {i}" for j in range(80)) + "\n")
    c = StdioClient([EXE, "--root", str(root), "serve"], _env(tmp_path / "home"))
    c.initialize()
    deadline = time.monotonic() + 60
    n = 10
    while time.monotonic() < deadline:   # until the index is being built (or is done)
        c.send("tools/call", SEARCH, id=n)
        degraded = c.answer(n)["result"]["structuredContent"]["degraded"] or ""
        if "computing their vectors" in degraded or "embedding" in degraded or not degraded:
            break
        n += 1
        time.sleep(0.1)
    c.send("tools/call", dict(SURROGATE_SAVE, arguments=dict(SURROGATE_SAVE["arguments"], name="clean-up")), id=1)
    _check_clean_exit(*c.close_stdin(), c.stderr())


# A server whose process has a thread inside onnxruntime when stdin closes: a request's
# embedding the client abandoned. Finalising the interpreter under it aborted the process.
NATIVE_THREAD_SERVER = """
import sys, threading
from skillshelf.embeddings import create
from skillshelf.library import Library
from skillshelf.mcp.server import serve

model = create("minilm")
model.embed_batch(["load the model"])
started = threading.Event()

def embedding():
    while True:
        model.embed_batch(["a long request the client will not wait for " * 20])
        started.set()

threading.Thread(target=embedding, daemon=True).start()
started.wait(60)
serve(lambda: Library(sys.argv[1], embedder=model))
"""


def test_closing_stdin_exits_0_while_a_native_thread_runs(home, tmp_path):
    script = tmp_path / "server.py"
    script.write_text(NATIVE_THREAD_SERVER)
    for _ in range(2):
        c = StdioClient([sys.executable, str(script), str(home)], _env(home))
        c.initialize()
        c.send("tools/call", SEARCH, id=1)
        assert c.answer(1)["result"]["isError"] is False
        _check_clean_exit(*c.close_stdin(), c.stderr())


def test_close_refuses_new_calls_and_closes_the_library(tmp_path):
    root = tmp_path / "root"
    for i in range(20):
        write_skill(root, f"skill-{i}", description=f"skill number {i} about tusks")
    opened: list[Library] = []
    closed = threading.Event()

    def factory() -> Library:
        lib = Library(tmp_path / "home", roots=[root], embedder=FakeEmbedder())
        real = lib.close

        def close(timeout: float | None = None) -> bool:
            ended = real(timeout)
            closed.set()
            return ended

        lib.close = close
        opened.append(lib)
        return lib

    server = build_server(factory)

    async def main():
        async with Client(server) as c:
            r = await c.call_tool("search_skills", {"query": "tusks"})
            assert not r.is_error
            t0 = time.monotonic()
            assert await anyio.to_thread.run_sync(server.handle.close)
            assert time.monotonic() - t0 < 5
            assert closed.is_set() and len(opened) == 1
            r = await c.call_tool("search_skills", {"query": "tusks"})
            assert r.is_error and "shutting down" in r.content[0].text

    anyio.run(main)
