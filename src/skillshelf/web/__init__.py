"""The web dashboard: a third thin adapter over ``Library`` (FastAPI, server-rendered Jinja2
pages, a vendored htmx, no build step, no CDN).

Nothing of the web stack is imported until the dashboard runs: ``skillshelf dashboard``
imports this package lazily, and without the ``web`` extra installed it fails with one line
naming ``pip install 'skillshelf[web]'``.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

# module name -> distribution name, for the error message
REQUIRED = {"fastapi": "fastapi", "jinja2": "jinja2", "markdown_it": "markdown-it-py", "pygments": "pygments",
            "nh3": "nh3", "multipart": "python-multipart", "uvicorn": "uvicorn"}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
DEFAULT_PORT = 7788


def missing() -> list[str]:
    """The distributions of the web extra that are not installed."""
    return [dist for mod, dist in REQUIRED.items() if importlib.util.find_spec(mod) is None]


def require() -> None:
    from ..errors import ConfigError

    gone = missing()
    if gone:
        raise ConfigError(f"the dashboard needs {', '.join(gone)}, which {'is' if len(gone) == 1 else 'are'} not "
                          "installed", fix="pip install 'skillshelf[web]'")


def create_app(lib: Any, *, token: str = "", host: str = "127.0.0.1", port: int = DEFAULT_PORT):
    """The ASGI app over an open ``Library`` (see :mod:`skillshelf.web.app`)."""
    require()
    from .app import build

    return build(lib, token=token, host=host, port=port)


def serve(lib: Any, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, open_browser: bool = False,
          token: str | None = None) -> None:
    """Run the dashboard until interrupted. A non-loopback ``host`` needs a token
    (``SKILLSHELF_HTTP_TOKEN``), as the HTTP MCP server does; with a token, the address
    printed carries it once (``?token=``), after which the browser holds it in a cookie."""
    from ..errors import ConfigError

    require()
    token = lib.config.http_token if token is None else token
    if host not in LOOPBACK and not token:
        raise ConfigError(f"binding {host} exposes the library beyond this machine",
                          fix="set SKILLSHELF_HTTP_TOKEN (the browser opens the printed address once; scripts "
                              "send 'Authorization: Bearer <token>'), or bind 127.0.0.1")
    if not 1 <= int(port) <= 65535:
        raise ConfigError(f"port {port} is out of range", fix=f"use a port from 1 to 65535 (default {DEFAULT_PORT})")
    sock = bind(host, port)     # before anything says it is listening
    import uvicorn

    app = create_app(lib, token=token, host=host, port=port)
    lib.start_indexing()        # the index catches up in the background; pages answer at once
    lib.catalog_warm()          # the table's snapshot and the curation lists, before the first page
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    print(f"skillshelf dashboard at {url}" + (" (open it with ?token=<SKILLSHELF_HTTP_TOKEN>)" if token else ""),
          file=sys.stderr)
    if open_browser:
        import webbrowser

        target = url + (f"?token={token}" if token else "")
        threading.Timer(0.5, webbrowser.open, args=(target,)).start()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def bind(host: str, port: int):
    """A listening socket on host:port, or ``ConfigError`` naming the fix."""
    import errno
    import socket

    from ..errors import ConfigError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host!r}: {getattr(exc, 'strerror', None) or exc}",
                          fix="pass --host with an address of this machine (default 127.0.0.1)") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is already in use",
                              fix="pass another --port, or stop the program that uses it") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise ConfigError(f"not allowed to listen on {host}:{port}",
                              fix="use a port above 1023, e.g. --port 7788") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}",
                          fix="pass --host with an address of this machine (default 127.0.0.1)") from None
    return sock
