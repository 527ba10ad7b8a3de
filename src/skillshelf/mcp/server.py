"""The MCP adapter: tools, skill resources, the Skills Extension listing and a prompt,
over stdio (default) or Streamable HTTP (:mod:`skillshelf.mcp.http`).

On a team store every request is a token's: its HTTP request's (``mcp_http.TeamAuth``) or,
over stdio, ``SKILLSHELF_TOKEN``'s, checked at each call. Each tool and resource read asks
``Library.authorize`` for its action; what is logged or saved carries the token's name.

Only ``mcp`` and the standard library are imported at module level: the library (numpy,
SQLite, the embedding model) is opened in a background thread as the server starts, so
``tools/list`` answers as fast as a bare server, and the index is brought up to date in
another (``Library.start_indexing``): no request waits for a sync. Nothing here writes to
stdout: in the stdio transport stdout is the protocol. Every tool calls one ``Library``
method and formats what it returns (the wording is in :mod:`skillshelf.mcp.replies`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (INVALID_PARAMS, CallToolResult, EmptyResult, ListResourcesResult, PaginatedRequestParams,
    RequestParams, Resource, ResourceTemplate, SubscribeRequestParams, SubscriptionsListenRequestParams, TextContent,
    ToolAnnotations, UnsubscribeRequestParams)
from pydantic import BaseModel, Field

from ..version import __version__
from . import replies as mcp_text
from .changes import Changes
from .http import caller_in
from .replies import message as _message
from .skills import (CALLER, MODERN, PROTOCOL, RESOURCE_NOT_FOUND, RESOURCES_PAGE, SKILLS_EXTENSION,  # noqa: F401
                     SkillsExtension, _as_caller, _GetParams, _ListParams, _resource_call, _session, declared)
# (the request plumbing and the Skills Extension live in .skills; re-exported for the tests)

log = logging.getLogger("skillshelf.mcp")

INSTRUCTIONS = (
    "skillshelf is a library of agent skills (SKILL.md). Before a non-trivial task, call search_skills with the "
    "task in your own words; read the one skill that fits with get_skill; after using it, call report_outcome "
    "(worked true/false, with a short note). Search returns metadata only: never guess a skill's content."
)
# One tool result stays under this many characters (DESIGN: Claude Code truncates past ~25k
# tokens and smaller clients hold less); a longer body is read on with `offset` or by section.
# A module constant until the configuration has a setting for it.
MAX_RESULT_CHARS = 25_000
# How long a request waits for the library to open (a database another process is migrating).
OPEN_WAIT = 20.0
# How long a closed stdin waits for requests under way and the background indexing to stop
# before the process exits: MCP clients wait ~2 s after closing stdin, then kill the server.
SHUTDOWN_WAIT = 1.0
# The library's watches (a walk of every root holding the GIL: ~0.1 s at 5.3k skills) and its rescan of
# what changed while the server was down wait this long for the first tool call's answer (``_first_answer``),
FIRST_ANSWER_WAIT = 1.0
SENDING = 0.1   # ... and then this long while its reply is written
SHUTTING_DOWN = "the server is shutting down. Fix: connect again once it has been restarted"
# each tool's action for ``Library.authorize`` (one access.NEEDS does not list, reindex, needs admin)
ACTIONS = {"search_skills": "search", "get_skill": "read", "save_skill": "save_skill",
           "report_outcome": "report_outcome", "skill_stats": "stats", "reindex": "reindex"}


# --- output models (kept flat: they are sent with every tools/list) -------------------------

class SearchOut(BaseModel):
    hits: list[dict[str, Any]]
    confident: bool
    query_id: int | None = None
    degraded: str | None = None
    # with judge=true, what the owner's model judge did (judge, judge_mode, judge_model,
    # judge_latency_ms, pick, judge_dropped) comes as extra keys: kept out of the schema every
    # client reads with tools/list
    model_config = {"extra": "allow"}


class SkillOut(BaseModel):
    """The body is the text block (sent once); this is what describes it."""

    name: str
    id: str
    version: int
    risk: str
    metadata: dict[str, Any]
    files: list[str]
    files_more: int = 0
    section: str | None = None
    offset: int = 0
    shown_chars: int
    total_chars: int
    next_offset: int | None = None


class SaveOut(BaseModel):
    status: str
    name: str
    version: int
    changelog: dict[str, Any] | None = None
    duplicates: list[dict[str, Any]] = Field(default_factory=list)
    message: str = ""
    # the result also carries ``findability``: the skill's trigger evals before and after the change
    # (found/of, the line, the queries lost and what came first on each, a warning when more than one
    # was lost), null when it keeps none. Not declared: the schema every client reads with tools/list is
    # capped in size, and an object schema without additionalProperties takes extra keys


class Out(BaseModel):
    """A generic object result."""

    model_config = {"extra": "allow"}


# --- the library, opened off the request path --------------------------------------------------

class LibraryHandle:
    """Opens the Library in a background thread at start (the Store and the searcher: well
    under a second) and then starts its background indexing; requests wait only for the
    opening, never for a sync. ``close`` ends it all: requests under way, the indexing."""

    def __init__(self, factory: Callable[[], Any], *, team: bool = False, token: str | None = None):
        self._factory = factory
        self.team = team        # a team store: every call names its caller (``who``)
        self.token = token      # stdio on a team store: SKILLSHELF_TOKEN, checked at each call
        self._lib: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._started = False
        self._closing = False
        self._calls = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._resources: Any = None
        self.changes: Any = None        # the server's change notifications (``SkillshelfServer``)
        self._answered = threading.Event()   # a tool call was answered (``answered``), or closing

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._open, name="skillshelf-open", daemon=True).start()

    def _open(self) -> None:
        try:
            lib = self._factory()
        except BaseException as exc:  # reported to every tool call, never kills the server
            self._error = exc
            if not self.team:       # a team server waits for the opening and says it (``opened``)
                print(f"skillshelf: cannot open the library: {exc}", file=sys.stderr)
            self._ready.set()
            return
        with self._lock:
            closing = self._closing
        if closing:   # the server stopped while the library opened: start nothing
            self._close_library(lib)
            self._ready.set()
            return
        try:
            # before any request gets the library: from here on no request syncs itself
            lib.start_indexing(first_answer=self._first_answer)
        except Exception as exc:  # the library still answers from what is indexed
            print(f"skillshelf: background indexing did not start: {exc}", file=sys.stderr)
        self._lib = lib
        self._ready.set()

    def answered(self) -> None:
        """A tool call was answered: the library's watches and rescan may start (``_first_answer``)."""
        self._answered.set()

    def _first_answer(self) -> None:
        """Return once the first tool call was answered and its reply is on its way, or after
        ``FIRST_ANSWER_WAIT`` seconds (at once when closing): the library's indexing thread
        sets its watches up and rescans then, not while the first search is answered."""
        if self._answered.wait(FIRST_ANSWER_WAIT) and not self._closing:
            time.sleep(SENDING)

    def current(self) -> Any:
        """The library if it is open now, else None (opening, failed, or closing): never waits."""
        return self._lib if self._ready.is_set() and not self._closing else None

    def get(self) -> Any:
        self.start()
        if not self._ready.wait(OPEN_WAIT):
            raise ToolError("the library is still opening (its database is busy). Fix: try again in a minute")
        if self._error is not None:
            raise ToolError(_message(self._error, "the library could not be opened"))
        if self._lib is None:
            raise ToolError(SHUTTING_DOWN)
        return self._lib

    def opened(self) -> str | None:
        """Wait for the library to open (as long as it takes): what stops it being served (one
        line with the fix: a store that failed; on stdio, a SKILLSHELF_TOKEN it does not know)."""
        self.start()
        self._ready.wait()
        try:
            self._own_caller() if self.token is not None else self.get()
        except ToolError as exc:
            return str(exc)
        except Exception as exc:    # noqa: BLE001 — said on one line, with the fix
            return _message(exc)
        return None

    def verify_token(self, token: str) -> Any:     # the Caller of a bearer token, or None
        return self.get().verify_token(token)

    def _own_caller(self) -> Any:
        """The caller of SKILLSHELF_TOKEN (stdio), checked now; ``ConfigError`` if none."""
        caller = self.verify_token(self.token or "")
        if caller is None:
            raise mcp_text.not_a_token()
        return caller

    async def who(self, context: Any) -> Any:
        """Who makes this request: None for a local library (its owner); on a team store the
        ``Caller`` of the token, else ``ForbiddenError`` (raised in the caller's task)."""
        if not self.team:
            return None
        if self.token is not None:      # stdio: the token may have been revoked since the start
            return await anyio.to_thread.run_sync(self._own_caller)
        caller = caller_in(context)
        if caller is None:
            raise mcp_text.no_token()
        return caller

    def allow(self, action: str) -> Any:
        """The caller of this request (``CALLER``), refused with ``ForbiddenError`` naming
        the role needed unless it may do ``action``; None for a local library."""
        if not self.team:
            return None
        caller = CALLER.get()
        if caller is None:      # a request whose caller was not found is never let in
            raise mcp_text.no_token()
        self.get().authorize(caller, action, mcp_text.WHAT.get(action))
        return caller

    def resources(self) -> Any:
        """The skill files as resources (one per library: it keeps the listing cached)."""
        lib = self.get()
        with self._lock:
            if self._resources is None:
                self._resources = lib     # the facade's resource methods
            return self._resources

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Count a request under way (``close`` waits for it); refused once closing."""
        with self._lock:
            if self._closing:
                raise ToolError(SHUTTING_DOWN)
            self._calls += 1
        try:
            yield
        finally:
            with self._lock:
                self._calls -= 1
                self._idle.notify_all()

    def close(self, timeout: float = SHUTDOWN_WAIT) -> bool:
        """Refuse new requests, wait (at most ``timeout`` seconds in all) for the library to
        finish opening and for the requests under way, then close the library: its
        background indexing stops and is joined. Returns whether everything ended in time."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closing = True
            started = self._started
        self._answered.set()      # the indexing thread waits no longer for a first answer
        ready = not started or self._ready.wait(max(0.0, deadline - time.monotonic()))
        with self._idle:
            while self._calls and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(left)
            idle = not self._calls
        lib, self._lib = self._lib, None
        if self.changes is not None:
            self.changes.close()
        closed = self._close_library(lib, max(0.1, deadline - time.monotonic())) if lib is not None else True
        return ready and idle and closed

    @staticmethod
    def _close_library(lib: Any, timeout: float | None = None) -> bool:
        """Close the library, waiting at most ``timeout`` seconds for its background work;
        whether that work has ended (the process may then exit with no thread in the model)."""
        try:
            return bool(lib.close(timeout))
        except Exception as exc:
            print(f"skillshelf: closing the library failed: {exc}", file=sys.stderr)
            return False


