"""The MCP adapter: tools, skill resources, the Skills Extension listing and a prompt,
over stdio (default) or Streamable HTTP.

Only ``mcp`` and the standard library are imported at module level: the library (numpy,
SQLite, the embedding model) is opened in a background thread as the server starts, so
``tools/list`` answers as fast as a bare server. Nothing here writes to stdout: in the
stdio transport stdout is the protocol. Every tool calls one ``Library`` method.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, unquote

from mcp.server import MCPServer
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import (CallToolResult, RequestParams, Resource, ResourceTemplate, TextContent,
                       ToolAnnotations)
from pydantic import BaseModel, Field, StrictStr

log = logging.getLogger("skillshelf.mcp")

INSTRUCTIONS = (
    "skillshelf is a library of agent skills (SKILL.md). Before a non-trivial task, call search_skills with the "
    "task in your own words; read the one skill that fits with get_skill; after using it, call report_outcome "
    "(worked true/false, with a short note). Search returns metadata only: never guess a skill's content."
)
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"


# --- output models (kept flat: they are sent with every tools/list) -------------------------

class SearchOut(BaseModel):
    hits: list[dict[str, Any]]
    confident: bool
    query_id: int | None = None
    degraded: str | None = None


class SkillOut(BaseModel):
    name: str
    id: str
    version: int
    body: str
    metadata: dict[str, Any]
    files: list[str]


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
    """Opens the Library in a background thread at start; tools wait for it."""

    def __init__(self, factory: Callable[[], Any]):
        self._factory = factory
        self._lib: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._started = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._open, name="skillshelf-open", daemon=True).start()

    def _open(self) -> None:
        try:
            lib = self._factory()
            # Serve from the index at once and rescan the files right after, off the request
            # path (changes made while the server was down show up within about a second).
            # An empty index is synced first: there would be nothing to serve.
            fresh = lib.count() == 0
            lib.warm(sync=fresh)
            lib.watch(now=not fresh)
            self._lib = lib
        except BaseException as exc:  # reported to every tool call, never kills the server
            self._error = exc
            print(f"skillshelf: cannot open the library: {exc}", file=sys.stderr)
        finally:
            self._ready.set()

    def get(self) -> Any:
        self.start()
        self._ready.wait()
        if self._error is not None:
            raise ToolError(f"the library could not be opened: {self._error}")
        return self._lib


def _fail(exc: Exception) -> ToolError:
    """A domain error as a tool error the model can act on."""
    msg = getattr(exc, "message", None) or str(exc)
    fix = getattr(exc, "fix", None)
    return ToolError(f"{msg}. Fix: {fix}" if fix else msg)


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


# --- the Skills Extension (SEP-2640 draft) ------------------------------------------------------

class _ListParams(RequestParams):
    cursor: StrictStr | None = None


class _GetParams(RequestParams):
    uri: StrictStr


def skill_uri(rec_id: str, file: str = "SKILL.md") -> str:
    root, _, rel = rec_id.partition(":")
    path = root if rel in ("", ".") else f"{root}/{rel}"
    return "skill://" + quote(path, safe="/-_.~") + "/" + quote(file, safe="/-_.~")


class SkillsExtension(Extension):
    """Lists each skill with its frontmatter and per-file sha256 digests."""

    identifier = SKILLS_EXTENSION
    page_size = 100

    def __init__(self, handle: LibraryHandle):
        self.handle = handle

    def settings(self) -> dict[str, Any]:
        return {"listing": True}

    def methods(self):
        return (MethodBinding("skills/list", _ListParams, self._list, frozenset({"2026-07-28"})),
                MethodBinding("skills/get", _GetParams, self._get, frozenset({"2026-07-28"})))

    def manifest(self, rec) -> dict[str, Any]:
        files = ["SKILL.md"] + rec.files()
        resources = []
        for f in files:
            p = Path(rec.path) if f == "SKILL.md" else rec.folder / f
            try:
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                continue
            resources.append({"uri": skill_uri(rec.id, f), "sha256": digest, "mimeType": _mime(f)})
        fm = {"name": rec.name, "description": rec.description}
        if rec.metadata:
            fm["metadata"] = rec.metadata
        return {"uri": skill_uri(rec.id), "frontmatter": fm, "resources": resources}

    async def _list(self, ctx: Any, params: _ListParams) -> dict[str, Any]:
        lib = self.handle.get()
        recs = lib.list(include_inactive=False)
        start = int(params.cursor) if params.cursor and params.cursor.isdigit() else 0
        page = recs[start:start + self.page_size]
        out: dict[str, Any] = {"skills": [self.manifest(r) for r in page]}
        if start + self.page_size < len(recs):
            out["nextCursor"] = str(start + self.page_size)
        return out

    async def _get(self, ctx: Any, params: _GetParams) -> dict[str, Any]:
        lib = self.handle.get()
        rec = _resolve_uri(lib, params.uri)[0]
        return {"skill": self.manifest(rec)}


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
    """(record, file path) for ``skill://<root>/<rel>/<file>``; refuses paths outside the skill."""
    if not uri.startswith("skill://"):
        raise ResourceError(f"not a skill URI: {uri}")
    path = unquote(uri[len("skill://"):])
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts) or len(parts) < 2:
        raise ResourceError(f"bad skill URI: {uri}")
    # the longest prefix that names a skill wins (skills can nest)
    for cut in range(len(parts) - 1, 0, -1):
        root, rel = parts[0], "/".join(parts[1:cut]) or "."
        row = lib.store.db.execute("SELECT id FROM skills WHERE id = ?", (f"{root}:{rel}",)).fetchone()
        if row:
            rec = lib.get(row[0])
            file = "/".join(parts[cut:])
            target = (rec.folder / file).resolve()
            if rec.folder.resolve() not in target.parents or not target.is_file():
                raise ResourceError(f"no file {file!r} in skill {rec.name}")
            return rec, target
    raise ResourceError(f"no skill at {uri}")


