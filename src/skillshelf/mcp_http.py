"""The MCP server over Streamable HTTP: the ASGI app at /mcp, its protections (DNS rebinding
checks on loopback, a bearer token beyond it) and the uvicorn run on a socket bound before
anything says it is listening."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from .net import bind_socket, check_remote_token

DEFAULT_PORT = 8765


def http_app(server: Any, *, host: str, port: int, token: str = ""):
    """The ASGI app: Streamable HTTP at /mcp. Without a token (loopback only) the Host and
    Origin headers are checked against loopback names (DNS rebinding protection). With a
    token, the token is the protection: any Host a client uses to reach this machine (a LAN
    address, a name) is accepted, and every request needs ``Authorization: Bearer <token>``."""
    from mcp.server.transport_security import TransportSecuritySettings

    if token:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:
        hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
        origins = [f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"]
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                             allowed_origins=origins)
    app = server.streamable_http_app(transport_security=security, host=host)
    return BearerAuth(app, token) if token else app


def run(build: Callable[[], Any], *, host: str, port: int, token: str = "") -> tuple[Any, int]:
    """Serve the server ``build()`` makes at ``http://host:port/mcp`` until stopped (Ctrl-C,
    SIGTERM); then (the server, the exit code: 130 after Ctrl-C, else 0). ``ConfigError``
    before anything is built or said: a bind beyond loopback without a long enough token, a
    port that cannot be used."""
    check_remote_token(token, host)
    sock = bind_socket(host, port, default_port=DEFAULT_PORT)   # before anything says it is listening
    import uvicorn

    server = build()
    app = http_app(server, host=host, port=port, token=token)
    shown = f"[{host}]" if ":" in host else host
    print(f"skillshelf MCP over Streamable HTTP at http://{shown}:{port}/mcp", file=sys.stderr)
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
