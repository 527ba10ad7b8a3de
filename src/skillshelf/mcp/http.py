"""The MCP server over Streamable HTTP: the ASGI app at /mcp, its protections (DNS rebinding
checks on loopback, a bearer token beyond it; on a team store, each client's own token,
``TeamAuth``), what the SDK's transport says differently from the spec (``WireFixes``), the
priming event of each SSE response (``Priming``), and the uvicorn run on a socket bound before
anything says it is listening."""

from __future__ import annotations

import json
import logging
import secrets
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..net import INTERRUPTED, CtrlC, asgi_server, bind_socket, check_remote_token

log = logging.getLogger("skillshelf.mcp")

DEFAULT_PORT = 8765
TOKEN_MAX = 512             # characters of a token looked up in the store (real ones are 43)
CALLER_KEY = "skillshelf.caller"    # where TeamAuth leaves the request's caller in its ASGI scope
MAKE_TOKEN = "skillshelf tokens add NAME --role reader|agent|curator|admin"
SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
MODERN = ("2026-07-28",)
BODY_MAX = 4 * 1024 * 1024      # a request body looked into (the SDK refuses bigger ones itself)
RETRY_MS = 1000                 # when a client whose stream dropped should reconnect (SSE ``retry``)


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
    app = WireFixes(server.streamable_http_app(transport_security=security, host=host, event_store=Priming(),
                                               retry_interval=RETRY_MS))
    if verify is not None:
        return TeamAuth(app, verify)
    return BearerAuth(app, token) if token else app


def run(build: Callable[[], Any], *, host: str, port: int, token: str = "", team: bool = False) -> tuple[Any, int]:
    """Serve the server ``build()`` makes at ``http://host:port/mcp`` until stopped (Ctrl+C,
    SIGTERM); then (the server, the exit code: 130 after Ctrl+C, else 0). ``ConfigError``
    before anything is built or said: a bind beyond loopback without a long enough token, a
    port that cannot be used.

    On a team store (``team``) each request brings its own token (``TeamAuth``), so
    ``token`` (SKILLSHELF_HTTP_TOKEN) plays no part and any address may be bound; the
    library is opened before anything says it is listening, and a store that cannot be
    opened ends the run with one line and exit code 1."""
    if not team:
        check_remote_token(token, host)
    sock = bind_socket(host, port, default_port=DEFAULT_PORT)   # before anything says it is listening
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
    # Ctrl+C says one line and stops uvicorn (``net.CtrlC``; open streams get
    # ``net.SHUTDOWN_GRACE`` seconds); a second ends the process at once. uvicorn shuts down on
    # SIGTERM, then raises it again with the handler it found: this one (the default would
    # kill the process before the library is closed)
    previous = signal.signal(signal.SIGTERM, _stopped) if threading.current_thread() is threading.main_thread() \
        else None
    listener = asgi_server(app)
    try:
        with CtrlC(lambda: setattr(listener, "should_exit", True)) as ctrl_c:
            listener.run(sockets=[sock])
    except KeyboardInterrupt:   # an end, not a failure: no traceback
        return server, INTERRUPTED
    except Stopped:
        return server, 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return server, INTERRUPTED if ctrl_c.pressed else 0


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


class WireFixes:
    """What the SDK's Streamable HTTP transport (``mcp`` 2.3) answers differently from the
    spec, set right around it (ASGI middleware). Upstream should change each in
    ``mcp.server.streamable_http``:

    * A request whose ``MCP-Protocol-Version`` header names a 2025 version while its
      ``_meta`` names another (2026-07-28) is served on the legacy path as if the ``_meta``
      were not there; the 2026-07-28 spec asks for 400 and a HeaderMismatch error (-32020).
    * A body that is JSON but not a JSON-RPC message is answered with -32602 and pydantic's
      multi-line report; JSON-RPC 2.0 says -32600 (Invalid Request).
    * A refused request (400, 404, 406 ...) carries a ``mcp-session-id`` header naming a session
      that was never created: a client that keeps it gets 404 on its next request. Only the
      session the request itself named is echoed on a refusal.
    """

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        asked = headers.get(SESSION_HEADER)
        if scope.get("method") == "POST":
            body, more = await _body(receive)
            mismatch = _mismatch(body, headers.get(VERSION_HEADER, b"").decode("latin-1"))
            if mismatch is not None:
                await _json(send, 400, mismatch, session=asked)
                return
            receive = _replay(body, more, receive)
        await self.app(scope, receive, _Answer(send, asked))


