"""The MCP server over stdio: every request read gets an answer, and a closed stdin ends the
process cleanly.

- A line the SDK's parser cannot read is dropped by it: the client would wait for an answer
  forever. ``AnswerUnreadable`` answers each: a request whose JSON holds a lone UTF-16
  surrogate escape (``"\\ud800"``: valid JSON syntax, but not Unicode text) with invalid
  params (-32602), naming the field and the fix; a request nested deeper than the parser reads
  (200 levels) with invalid request (-32600); a line that is not JSON at all, or nested so deep
  that no parser here can find its id (a 6 KB line of ``[``), with a parse error (-32700, id
  null, as JSON-RPC 2.0 asks). Nothing about it is recursive, so no line can end the server
  with a RecursionError.
- ``run`` serves until the client closes stdin and says the exit code: 0 when the client
  went away, whatever state its pipes were left in. Started from a terminal it says one line
  on stderr (a person sees what runs and how to stop it). Ctrl+C ends the process within
  ``end``'s bound (the read of stdin waits in a worker thread that no cancellation ends, so
  the event loop is not unwound: the library is closed and the process exits).
- On a team store a stdio server is started by one person's client, so it serves one token:
  ``SKILLSHELF_TOKEN`` (``team_token``) names who is asking, with its role, and is what
  usage and saves are recorded under. Without it the server does not start.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

import anyio

log = logging.getLogger("skillshelf.mcp")

TOKEN_MAX = 512     # characters of a token looked up in the store (real ones are 43)
ON_A_TERMINAL = "skillshelf MCP server on stdio: an MCP client starts this command; Ctrl+C stops it"

# Errors that only say that the client went away (its pipes closed).
_GONE = (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError, anyio.ClosedResourceError)


def _lone_surrogate(value: Any, path: str = "") -> str | None:
    """Where in a decoded JSON value a string holds a lone surrogate
    (``params.arguments.description``), or None."""
    if isinstance(value, str):
        return (path or "text") if any(0xD800 <= ord(c) <= 0xDFFF for c in value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            here = f"{path}.{k}" if path else str(k)
            if found := _lone_surrogate(k, here) or _lone_surrogate(v, here):
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if found := _lone_surrogate(v, f"{path}[{i}]"):
                return found
    return None


PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
DEPTH_FIX = "send the request with its values nested at most 200 levels deep"


def unreadable_request(exc: BaseException) -> tuple[str | int | None, int, str] | None:
    """(the request's id or None, the JSON-RPC error code, the message) for a line the SDK's
    parser refused as invalid JSON (``exc``), else None (not such a refusal, or a notification
    or response: nothing to answer). The message never carries the line's text."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        bad = next((e for e in errors() if e.get("type") == "json_invalid"), None)
    except Exception:   # noqa: BLE001 — not a pydantic error after all: leave it to the SDK
        return None
    if bad is None or not isinstance(raw := bad.get("input"), str):
        return None
    deep = "recursion limit" in str(bad.get("msg", ""))
    try:
        msg = json.loads(raw)
    except RecursionError:      # deeper than Python's own parser goes: no id can be found
        return None, PARSE_ERROR, f"the request is nested too deeply to be read. Fix: {DEPTH_FIX}"
    except ValueError as err:
        return None, PARSE_ERROR, (f"the line is not valid JSON ({str(err)[:120]}). Fix: send one JSON-RPC "
                                   "message per line, as JSON")
    if not (isinstance(msg, dict) and isinstance(msg.get("method"), str)
            and isinstance(msg.get("id"), (int, str)) and not isinstance(msg.get("id"), bool)):
        return None   # a notification or a response: nothing to answer
    try:
        where = _lone_surrogate(msg)
    except RecursionError:
        where, deep = None, True
    if where:
        # the answer must not carry the bad text itself (it could not be sent either)
        shown = where.encode("utf-8", "backslashreplace").decode("utf-8")
        return msg["id"], INVALID_PARAMS, (
            f"the request's {shown} holds a lone UTF-16 surrogate (an escape such as \\ud800 without its pair), "
            "which is not Unicode text. Fix: send valid Unicode (replace or drop the broken character)")
    if deep:
        return msg["id"], INVALID_REQUEST, f"the request is nested too deeply to be read. Fix: {DEPTH_FIX}"
    return None


class AnswerUnreadable:
    """The stdio transport's read stream (``mcp.shared._stream_protocols.ReadStream``), with
    each line the SDK could not parse answered on ``write`` (``unreadable_request``) and left
    out. Upstream: the SDK's stdio reader should answer a line it cannot parse with -32700
    (and an id it can read with -32600) instead of dropping it."""

    def __init__(self, inner: Any, write: Any):
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:   # the sender's contextvars of the last item, where the stream keeps them
        return getattr(self._inner, "last_context", None)

    async def _answered(self, item: Any) -> bool:
        if not isinstance(item, Exception) or (found := unreadable_request(item)) is None:
            return False
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        req_id, code, text = found
        error = types.ErrorData(code=code, message=text)
        await self._write.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=req_id, error=error)))
        return True

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not await self._answered(item):
                return item

    def __aiter__(self) -> AnswerUnreadable:
        return self

    async def __anext__(self) -> Any:
        while True:
            item = await self._inner.__anext__()
            if not await self._answered(item):
                return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnswerUnreadable:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)


def _client_gone(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_client_gone(e) for e in exc.exceptions)
    return isinstance(exc, _GONE)


def run(server: Any, end: Callable[[int], object] | None = None) -> int:
    """Serve ``server`` over stdio until the client closes stdin; the exit code the process
    should end with: 0, 1 when the server failed. A failure that only says that the client
    went away (its pipes closed) is an end like any other. Ctrl+C (``net.CtrlC``) calls
    ``end(130)``, which ends the process; without ``end`` it is a KeyboardInterrupt, and
    130."""
    from ..net import INTERRUPTED, CtrlC

    def stop() -> None:
        if end is None:
            raise KeyboardInterrupt
        end(INTERRUPTED)

    if _is_terminal(sys.stdin):
        print(ON_A_TERMINAL, file=sys.stderr, flush=True)
    try:
        with CtrlC(stop):
            server.run("stdio")
    except KeyboardInterrupt:
        return INTERRUPTED
    except BaseException as exc:   # the exit code and the log say what happened
        if _client_gone(exc):
            return 0
        log.exception("the stdio server failed")
        return 1
    return 0


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def team_token() -> str:
    """``SKILLSHELF_TOKEN``: the token a stdio server on a team store serves (the person or
    agent whose client started it). ``ConfigError`` naming the fix when it is not set or
    cannot be a token; whether the store knows it is checked once the library is open."""
    import os

    from ..errors import ConfigError
    from .replies import OWN_TOKEN_FIX, not_a_token

    token = os.environ.get("SKILLSHELF_TOKEN", "").strip()
    if not token:
        raise ConfigError("an MCP server on a team store serves one person's token, and SKILLSHELF_TOKEN is not set",
                          fix=OWN_TOKEN_FIX)
    if len(token) > TOKEN_MAX or not token.isascii() or not token.isprintable():
        raise not_a_token()
    return token
