"""The forms that change the library: save from the editor, deprecate, restore, delete,
extend a TTL, roll back, approve or reject a draft. They work without JavaScript: each
posts, holds the library's write lock for its call, and redirects to a page that shows its
message once. A failed save re-renders the editor with what was typed and the error's
message and fix; a failed action opens its form again with what was typed."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..errors import HeldError, SkillshelfError, ValidationError
from .auth import author_of, can, need
from .common import (
    error_dict,
    lib_of,
    reader_of,
    redirect,
    said_to_a_person,
    skill_url,
    status_of,
    to_int,
)
from .pages import SAVE_FIELDS, editor
from .security import require_csrf

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_csrf)])
NAMES_SHOWN = 10           # names a batch action lists in its message


# --- the editor -----------------------------------------------------------------------------

@router.post("/save", dependencies=[need("save_skill")])
async def save(request: Request) -> Response:
    form = await request.form()
    return await run_in_threadpool(_save, request, str(form.get("action") or "").upper(),
                                   {k: str(form.get(k) or "") for k in SAVE_FIELDS})


def _save(request: Request, action: str, values: dict[str, str]) -> Response:
    lib = lib_of(request)
    rec = None
    try:
        if values["target_skill_name"]:
            rec = lib.get(values["target_skill_name"], reader=reader_of(request))
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
        # a role that may edit directly (curator, admin; the owner of a local library) writes as
        # a person; an agent's save goes through the write policy as an agent's would
        with lib.exclusive(what="saving a skill"):
            res = lib.save(action, by="person" if can(request, "edit") else "agent", author=author_of(request),
                           **args)
    except SkillshelfError as exc:
        # nothing typed is lost: the form comes back as it was sent, with the message and the fix
        return editor(request, action if action in ("ARCHIVE", "FIX", "DERIVE") else "ARCHIVE", values, rec=rec,
                      error=error_dict(exc), status=status_of(exc))
    if res.status == "draft":       # the write policy kept it for review
        return redirect(f"/review/{quote(res.name, safe='')}", "saved as a draft for review: a curator approves "
                                                                 "or rejects it on this page")
    msg = said_to_a_person(res) + "".join(f"; similar: {d['name']} ({d['similarity']})" for d in res.duplicates[:3])
    try:
        target = lib.get(res.name, reader=reader_of(request))
    except HeldError as exc:    # saved, but what it says keeps it from this token: said, not a 403 over a save
        return redirect("/skills", f"{msg}; it is held back from agents until a curator trusts it ({exc.message})")
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
    lib = lib_of(request)
    try:
        with lib.exclusive(what=what):
            res = fn(lib)
    except SkillshelfError as exc:
        e = error_dict(exc)
        return redirect(_back(request, failed_url or done_url),
                        e["message"] + (f" — {e['fix']}" if e.get("fix") else ""), "error", keep=keep)
    msg = res.get("message") if isinstance(res, dict) else getattr(res, "message", None)
    url = (res.get("url") if isinstance(res, dict) else None) or _back(request, done_url)
    return redirect(url, msg or "done")


def _names(names: list[str]) -> str:
    more = len(names) - NAMES_SHOWN
    return ", ".join(names[:NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _batch(refs: list[str], one, verb: str, fix: str):
    """An action on every ticked skill, under one hold of the write lock. A skill that
    refuses (merged, gone since the page was drawn) does not stop the others: the message
    says what was done and what was not, and why."""
    def run(lib: Any) -> dict:
        if not refs:
            raise ValidationError("no skills were ticked", fix=fix)
        done: list[str] = []
        refused: list[tuple[str, SkillshelfError]] = []
        for ref in refs:
            try:
                done.append(one(lib, ref)["name"])
            except SkillshelfError as exc:
                refused.append((ref, exc))
        if not done:
            raise refused[0][1]
        msg = f"{verb} {len(done)} skill{'s' if len(done) != 1 else ''}: {_names(done)}"
        if refused:
            msg += (f"; {len(refused)} could not be: "
                    + _names([f"{ref} ({exc.message})" for ref, exc in refused]))
        return {"message": msg}

    return run


async def _form(request: Request) -> Any:
    return await request.form()


@router.post("/act/deprecate", dependencies=[need("deprecate")])
async def act_deprecate(request: Request) -> Response:
    form = await _form(request)
    ref, reason = str(form.get("skill") or ""), str(form.get("reason") or "")
    return await run_in_threadpool(lambda: _act(request, "deprecating a skill", lambda lib: lib.deprecate(ref, reason),
                                                skill_url(ref), keep={"form": "deprecate", "reason": reason}))


@router.post("/act/deprecate-many", dependencies=[need("deprecate")])
async def act_deprecate_many(request: Request) -> Response:
    form = await _form(request)
    refs = [str(v) for v in form.getlist("skill") if str(v)]
    reason = str(form.get("reason") or "")

    run = _batch(refs, lambda lib, ref: lib.deprecate(ref, reason), "deprecated", "tick the skills to deprecate")
    return await run_in_threadpool(_act, request, "deprecating skills", run, "/curate#kill")


@router.post("/act/restore", dependencies=[need("restore")])
async def act_restore(request: Request) -> Response:
    form = await _form(request)
    ref = str(form.get("skill") or "")
    return await run_in_threadpool(_act, request, "restoring a skill", lambda lib: lib.restore(ref), skill_url(ref))


@router.post("/act/restore-many", dependencies=[need("restore")])
async def act_restore_many(request: Request) -> Response:
    form = await _form(request)
    refs = [str(v) for v in form.getlist("skill") if str(v)]

    run = _batch(refs, lambda lib, ref: lib.restore(ref), "restored", "tick the deprecated skills to restore")
    return await run_in_threadpool(_act, request, "restoring skills", run, "/curate#inactive")


@router.post("/act/delete", dependencies=[need("delete")])
async def act_delete(request: Request) -> Response:
    form = await _form(request)
    ref = str(form.get("skill") or "")
    if form.get("confirm") != "yes":
        return redirect(skill_url(ref), "nothing deleted: tick the box to confirm", "error")

    def run(lib: Any) -> dict:
        res = lib.delete(ref)
        return {"message": f"deleted {res['name']} (its folder and history)", "url": "/skills"}

    return await run_in_threadpool(_act, request, "deleting a skill", run, "/skills", failed_url=skill_url(ref))


@router.post("/act/extend-ttl", dependencies=[need("extend_ttl")])
async def act_extend_ttl(request: Request) -> Response:
    form = await _form(request)
    ref, raw = str(form.get("skill") or ""), str(form.get("days") or "").strip()

    def run(lib: Any) -> dict:
        if not raw.isdigit():
            raise ValidationError(f"{raw!r} is not a number of days", fix="enter whole days, e.g. 90")
        return lib.extend_ttl(ref, int(raw))

    return await run_in_threadpool(lambda: _act(request, "extending a TTL", run, skill_url(ref),
                                                keep={"form": "ttl", "days": raw}))


@router.post("/act/rollback", dependencies=[need("rollback")])
async def act_rollback(request: Request) -> Response:
    form = await _form(request)
    ref, version = str(form.get("skill") or ""), to_int(form.get("version"), 0)
    return await run_in_threadpool(_act, request, "rolling back", lambda lib: lib.rollback(ref, version, author=author_of(request)),
                                   skill_url(ref, tab="history"))


@router.post("/act/approve", dependencies=[need("approve")])
async def act_approve(request: Request) -> Response:
    form = await _form(request)
    name = str(form.get("name") or "")

    def run(lib: Any) -> dict:
        res = lib.review.approve(name, reviewer=author_of(request, "dashboard"))
        return {"message": "approved the draft: " + said_to_a_person(res),
                "url": skill_url(lib.get(res.name, reader=reader_of(request)).id)}

    return await run_in_threadpool(_act, request, "approving a draft", run, "/review",
                                   failed_url=f"/review/{quote(name, safe='')}")


@router.post("/act/reject", dependencies=[need("reject")])
async def act_reject(request: Request) -> Response:
    form = await _form(request)
    name, reason = str(form.get("name") or ""), str(form.get("reason") or "")

    def run(lib: Any) -> dict:
        lib.review.reject(name, reason)
        return {"message": f"rejected the draft {name}", "url": "/review"}

    return await run_in_threadpool(lambda: _act(request, "rejecting a draft", run, "/review",
                                                failed_url=f"/review/{quote(name, safe='')}",
                                                keep={"form": "reject", "reason": reason}))
