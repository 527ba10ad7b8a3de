"""The MCP server over Streamable HTTP: the ASGI app at /mcp, its protections (DNS rebinding
checks on loopback, a bearer token beyond it; on a team store, each client's own token,
``TeamAuth``) and the uvicorn run on a socket bound before anything says it is listening."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..net import bind_socket, check_remote_token

log = logging.getLogger("skillshelf.mcp")

DEFAULT_PORT = 8765
TOKEN_MAX = 512             # characters of a token looked up in the store (real ones are 43)
CALLER_KEY = "skillshelf.caller"    # where TeamAuth leaves the request's caller in its ASGI scope
MAKE_TOKEN = "skillshelf tokens add NAME --role reader|agent|curator|admin"


def http_app(server: Any, *, host: str, port: int, token: str = "",
             verify: Callable[[str], Any] | None = None):
    """The ASGI app: Streamable HTTP at /mcp. Without a token (loopback only) the Host and
    Origin headers are checked against loopback names (DNS rebinding protection). With a
    token, the token is the protection: any Host a client uses to reach this machine (a LAN
    address, a name) is accepted, and every request needs ``Authorization: Bearer <token>``.
    With ``verify`` (a team store: a token -> its ``Caller`` or None) every request needs a
    token of its own, checked by ``TeamAuth``; any Host is accepted then too."""
    from mcp.server.transport_security import TransportSecuritySettings

    if token or verify is not None:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:
        hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
        origins = [f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"]
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                             allowed_origins=origins)
    app = server.streamable_http_app(transport_security=security, host=host)
    if verify is not None:
        return TeamAuth(app, verify)
    return BearerAuth(app, token) if token else app


def run(build: Callable[[], Any], *, host: str, port: int, token: str = "", team: bool = False) -> tuple[Any, int]:
    """Serve the server ``build()`` makes at ``http://host:port/mcp`` until stopped (Ctrl-C,
    SIGTERM); then (the server, the exit code: 130 after Ctrl-C, else 0). ``ConfigError``
    before anything is built or said: a bind beyond loopback without a long enough token, a
    port that cannot be used.

    On a team store (``team``) each request brings its own token (``TeamAuth``), so
    ``token`` (SKILLSHELF_HTTP_TOKEN) plays no part and any address may be bound; the
    library is opened before anything says it is listening, and a store that cannot be
    opened ends the run with one line and exit code 1."""
    if not team:
        check_remote_token(token, host)
    sock = bind_socket(host, port, default_port=DEFAULT_PORT)   # before anything says it is listening
    import uvicorn

    server = build()
    if team:
        if token:
            print("skillshelf: note: SKILLSHELF_HTTP_TOKEN plays no part on a team store: each client sends "
                  f"its own token (`{MAKE_TOKEN}`)", file=sys.stderr)
        if (refused := server.handle.opened()) is not None:
            sock.close()
            print(f"error: {refused}", file=sys.stderr)
            return server, 1
    app = http_app(server, host=host, port=port, token="" if team else token,
                   verify=server.handle.verify_token if team else None)
    shown = f"[{host}]" if ":" in host else host
    said = (" (a team store: every client sends 'Authorization: Bearer <its own token>'; an admin makes one "
            f"with `{MAKE_TOKEN}`)") if team else ""
    print(f"skillshelf MCP over Streamable HTTP at http://{shown}:{port}/mcp{said}", file=sys.stderr)
    # uvicorn shuts down on SIGINT and SIGTERM, then raises the signal again with the handler
    # it found: Ctrl-C as KeyboardInterrupt, SIGTERM as this (the default would kill the
    # process before the library is closed)
    previous = signal.signal(signal.SIGTERM, _stopped) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    except KeyboardInterrupt:   # an end, not a failure: no traceback
        return server, 130
    except Stopped:
        return server, 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return server, 0


class Stopped(Exception):
    """SIGTERM: the server was asked to stop."""


def _stopped(signum: int, frame: Any) -> None:
    raise Stopped


class BearerAuth:
    """Refuse requests without exactly one ``Authorization: Bearer <token>`` header (ASGI
    middleware; the scheme is case-insensitive, RFC 7235; a repeated header is refused)."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode()

    async def _refuse(self, send: Any, status: int, text: str) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": text.encode()})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        import hmac

        if scope["type"] == "websocket":  # not part of MCP: never opened without checks
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http":
            values = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
            if len(values) > 1:
                await self._refuse(send, 400, "repeated Authorization header: send it once")
                return
            scheme, _, credentials = (values[0] if values else b"").strip().partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(credentials.strip(), self.token):
                await self._refuse(send, 401, "missing or wrong bearer token")
                return
        await self.app(scope, receive, send)


