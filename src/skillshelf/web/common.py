"""What the pages and the JSON API share: the status of a domain error and its JSON form,
the site's URLs, the templates with the context every page shares, and the one-time message
a redirect carries to the next page."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.routing import Match

from ..errors import (
    ConfigError,
    ConflictError,
    ForbiddenError,
    HeldError,
    NotFoundError,
    PolicyError,
    SkillFormatError,
    SkillshelfError,
    StoreError,
    ValidationError,
    WriteError,
)
from ..version import __version__
from .auth import allowed, caller_of
from .security import CSRF_FIELD

HERE = Path(__file__).parent
FLASH_COOKIE = "skillshelf_flash"
STATUS = {NotFoundError: 404, ValidationError: 400, SkillFormatError: 400, ConflictError: 409, PolicyError: 403,
          ForbiddenError: 403, HeldError: 403, ConfigError: 400, WriteError: 507, StoreError: 503}


def status_of(exc: SkillshelfError) -> int:
    for kind in type(exc).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    return 500


def error_dict(exc: SkillshelfError) -> dict[str, Any]:
    d: dict[str, Any] = {"type": type(exc).__name__, "message": exc.message, "fix": exc.fix}
    suggestions = getattr(exc, "suggestions", None)
    if suggestions:
        d["suggestions"] = suggestions
    if isinstance(exc, ForbiddenError):
        d["needed"] = exc.needed            # the role that may do it
    return d


def skill_url(skill_id: str, **query: Any) -> str:
    q = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in query.items() if v not in (None, ""))
    return f"/skill/{quote(skill_id, safe='/:')}" + (f"?{q}" if q else "")


def short_repo(repo: str | None) -> str:
    """A repo as people say it: ``owner/name`` for a GitHub URL."""
    r = (repo or "").strip()
    for prefix in ("https://", "http://", "www.", "github.com/"):
        if r.lower().startswith(prefix):
            r = r[len(prefix):]
    return r.removesuffix(".git").strip("/") or (repo or "")


def short_path(skill_id: str) -> str:
    """Where a skill lives, short: the folder below its root, with the middle elided."""
    rel = skill_id.split(":", 1)[-1]
    parts = rel.split("/")
    return rel if len(parts) <= 3 else f"{parts[0]}/…/{parts[-2]}/{parts[-1]}"


def plural(n: int | None, one: str, many: str | None = None) -> str:
    """``n`` with its noun agreeing: "1 search", "6 searches", "1,236 outcome reports"."""
    n = int(n or 0)
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def said_to_a_person(res: Any) -> str:
    """A save's message as a person reads it: "created NAME", "saved NAME as version 3"
    instead of the action names agents use ("ARCHIVE NAME: version 1"); what the library
    added after that (a workspace copy's origin, an index that will catch up) is kept."""
    action, name, version = getattr(res, "action", ""), getattr(res, "name", ""), getattr(res, "version", "")
    message = getattr(res, "message", "") or ""
    head = f"{action} {name}: version {version}"
    if getattr(res, "status", "saved") != "saved" or not message.startswith(head):
        return message
    said = {"ARCHIVE": f"created {name}", "FIX": f"saved {name} as version {version}",
            "DERIVE": f"created {name}", "MERGE": f"merged into {name} (version {version})"}.get(action)
    return (said + message[len(head):]) if said else message


def _templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["skill_url"] = skill_url
    env.filters["file_url"] = lambda sid, p: f"/file/{quote(sid, safe='/:')}?path={quote(p, safe='/')}"
    env.filters["edit_url"] = lambda sid: f"/edit/{quote(sid, safe='/:')}"
    env.filters["q"] = lambda v: quote(str(v), safe="")
    env.filters["pct"] = lambda v: "–" if v is None else f"{float(v):.0%}"
    env.filters["num"] = lambda v: "–" if v is None else f"{v:,}"
    env.filters["day"] = lambda v: (v or "")[:10]
    env.filters["when"] = lambda v: (v or "").replace("T", " ")[:16]
    env.filters["short_repo"] = short_repo
    env.filters["short_path"] = short_path
    env.filters["plural"] = plural
    env.globals["version"] = __version__
    env.globals["csrf_field"] = CSRF_FIELD
    return env


def _routes(routes: Any) -> Any:
    """The app's routes in the order it tries them, those of included routers in their place."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        yield from _routes(getattr(getattr(route, "original_router", None), "routes", []))


def route_actions(request: Request, path: str) -> tuple[str, ...] | None:
    """The actions (``auth.need``) the page at ``path`` names, read from the app's own route for
    a GET of it: what a link to it needs is what the route checks. None when no route serves it."""
    cache = request.app.state.__dict__.setdefault("_skillshelf_route_actions", {})
    if path not in cache:
        scope = {"type": "http", "path": path, "method": "GET"}
        cache[path] = next((tuple(d.call.skillshelf_action for d in r.dependant.dependencies
                                  if hasattr(d.call, "skillshelf_action"))
                            for r in _routes(request.app.routes) if r.matches(scope)[0] == Match.FULL), None)
    return cache[path]


def opens(request: Request, path: str) -> bool:
    """Whether this request's caller may open the page at ``path``: the role its route needs,
    asked of ``Library.authorize`` (the navigation shows only what the caller may open)."""
    acts = route_actions(request, path)
    caller = caller_of(request)
    return acts is not None and all(allowed(caller, a) for a in acts)


class Pages:
    """Renders a template with the context every page shares (CSRF token, flash message,
    drafts waiting, the indexing note)."""

    def __init__(self, lib: Any):
        self.lib = lib
        self.env = _templates()

    def render(self, request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        flash = _read_flash(request)
        caller = caller_of(request)
        team = bool(self.lib.team)
        signed_in = caller is not None or not team       # the login page says nothing of the library
        try:
            drafts = len(self.lib.review.list()) if signed_in else 0
        except SkillshelfError:
            drafts = 0
        html = self.env.get_template(name).render(
            request=request, csrf=getattr(request.state, "csrf", ""), flash=flash, drafts_waiting=drafts,
            indexing=self.lib.indexing_note() if signed_in else None, path=request.url.path, team=team,
            caller=caller, signed_in=signed_in, can=lambda action: signed_in and allowed(caller, action),
            opens=lambda path: signed_in and opens(request, path), **ctx)
        resp = HTMLResponse(html, status)
        if flash:
            resp.delete_cookie(FLASH_COOKIE, path="/")
        return resp

    def fragment(self, name: str, **ctx: Any) -> str:
        request = ctx.get("request")
        caller = caller_of(request) if request is not None else None
        ctx.setdefault("can", lambda action: request is not None and allowed(caller, action))
        ctx.setdefault("opens", lambda path: request is not None and opens(request, path))
        return self.env.get_template(name).render(**ctx)


def redirect(url: str, message: str | None = None, kind: str = "ok", keep: dict | None = None) -> RedirectResponse:
    """303 to ``url`` with a one-time message for the next page (an HttpOnly cookie, so a
    crafted link cannot put words on the page). ``keep``: what a failed form had typed, so
    the page can open that form again with it."""
    resp = RedirectResponse(url, 303)
    if message:
        kept = {str(k): str(v)[:1000] for k, v in (keep or {}).items()}
        raw = json.dumps({"kind": kind, "text": message[:1500], "keep": kept}).encode()
        resp.set_cookie(FLASH_COOKIE, base64.urlsafe_b64encode(raw).decode(), httponly=True, samesite="strict",
                        path="/", max_age=60)
    return resp


def _read_flash(request: Request) -> dict | None:
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(raw.encode()))
        keep = data.get("keep") if isinstance(data.get("keep"), dict) else {}
        return {"kind": str(data.get("kind", "ok")), "text": str(data.get("text", "")),
                "keep": {str(k): str(v) for k, v in keep.items()}}
    except (ValueError, TypeError, AttributeError):
        return None


def lib_of(request: Request) -> Any:
    return request.app.state.lib


def reader_of(request: Request) -> Any:
    """Who this request reads for (``Library.reader_for``: the owner and curators see held skills
    with their diff; a reader's or agent's token gets what agents get)."""
    return lib_of(request).reader_for(caller_of(request))


def page(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    return request.app.state.pages.render(request, name, status, **ctx)


def to_int(value: Any, default: int, *, low: int = 0, high: int | None = None) -> int:
    """A number from a query or a form, within ``low``..``high`` (``default`` when it is none)."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return default
    n = max(low, n)
    return min(n, high) if high is not None else n
