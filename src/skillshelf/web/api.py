"""The JSON API under ``/api`` (described by ``/openapi.json``). Each route calls one
``Library`` method and returns what it returns; domain errors become
``{"error": {"type", "message", "fix"}}`` with a matching status (see ``common.STATUS``).
``/api/check`` and ``/api/validate`` answer an htmx request (``HX-Request``) with the HTML
fragment the editor shows."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field, ValidationError as ModelError
from starlette.concurrency import run_in_threadpool

from ..errors import ValidationError
from .auth import author_of, can, need
from .common import reader_of
from .security import require_csrf

BodyT = TypeVar("BodyT", bound=BaseModel)   # the model a request body is validated against

router = APIRouter(prefix="/api", tags=["api"], dependencies=[Depends(require_csrf)])


def lib_of(request: Request) -> Any:
    return request.app.state.lib


# --- bodies ---------------------------------------------------------------------------------

class SaveBody(BaseModel):
    """The arguments of ``Library.save`` (a person's save: written directly, not as a draft; in a team
    library, directly for a curator or admin and through the write policy for an agent)."""

    action: str = Field(description="ARCHIVE (new skill) | FIX (change one) | DERIVE (branch) | MERGE")
    name: str = ""
    description: str = ""
    body: str = ""
    skill_type: str = ""
    lesson: str = ""
    repo_name: str = ""
    tags: str | list[str] = ""
    reason: str = ""
    target_skill_name: str = ""
    source_skill_names: str | list[str] = ""
    ttl_days: int | None = None
    display_name: str = ""
    author: str = Field("", description="who made the change (a team library records the token's name instead)")
    replace_body: bool = Field(False, description="FIX: the body sent replaces the old one as it is (an edit of "
                                                  "the whole text), instead of merging sections and lessons")


class ValidateBody(BaseModel):
    text: str = Field(description="a whole SKILL.md (frontmatter and body)")
    folder_name: str | None = Field(None, description="the folder it lives in (checked against its name)")


class SkillRef(BaseModel):
    skill: str = Field(description="skill id, name or path")


class DeprecateBody(SkillRef):
    reason: str


class TtlBody(SkillRef):
    days: int = Field(ge=1, description="days to push the expiry further")


class RollbackBody(SkillRef):
    version: int = Field(ge=1)


class RejectBody(BaseModel):
    reason: str


async def _body(request: Request, model: type[BodyT]) -> BodyT:
    """A JSON or form-encoded body validated against ``model`` (the editor posts forms)."""
    if "json" in request.headers.get("content-type", ""):
        data = await request.json()
    else:
        form = await request.form()
        data = {k: v for k, v in form.items() if k != "csrf_token" and isinstance(v, str)}
        if data.get("ttl_days", None) == "":
            data["ttl_days"] = None
    try:
        return model.model_validate(data if isinstance(data, dict) else {})
    except ModelError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise ValidationError(f"{where}: {first.get('msg')}", fix="correct that field and send it again") from None


def _schema(model: type[BaseModel]) -> dict:
    schema = {"schema": model.model_json_schema(ref_template="#/components/schemas/{model}")}
    return {"requestBody": {"required": True, "content": {"application/json": schema,
                                                          "application/x-www-form-urlencoded": schema}}}


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


# --- reading --------------------------------------------------------------------------------

@router.get("/overview", dependencies=[need("stats")], summary="Totals, skills by root/repo/type, flywheel series, curation lists")
def overview(request: Request, days: int = Query(30, ge=1, le=366), weeks: int = Query(12, ge=1, le=104)):
    return lib_of(request).overview(days=days, weeks=weeks)


@router.get("/stats", dependencies=[need("stats")], summary="The usage statistics of `skillshelf stats`")
def stats(request: Request, since: str | None = Query(None, description="YYYY-MM-DD")):
    return lib_of(request).stats(since=since, reader=reader_of(request)).as_dict()


@router.get("/facets", dependencies=[need("list")], summary="What the skills table can filter on, with counts")
def facets(request: Request):
    return lib_of(request).facets()


@router.get("/skills", dependencies=[need("list")], summary="A page of skills: filters, sort, offset; `q` searches (ranked, not logged)")
def skills(request: Request, q: str | None = None, root: str | None = None, repo: str | None = None,
           type: str | None = Query(None, description="skill type"), tag: str | None = None,
           status: str = Query("any", description="any | active | inactive"),
           expired: bool | None = None, sort: str = "name", desc: bool = False,
           offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=200)):
    return lib_of(request).browse(query=q, root=root, repo=repo, skill_type=type, tag=tag, status=status,
                                  expired=expired, sort=sort, descending=desc, offset=offset,
                                  limit=limit, reader=reader_of(request)).as_dict()


@router.get("/search", dependencies=[need("search")], summary="Hybrid search, as agents get it (not logged as usage)")
def search(request: Request, q: str, limit: int = Query(10, ge=1, le=100), mode: str = "find",
           type: str | None = None, tags: str | None = None, include_inactive: bool = False,
           include_expired: bool = False):
    return lib_of(request).search(q, limit=limit, mode=mode, skill_type=type, tags=tags,
                                  include_inactive=include_inactive, include_expired=include_expired,
                                  log=False, for_agents=reader_of(request).agent).as_dict()


@router.get("/skill/{skill:path}", dependencies=[need("read")], summary="One skill: metadata, body, files, copies, lineage")
def skill(request: Request, skill: str):
    lib, reader = lib_of(request), reader_of(request)
    rec = lib.get(skill, reader=reader)
    d = rec.as_dict()
    files = rec.files()
    d.update(writable=rec.writable, files=list(files), files_more=files.more, copies=lib.copies(rec.id, reader=reader),
             lineage_detail=lib.lineage(rec.id))
    return d


@router.get("/text/{skill:path}", dependencies=[need("read")], summary="The SKILL.md text, current or of a kept version")
def text(request: Request, skill: str, version: int | None = Query(None, ge=1)):
    lib, reader = lib_of(request), reader_of(request)
    rec = lib.get(skill, reader=reader)
    body = lib.version_text(rec.id, version, reader=reader) if version else lib.skill_text(rec.id, reader=reader)
    return {"id": rec.id, "name": rec.name, "version": version or rec.version, "text": body}


@router.get("/history/{skill:path}", dependencies=[need("read")], summary="Versions kept and the changelog")
def history(request: Request, skill: str):
    lib = lib_of(request)
    return lib.history(lib.get(skill, reader=reader_of(request)).id)     # a held skill's changelog is its own


@router.get("/diff/{skill:path}", dependencies=[need("read")], summary="Two versions side by side (rows) and as a unified diff")
def diff(request: Request, skill: str, v1: int = Query(..., ge=1), v2: int = Query(..., ge=1)):
    return lib_of(request).compare(skill, v1, v2, reader=reader_of(request))


@router.get("/usage/{skill:path}", dependencies=[need("stats")], summary="Searches that surfaced it, outcomes with notes, success by week")
def usage(request: Request, skill: str, limit: int = Query(50, ge=1, le=500)):
    lib = lib_of(request)       # a held skill's outcomes and notes are the gate's to give, as its text is
    return lib.skill_usage(lib.get(skill, reader=reader_of(request)).id, limit=limit)


@router.get("/drafts", dependencies=[need("read")], summary="Drafts waiting for review")
def drafts(request: Request):
    return lib_of(request).review.list()


@router.get("/drafts/{name}", dependencies=[need("read")], summary="A draft, the text it would replace, and the two side by side")
def draft(request: Request, name: str):
    return lib_of(request).draft_review(name, reader=reader_of(request))


# --- checks ---------------------------------------------------------------------------------

@router.post("/validate", dependencies=[need("read")], summary="Findings for a SKILL.md text (the validator of `skillshelf validate`)",
             openapi_extra=_schema(ValidateBody))
async def validate(request: Request):
    body = await _body(request, ValidateBody)
    res = await run_in_threadpool(lib_of(request).validate_text, body.text, folder_name=body.folder_name)
    if _htmx(request):
        return HTMLResponse(request.app.state.pages.fragment("_check.html", check={**res, "ok": res["valid"]}))
    return res


@router.post("/check", dependencies=[need("save_skill")], summary="A dry run of a save: the errors it would meet and the file it would write",
             openapi_extra=_schema(SaveBody))
async def check(request: Request):
    body = await _body(request, SaveBody)
    args = body.model_dump()
    action = args.pop("action")
    res = await run_in_threadpool(lambda: lib_of(request).check_save(action, **args))
    if _htmx(request):
        return HTMLResponse(request.app.state.pages.fragment("_check.html", check=res))
    return res


# --- actions (the CLI's) ----------------------------------------------------------------------

@router.post("/skills", dependencies=[need("save_skill")],
             summary="Save a skill: directly (a curator's edit), or through the write policy (an agent's role)")
def save(request: Request, body: SaveBody):
    lib = lib_of(request)
    args = body.model_dump()
    # a role that may edit directly writes as a person; an agent's goes through the write
    # policy (a draft under 'propose'); the author is the token's name in a team library
    args["author"] = author_of(request, args["author"])
    with lib.exclusive(what="saving a skill"):
        return lib.save(args.pop("action"), by="person" if can(request, "edit") else "agent", **args).as_dict()


@router.post("/deprecate", dependencies=[need("deprecate")], summary="Mark a skill inactive (an overlay for read-only roots)")
def deprecate(request: Request, body: DeprecateBody):
    lib = lib_of(request)
    with lib.exclusive(what="deprecating a skill"):
        return lib.deprecate(body.skill, body.reason)


@router.post("/restore", dependencies=[need("restore")], summary="Make a deprecated skill active again (an overlay for read-only roots)")
def restore(request: Request, body: SkillRef):
    lib = lib_of(request)
    with lib.exclusive(what="restoring a skill"):
        return lib.restore(body.skill)


@router.post("/delete", dependencies=[need("delete")], summary="Delete a workspace skill, its history and its index rows")
def delete(request: Request, body: SkillRef):
    lib = lib_of(request)
    with lib.exclusive(what="deleting a skill"):
        return lib.delete(body.skill)


@router.post("/extend-ttl", dependencies=[need("extend_ttl")], summary="Push a skill's expiry further")
def extend_ttl(request: Request, body: TtlBody):
    lib = lib_of(request)
    with lib.exclusive(what="extending a TTL"):
        return lib.extend_ttl(body.skill, body.days)


@router.post("/rollback", dependencies=[need("rollback")], summary="Make the text of a kept version current again (as a new version)")
def rollback(request: Request, body: RollbackBody):
    lib = lib_of(request)
    with lib.exclusive(what="rolling back"):
        return lib.rollback(body.skill, body.version, author=author_of(request)).as_dict()


@router.post("/drafts/{name}/approve", dependencies=[need("approve")], summary="Apply a draft to the library")
def approve(request: Request, name: str):
    lib = lib_of(request)
    with lib.exclusive(what="approving a draft"):
        return lib.review.approve(name, reviewer=author_of(request, "dashboard")).as_dict()


@router.post("/drafts/{name}/reject", dependencies=[need("reject")], summary="Discard a draft (the reason is kept)")
def reject(request: Request, name: str, body: RejectBody):
    lib = lib_of(request)
    with lib.exclusive(what="rejecting a draft"):
        return lib.review.reject(name, body.reason)
