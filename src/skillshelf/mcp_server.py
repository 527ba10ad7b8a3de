"""The MCP adapter: tools, skill resources, the Skills Extension listing and a prompt,
over stdio (default) or Streamable HTTP.

Only ``mcp`` and the standard library are imported at module level: the library (numpy,
SQLite, the embedding model) is opened in a background thread as the server starts, so
``tools/list`` answers as fast as a bare server, and the index is brought up to date in
another (``Library.start_indexing``): no request waits for a sync. Nothing here writes to
stdout: in the stdio transport stdout is the protocol. Every tool calls one ``Library``
method and formats what it returns.
"""

from __future__ import annotations

import functools
import contextvars
import hashlib
import logging
import mimetypes
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, unquote

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (INVALID_PARAMS, CallToolResult, ListResourcesResult, PaginatedRequestParams, RequestParams,
                       Resource, ResourceTemplate, TextContent, ToolAnnotations)
from pydantic import BaseModel, Field, StrictStr

from .version import __version__

log = logging.getLogger("skillshelf.mcp")

INSTRUCTIONS = (
    "skillshelf is a library of agent skills (SKILL.md). Before a non-trivial task, call search_skills with the "
    "task in your own words; read the one skill that fits with get_skill; after using it, call report_outcome "
    "(worked true/false, with a short note). Search returns metadata only: never guess a skill's content."
)
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"

# One tool result stays under this many characters (DESIGN: Claude Code truncates past ~25k
# tokens and smaller clients hold less); a longer body is read on with `offset` or by section.
# A module constant until the configuration has a setting for it.
MAX_RESULT_CHARS = 25_000
# Names of a skill's files shown by get_skill (the rest are counted; resources/list has all).
FILES_SHOWN_CHARS = 3_000
# resources/list and skills/list pages: ~50 entries are ~17 KB of JSON, which any client holds.
RESOURCES_PAGE = 50
SKILLS_PAGE = 50
# How long a request waits for the library to open (a database another process is migrating).
OPEN_WAIT = 20.0


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


class Out(BaseModel):
    """A generic object result."""

    model_config = {"extra": "allow"}


# --- the library, opened off the request path --------------------------------------------------

class LibraryHandle:
    """Opens the Library in a background thread at start (the Store and the searcher: well
    under a second) and then starts its background indexing; requests wait only for the
    opening, never for a sync."""

    def __init__(self, factory: Callable[[], Any]):
        self._factory = factory
        self._lib: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        self._catalog: tuple[str | None, list[Any]] | None = None

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
            print(f"skillshelf: cannot open the library: {exc}", file=sys.stderr)
            self._ready.set()
            return
        try:
            # before any request gets the library: from here on no request syncs itself
            lib.start_indexing()
        except Exception as exc:  # the library still answers from what is indexed
            print(f"skillshelf: background indexing did not start: {exc}", file=sys.stderr)
        self._lib = lib
        self._ready.set()

    def skills(self) -> list[Any]:
        """The active skills ordered by name, without their bodies, for listings that page
        (resources/list, skills/list): read once per index generation, not once per page
        (a full read of 5.3k skills takes ~0.5-1 s)."""
        import dataclasses

        lib = self.get()
        gen = lib.store.get_meta("generation", "0")
        with self._lock:
            if self._catalog is not None and self._catalog[0] == gen:
                return self._catalog[1]
        recs = [dataclasses.replace(r, body="") for r in lib.list(include_inactive=False)]
        with self._lock:
            self._catalog = (gen, recs)
        return recs

    def get(self) -> Any:
        self.start()
        if not self._ready.wait(OPEN_WAIT):
            raise ToolError("the library is still opening (its database is busy). Fix: try again in a minute")
        if self._error is not None:
            raise ToolError(_message(self._error, "the library could not be opened"))
        return self._lib


