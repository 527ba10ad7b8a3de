"""The dashboard's team routes (a library on a team store only): signing in with a token
and out again, who is signed in, and the admin's Tokens page and API. How a request is
tied to a token is in :mod:`.auth`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..errors import SkillshelfError, ValidationError
from ..library import Library
from .auth import (
    MAKE_TOKEN,
    SESSION_COOKIE,
    TOKEN_MAX,
    WHAT,
    allowed,
    caller_of,
    need,
    safe_next,
    session_cookie,
)
from .common import error_dict, lib_of, page, redirect, status_of
from .security import CSRF_COOKIE, require_csrf

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_csrf)])
api = APIRouter(prefix="/api", tags=["team"], dependencies=[Depends(require_csrf)])
# the roles a token can have, lowest first (the store checks the one given)
ROLES = Library.ROLES


# --- signing in and out ---------------------------------------------------------------------

@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request):
    p = request.query_params
    note = "Your token is no longer valid (revoked, or the library changed): sign in again." \
        if p.get("expired") else None
    return page(request, "login.html", next=safe_next(p.get("next")), note=note)


@router.post("/login")
async def login(request: Request) -> Response:
    form = await request.form()
    token = str(form.get("token") or "").strip()
    nxt = safe_next(form.get("next"))
    caller = None
    if token and len(token) <= TOKEN_MAX:
        caller = await run_in_threadpool(lib_of(request).verify_token, token)
    if caller is None:
        error = {"type": "Unauthorized", "message": "that is not a valid token" if token else "paste your token",
                 "fix": f"paste the whole token `{MAKE_TOKEN}` printed (its last line); ask an admin for a new "
                        "one if it was revoked"}
        return page(request, "login.html", 401, next=nxt, error=error)
    resp = redirect(nxt, f"signed in as {caller.name} ({caller.role})")
    session_cookie(resp, request, token)
    return resp


@router.post("/logout")
def logout(request: Request) -> Response:
    resp = redirect("/login", "signed out")
    resp.delete_cookie(SESSION_COOKIE, path="/")
    resp.delete_cookie(CSRF_COOKIE, path="/")       # the next session starts with a fresh one
    return resp


# --- tokens (admin) -------------------------------------------------------------------------

def _tokens(request: Request) -> list[dict[str, Any]]:
    return lib_of(request).list_tokens()


@router.get("/tokens", response_class=HTMLResponse, dependencies=[need("tokens")])
def tokens_page(request: Request):
    return page(request, "tokens.html", tokens=_tokens(request), roles=ROLES, new=None, form={})


@router.post("/act/token-add", dependencies=[need("tokens")])
async def token_add(request: Request) -> Response:
    form = await request.form()
    name, role = str(form.get("name") or "").strip(), str(form.get("role") or "")
    lib = lib_of(request)
    try:
        token = await run_in_threadpool(lib.add_token, name, role)
    except SkillshelfError as exc:
        return page(request, "tokens.html", status_of(exc), tokens=_tokens(request), roles=ROLES, new=None,
                    error=error_dict(exc), form={"name": name, "role": role})
    # shown on this answer only (never stored in clear, never in a cookie or an address)
    return page(request, "tokens.html", 201, tokens=_tokens(request), roles=ROLES,
                new={"name": name, "role": role, "token": token}, form={})


@router.post("/act/token-revoke", dependencies=[need("tokens")])
async def token_revoke(request: Request) -> Response:
    form = await request.form()
    name = str(form.get("name") or "")
    lib = lib_of(request)
    try:
        await run_in_threadpool(lib.revoke_token, name)
    except SkillshelfError as exc:
        e = error_dict(exc)
        return redirect("/tokens", e["message"] + (f" — {e['fix']}" if e.get("fix") else ""), "error")
    me = caller_of(request)
    said = f"revoked the token {name}" + (": you are signed out" if me is not None and me.name == name else "")
    return redirect("/tokens", said)


# --- the API --------------------------------------------------------------------------------

class TokenBody(BaseModel):
    name: str = Field(description="who the token is for (a person or an agent); recorded as author and client")
    role: str = Field(description="reader | agent | curator | admin")


@api.get("/me", dependencies=[need("read")], summary="Who this token is, its role, and what it may do")
def me(request: Request):
    caller = caller_of(request)
    return {"name": caller.name, "role": caller.role,
            "may": sorted(action for action in WHAT if allowed(caller, action))}


@api.get("/tokens", dependencies=[need("tokens")], summary="Every token's name, role, created and last used")
def tokens_list(request: Request):
    return _tokens(request)


@api.post("/tokens", dependencies=[need("tokens")], status_code=201,
          summary="A new token (shown in this answer only; stored hashed)")
def tokens_add(request: Request, body: TokenBody):
    token = lib_of(request).add_token(body.name.strip(), body.role)
    return {"name": body.name.strip(), "role": body.role, "token": token}


@api.post("/tokens/{name}/revoke", dependencies=[need("tokens")], summary="Revoke a token (at once, everywhere)")
def tokens_revoke(request: Request, name: str):
    if not name.strip():
        raise ValidationError("no token name given", fix="POST /api/tokens/NAME/revoke")
    lib_of(request).revoke_token(name)
    return {"name": name, "revoked": True}