def _tool(handle: LibraryHandle, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool function, counted as a request under way, with every failure as an
    ``isError`` result of one line naming the problem and the fix: domain errors as they
    are, anything else (an OSError, a database error) with its kind, its traceback logged to
    stderr rather than sent to the model."""
    from ..errors import SkillshelfError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with handle.call():
                return fn(*args, **kwargs)
        except ToolError:
            raise
        except (SkillshelfError, ResourceError) as exc:
            raise ToolError(_message(exc)) from None
        except Exception as exc:
            log.error("tool %s failed", fn.__name__, exc_info=True)
            raise ToolError(_message(exc)) from None

    return wrapper


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("skillshelf_mcp_client", default="mcp")
def _client_name(context: Any) -> str:
    """``mcp:<the client's clientInfo name>`` (e.g. ``mcp:claude-code``), or ``mcp``."""
    try:
        info = context.request_context.session.client_params.client_info
        name = " ".join(str(info.name).split())[:40]
    except Exception:
        return "mcp"
    return f"mcp:{name}" if name else "mcp"


class SkillshelfServer(MCPServer):
    """MCPServer whose resources are the library's files (listed live, page by page)."""

    def __init__(self, handle: LibraryHandle, **kw: Any):
        from mcp.server.lowlevel import NotificationOptions
        from mcp.server.subscriptions import InMemorySubscriptionBus

        self.handle = handle
        bus = InMemorySubscriptionBus()
        self.changes = handle.changes = Changes(handle, bus)
        super().__init__(extensions=[SkillsExtension(handle, self.changes)], subscriptions=bus, **kw)
        low = self._lowlevel_server
        low.middleware.append(declared(low.extensions))     # in initialize on every version (SEP-2640)
        # resources/list pages with a cursor: the low-level server's own handler API (the
        # high-level one returns a single page)
        low.add_request_handler("resources/list", PaginatedRequestParams, self._list_resources_page)
        # Change notifications on both wires (``changes``). 2025-11-25: resources/subscribe and
        # unsubscribe, and listChanged declared in initialize -- MCPServer registers neither and
        # passes no NotificationOptions, so it declares ``subscribe: false, listChanged: false``
        # and answers -32601 (upstream: let MCPServer take notification options and a subscribe
        # handler, as the lowlevel Server does). 2026-07-28: the SDK's listen handler, told which
        # URIs its stream watches.
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe)
        low.create_initialization_options = functools.partial(  # type: ignore[method-assign]
            low.create_initialization_options, NotificationOptions(resources_changed=True))
        # server/discover lists every version this server negotiates: the SDK's lists only
        # 2026-07-28 although initialize negotiates 2025-11-25 and older (upstream: derive
        # supportedVersions from HANDSHAKE_PROTOCOL_VERSIONS too)
        discover = low._handle_discover

        async def discover_all(ctx: Any, params: RequestParams) -> Any:
            from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

            versions = [*reversed(MODERN_PROTOCOL_VERSIONS), *reversed(HANDSHAKE_PROTOCOL_VERSIONS)]
            return (await discover(ctx, params)).model_copy(update={"supported_versions": versions})

        low.add_request_handler("server/discover", RequestParams, discover_all)
        listen = low._request_handlers.get("subscriptions/listen")
        if listen is not None:
            inner = listen.handler

            async def listen_watching(ctx: Any, params: SubscriptionsListenRequestParams) -> Any:
                uris = params.notifications.resource_subscriptions or ()
                await anyio.to_thread.run_sync(self.changes.prepare, uris)
                with self.changes.listening(uris):
                    return await inner(ctx, params)

            low.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, listen_watching)

    async def _subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        session = _session(ctx)
        if session is not None:
            await anyio.to_thread.run_sync(self.changes.prepare, [str(params.uri)])
            self.changes.subscribe(session, str(params.uri))
        return EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        session = _session(ctx)
        if session is not None:
            self.changes.unsubscribe(session, str(params.uri))
        return EmptyResult()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None):
        # Arguments that fail the input schema are refused by the SDK before the tool runs,
        # as pydantic's multi-line report with a link: said in plain words, one line with the fix.
        from pydantic import ValidationError

        from ..errors import SkillshelfError

        # An unknown tool is a protocol error (invalid params, -32602), as the spec classes it;
        # the SDK answers it as a tool result with isError (upstream: raise MCPError(-32602)
        # from ToolManager.call_tool for a name it does not have).
        if (tool := self._tool_manager.get_tool(name)) is None:
            names = ", ".join(t.name for t in self._tool_manager.list_tools())
            raise MCPError(INVALID_PARAMS, f"unknown tool {name[:80]!r}. Fix: call one of {names}",
                           data={"name": name[:200]})
        if (unknown := mcp_text.unknown_arguments(name, arguments, tool.parameters)) is not None:
            raise ToolError(unknown)    # a misspelt `limt` ignored would look like an answer to what was meant
        try:
            caller = await self.handle.who(context)
        except SkillshelfError as exc:
            raise ToolError(_message(exc)) from None
        # usage rows name the connected client (its clientInfo; on a team store the token's
        # name, whatever the client calls itself): the caps of learning are per client
        token = CLIENT.set(caller.name if caller is not None else _client_name(context))
        who = CALLER.set(caller)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(mcp_text.bad_arguments(name, cause.errors(include_url=False),
                                                       tool.parameters)) from cause
            raise
        finally:
            CALLER.reset(who)
            CLIENT.reset(token)
            self.handle.answered()

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        # An unknown prompt is invalid params (-32602). The SDK raises ValueError, which its
        # dispatcher answers with code 0 (2025-11-25) or -32603 (2026-07-28) (upstream: raise
        # MCPError(INVALID_PARAMS) from MCPServer.get_prompt for a name it does not have).
        if self._prompt_manager.get_prompt(name) is None:
            names = ", ".join(p.name for p in self._prompt_manager.list_prompts())
            raise MCPError(INVALID_PARAMS, f"unknown prompt {name[:80]!r}. Fix: get one of {names}",
                           data={"name": name[:200]})
        return await super().get_prompt(name, arguments, context)

    async def list_tools(self):
        return [t.model_copy(update=mcp_text.advertised(t.input_schema, t.output_schema))
                for t in await super().list_tools()]

    def resources_page(self, cursor: str | None = None) -> tuple[list[Resource], str | None]:
        """One page of resources (each skill's SKILL.md, then its files) and the cursor of
        the next (``Library.resource_page``)."""
        page, nxt = _resource_call(self.handle, "", lambda r: r.resource_page(cursor, RESOURCES_PAGE))
        return [Resource(**entry) for entry in page], nxt

    async def list_resources(self) -> list[Resource]:
        """The first page (``resources/list`` itself pages with a cursor)."""
        return (await anyio.to_thread.run_sync(self.resources_page, None))[0]

    async def _list_resources_page(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        self.changes.seen(_session(ctx))
        page, nxt = await _as_caller(self.handle, ctx, self.resources_page, params.cursor if params else None)
        return ListResourcesResult(resources=page, next_cursor=nxt)

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return [ResourceTemplate(uri_template="skill://{skill_path}/{file}", name="skill-file",
                                 description="A file of a skill; SKILL.md is the skill itself",
                                 mime_type="text/markdown")]

    def read_resource_sync(self, uri: str) -> list[ReadResourceContents]:
        missing = INVALID_PARAMS if PROTOCOL.get() in MODERN else RESOURCE_NOT_FOUND
        data, mime = _resource_call(self.handle, uri, lambda r: r.read_resource(uri), missing=missing)
        try:
            content: str | bytes = data.decode("utf-8")
        except UnicodeDecodeError:
            content = data
        return [ReadResourceContents(content=content, mime_type=mime)]

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents]:
        self.changes.seen(_session(context))
        return await _as_caller(self.handle, context, self.read_resource_sync, str(uri))

    async def run_stdio_async(self) -> None:
        """As ``MCPServer``'s, with a request the SDK cannot parse (a lone surrogate in its
        JSON) answered instead of dropped (``mcp_stdio.AnswerUnreadable``)."""
        from mcp.server.stdio import stdio_server

        from .stdio import AnswerUnreadable

        async with stdio_server() as (read, write):
            await self._lowlevel_server.run(AnswerUnreadable(read, write), write,
                                            self._lowlevel_server.create_initialization_options())