def _message(exc: BaseException, doing: str = "") -> str:
    """One line naming the problem and the fix, for any exception."""
    import sqlite3

    from .errors import SkillshelfError, cannot_write_error
    from .library import explain

    if isinstance(exc, SkillshelfError):
        from .errors import NotFoundError

        msg, fix = exc.message, exc.fix
        if not fix:   # the model needs a next step even where the library gave none
            fix = ("use a name or id that search_skills returned" if isinstance(exc, NotFoundError)
                   else "check the arguments against the tool's description")
    elif isinstance(exc, (OSError, sqlite3.Error)) and (refused := cannot_write_error(exc, "the library folder")):
        msg, fix = refused.message, refused.fix
    elif isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        msg = f"{exc.strerror or type(exc).__name__}{where}"
        fix = "check that file or folder (it may be missing, unreadable or on a full disk), then try again"
    else:
        msg = f"{type(exc).__name__}: {str(exc).split(' with text ', 1)[0]}"
        if (known := explain(exc)) is not None:
            fix = known.fix
        elif isinstance(exc, sqlite3.Error):
            fix = ("run `skillshelf doctor`; if it reports the database damaged, `skillshelf rebuild` re-indexes"
                   " the files")
        else:
            fix = "try again; if it keeps failing, run `skillshelf doctor` and read the server's log (stderr)"
    msg = " ".join(str(msg).split())[:500]
    if doing:
        msg = f"{doing}: {msg}"
    return f"{msg.rstrip('.')}. Fix: {fix}" if fix else msg


