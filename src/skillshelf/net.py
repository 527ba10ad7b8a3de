"""Listening sockets for the HTTP servers (MCP over Streamable HTTP, the dashboard).

The socket is bound here, before anything says it is listening, and handed to the server
as it is: a port in use or out of range is one clear error, and no other program can take
the port between the check and the start. A bind beyond loopback needs a token long enough
not to be guessed (``check_remote_token``).

A server started from a terminal stops on Ctrl+C (``CtrlC``), whatever it is doing, and
``asgi_server`` runs an ASGI app under that rule."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from . import text as textmod
from .errors import ConfigError

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# The shortest bearer token accepted on a bind other machines can reach: 16 characters of
# ``secrets.token_urlsafe`` are ~96 bits, beyond guessing over a network.
MIN_TOKEN_CHARS = 16
MAKE_TOKEN = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")


def redact_url(url: str) -> str:
    """``url`` with its user information (a user, a password or a token written before ``@``)
    replaced by ``***``: ``https://***@host/owner/repo``. A URL that cannot be parsed loses
    everything between ``://`` and its last ``@``."""
    if "://" not in url or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
        _ = parts.port      # a port that is not a number: the userinfo was not where it should be
    except ValueError:
        scheme, _, rest = url.partition("://")
        return f"{scheme}://***@{rest.rpartition('@')[2]}"
    if "@" not in parts.netloc:
        return url
    return url.replace(parts.netloc, "***@" + parts.netloc.rpartition("@")[2], 1)


def redact_password(url: str) -> str:
    """A database URL as it may be shown: ``postgresql://user:***@host/db``. Everything
    between the user name and the last ``@`` before the query is masked (a password holding
    ``/``, ``?``, ``#`` or ``@`` written as it is stays wholly masked); a user information that
    is not a plain ``user:password`` or ``user`` is masked whole (``***@host``):
    ``text.redact_userinfo``."""
    return textmod.redact_userinfo(url)


def check_store_url(url: str) -> None:
    """Refuse (``ConfigError``) a database URL whose user information holds a second ``@``, a
    ``#`` or a ``/`` written as it is: the driver would take part of the password for the host
    (or cut the URL at ``#``) and the messages would show that part."""
    info = textmod.url_userinfo(url)
    if set(info) & set("@#/"):
        raise ConfigError(f"the store URL {redact_password(url)} has '@', '#' or '/' in its user or password",
                          fix="percent-encode the password (@ is %40, # is %23, / is %2F, ? is %3F, : is %3A) "
                              "and give the URL again")


def redact_text(text: str) -> str:
    """A message with every URL in it passed through :func:`redact_url`."""
    if "://" not in text or "@" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def check_remote_token(token: str | None, host: str) -> None:
    """Refuse (``ConfigError``) to serve ``host`` beyond this machine without a token
    (``SKILLSHELF_HTTP_TOKEN``) or with one shorter than ``MIN_TOKEN_CHARS`` (a one-letter
    token guards nothing); a loopback bind needs none."""
    if host in LOOPBACK:
        return
    fix = (f"set SKILLSHELF_HTTP_TOKEN to a random token of {MIN_TOKEN_CHARS} or more characters, e.g. the "
           f"output of `{MAKE_TOKEN}` (clients send 'Authorization: Bearer <token>'), or bind 127.0.0.1")
    if not token:
        raise ConfigError(f"binding {host} exposes the library beyond this machine", fix=fix)
    if len(token.strip()) < MIN_TOKEN_CHARS:
        raise ConfigError(f"SKILLSHELF_HTTP_TOKEN is too short to guard {host} ({len(token.strip())} characters; "
                          f"at least {MIN_TOKEN_CHARS})", fix=fix)


def bind_socket(host: str, port: int, *, default_port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, or ``ConfigError`` naming the fix."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(f"port {port} is out of range",
                          fix=f"pass --port with a number from 1 to 65535 (default {default_port})")
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host!r}: {getattr(exc, 'strerror', None) or exc}",
                          fix="pass --host with an address of this machine (default 127.0.0.1)") from None
    sock = socket.socket(family, kind, proto)
    try:
        # as uvicorn binds: a port left in TIME_WAIT by a previous run is free, one in use is not
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
                              fix=f"ports below 1024 need privileges: use one above 1023, e.g. --port {default_port}") \
                from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}",
                          fix="pass --host with an address of this machine (default 127.0.0.1)") from None
    return sock


GOODBYE = "skillshelf: stopping (Ctrl+C again stops at once)"
INTERRUPTED = 130           # the exit code after Ctrl+C, as a shell reports a process SIGINT ended
SHUTDOWN_GRACE = 1          # seconds an HTTP server gives open requests once it is asked to stop


class CtrlC:
    """Ctrl+C for a server, in the main thread while inside ``with CtrlC(stop)``: the first
    says ``GOODBYE`` on stderr and calls ``stop()`` (it asks the server to end, or ends the
    process itself); a second ends the process at once (exit 130). ``pressed`` says whether
    it came. Elsewhere than the main thread it does nothing.

    From a terminal, Ctrl+C reaches every process of the foreground group at any moment: a
    server blocked reading stdin in a worker thread, or in the middle of a sync. Python's
    KeyboardInterrupt would unwind the event loop, which then waits for those threads (a read
    of stdin never ends). Once Ctrl+C was pressed the handler stays in place on leaving (the
    process is ending: a second Ctrl+C still ends it at once); otherwise the previous one is
    put back."""

    def __init__(self, stop: Callable[[], object]):
        self.stop = stop
        self.pressed = False
        self._previous: Any = None
        self._installed = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.pressed:
            os._exit(INTERRUPTED)
        self.pressed = True
        # os.write, not print: the main thread may be inside a write to stderr right now
        with contextlib.suppress(OSError):
            os.write(2, (GOODBYE + "\n").encode())
        self.stop()

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed and not self.pressed:
            signal.signal(signal.SIGINT, self._previous)


def asgi_server(app: Any, *, grace: int = SHUTDOWN_GRACE) -> Any:
    """A uvicorn server of the ASGI ``app`` (``.run(sockets=[sock])``; ``.should_exit = True``
    stops it). Open requests get ``grace`` seconds once it stops: a browser's or a client's
    open stream no longer holds the process. SIGTERM is uvicorn's (it stops, then raises the
    signal again with the handler it found). Ctrl+C is left to the ``CtrlC`` in place when it
    starts, if any (uvicorn's would stop it only after its shutdown, and a second Ctrl+C then
    met no handler of ours)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            ours = signal.getsignal(signal.SIGINT)
            with super().capture_signals():
                if isinstance(getattr(ours, "__self__", None), CtrlC) \
                        and threading.current_thread() is threading.main_thread():
                    signal.signal(signal.SIGINT, ours)
                yield

    return Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=grace))
