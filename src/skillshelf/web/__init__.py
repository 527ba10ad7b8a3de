"""The web dashboard: a third thin adapter over ``Library`` (FastAPI, server-rendered Jinja2
pages, a vendored htmx, no build step, no CDN).

Nothing of the web stack is imported until the dashboard runs: ``skillshelf dashboard``
imports this package lazily, and where one of its packages is missing (a broken install) it
fails with one line naming the fix.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
from typing import Any, NoReturn

# module name -> distribution name, for the error message
REQUIRED = {"fastapi": "fastapi", "jinja2": "jinja2", "markdown_it": "markdown-it-py", "pygments": "pygments",
            "nh3": "nh3", "multipart": "python-multipart", "uvicorn": "uvicorn"}
DEFAULT_PORT = 7788
CLOSE_WAIT = 1.0        # seconds a sync under way gets to stop once the dashboard ends


def missing() -> list[str]:
    """The distributions of the web extra that are not installed."""
    return [dist for mod, dist in REQUIRED.items() if importlib.util.find_spec(mod) is None]


def require() -> None:
    from ..errors import ConfigError

    gone = missing()
    if gone:
        raise ConfigError(f"the dashboard needs {', '.join(gone)}, which {'is' if len(gone) == 1 else 'are'} not "
                          "installed", fix="reinstall skillshelf (`pip install skillshelf`) to get its dashboard packages")


def create_app(lib: Any, *, token: str = "", host: str = "127.0.0.1", port: int = DEFAULT_PORT):
    """The ASGI app over an open ``Library`` (see :mod:`skillshelf.web.app`)."""
    require()
    from .app import build

    return build(lib, token=token, host=host, port=port)


def serve(lib: Any, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, open_browser: bool = False,
          token: str | None = None) -> None:
    """Run the dashboard until interrupted. A non-loopback ``host`` needs a token
    (``SKILLSHELF_HTTP_TOKEN``) of at least ``net.MIN_TOKEN_CHARS`` characters, as the HTTP
    MCP server does; with a token, the address printed carries it once (``?token=``), after
    which the browser holds it in a cookie. On a team store each person signs in with a token
    of their own (``/login``) and ``SKILLSHELF_HTTP_TOKEN`` plays no part.

    Ctrl+C (``net.CtrlC``) says one line and stops the server (open requests get
    ``net.SHUTDOWN_GRACE`` seconds), then ``_end`` ends the process with 130; a second Ctrl+C
    ends it at once."""
    from ..net import INTERRUPTED, CtrlC, asgi_server, bind_socket, check_remote_token

    require()
    team = bool(lib.team)
    token = "" if team else (lib.config.http_token if token is None else token)
    if not team:
        check_remote_token(token, host)      # beyond loopback: a token, and one too long to guess

    sock = bind_socket(host, port, default_port=DEFAULT_PORT)     # before anything says it is listening
    running: list[Any] = []

    def stop() -> None:
        if not running:         # not serving yet (the index is starting): end here
            _end(lib, INTERRUPTED)
        running[0].should_exit = True

    with CtrlC(stop) as ctrl_c:
        app = create_app(lib, token=token, host=host, port=port)
        lib.start_indexing()        # the index catches up in the background; pages answer at once
        lib.catalog_warm()          # the table's snapshot and the curation lists, before the first page
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/"
        said = " (sign in with your token; an admin makes one with `skillshelf tokens add NAME --role reader`)" \
            if team else (" (open it with ?token=<SKILLSHELF_HTTP_TOKEN>)" if token else "")
        print(f"skillshelf dashboard at {url}{said}", file=sys.stderr)
        if open_browser:
            import webbrowser

            target = url + ("login" if team else (f"?token={token}" if token else ""))
            threading.Timer(0.5, webbrowser.open, args=(target,)).start()
        running.append(asgi_server(app))
        running[0].run(sockets=[sock])
    if ctrl_c.pressed:
        _end(lib, INTERRUPTED)


def _end(lib: Any, code: int) -> NoReturn:
    """Close the library (its background indexing and watches stop: at most ``CLOSE_WAIT``
    seconds) and end the process with ``code``. It exits with ``os._exit`` after flushing what
    it wrote: the interpreter's finalisation ran while the sync and its threads (the embedding
    model's pool, a file watcher) still ran, which printed a traceback from the sync ("cannot
    schedule new futures after interpreter shutdown") or aborted in the model's runtime
    ("terminate called without an active exception", exit -6)."""
    closer = threading.Thread(target=lib.close, args=(CLOSE_WAIT,), name="skillshelf-close", daemon=True)
    closer.start()
    closer.join(CLOSE_WAIT + 0.5)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
