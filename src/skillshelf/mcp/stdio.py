"""The MCP server over stdio: every request read gets an answer, and a closed stdin ends the
process cleanly.

- A request whose JSON holds a lone UTF-16 surrogate escape (``"\\ud800"``: valid JSON
  syntax, but not Unicode text) cannot be read by the SDK's parser, which drops it: the
  client would wait for an answer forever. ``AnswerUnreadable`` answers it with invalid
  params (-32602), naming the field and the fix.
- ``run`` serves until the client closes stdin and says the exit code: 0 when the client
  went away, whatever state its pipes were left in.
- On a team store a stdio server is started by one person's client, so it serves one token:
  ``SKILLSHELF_TOKEN`` (``team_token``) names who is asking, with its role, and is what
  usage and saves are recorded under. Without it the server does not start.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio

log = logging.getLogger("skillshelf.mcp")

TOKEN_MAX = 512     # characters of a token looked up in the store (real ones are 43)

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


def unreadable_request(exc: BaseException) -> tuple[str | int, str] | None:
    """(request id, where the bad text is) when ``exc`` is the SDK's parser refusing a
    request's line that Python's JSON reads (a lone surrogate escape), else None."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        raw = next((e.get("input") for e in errors() if e.get("type") == "json_invalid"), None)
    except Exception:   # noqa: BLE001 — not a pydantic error after all: leave it to the SDK
        return None
    if not isinstance(raw, str):
        return None
    try:
        msg = json.loads(raw)
    except ValueError:
        return None
    if not (isinstance(msg, dict) and isinstance(msg.get("method"), str)
            and isinstance(msg.get("id"), (int, str)) and not isinstance(msg.get("id"), bool)):
        return None   # a notification or a response: nothing to answer
    where = _lone_surrogate(msg)
    # the answer must not carry the bad text itself (it could not be sent either)
    return (msg["id"], where.encode("utf-8", "backslashreplace").decode("utf-8")) if where else None


class AnswerUnreadable:
    """The stdio transport's read stream (``mcp.shared._stream_protocols.ReadStream``), with
    each request the SDK could not parse because of a lone surrogate answered on
    ``write`` and left out."""

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

        req_id, where = found
        error = types.ErrorData(code=types.INVALID_PARAMS, message=(
            f"the request's {where} holds a lone UTF-16 surrogate (an escape such as \\ud800 without its pair), "
            "which is not Unicode text. Fix: send valid Unicode (replace or drop the broken character)"))
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


def run(server: Any) -> int:
    """Serve ``server`` over stdio until the client closes stdin (or Ctrl-C); the exit code
    the process should end with: 0, 130 on Ctrl-C, 1 when the server failed. A failure that
    only says that the client went away (its pipes closed) is an end like any other."""
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:   # the exit code and the log say what happened
        if _client_gone(exc):
            return 0
        log.exception("the stdio server failed")
        return 1
    return 0


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
