"""The skill files over MCP, below the tools: how a request about resources is served (as its
caller, on its protocol version, every failure one JSON-RPC error with the fix) and the Skills
Extension (SEP-2640): ``skills/list``, ``skills/get`` and ``resources/directory/read``.

Everything is asked of the facade (``Library.resources``, through the read gate: for an agent,
a held or blocked skill is neither listed, got nor listed into); nothing here decides a hold."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, RequestParams, Resource
from pydantic import StrictStr

from .changes import Changes
from .replies import message as _message

log = logging.getLogger("skillshelf.mcp")

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
MODERN = frozenset({"2026-07-28"})     # the stateless wire (``server/discover``, per-request ``_meta``)
# 2025-11-25 answers an unknown resource with -32002 (Resource not found); 2026-07-28 with
# -32602 (SEP-2164), as skills/get and resources/directory/read do on every wire
RESOURCE_NOT_FOUND = -32002
# The caching hints (SEP-2549) of skills/list and skills/get: the listing follows the files,
# and a client subscribed to it hears of a change; per token on a team store, so private.
SKILLS_TTL_MS = 60_000
SKILLS_CACHE_SCOPE = "private"

# resources/list, skills/list and directory pages: ~50 entries are ~17 KB of JSON, which any client holds.
RESOURCES_PAGE = 50
SKILLS_PAGE = 50

# who makes the request under way: a team store's ``Caller`` (token name and role), else None
CALLER: contextvars.ContextVar[Any] = contextvars.ContextVar("skillshelf_mcp_caller", default=None)
# the protocol version of the request under way (its error codes and caching hints follow it)
PROTOCOL: contextvars.ContextVar[str] = contextvars.ContextVar("skillshelf_mcp_protocol", default="")


def _session(ctx: Any) -> Any:
    """The session of a legacy (2025-11-25) request, or None (2026-07-28 has none to notify)."""
    if _version(ctx) in MODERN:
        return None
    for c in (ctx, getattr(ctx, "_request_context", None)):
        if (session := getattr(c, "session", None)) is not None:
            return session
    return None



def _resource_call(handle: Any, uri: str, fn: Callable[[Any], Any], *, missing: int = INVALID_PARAMS) -> Any:
    """``fn(resources)`` for a request about resources, every failure a protocol error of
    one line with the fix: a request that can never be served (a bad URI or cursor, a file
    that is special or over the cap) is invalid params (-32602), one for something that is not
    there ``missing`` (-32602, or -32002 for a resources/read on a 2025-11-25 session); the
    library failing (it could not be opened, a read failed) is an internal error (-32603)."""
    from ..errors import ForbiddenError, HeldError, NotFoundError, SkillshelfError, ValidationError

    data = {"uri": uri} if uri else None
    try:
        with handle.call():
            handle.allow("resources")
            return fn(handle.resources())     # the library reads for an agent: held skills refused
    except MCPError:
        raise
    except NotFoundError as exc:
        raise MCPError(missing, _message(exc), data=data) from None
    except ValidationError as exc:
        raise MCPError(INVALID_PARAMS, _message(exc), data=data) from None
    except (ForbiddenError, HeldError) as exc:   # a caller without the role; a skill held from agents
        raise MCPError(INVALID_REQUEST, _message(exc), data=data) from None
    except ToolError as exc:  # the library could not be opened, or the server is closing
        raise MCPError(INTERNAL_ERROR, str(exc), data=data) from None
    except OSError as exc:      # said without the server's path (the URI names the file)
        log.warning("reading %s failed: %s", uri or "a listing", exc)
        raise MCPError(INTERNAL_ERROR, f"{exc.strerror or type(exc).__name__} reading {uri[:200] or 'the listing'}. "
                       "Fix: try again; if it keeps failing, the server's log (stderr) says which file",
                       data=data) from None
    except SkillshelfError as exc:
        raise MCPError(INTERNAL_ERROR, _message(exc), data=data) from None
    except Exception as exc:
        log.error("reading resources failed (%s)", uri or "a listing", exc_info=True)
        raise MCPError(INTERNAL_ERROR, _message(exc), data=data) from None


async def _as_caller(handle: Any, context: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a worker thread, as the caller of this request (``CALLER``; a team
    store's request without a valid one is refused with a protocol error)."""
    from ..errors import SkillshelfError, StoreError

    try:
        caller = await handle.who(context)
    except ToolError as exc:        # the library could not be opened, or the server is closing
        raise MCPError(INTERNAL_ERROR, str(exc)) from None
    except SkillshelfError as exc:  # no token, or one the store no longer knows; or the store failing
        raise MCPError(INTERNAL_ERROR if isinstance(exc, StoreError) else INVALID_REQUEST, _message(exc)) from None
    token, version = CALLER.set(caller), PROTOCOL.set(_version(context))
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    finally:
        PROTOCOL.reset(version)
        CALLER.reset(token)