# --- tools ----------------------------------------------------------------------------------------

def build_server(factory: Callable[[], Any], *, team: bool = False, token: str | None = None) -> SkillshelfServer:
    """The server of the library ``factory()`` opens; ``team``: on a team store, ``token``: the
    SKILLSHELF_TOKEN a stdio server serves."""
    handle = LibraryHandle(factory, team=team, token=token)
    server = SkillshelfServer(handle, name="skillshelf", version=__version__, instructions=INSTRUCTIONS,
                              title="skillshelf skill library")
    ro = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    tool = functools.partial(_tool, handle)

    @tool
    def search_skills(query: str, limit: int = 5, mode: str = "find", repo_scope: str = "all",
                      current_repo: str = "", tags: str = "", skill_type: str = "", judge: bool = False) \
            -> Annotated[CallToolResult, SearchOut]:
        handle.allow(ACTIONS["search_skills"])
        lib = handle.get()
        kw = dict(limit=limit, mode=mode, repo_scope=repo_scope, current_repo=current_repo or None,
                  tags=tags or None, skill_type=skill_type or None, client=CLIENT.get())
        # judge=true asks the owner's model judge to rerank the shortlist; where none is
        # configured the plain order is returned and the result says so (not an error: an
        # agent cannot configure one)
        judged = judge and lib.judge_configured()
        res = lib.judged_search(query, judge="rerank", nowait=True, **kw) if judged else lib.search_nowait(query, **kw)
        keep = ("id", "name", "skill_type", "repo", "version", "tags", "description", "score", "match",
                "lineage", "expired", "active", "copies", "wildcard", "ref", "learned")
        risks = mcp_text.risks_of(lib, res.hits)
        hits = [{k: v for k, v in h.as_dict().items() if k in keep and v not in (None, [], False)}
                | {"match": h.match, "score": h.score, "risk": risks[h.id]} | (res.hit_extra(h) if judged else {})
                for h in res.hits]
        lines = [mcp_text.hit_line(i, h) for i, h in enumerate(hits, 1)]
        lines.append(mcp_text.next_step(confident=res.confident, any_hits=bool(hits), query_id=res.query_id,
                                        read_only=lib.read_only, partial=res.partial))
        if res.degraded:
            lines.append(f"degraded: {res.degraded}")
        data: dict[str, Any] = {"hits": hits, "confident": res.confident, "query_id": res.query_id,
                                "degraded": res.degraded}
        if judged:
            data |= res.judge_summary()
            lines.append(f"judge: {res.judge}" + (f"; pick: {res.pick}" if res.pick else ""))
        elif judge:
            data["judge"] = "off: no model judge is configured in this library (plain order)"
            lines.append(f"judge: {data['judge']}")
        return _result("\n".join(lines), data)

    @tool
    def get_skill(name: str, section: str = "", offset: int = 0) -> Annotated[CallToolResult, SkillOut]:
        from ..errors import ValidationError
        from ..text import trim

        handle.allow(ACTIONS["get_skill"])
        lib = handle.get()
        rec, body = lib.read(name, section or None)      # for an agent: held skills are refused
        if offset < 0 or (offset and offset >= len(body)):
            raise ValidationError(f"offset {offset} is outside {rec.name}'s {'section' if section else 'body'} "
                                  f"({len(body):,} characters)",
                                  fix="pass the next_offset of the previous get_skill call, or 0")
        files = rec.files()
        shown_files, files_more, files_line = mcp_text.files_line(lambda f: lib.skill_uri(rec.id, f), list(files),
                                                                  files.more)
        meta = {"display_name": rec.display_name, "description": trim(rec.description, 1024),
                "skill_type": rec.skill_type, "tags": rec.tags, "repo": rec.repo, "lineage": rec.lineage,
                "active": rec.active, "expired": rec.expired, "status": rec.status_note, "path": rec.path}
        risk = mcp_text.risks_of(lib, [rec])[rec.id]
        data = {"name": rec.name, "id": rec.id, "version": rec.version, "risk": risk, "metadata": meta,
                "files": shown_files, "files_more": files_more, "section": section or None, "offset": offset}
        head = f"# {rec.display_name} (v{rec.version}, {rec.id})"
        if rec.status_note:           # merged into another, deprecated, past its TTL: said before the text
            head += f"\nNote: this skill is {rec.status_note}."
        if risk in ("medium", "high") and (said := lib.supply.headline(rec.id)):
            head = f"{said}\n{head}"
        if files_line and offset == 0:
            head += "\n" + files_line
        # what the page may take: the cap less the header, the structured part and a footer
        budget = MAX_RESULT_CHARS - len(head) - len(str(data)) - 600
        text, nxt = mcp_text.page_of(body, offset, budget)
        data.update(shown_chars=len(text), total_chars=len(body), next_offset=nxt)
        out = f"{head}\n\n{text}"
        if nxt is not None:
            heads: list[str] = []
            if not section:
                heads = rec.sections()[:12]
            out += mcp_text.read_on(shown_to=offset + len(text), total=len(body), ref=rec.id, section=section,
                                    next_offset=nxt, heads=heads)
        return _result(out, data)

    @tool
    def save_skill(action: str, name: str = "", description: str = "", body: str = "", skill_type: str = "",
                   lesson: str = "", repo_name: str = "", tags: str = "", reason: str = "",
                   target_skill_name: str = "", source_skill_names: str = "", ttl_days: int = 0,
                   display_name: str = "", author: str = "") -> Annotated[CallToolResult, SaveOut]:
        # every action is an agent's, under the write policy (approving is a curator's, and
        # not a tool); on a team store the author is the token's name, whatever ``author`` says
        caller = handle.allow(ACTIONS["save_skill"])
        lib = handle.get()
        with lib.exclusive(what="saving a skill"):
            res = lib.save(action, name=name, description=description, body=body, skill_type=skill_type,
                           lesson=lesson, repo_name=repo_name, tags=tags, reason=reason,
                           target_skill_name=target_skill_name, source_skill_names=source_skill_names,
                           ttl_days=ttl_days or None, display_name=display_name,
                           author=caller.name if caller is not None else author or "agent", by="agent")
        text = res.message
        for d in res.duplicates:
            text += f"\nsimilar: {d['name']} ({d['similarity']}) — {d['suggestion']}"
        return _result(text, {"status": res.status, "name": res.name, "version": res.version,
                              "changelog": res.changelog, "duplicates": res.duplicates, "message": res.message,
                              "findability": res.findability})

    @tool
    def report_outcome(skill: str, worked: bool, note: str = "",
                       query_id: int | None = None) -> Annotated[CallToolResult, Out]:
        handle.allow(ACTIONS["report_outcome"])
        lib = handle.get()
        # the local database's one writer; not for a team store's (PostgreSQL takes many at once)
        with contextlib.nullcontext() if lib.team else lib.writer(what="recording this outcome"):
            res = lib.report_outcome(skill, worked, note=note, query_id=query_id, client=CLIENT.get())
        rate = res["success_rate"]
        return _result(f"recorded: {res['skill']} {'worked' if worked else 'did not work'} "
                       f"({res['reports']} reports, success {rate if rate is not None else '-'})", res)

    @tool
    def skill_stats() -> Annotated[CallToolResult, Out]:
        handle.allow(ACTIONS["skill_stats"])
        return _result(*mcp_text.stats(handle.get().stats()))

    @tool
    def reindex() -> Annotated[CallToolResult, Out]:
        handle.allow(ACTIONS["reindex"])
        lib = handle.get()
        with lib.exclusive(what="reindexing"):
            rep = lib.sync()
        d = rep.as_dict()
        d["invalid_files"] = d["invalid_files"][:20]
        return _result(f"added {rep.added}, updated {rep.updated}, removed {rep.removed}, "
                       f"invalid {len(rep.invalid)}, embedded {rep.embedded}", d)

    server.add_tool(search_skills, title="Search skills", annotations=ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
        description="Find skills for a task; call before non-trivial work, with the task in plain words. "
                    "Returns metadata only (name, type, tags, description, match likely|weak) and 'confident'. "
                    "mode=brainstorm adds variety; repo_scope=current: this repo + global; judge=true: the "
                    "owner's model judge reranks (if configured).")
    server.add_tool(get_skill, title="Get a skill", annotations=ro,
                    description="Read a skill by name or id (from search_skills). section='Solution' returns only "
                                "that section; a long body comes in parts (pass next_offset as offset). Lists the "
                                "skill's other files.")
    server.add_tool(save_skill, title="Save a skill", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
        description="Record knowledge. action: ARCHIVE (new skill: name, description, body), FIX (improve "
                    "target_skill_name; lesson goes to Lessons Learned), DERIVE (new name from target_skill_name), "
                    "MERGE (comma-separated source_skill_names). Versioned; the owner's policy may hold it as a "
                    "draft for review.")
    server.add_tool(report_outcome, title="Report outcome", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False),
        description="After using a skill, say if it worked (worked=true/false, a short note why), with the "
                    "query_id from search_skills. This is how the library learns.")
    server.add_tool(skill_stats, title="Library statistics", annotations=ro,
                    description="Curation view: most used, low-success, never-surfaced skills and unmet requests.")
    server.add_tool(reindex, title="Reindex", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
        description="Rescan skill folders now (changes are also picked up automatically). Returns counts.")

    @server.prompt(name="use-skills", title="Find, use and report skills",
                   description="How to work with the skill library during a task")
    def use_skills(task: str = "") -> str:
        return mcp_text.use_skills(task)

    handle.start()
    return server