class TeamAuth:
    """A team store's requests (ASGI middleware): each needs exactly one
    ``Authorization: Bearer <token>`` header with a token of the store, on loopback too.

    The token is looked up with ``verify`` on every request, in a worker thread (a query to
    the store must not hold the event loop), and nothing is cached: any server of the team
    answers any request, and a token revoked by an admin is refused at once everywhere. A
    token over ``TOKEN_MAX`` characters is refused without a lookup. A missing or wrong
    token is 401 with ``WWW-Authenticate: Bearer`` and the fix; a store that cannot say who
    the token is lets nobody in (503 naming the store). The caller found is left in the
    request's scope (``CALLER_KEY``) for the tools to authorize and attribute the request."""

    def __init__(self, app: Any, verify: Callable[[str], Any]):
        self.app = app
        self.verify = verify

    @staticmethod
    async def _refuse(send: Any, status: int, text: str) -> None:
        headers = [(b"content-type", b"text/plain; charset=utf-8")]
        if status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="skillshelf"'))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": text.encode("utf-8")})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":  # not part of MCP: never opened without checks
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":       # lifespan
            await self.app(scope, receive, send)
            return
        values = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
        if len(values) > 1:
            await self._refuse(send, 400, "repeated Authorization header: send it once")
            return
        fix = (" Fix: send 'Authorization: Bearer <token>' with your own token (in Claude Code: `claude mcp add "
               "--transport http skillshelf URL --header \"Authorization: Bearer <token>\"`); an admin makes one "
               f"with `{MAKE_TOKEN}`")
        if not values:
            await self._refuse(send, 401, "this team library needs a token of your own." + fix)
            return
        scheme, _, credentials = values[0].strip().partition(b" ")
        token = credentials.strip()
        caller = None
        if scheme.lower() == b"bearer" and token and len(token) <= TOKEN_MAX and token.isascii():
            import anyio.to_thread

            try:
                caller = await anyio.to_thread.run_sync(self.verify, token.decode("ascii"))
            except Exception as exc:    # noqa: BLE001 — the store cannot say who this is: nobody is let in
                log.warning("checking a token failed: %s", exc)
                await self._refuse(send, 503, f"cannot check the token: {_one_line(exc)}")
                return
        if caller is None:
            await self._refuse(send, 401, "the token sent is not valid (wrong, revoked, or not 'Bearer <token>')."
                               + fix)
            return
        scope[CALLER_KEY] = caller
        await self.app(scope, receive, send)


def caller_in(context: Any) -> Any:
    """The caller ``TeamAuth`` found for the HTTP request that carried an MCP request
    (``context``: a tool's ``Context`` or a handler's ``ServerRequestContext``), or None."""
    try:
        ctx = context.request_context
    except (AttributeError, ValueError):    # a handler's context already, or a Context outside a request
        ctx = context
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    return scope.get(CALLER_KEY) if isinstance(scope, dict) else None


def _one_line(exc: BaseException) -> str:
    """What a failed token check says: the library's message and fix, on one line."""
    from ..errors import SkillshelfError

    if isinstance(exc, SkillshelfError):
        text = f"{exc.message.rstrip('.')}. Fix: {exc.fix}" if exc.fix else exc.message
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:800]