def _version(context: Any) -> str:
    """The protocol version of the request ``context`` carries (a handler's or a tool's)."""
    for ctx in (context, getattr(context, "_request_context", None)):
        with contextlib.suppress(Exception):
            got = getattr(ctx, "protocol_version", None)
            if isinstance(got, str):
                return got
    return ""


def _cached(result: dict[str, Any]) -> dict[str, Any]:
    """A skills/list or skills/get result with the caching hints on the 2026-07-28 wire."""
    if PROTOCOL.get() in MODERN:
        result |= {"ttlMs": SKILLS_TTL_MS, "cacheScope": SKILLS_CACHE_SCOPE}
    return result


# --- the Skills Extension (SEP-2640 draft) ------------------------------------------------------

class _ListParams(RequestParams):
    cursor: StrictStr | None = None


class _GetParams(RequestParams):
    uri: StrictStr


class _DirParams(RequestParams):
    uri: StrictStr
    cursor: StrictStr | None = None


class SkillsExtension(Extension):
    """The Skills Extension (SEP-2640): ``skills/list`` and ``skills/get`` (each skill's
    frontmatter verbatim, every file's ``sha256:`` digest and size, the caching hints on
    2026-07-28) and ``resources/directory/read`` (``directoryRead``), on every protocol version
    (the extension is declared in ``initialize`` too: ``declared``). Everything goes through the facade's read
    gate (``Library.resources``): a skill held from agents is not listed, got or listed into."""

    identifier = SKILLS_EXTENSION
    page_size = SKILLS_PAGE

    def __init__(self, handle: Any, changes: Changes | None = None):
        self.handle = handle
        self.changes = changes      # the server's change notifications (None: the extension alone)

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self):
        return (MethodBinding("skills/list", _ListParams, self._list),
                MethodBinding("skills/get", _GetParams, self._get),
                MethodBinding("resources/directory/read", _DirParams, self._directory))

    def _list_sync(self, cursor: str | None) -> dict[str, Any]:
        page, nxt = _resource_call(self.handle, "", lambda lib: lib.resources.manifests(cursor, self.page_size))
        return _cached({"skills": page} | ({"nextCursor": nxt} if nxt is not None else {}))

    async def _list(self, ctx: Any, params: _ListParams) -> dict[str, Any]:
        return await _as_caller(self.handle, ctx, self._list_sync, params.cursor)

    async def _get(self, ctx: Any, params: _GetParams) -> dict[str, Any]:
        def get() -> dict[str, Any]:
            return _cached({"skill": _resource_call(self.handle, params.uri,
                                                    lambda lib: lib.resources.manifest(params.uri))})

        return await _as_caller(self.handle, ctx, get)

    async def _directory(self, ctx: Any, params: _DirParams) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            page, nxt = _resource_call(self.handle, params.uri,
                                       lambda lib: lib.resources.directory(params.uri, params.cursor, RESOURCES_PAGE))
            out = [Resource(**e).model_dump(by_alias=True, exclude_none=True, mode="json") for e in page]
            return {"resources": out} | ({"nextCursor": nxt} if nxt is not None else {})

        if self.changes is not None:
            self.changes.seen(_session(ctx))
        return await _as_caller(self.handle, ctx, read)


def declared(extensions: dict[str, dict[str, Any]]) -> Callable[..., Any]:
    """A server middleware that declares ``extensions`` in the ``initialize`` result's
    ``capabilities.extensions`` on every protocol version, as SEP-2640 ("Capability Declaration",
    by SEP-2133's negotiation) asks. The SDK declares them, then sieves a 2025-11-25 result by that
    version's schema, which has no ``extensions`` key, and drops them, so a host on that version
    could not learn that ``skills/list`` is served (upstream: keep ``capabilities.extensions`` on
    handshake-era initialize results)."""
    async def middleware(ctx: Any, call_next: Callable[..., Any]) -> Any:
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict) and extensions:
            caps = result.get("capabilities")
            if isinstance(caps, dict) and "extensions" not in caps:
                result = {**result, "capabilities": {**caps, "extensions": dict(extensions)}}
        return result

    return middleware