def _tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Every failure of a tool as an ``isError`` result with one line naming the problem
    and the fix: domain errors as they are, anything else (an OSError, a database error)
    with its kind, its traceback logged to stderr rather than sent to the model."""
    from .errors import SkillshelfError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
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


def _page_of(body: str, offset: int, budget: int) -> tuple[str, int | None]:
    """``body[offset:]`` up to ``budget`` characters, cut at a line end where one is near,
    and the offset the next page starts at (None: this is the end)."""
    end = offset + max(budget, 1)
    if end >= len(body):
        return body[offset:], None
    nl = body.rfind("\n", offset + budget // 2, end)
    if nl > offset:
        end = nl + 1
    return body[offset:end], end


# --- the Skills Extension (SEP-2640 draft) ------------------------------------------------------

class _ListParams(RequestParams):
    cursor: StrictStr | None = None


class _GetParams(RequestParams):
    uri: StrictStr


def skill_uri(rec_id: str, file: str = "SKILL.md") -> str:
    root, _, rel = rec_id.partition(":")
    path = root if rel in ("", ".") else f"{root}/{rel}"
    return "skill://" + quote(path, safe="/-_.~") + "/" + quote(file, safe="/-_.~")


def _bad_cursor(cursor: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"invalid cursor {cursor[:40]!r}: pass the nextCursor of the previous page, "
                                    "or none for the first page")


def _index_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise _bad_cursor(cursor)
    return int(cursor)


class SkillsExtension(Extension):
    """Lists each skill with its frontmatter and per-file sha256 digests."""

    identifier = SKILLS_EXTENSION
    page_size = SKILLS_PAGE

    def __init__(self, handle: LibraryHandle):
        self.handle = handle

    def settings(self) -> dict[str, Any]:
        return {"listing": True}

    def methods(self):
        return (MethodBinding("skills/list", _ListParams, self._list, frozenset({"2026-07-28"})),
                MethodBinding("skills/get", _GetParams, self._get, frozenset({"2026-07-28"})))

    def manifest(self, rec) -> dict[str, Any]:
        from .files import MAX_RESOURCE_BYTES, FileRefused, read_bounded

        resources = []
        for f in ["SKILL.md", *rec.files()]:
            p = Path(rec.path) if f == "SKILL.md" else rec.folder / f
            try:
                # bounded: a file that grew past the cap since it was listed is left out, not read
                digest = hashlib.sha256(read_bounded(p, MAX_RESOURCE_BYTES)).hexdigest()
            except (OSError, FileRefused):
                continue
            resources.append({"uri": skill_uri(rec.id, f), "sha256": digest, "mimeType": _mime(f)})
        fm = {"name": rec.name, "description": rec.description}
        if rec.metadata:
            fm["metadata"] = rec.metadata
        return {"uri": skill_uri(rec.id), "frontmatter": fm, "resources": resources}

    def _list_sync(self, cursor: str | None) -> dict[str, Any]:
        start = _index_cursor(cursor)
        recs = self.handle.skills()
        page = recs[start:start + self.page_size]
        out: dict[str, Any] = {"skills": [self.manifest(r) for r in page]}
        if start + self.page_size < len(recs):
            out["nextCursor"] = str(start + self.page_size)
        return out

    async def _list(self, ctx: Any, params: _ListParams) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self._list_sync, params.cursor)

    async def _get(self, ctx: Any, params: _GetParams) -> dict[str, Any]:
        def get() -> dict[str, Any]:
            try:
                rec = _resolve_uri(self.handle.get(), params.uri)[0]
            except ResourceNotFoundError as exc:   # a protocol error the client can act on, not -32603
                raise MCPError(INVALID_PARAMS, str(exc), data={"uri": params.uri}) from None
            return {"skill": self.manifest(rec)}

        return await anyio.to_thread.run_sync(get)


def _untitled(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "title" and isinstance(v, str):
                continue
            if k == "properties" and isinstance(v, dict):
                out[k] = {name: _untitled(sub) for name, sub in v.items()}
            else:
                out[k] = _untitled(v)
        return out
    if isinstance(schema, list):
        return [_untitled(x) for x in schema]
    return schema


def _mime(file: str) -> str:
    if file.endswith(".md"):
        return "text/markdown"
    return mimetypes.guess_type(file)[0] or "text/plain"


def _resolve_uri(lib: Any, uri: str):
    """(record, file path) for ``skill://<root>/<rel>/<file>``. Serves exactly what
    ``SkillRecord.files`` lists (plus SKILL.md): no hidden or dependency folders, nothing
    outside the skill folder (the size and file-kind checks are made by the bounded read)."""
    from .files import contained
    from .errors import ValidationError
    from .sources import SKIP_DIRS

    if not uri.startswith("skill://"):
        raise ResourceNotFoundError(f"not a skill URI: {uri[:200]} (skill URIs look like skill://<root>/<skill>/SKILL.md)")
    path = unquote(uri[len("skill://"):])
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts) or len(parts) < 2:
        raise ResourceNotFoundError(f"bad skill URI: {uri[:200]}")
    # the longest prefix that names a skill wins (skills can nest)
    for cut in range(len(parts) - 1, 0, -1):
        root, rel = parts[0], "/".join(parts[1:cut]) or "."
        row = lib.store.db.execute("SELECT id FROM skills WHERE id = ?", (f"{root}:{rel}",)).fetchone()
        if row:
            rec = lib.get(row[0])
            inner = parts[cut:]
            file = "/".join(inner)
            if file == Path(rec.path).name:
                return rec, Path(rec.path)
            if any(p.startswith(".") or p in SKIP_DIRS for p in inner):
                raise ResourceNotFoundError(f"no file {file!r} in skill {rec.name} (hidden and dependency "
                                            "folders are not served)")
            try:
                target = contained(rec.folder, rec.folder / file)
            except ValidationError:
                raise ResourceNotFoundError(f"no file {file!r} in skill {rec.name}: it leads outside the "
                                            "skill folder") from None
            if not target.exists():
                raise ResourceNotFoundError(f"no file {file!r} in skill {rec.name}")
            return rec, target
    raise ResourceNotFoundError(f"no skill at {uri[:200]}")


CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("skillshelf_mcp_client", default="mcp")


def _client_name(context: Any) -> str:
    """``mcp:<the client's clientInfo name>`` (e.g. ``mcp:claude-code``), or ``mcp``."""
    try:
        info = context.request_context.session.client_params.client_info
        name = " ".join(str(info.name).split())[:40]
    except Exception:   # noqa: BLE001 — no session (in-process calls) or no clientInfo: the plain name
        return "mcp"
    return f"mcp:{name}" if name else "mcp"