class SkillshelfServer(MCPServer):
    """MCPServer whose resources are the library's files (listed live, not registered)."""

    def __init__(self, handle: LibraryHandle, **kw: Any):
        self.handle = handle
        super().__init__(extensions=[SkillsExtension(handle)], **kw)

    async def list_tools(self):
        # Pydantic's generated titles ("Target Skill Name") repeat the property names and
        # cost ~1 KB of every client's context: drop them from what is advertised.
        return [t.model_copy(update={"input_schema": _untitled(t.input_schema),
                                     "output_schema": _untitled(t.output_schema)})
                for t in await super().list_tools()]

    async def list_resources(self) -> list[Resource]:
        lib = self.handle.get()
        out = []
        for rec in lib.list(include_inactive=False):
            out.append(Resource(uri=skill_uri(rec.id), name=rec.name, description=rec.description[:200],
                                mime_type="text/markdown"))
            for f in rec.files():
                out.append(Resource(uri=skill_uri(rec.id, f), name=f"{rec.name}/{f}", mime_type=_mime(f)))
        return out

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return [ResourceTemplate(uri_template="skill://{skill_path}/{file}", name="skill-file",
                                 description="A file of a skill; SKILL.md is the skill itself",
                                 mime_type="text/markdown")]

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents]:
        lib = self.handle.get()
        rec, target = _resolve_uri(lib, str(uri))
        data = target.read_bytes()
        try:
            content: str | bytes = data.decode("utf-8")
        except UnicodeDecodeError:
            content = data
        return [ReadResourceContents(content=content, mime_type=_mime(target.name))]


# --- tools ----------------------------------------------------------------------------------------

def _hit_text(i: int, h: dict[str, Any]) -> str:
    from .text import trim

    extra = f" ×{h['copies']}" if h.get("copies", 1) > 1 else ""
    flags = "".join(f" [{f}]" for f in ("expired",) if h.get(f))
    # when the name would resolve to another same-named skill, say which one to get
    get = f" (get_skill: {h['ref']})" if h.get("ref") and h["ref"] != h["name"] else ""
    desc = trim(h["description"], 100) if get else h["description"]  # keep 5 hits under ~1.4k chars
    return f"{i}. {h['name']}{extra} [{h['match']}]{flags}{get} — {desc}"


