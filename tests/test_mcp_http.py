"""Streamable HTTP: a token-protected server is reachable by whatever Host a LAN client
uses; without a token only loopback names are; the bearer check follows RFC 7235; a port
that cannot be used is one clear error before anything says it is listening."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from skillshelf import Library
from skillshelf.errors import ConfigError
from skillshelf.mcp.server import serve

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = "application/json, text/event-stream"
TOKEN = "s3cret-token-for-tests"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    h = tmp_path_factory.mktemp("http") / "h"
    Library.init(h, embedder="none", auto_sync=False).sync()
    return h


def _start(home, *args, token=""):
    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    env = {**os.environ, "SKILLSHELF_HOME": str(home), "SKILLSHELF_EMBEDDER": "none"}
    env.pop("SKILLSHELF_HTTP_TOKEN", None)
    if token:
        env["SKILLSHELF_HTTP_TOKEN"] = token
    port = _free_port()
    proc = subprocess.Popen([exe, "serve", "--http", "--port", str(port), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=0.5)
            break
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode())
            time.sleep(0.1)
    return proc, port


def _post(port, host=None, auth=(), origin=None):
    headers = [("Accept", ACCEPT), ("Content-Type", "application/json")]
    if host:
        headers.append(("Host", host))
    if origin:
        headers.append(("Origin", origin))
    headers += [("Authorization", a) for a in auth]
    import json

    return httpx.post(f"http://127.0.0.1:{port}/mcp", content=json.dumps(INIT), headers=headers, timeout=10)


def test_with_a_token_any_host_is_accepted_and_the_token_is_checked(home):
    proc, port = _start(home, "--host", "0.0.0.0", token=TOKEN)
    try:
        lan = f"192.168.1.10:{port}"
        assert _post(port, host=lan, auth=[f"Bearer {TOKEN}"]).status_code == 200   # was 421
        assert _post(port, host=lan, auth=[f"bearer {TOKEN}"]).status_code == 200   # scheme is case-insensitive
        assert _post(port, host=lan, auth=[f"BEARER   {TOKEN}"]).status_code == 200
        assert _post(port, host=lan).status_code == 401
        assert _post(port, host=lan, auth=["Bearer wrong"]).status_code == 401
        assert _post(port, host=lan, auth=[f"Basic {TOKEN}"]).status_code == 401
        assert _post(port, host=lan, auth=[f"Bearer {TOKEN}", f"Bearer {TOKEN}"]).status_code == 400
    finally:
        proc.terminate()
        proc.wait(10)


def test_loopback_without_a_token_keeps_dns_rebinding_protection(home):
    proc, port = _start(home)
    try:
        assert _post(port).status_code == 200
        assert _post(port, host=f"localhost:{port}").status_code == 200
        assert _post(port, host=f"192.168.1.10:{port}").status_code == 421
        assert _post(port, host=f"evil.example:{port}").status_code == 421
        assert _post(port, origin="http://evil.example").status_code == 403
    finally:
        proc.terminate()
        proc.wait(10)


def _never():
    raise AssertionError("the library must not be opened when the port cannot be used")


@pytest.mark.parametrize("port", [0, 70000, 99999, -1])
def test_a_port_out_of_range_is_one_clear_error(port, capsys):
    with pytest.raises(ConfigError) as err:
        serve(_never, http=True, port=port)
    assert "out of range" in err.value.message and "65535" in err.value.fix
    assert "listening" not in capsys.readouterr().err and "http://" not in capsys.readouterr().err


def test_a_port_in_use_is_one_clear_error_before_anything_says_listening(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ConfigError) as err:
            serve(_never, http=True, port=port)
    assert "already in use" in err.value.message and "--port" in err.value.fix
    assert "http://" not in capsys.readouterr().err


@pytest.mark.parametrize("token", ["x", "s3cret", "fifteen-chars-x", " " * 20])
def test_a_short_token_is_refused_beyond_loopback(home, token):
    """A one-letter token guards nothing: refused before anything listens, naming how to make one."""
    exe = shutil.which("skillshelf") or str(Path(sys.executable).parent / "skillshelf")
    env = {**os.environ, "SKILLSHELF_HOME": str(home), "SKILLSHELF_EMBEDDER": "none", "SKILLSHELF_HTTP_TOKEN": token}
    p = subprocess.run([exe, "serve", "--http", "--host", "0.0.0.0", "--port", str(_free_port())], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "too short" in p.stderr and "at least 16" in p.stderr and "secrets.token_urlsafe(32)" in p.stderr
    assert "http://" not in p.stderr   # nothing said it was listening


def test_check_remote_token():
    from skillshelf.net import check_remote_token

    for host in ("127.0.0.1", "localhost", "::1"):   # loopback: no token needed, any token taken
        check_remote_token(None, host)
        check_remote_token("x", host)
    check_remote_token("a" * 16, "0.0.0.0")
    check_remote_token(TOKEN, "192.168.1.10")
    with pytest.raises(ConfigError) as err:
        check_remote_token("", "0.0.0.0")
    assert "beyond this machine" in err.value.message and "token_urlsafe" in err.value.fix
    with pytest.raises(ConfigError) as err:
        check_remote_token("a" * 15, "::")
    assert "15 characters" in err.value.message and "bind 127.0.0.1" in err.value.fix


def test_a_short_token_is_refused_before_the_library_opens_or_the_port_binds():
    with pytest.raises(ConfigError) as err:
        serve(_never, http=True, host="0.0.0.0", port=_free_port(), token="x")
    assert "too short" in err.value.message


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_stopping_the_http_server_is_quiet(home, sig, code):
    """Ctrl-C printed uvicorn's KeyboardInterrupt traceback and ended with the signal; now
    the library is closed and the process says one line on Ctrl-C, nothing on SIGTERM."""
    proc, port = _start(home)
    try:
        assert _post(port).status_code == 200
        t0 = time.monotonic()
        proc.send_signal(sig)
        assert proc.wait(20) == code
        assert time.monotonic() - t0 < 5
        err = proc.stderr.read().decode(errors="replace")
        assert "Traceback" not in err and "terminate called" not in err, err[-2000:]
        assert ("skillshelf: stopping (Ctrl+C again stops at once)" in err) == (sig == signal.SIGINT), err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