class SkillshelfServer(MCPServer):
    """MCPServer whose resources are the library's files (listed live, page by page)."""

    def __init__(self, handle: LibraryHandle, **kw: Any):
        self.handle = handle
        super().__init__(extensions=[SkillsExtension(handle)], **kw)
        # resources/list pages with a cursor: the low-level server's own handler API (the
        # high-level one returns a single page)
        self._lowlevel_server.add_request_handler("resources/list", PaginatedRequestParams,
                                                  self._list_resources_page)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None):
        # Arguments that fail the input schema are refused by the SDK before the tool runs,
        # as pydantic's multi-line report with a link: say it in one line with the fix.
        from pydantic import ValidationError

        # usage rows name the connected client (its clientInfo), not just "mcp": the caps of
        # learning from outcomes are per client
        token = CLIENT.set(_client_name(context))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                errs = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg'][:120]}"
                                 for e in cause.errors()[:5])
                raise ToolError(f"invalid arguments for {name}: {errs}. Fix: pass the parameters in the tool's "
                                "input schema, with their types") from cause
            if str(exc).startswith("Unknown tool"):
                names = ", ".join(t.name for t in self._tool_manager.list_tools())
                raise ToolError(f"{exc}. Fix: call one of {names}") from None
            raise
        finally:
            CLIENT.reset(token)

    async def list_tools(self):
        # Pydantic's generated titles ("Target Skill Name") repeat the property names and
        # cost ~1 KB of every client's context: drop them from what is advertised.
        return [t.model_copy(update={"input_schema": _untitled(t.input_schema),
                                     "output_schema": _untitled(t.output_schema)})
                for t in await super().list_tools()]

    def resources_page(self, cursor: str | None = None) -> tuple[list[Resource], str | None]:
        """One page of resources (each skill's SKILL.md, then its files) and the cursor of
        the next. The cursor is ``<skill index>.<file index>`` in the list ordered by name,
        so only the skills on the page have their folders walked."""
        s, f = 0, 0
        if cursor:
            a, dot, b = cursor.partition(".")
            if not (dot and a.isdigit() and b.isdigit() and len(cursor) <= 19):
                raise _bad_cursor(cursor)
            s, f = int(a), int(b)
        recs = self.handle.skills()
        out: list[Resource] = []
        while s < len(recs):
            rec = recs[s]
            files = ["SKILL.md", *rec.files()]
            while f < len(files):
                if len(out) == RESOURCES_PAGE:
                    return out, f"{s}.{f}"
                name = files[f]
                if f == 0:
                    out.append(Resource(uri=skill_uri(rec.id), name=rec.name, description=rec.description[:200],
                                        mime_type="text/markdown"))
                else:
                    out.append(Resource(uri=skill_uri(rec.id, name), name=f"{rec.name}/{name}", mime_type=_mime(name)))
                f += 1
            s, f = s + 1, 0
        return out, None

    async def list_resources(self) -> list[Resource]:
        """The first page (``resources/list`` itself pages with a cursor)."""
        return (await anyio.to_thread.run_sync(self.resources_page, None))[0]

    async def _list_resources_page(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        page, nxt = await anyio.to_thread.run_sync(self.resources_page, params.cursor if params else None)
        return ListResourcesResult(resources=page, next_cursor=nxt)

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return [ResourceTemplate(uri_template="skill://{skill_path}/{file}", name="skill-file",
                                 description="A file of a skill; SKILL.md is the skill itself",
                                 mime_type="text/markdown")]

    def read_resource_sync(self, uri: str) -> list[ReadResourceContents]:
        from .errors import SkillshelfError
        from .files import MAX_RESOURCE_BYTES, FileRefused, read_bounded

        try:
            rec, target = _resolve_uri(self.handle.get(), uri)
            data = read_bounded(target, MAX_RESOURCE_BYTES)
        except ResourceError:
            raise
        except FileRefused as exc:
            # the file exists but is not served: the request's parameter is at fault
            raise MCPError(INVALID_PARAMS, _message(exc), data={"uri": uri}) from None
        except ToolError as exc:  # the library could not be opened
            raise ResourceError(str(exc)) from None
        except (SkillshelfError, OSError) as exc:
            raise ResourceError(_message(exc)) from None
        try:
            content: str | bytes = data.decode("utf-8")
        except UnicodeDecodeError:
            content = data
        return [ReadResourceContents(content=content, mime_type=_mime(target.name))]

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents]:
        return await anyio.to_thread.run_sync(self.read_resource_sync, str(uri))


