"""The HTML pages. Each route calls ``Library`` methods and renders a template; forms post
back here (they work without JavaScript), htmx swaps parts of pages where that is quicker.
A failed write re-renders its form with what was typed and the error's message and fix."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from ..errors import SkillshelfError, ValidationError
from ..files import MAX_RESOURCE_BYTES, read_text_bounded  # facade: pending
from ..library import Library
from ..skill import SKILL_TYPES  # facade: pending
from . import render
from .common import error_dict, redirect, skill_url, status_of
from .security import require_csrf

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_csrf)])
PAGE = 50
SEARCH_PAGE = 20
SAVE_FIELDS = ("name", "display_name", "description", "skill_type", "tags", "repo_name", "ttl_days", "body",
               "reason", "lesson", "target_skill_name")


def _lib(request: Request) -> Any:
    return request.app.state.lib


def _page(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    return request.app.state.pages.render(request, name, status, **ctx)


def _int(value: Any, default: int, *, low: int = 0, high: int | None = None) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return default
    n = max(low, n)
    return min(n, high) if high is not None else n


def _tristate(value: str | None) -> bool | None:
    return {"yes": True, "no": False}.get((value or "").lower())


# --- overview -------------------------------------------------------------------------------

@router.get("/", response_class=HTMLResponse)
def overview(request: Request):
    o = _lib(request).overview()
    fw = o["flywheel"]
    charts = {
        "queries": render.bars(fw["days"], "queries", label="day"),
        "report_rate": render.bars(fw["weeks"], "report_rate", label="week", percent=True),
        "success_rate": render.bars(fw["weeks"], "success_rate", label="week", percent=True),
        "gaps": render.bars(fw["weeks"], "gaps", label="week"),
    }
    return _page(request, "overview.html", o=o, charts=charts, cur=o["curation"])


@router.get("/curate", response_class=HTMLResponse)
def curate(request: Request):
    cur = _lib(request).curation(top=500)
    return _page(request, "curate.html", cur=cur)


# --- skills table ---------------------------------------------------------------------------

@router.get("/skills", response_class=HTMLResponse)
def skills(request: Request):
    p = request.query_params
    lib = _lib(request)
    f = {"q": (p.get("q") or "").strip(), "root": p.get("root") or "", "repo": (p.get("repo") or "").strip(),
         "type": p.get("type") or "", "tag": (p.get("tag") or "").strip(), "status": p.get("status") or "any",
         "expired": p.get("expired") or "", "sort": p.get("sort") if p.get("sort") in Library.SORTS else "name",
         "desc": p.get("desc") == "1"}
    limit = _int(p.get("limit"), SEARCH_PAGE if f["q"] else PAGE, low=1, high=Library.PAGE_MAX)
    offset = _int(p.get("offset"), 0)
    error = None
    try:
        page = lib.browse(query=f["q"] or None, root=f["root"] or None, repo=f["repo"] or None,
                          skill_type=f["type"] or None, tag=f["tag"] or None, status=f["status"],
                          expired=_tristate(f["expired"]), sort=f["sort"], descending=f["desc"], offset=offset,
                          limit=limit)
    except ValidationError as exc:
        error, page = error_dict(exc), None
    ctx = dict(f=f, page=page, error=error, facets=lib.facets(), limit=limit, offset=offset)
    if request.headers.get("hx-request") == "true" and request.headers.get("hx-target") == "results":
        return HTMLResponse(request.app.state.pages.fragment("_results.html", request=request, **ctx))
    return _page(request, "skills.html", 400 if error else 200, **ctx)


# --- one skill ------------------------------------------------------------------------------

@router.get("/skill/{skill_id:path}", response_class=HTMLResponse)
def skill(request: Request, skill_id: str):
    lib = _lib(request)
    rec = lib.get(skill_id)
    tab = request.query_params.get("tab") or "doc"
    ctx: dict[str, Any] = dict(rec=rec, tab=tab, files=rec.files(), copies=lib.copies(rec.id),
                               lineage=lib.lineage(rec.id), usage=lib.skill_usage(rec.id, limit=100))
    ctx["history"] = lib.history(rec.id) if rec.writable else None
    if tab == "doc":
        ctx["html"] = render.markdown(rec.body, rec.id)
    elif tab == "source":
        ctx["source"] = lib.skill_text(rec.id)
    elif tab == "history" and ctx["history"]:
        versions = ctx["history"]["versions"]
        a = _int(request.query_params.get("a"), 0)
        b = _int(request.query_params.get("b"), 0)
        if not (a and b) and len(versions) >= 2:
            a, b = versions[-2], versions[-1]
        if a and b:
            try:
                ctx["compare"] = lib.compare(rec.id, a, b)
            except SkillshelfError as exc:
                ctx["compare_error"] = error_dict(exc)
        ctx["a"], ctx["b"] = a, b
    return _page(request, "skill.html", **ctx)


@router.get("/file/{skill_id:path}", response_class=HTMLResponse)
def skill_file(request: Request, skill_id: str):
    lib = _lib(request)
    rec = lib.get(skill_id)
    path = request.query_params.get("path") or ""
    files = rec.files(limit=FILE_LIST_MAX)
    if path not in files:
        raise ValidationError(f"{rec.name} has no file {path!r} that can be shown",
                              fix="pick one of the files listed on the skill's page")
    try:
        text = read_text_bounded(rec.folder / path, MAX_RESOURCE_BYTES)
    except (SkillshelfError, OSError) as exc:
        raise ValidationError(f"{path} cannot be shown as text ({getattr(exc, 'message', None) or exc})",
                              fix="open it from the skill's folder on disk") from None
    html = render.markdown(text, rec.id) if path.lower().endswith((".md", ".markdown")) else render.code(text, path)
    return _page(request, "file.html", rec=rec, file_path=path, html=html)


FILE_LIST_MAX = 5000


# --- editor ---------------------------------------------------------------------------------

def _form_from(rec: Any, *, action: str) -> dict[str, str]:
    m = rec.metadata
    return {"name": rec.name if action == "FIX" else "", "display_name": m.get("display-name", "") if action == "FIX"
            else "", "description": rec.description, "skill_type": rec.skill_type or "", "tags": ", ".join(rec.tags),
            "repo_name": rec.repo or "", "ttl_days": m.get("ttl-days", "") if action == "FIX" else "",
            "body": rec.body, "reason": "", "lesson": "", "target_skill_name": rec.id}


@router.get("/new", response_class=HTMLResponse)
def new(request: Request):
    lib = _lib(request)
    parent = request.query_params.get("from")
    if parent:
        rec = lib.get(parent)
        return _editor(request, "DERIVE", _form_from(rec, action="DERIVE"), rec=rec)
    blank = {k: "" for k in SAVE_FIELDS}
    blank["body"] = "## When to Use\n\n\n## Solution\n\n"
    return _editor(request, "ARCHIVE", blank)


@router.get("/edit/{skill_id:path}", response_class=HTMLResponse)
def edit(request: Request, skill_id: str):
    rec = _lib(request).get(skill_id)
    return _editor(request, "FIX", _form_from(rec, action="FIX"), rec=rec)


def _editor(request: Request, action: str, form: dict[str, str], *, rec: Any = None, error: dict | None = None,
            status: int = 200) -> HTMLResponse:
    return _page(request, "edit.html", status, action=action, form=form, rec=rec, error=error, types=SKILL_TYPES)


@router.post("/save")
async def save(request: Request) -> Response:
    form = await request.form()
    return await run_in_threadpool(_save, request, str(form.get("action") or "").upper(),
                                   {k: str(form.get(k) or "") for k in SAVE_FIELDS})


def _save(request: Request, action: str, values: dict[str, str]) -> Response:
    lib = _lib(request)
    rec = None
    try:
        if values["target_skill_name"]:
            rec = lib.get(values["target_skill_name"])
        ttl = values["ttl_days"].strip()
        if ttl and not ttl.isdigit():
            raise ValidationError(f"TTL {ttl!r} is not a number of days", fix="enter whole days, or leave it empty")
        args = dict(description=values["description"], body=values["body"], skill_type=values["skill_type"],
                    tags=values["tags"], repo_name=values["repo_name"], ttl_days=int(ttl) if ttl else None,
                    display_name=values["display_name"], reason=values["reason"], lesson=values["lesson"])
        if action == "ARCHIVE":
            args["name"] = values["name"]
        elif action == "FIX":   # the editor holds the whole body: it replaces the old one
            args.update(target_skill_name=values["target_skill_name"], replace_body=True)
        elif action == "DERIVE":
            args.update(name=values["name"], target_skill_name=values["target_skill_name"])
        else:
            raise ValidationError(f"unknown action {action!r}", fix="use the New, Edit or Derive page")
        with lib.exclusive(what="saving a skill"):
            res = lib.save(action, by="person", **args)
    except SkillshelfError as exc:
        # nothing typed is lost: the form comes back as it was sent, with the message and the fix
        return _editor(request, action if action in ("ARCHIVE", "FIX", "DERIVE") else "ARCHIVE", values, rec=rec,
                       error=error_dict(exc), status=status_of(exc))
    target = lib.get(res.name)
    msg = res.message + "".join(f"; similar: {d['name']} ({d['similarity']})" for d in res.duplicates[:3])
    return redirect(skill_url(target.id), msg)


# --- actions --------------------------------------------------------------------------------

def _back(request: Request, fallback: str) -> str:
    """Where to go after an action: the page the form names (a path of this site only)."""
    nxt = request.query_params.get("next") or ""
    return nxt if nxt.startswith("/") and not nxt.startswith("//") and "\\" not in nxt else fallback


def _act(request: Request, what: str, fn, done_url: str, *, failed_url: str | None = None,
         keep: dict | None = None) -> Response:
    """Run one action (holding the library's write lock); its message, or its error with
    the fix, is shown on the next page, which opens the failed form again with what was
    typed (``keep``)."""
    lib = _lib(request)
    try:
        with lib.exclusive(what=what):
            res = fn(lib)
    except SkillshelfError as exc:
        e = error_dict(exc)
        return redirect(_back(request, failed_url or done_url),
                        e["message"] + (f" — {e['fix']}" if e.get("fix") else ""), "error", keep=keep)
    msg = res.get("message") if isinstance(res, dict) else getattr(res, "message", None)
    url = res.get("url") if isinstance(res, dict) and res.get("url") else _back(request, done_url)
    return redirect(url, msg or "done")


async def _form(request: Request) -> Any:
    return await request.form()


@router.post("/act/deprecate")
async def act_deprecate(request: Request) -> Response:
    form = await _form(request)
    ref, reason = str(form.get("skill") or ""), str(form.get("reason") or "")
    return await run_in_threadpool(lambda: _act(request, "deprecating a skill", lambda lib: lib.deprecate(ref, reason),
                                                skill_url(ref), keep={"form": "deprecate", "reason": reason}))


@router.post("/act/deprecate-many")
async def act_deprecate_many(request: Request) -> Response:
    form = await _form(request)
    refs = [str(v) for v in form.getlist("skill") if str(v)]
    reason = str(form.get("reason") or "")

    def run(lib: Any) -> dict:
        if not refs:
            raise ValidationError("no skills were ticked", fix="tick the skills to deprecate")
        done = [lib.deprecate(r, reason)["name"] for r in refs]
        return {"message": f"deprecated {len(done)} skill{'s' if len(done) != 1 else ''}: {', '.join(done[:10])}"
                           + (" …" if len(done) > 10 else "")}

    return await run_in_threadpool(_act, request, "deprecating skills", run, "/curate")


@router.post("/act/delete")
async def act_delete(request: Request) -> Response:
    form = await _form(request)
    ref = str(form.get("skill") or "")
    if form.get("confirm") != "yes":
        return redirect(skill_url(ref), "nothing deleted: tick the box to confirm", "error")

    def run(lib: Any) -> dict:
        res = lib.delete(ref)
        return {"message": f"deleted {res['name']} (its folder and history)", "url": "/skills"}

    return await run_in_threadpool(_act, request, "deleting a skill", run, "/skills", failed_url=skill_url(ref))


@router.post("/act/extend-ttl")
async def act_extend_ttl(request: Request) -> Response:
    form = await _form(request)
    ref, raw = str(form.get("skill") or ""), str(form.get("days") or "").strip()

    def run(lib: Any) -> dict:
        if not raw.isdigit():
            raise ValidationError(f"{raw!r} is not a number of days", fix="enter whole days, e.g. 90")
        return lib.extend_ttl(ref, int(raw))

    return await run_in_threadpool(lambda: _act(request, "extending a TTL", run, skill_url(ref),
                                                keep={"form": "ttl", "days": raw}))


@router.post("/act/rollback")
async def act_rollback(request: Request) -> Response:
    form = await _form(request)
    ref, version = str(form.get("skill") or ""), _int(form.get("version"), 0)
    return await run_in_threadpool(_act, request, "rolling back", lambda lib: lib.rollback(ref, version),
                                   skill_url(ref, tab="history"))


@router.post("/act/approve")
async def act_approve(request: Request) -> Response:
    form = await _form(request)
    name = str(form.get("name") or "")

    def run(lib: Any) -> dict:
        res = lib.review.approve(name, reviewer="dashboard")
        return {"message": "approved: " + res.message, "url": skill_url(lib.get(res.name).id)}

    return await run_in_threadpool(_act, request, "approving a draft", run, "/review",
                                   failed_url=f"/review/{quote(name, safe='')}")


@router.post("/act/reject")
async def act_reject(request: Request) -> Response:
    form = await _form(request)
    name, reason = str(form.get("name") or ""), str(form.get("reason") or "")

    def run(lib: Any) -> dict:
        lib.review.reject(name, reason)
        return {"message": f"rejected the draft {name}", "url": "/review"}

    return await run_in_threadpool(lambda: _act(request, "rejecting a draft", run, "/review",
                                                failed_url=f"/review/{quote(name, safe='')}",
                                                keep={"form": "reject", "reason": reason}))


# --- review ---------------------------------------------------------------------------------

@router.get("/review", response_class=HTMLResponse)
def review(request: Request):
    return _page(request, "review.html", drafts=_lib(request).review.list())


@router.get("/review/{name}", response_class=HTMLResponse)
def draft(request: Request, name: str):
    d = _lib(request).draft_review(name)
    return _page(request, "draft.html", d=d)