# --- transports -----------------------------------------------------------------------------------

def serve(factory: Callable[[], Any], *, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
          token: str = "", team: bool = False) -> None:
    """Serve the library ``factory()`` opens, over stdio until the client closes stdin
    (``mcp_stdio.run``) or over HTTP until stopped (``mcp_http.run``); then end the process
    (``_end``). ``ConfigError`` before anything is opened or said for an HTTP bind that
    cannot be served, or a stdio server on a team store without ``SKILLSHELF_TOKEN``.

    On a team store (``team``) the library is opened before the first request is read: a
    store that cannot be opened, or (stdio) a token it does not know, is one line on stderr
    and exit code 1."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    # not the pool's warning per failed attempt: the one line naming the store and the fix
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    if http:
        from .http import run

        server, code = run(lambda: build_server(factory, team=team), host=host, port=port, token=token, team=team)
    else:
        from .stdio import run as run_stdio, team_token

        server = build_server(factory, team=team, token=team_token() if team else None)
        if team and (refused := server.handle.opened()) is not None:
            print(f"error: {refused}", file=sys.stderr)
            _end(server, 1)
        code = run_stdio(server, end=lambda code: _end(server, code))   # Ctrl+C: a bounded end
    _end(server, code)


def _end(server: SkillshelfServer, code: int) -> None:
    """Stop and end the process: new requests are refused, the requests under way and the
    background indexing get ``SHUTDOWN_WAIT`` seconds to end (``LibraryHandle.close``: the
    library is closed, its threads joined), and the process exits with ``code``.

    It exits with ``os._exit`` after flushing what it wrote: the interpreter's finalisation
    is skipped. A native thread still running then -- onnxruntime embedding for a request
    the client abandoned, a sync that did not stop in time -- aborted the whole process in
    its C++ runtime when it next took the GIL ("terminate called without an active
    exception", exit -6); everything that finalisation would close is closed above."""
    import os

    closer = threading.Thread(target=server.handle.close, name="skillshelf-close", daemon=True)
    closer.start()
    closer.join(SHUTDOWN_WAIT + 0.5)
    if closer.is_alive():
        print("skillshelf: background work did not stop in time; exiting anyway", file=sys.stderr)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