# --- tools ----------------------------------------------------------------------------------------

def _hit_text(i: int, h: dict[str, Any]) -> str:
    from .text import trim

    extra = f" ×{h['copies']}" if h.get("copies", 1) > 1 else ""
    flags = "".join(f" [{f}]" for f in ("expired",) if h.get(f))
    # when the name would resolve to another same-named skill, say which one to get
    get = f" (get_skill: {h['ref']})" if h.get("ref") and h["ref"] != h["name"] else ""
    desc = trim(h["description"], 100) if get else h["description"]  # keep 5 hits under ~1.4k chars
    j = h.get("judge") or {}
    said = ""
    if j:
        said = f" (judge: fit {j.get('fit', '?')}" + (f" — {trim(str(j['why']), 120)}" if j.get("why") else "") + ")"
    return f"{i}. {h['name']}{extra} [{h['match']}]{flags}{get} — {desc}{said}"


def _files_line(rec_id: str, files: list[str], more: int) -> tuple[list[str], int, str]:
    """(names shown, names left out, the text line) within ``FILES_SHOWN_CHARS``."""
    shown: list[str] = []
    used = 0
    for f in files:
        if used + len(f) + 2 > FILES_SHOWN_CHARS:
            break
        shown.append(f)
        used += len(f) + 2
    left = len(files) - len(shown) + more
    if not shown:
        return shown, left, (f"files: {left} (list them with resources/list)" if left else "")
    line = "files: " + ", ".join(shown) + (f", … ({left} more: resources/list)" if left else "")
    return shown, left, line + f"  (read as resources: {skill_uri(rec_id, shown[0])})"