class _Answer:
    """The ``send`` of one request: a refusal's made-up session id left out, and a refusal of a
    body that is not JSON-RPC said with -32600."""

    def __init__(self, send: Any, asked: bytes | None):
        self._send, self._asked = send, asked
        self._start: dict | None = None
        self._chunks: list[bytes] = []

    async def __call__(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            status = message.get("status", 200)
            hdrs = list(message.get("headers") or [])
            if status >= 400:
                hdrs = [(k, v) for k, v in hdrs if k.lower() != SESSION_HEADER or v == self._asked]
            message = {**message, "headers": hdrs}
            if status == 400 and any(k.lower() == b"content-type" and v.startswith(b"application/json")
                                     for k, v in hdrs):
                self._start = message       # held until its body is seen (a few hundred bytes)
                return
        elif message["type"] == "http.response.body" and self._start is not None:
            self._chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = _invalid_request(b"".join(self._chunks))
            hdrs = [(k, v) for k, v in self._start["headers"] if k.lower() != b"content-length"]
            hdrs.append((b"content-length", str(len(body)).encode()))
            await self._send({**self._start, "headers": hdrs})
            self._start = None
            message = {"type": "http.response.body", "body": body}
        await self._send(message)


def _invalid_request(body: bytes) -> bytes:
    """A -32602 refusal of a body that is not a JSON-RPC message, as -32600 in one line."""
    try:
        got = json.loads(body)
        err = got["error"]
        if err.get("code") == -32602 and str(err.get("message", "")).startswith("Validation error"):
            got["error"] = {"code": -32600, "message": "the body is not a JSON-RPC 2.0 request, notification or "
                            "response. Fix: send an object with \"jsonrpc\": \"2.0\", a string \"method\" and, "
                            "for a request, an \"id\""}
            return json.dumps(got, separators=(",", ":")).encode()
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    return body


def _mismatch(body: bytes, header: str) -> dict | None:
    """The HeaderMismatch error (-32020) for a request whose 2025 ``MCP-Protocol-Version``
    header differs from the version its ``_meta`` names, else None."""
    if not header or header in MODERN or VERSION_META.encode() not in body:
        return None
    try:
        msg = json.loads(body)
    except (ValueError, RecursionError):
        return None
    meta = (msg.get("params") or {}).get("_meta") if isinstance(msg, dict) else None
    said = meta.get(VERSION_META) if isinstance(meta, dict) else None
    if not isinstance(said, str) or said == header:
        return None
    rid = msg.get("id")
    return {"jsonrpc": "2.0", "id": rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None,
            "error": {"code": -32020, "message": (
                f"the MCP-Protocol-Version header ({header[:40]}) and the request's _meta ({said[:40]}) name "
                "different protocol versions. Fix: send the same version in both")}}


async def _body(receive: Any) -> tuple[bytes, bool]:
    """The request body up to ``BODY_MAX`` bytes, and whether more is still to come."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), False
        if size > BODY_MAX:
            return b"".join(chunks), True


def _replay(body: bytes, more: bool, receive: Any) -> Any:
    """A ``receive`` that gives ``body`` first, then the rest of the request as it comes."""
    sent = False

    async def again() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return again


async def _json(send: Any, status: int, payload: dict, *, session: bytes | None) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if session:
        hdrs.append((SESSION_HEADER, session))
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})


class Priming:
    """The SDK's ``EventStore``, for the priming event alone: every SSE response opens with an
    event id and empty data (and ``retry``), as 2025-11-25 recommends, and each event has an id
    no client can guess. Nothing is kept, so nothing is replayed: a client whose stream dropped
    sends its request again. A store that replayed would be unsafe here: the SDK gives one store
    to every session and keys the events by request id, which repeats from session to session,
    so one client resuming could be handed another's results (upstream: key stored events by
    session, or make a store per session)."""

    async def store_event(self, stream_id: Any, message: Any) -> str:
        return secrets.token_urlsafe(12)

    async def replay_events_after(self, last_event_id: Any, send_callback: Any) -> Any:
        return None


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