def build_server(factory: Callable[[], Any]) -> SkillshelfServer:
    handle = LibraryHandle(factory)
    server = SkillshelfServer(handle, name="skillshelf", instructions=INSTRUCTIONS,
                              title="skillshelf skill library")
    ro = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)

    def search_skills(query: str, limit: int = 5, mode: str = "find", repo_scope: str = "all",
                      current_repo: str = "", tags: str = "", skill_type: str = "") \
            -> Annotated[CallToolResult, SearchOut]:
        lib = handle.get()
        try:
            res = lib.search(query, limit=limit, mode=mode, repo_scope=repo_scope, current_repo=current_repo or None,
                             tags=tags or None, skill_type=skill_type or None, client="mcp")
        except Exception as exc:
            raise _fail(exc) from None
        keep = ("id", "name", "skill_type", "repo", "version", "tags", "description", "score", "match",
                "lineage", "expired", "active", "copies", "wildcard", "ref")
        hits = [{k: v for k, v in h.as_dict().items() if k in keep and v not in (None, [], False)}
                | {"match": h.match, "score": h.score} for h in res.hits]
        lines = [_hit_text(i, h) for i, h in enumerate(hits, 1)]
        lines.append(("confident match" if res.confident else "no confident match (possible gap)")
                     + f"; query_id={res.query_id}. Next: get_skill(name), then report_outcome.")
        if res.degraded:
            lines.append(f"degraded: {res.degraded}")
        return _result("\n".join(lines), {"hits": hits, "confident": res.confident, "query_id": res.query_id,
                                          "degraded": res.degraded})

    def get_skill(name: str, section: str = "") -> Annotated[CallToolResult, SkillOut]:
        lib = handle.get()
        try:
            rec, body = lib.read(name, section or None)
        except Exception as exc:
            raise _fail(exc) from None
        files = rec.files()
        meta = {"display_name": rec.display_name, "description": rec.description, "skill_type": rec.skill_type,
                "tags": rec.tags, "repo": rec.repo, "lineage": rec.lineage, "active": rec.active,
                "expired": rec.expired, "path": rec.path}
        head = f"# {rec.display_name} (v{rec.version}, {rec.id})"
        if files:
            head += "\nfiles: " + ", ".join(files) + f"  (read as resources: {skill_uri(rec.id, files[0])})"
        return _result(f"{head}\n\n{body}", {"name": rec.name, "id": rec.id, "version": rec.version, "body": body,
                                             "metadata": meta, "files": files})

    def save_skill(action: str, name: str = "", description: str = "", body: str = "", skill_type: str = "",
                   lesson: str = "", repo_name: str = "", tags: str = "", reason: str = "",
                   target_skill_name: str = "", source_skill_names: str = "", ttl_days: int = 0,
                   display_name: str = "", author: str = "") -> Annotated[CallToolResult, SaveOut]:
        lib = handle.get()
        try:
            res = lib.save(action, name=name, description=description, body=body, skill_type=skill_type,
                           lesson=lesson, repo_name=repo_name, tags=tags, reason=reason,
                           target_skill_name=target_skill_name, source_skill_names=source_skill_names,
                           ttl_days=ttl_days or None, display_name=display_name, author=author or "agent")
        except Exception as exc:
            raise _fail(exc) from None
        text = res.message
        for d in res.duplicates:
            text += f"\nsimilar: {d['name']} ({d['similarity']}) — {d['suggestion']}"
        return _result(text, {"status": res.status, "name": res.name, "version": res.version,
                              "changelog": res.changelog, "duplicates": res.duplicates, "message": res.message})

    def report_outcome(skill: str, worked: bool, note: str = "", query_id: str = "") -> Annotated[CallToolResult, Out]:
        lib = handle.get()
        try:
            res = lib.report_outcome(skill, worked, note=note, query_id=query_id or None, client="mcp")
        except Exception as exc:
            raise _fail(exc) from None
        rate = res["success_rate"]
        return _result(f"recorded: {res['skill']} {'worked' if worked else 'did not work'} "
                       f"({res['reports']} reports, success {rate if rate is not None else '-'})", res)

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

    def reindex() -> Annotated[CallToolResult, Out]:
        lib = handle.get()
        rep = lib.sync()
        d = rep.as_dict()
        d["invalid_files"] = d["invalid_files"][:20]
        return _result(f"added {rep.added}, updated {rep.updated}, removed {rep.removed}, "
                       f"invalid {len(rep.invalid)}, embedded {rep.embedded}", d)

    server.add_tool(search_skills, title="Search skills", annotations=ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=False, openWorldHint=False),
        description="Find skills for a task. Call before non-trivial work; describe the task in plain words. "
                    "Returns metadata only (name, type, tags, short description, match likely|weak) and "
                    "'confident'. mode=brainstorm adds variety; repo_scope=current keeps this repo + global.")
    server.add_tool(get_skill, title="Get a skill", annotations=ro,
                    description="Read one skill's instructions by name or id (from search_skills). "
                                "section='Solution' returns only that section. Lists the skill's other files.")
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
        t = f" The task: {task}" if task else ""
        return ("Before you start, call search_skills with the task in your own words." + t +
                " If a hit fits (match 'likely'), read it with get_skill and follow it. When done, call "
                "report_outcome with worked=true or false and a one-line note on what happened, passing the "
                "query_id. If nothing fits ('no confident match') and you solve it yourself, consider "
                "save_skill(action='ARCHIVE') with what you learned; if a skill was wrong, save_skill("
                "action='FIX', target_skill_name=..., lesson=...).")

    handle.start()
    return server


def serve(factory: Callable[[], Any], *, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
          token: str = "") -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = build_server(factory)
    if not http:
        server.run("stdio")
        return
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    loopback = host in ("127.0.0.1", "localhost", "::1")
    if not loopback and not token:
        from .errors import ConfigError

        raise ConfigError(f"binding {host} exposes the library beyond this machine",
                          fix="set SKILLSHELF_HTTP_TOKEN (clients send 'Authorization: Bearer <token>'), "
                              "or bind 127.0.0.1")
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"] + ([] if loopback else [f"{host}:{port}"])
    origins = [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]
    app = server.streamable_http_app(transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins), host=host)
    if token:
        app = BearerAuth(app, token)
    print(f"skillshelf MCP over Streamable HTTP at http://{host}:{port}/mcp", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning")


class BearerAuth:
    """Refuse requests without ``Authorization: Bearer <token>`` (ASGI middleware)."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        import hmac

        if scope["type"] == "http":
            auth = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(auth, b"Bearer " + self.token):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await self.app(scope, receive, send)