def build_server(factory: Callable[[], Any]) -> SkillshelfServer:
    handle = LibraryHandle(factory)
    server = SkillshelfServer(handle, name="skillshelf", version=__version__, instructions=INSTRUCTIONS,
                              title="skillshelf skill library")
    ro = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)

    @_tool
    def search_skills(query: str, limit: int = 5, mode: str = "find", repo_scope: str = "all",
                      current_repo: str = "", tags: str = "", skill_type: str = "", judge: bool = False) \
            -> Annotated[CallToolResult, SearchOut]:
        lib = handle.get()
        kw = dict(limit=limit, mode=mode, repo_scope=repo_scope, current_repo=current_repo or None,
                  tags=tags or None, skill_type=skill_type or None, client=CLIENT.get())
        # judge=true asks the owner's model judge to rerank the shortlist; where none is
        # configured the plain order is returned and the result says so (not an error: an
        # agent cannot configure one)
        judged = judge and lib.judge_configured()
        res = lib.judged_search(query, judge="rerank", nowait=True, **kw) if judged else lib.search_nowait(query, **kw)
        keep = ("id", "name", "skill_type", "repo", "version", "tags", "description", "score", "match",
                "lineage", "expired", "active", "copies", "wildcard", "ref")
        hits = [{k: v for k, v in h.as_dict().items() if k in keep and v not in (None, [], False)}
                | {"match": h.match, "score": h.score} | (res.hit_extra(h) if judged else {}) for h in res.hits]
        lines = [_hit_text(i, h) for i, h in enumerate(hits, 1)]
        read_only = lib.store.read_only is not None
        qid = (f"query_id={res.query_id}" if res.query_id is not None
               else "query not logged (the library is read-only: outcomes cannot be recorded)" if read_only
               else "query not logged (see degraded): report_outcome without query_id")
        lines.append(("confident match" if res.confident else "no confident match (possible gap)")
                     + f"; {qid}. Next: get_skill(name)" + ("." if read_only else ", then report_outcome."))
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

    @_tool
    def get_skill(name: str, section: str = "", offset: int = 0) -> Annotated[CallToolResult, SkillOut]:
        from .errors import ValidationError
        from .text import trim

        lib = handle.get()
        rec, body = lib.read(name, section or None)
        if offset < 0 or (offset and offset >= len(body)):
            raise ValidationError(f"offset {offset} is outside {rec.name}'s {'section' if section else 'body'} "
                                  f"({len(body):,} characters)",
                                  fix="pass the next_offset of the previous get_skill call, or 0")
        files = rec.files()
        shown_files, files_more, files_line = _files_line(rec.id, list(files), files.more)
        meta = {"display_name": rec.display_name, "description": trim(rec.description, 1024),
                "skill_type": rec.skill_type, "tags": rec.tags, "repo": rec.repo, "lineage": rec.lineage,
                "active": rec.active, "expired": rec.expired, "path": rec.path}
        data = {"name": rec.name, "id": rec.id, "version": rec.version, "metadata": meta, "files": shown_files,
                "files_more": files_more, "section": section or None, "offset": offset}
        head = f"# {rec.display_name} (v{rec.version}, {rec.id})"
        if files_line and offset == 0:
            head += "\n" + files_line
        # what the page may take: the cap less the header, the structured part and a footer
        budget = MAX_RESULT_CHARS - len(head) - len(str(data)) - 600
        text, nxt = _page_of(body, offset, budget)
        data.update(shown_chars=len(text), total_chars=len(body), next_offset=nxt)
        out = f"{head}\n\n{text}"
        if nxt is not None:
            out += (f"\n\n[shown {offset + len(text):,} of {len(body):,} characters; read on with "
                    f"get_skill(name={rec.id!r}{f', section={section!r}' if section else ''}, offset={nxt})")
            if not section:
                from .skill import headings

                heads = [h for lvl, h in headings(body) if lvl <= 2][:12]
                if heads:
                    out += ", or one section: " + ", ".join(trim(h, 60) for h in heads)
            out += "]"
        return _result(out, data)

    @_tool
    def save_skill(action: str, name: str = "", description: str = "", body: str = "", skill_type: str = "",
                   lesson: str = "", repo_name: str = "", tags: str = "", reason: str = "",
                   target_skill_name: str = "", source_skill_names: str = "", ttl_days: int = 0,
                   display_name: str = "", author: str = "") -> Annotated[CallToolResult, SaveOut]:
        lib = handle.get()
        with lib.exclusive(what="saving a skill"):
            res = lib.save(action, name=name, description=description, body=body, skill_type=skill_type,
                           lesson=lesson, repo_name=repo_name, tags=tags, reason=reason,
                           target_skill_name=target_skill_name, source_skill_names=source_skill_names,
                           ttl_days=ttl_days or None, display_name=display_name, author=author or "agent")
        text = res.message
        for d in res.duplicates:
            text += f"\nsimilar: {d['name']} ({d['similarity']}) — {d['suggestion']}"
        return _result(text, {"status": res.status, "name": res.name, "version": res.version,
                              "changelog": res.changelog, "duplicates": res.duplicates, "message": res.message})

    @_tool
    def report_outcome(skill: str, worked: bool, note: str = "",
                       query_id: int | None = None) -> Annotated[CallToolResult, Out]:
        lib = handle.get()
        with lib.writer(what="recording this outcome"):
            res = lib.report_outcome(skill, worked, note=note, query_id=query_id, client=CLIENT.get())
        rate = res["success_rate"]
        return _result(f"recorded: {res['skill']} {'worked' if worked else 'did not work'} "
                       f"({res['reports']} reports, success {rate if rate is not None else '-'})", res)

    @_tool
    def skill_stats() -> Annotated[CallToolResult, Out]:
        lib = handle.get()
        st = lib.stats()
        data = {"queries": st.queries, "reports": st.reports, "report_rate": round(st.report_rate, 3),
                "most_used": [u.as_dict() for u in st.most_used[:10]],
                "low_success": [u.as_dict() for u in st.low_success[:10]],
                "gaps": [g.as_dict() for g in st.gaps[:10]],
                "never_surfaced": len(st.never_surfaced),
                "never_surfaced_sample": [x["name"] for x in st.never_surfaced[:10]]}
        lines = [f"{st.queries} queries, {st.reports} reports (report rate {st.report_rate:.0%})",
                 "most used: " + (", ".join(f"{u.name} ({u.worked}/{u.reports})" for u in st.most_used[:5]) or "-"),
                 "low success: " + (", ".join(f"{u.name} ({u.worked}/{u.reports})" for u in st.low_success[:5]) or "-"),
                 "gaps: " + ("; ".join(f"{g.query} ×{g.count}" for g in st.gaps[:5]) or "-"),
                 f"never surfaced: {len(st.never_surfaced)} skills"]
        return _result("\n".join(lines), data)

    @_tool
    def reindex() -> Annotated[CallToolResult, Out]:
        lib = handle.get()
        with lib.exclusive(what="reindexing"):
            rep = lib.sync()
        d = rep.as_dict()
        d["invalid_files"] = d["invalid_files"][:20]
        return _result(f"added {rep.added}, updated {rep.updated}, removed {rep.removed}, "
                       f"invalid {len(rep.invalid)}, embedded {rep.embedded}", d)

    server.add_tool(search_skills, title="Search skills", annotations=ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=False, openWorldHint=False),
        description="Find skills for a task. Call before non-trivial work; describe the task in plain words. "
                    "Returns metadata only (name, type, tags, short description, match likely|weak) and "
                    "'confident'. mode=brainstorm adds variety; repo_scope=current keeps this repo + global. "
                    "judge=true: the owner's model judge reranks (where configured).")
    server.add_tool(get_skill, title="Get a skill", annotations=ro,
                    description="Read one skill's instructions by name or id (from search_skills). "
                                "section='Solution' returns only that section. A long body comes in parts: "
                                "pass the next_offset it returns as offset. Lists the skill's other files.")
    server.add_tool(save_skill, title="Save a skill", annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False),
        description="Record knowledge. action: ARCHIVE (new skill: name, description, body), FIX (improve "
                    "target_skill_name; lesson is added to Lessons Learned), DERIVE (new name from "
                    "target_skill_name), MERGE (source_skill_names, comma-separated). Versioned; the owner's "
                    "write policy may keep it as a draft for review.")
    server.add_tool(report_outcome, title="Report outcome", annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False),
        description="After using a skill, say whether it worked (worked=true/false, a short note on why). "
                    "Pass the query_id from search_skills. This is how the library learns.")
    server.add_tool(skill_stats, title="Library statistics", annotations=ro,
                    description="Curation view: most used, low-success, never-surfaced skills and unmet requests.")
    server.add_tool(reindex, title="Reindex", annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False),
        description="Rescan skill folders now (changes are also picked up automatically). Returns counts.")

    @server.prompt(name="use-skills", title="Find, use and report skills",
                   description="How to work with the skill library during a task")
    def use_skills(task: str = "") -> str:
        task = " ".join(task.split())
        t = f" The task: {task}" + ("" if task.endswith((".", "!", "?")) else ".") if task else ""
        return ("Before you start, call search_skills with the task in your own words." + t +
                " If a hit fits (match 'likely'), read it with get_skill and follow it. When done, call "
                "report_outcome with worked=true or false and a one-line note on what happened, passing the "
                "query_id. If nothing fits ('no confident match') and you solve it yourself, consider "
                "save_skill(action='ARCHIVE') with what you learned; if a skill was wrong, save_skill("
                "action='FIX', target_skill_name=..., lesson=...).")

    handle.start()
    return server


# --- transports -----------------------------------------------------------------------------------

from .net import LOOPBACK  # noqa: E402


def http_app(server: SkillshelfServer, *, host: str, port: int, token: str = ""):
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


def serve(factory: Callable[[], Any], *, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
          token: str = "") -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if not http:
        build_server(factory).run("stdio")
        return
    from .errors import ConfigError

    if host not in LOOPBACK and not token:
        raise ConfigError(f"binding {host} exposes the library beyond this machine",
                          fix="set SKILLSHELF_HTTP_TOKEN (clients send 'Authorization: Bearer <token>'), "
                              "or bind 127.0.0.1")
    from .net import bind_socket

    sock = bind_socket(host, port, default_port=8765)   # before anything says it is listening
    import uvicorn

    app = http_app(build_server(factory), host=host, port=port, token=token)
    shown = f"[{host}]" if ":" in host else host
    print(f"skillshelf MCP over Streamable HTTP at http://{shown}:{port}/mcp", file=sys.stderr)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


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
