"""Who is asking, and what they may do: the dashboard in team mode.

A library on a team store (``Library.team``) has no owner at the keyboard: every request
names a token, on loopback too, and the token's role decides what it may do.

* **Scripts** send ``Authorization: Bearer <token>``. A wrong header is 401, whatever
  cookie rides along.
* **People** paste their token once on ``/login``; the answer sets the session cookie
  (``skillshelf_session``: HttpOnly, SameSite=Strict, Secure when the request came over
  https, for the browser session). The cookie holds the token itself, checked against the
  store on every request, rather than the id of a session kept by one server: any server of
  the team answers any request (behind a proxy, a restart, the next one), and a token revoked
  by an admin is refused at once, on every server and in every browser that holds it. A
  script in the page cannot read it (HttpOnly, and the CSP runs no inline script). ``/logout``
  drops it from the browser; revoking the token is what ends it everywhere.
* **Without a token** (none, or one revoked since): the API answers 401 in JSON with the
  fix; a page is redirected to ``/login`` (htmx is told to go there with ``HX-Redirect``).
  Only the login page and the static files answer anyone: they hold no library data.
* **Roles.** Every route names its action (``need``): the role it needs is
  ``Library.authorize``'s (reader < agent < curator < admin); a role without the right is a
  403 naming the role needed, on a page and in the API. The templates hide what the role
  cannot use (``can``), and the server refuses it regardless.
* CSRF and the same-origin rule (``security``) apply to the session cookie as to any
  browser request; a Bearer request is not a browser's and needs neither.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import quote, urlencode

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..errors import ForbiddenError, SkillshelfError
from ..library import Library
from .security import _refuse

SESSION_COOKIE = "skillshelf_session"
PUBLIC = ("/login",)                        # pages anyone may open (they hold no library data)
PUBLIC_PREFIXES = ("/static/",)
PUBLIC_FILES = ("/favicon.ico",)
TOKEN_MAX = 512                             # characters of a pasted token looked up (real ones are 43)
MAKE_TOKEN = "skillshelf tokens add NAME --role reader|agent|curator|admin"
# what a refusal says the caller tried (``Library.authorize``'s ``what``)
WHAT = {"read": "reading the library", "search": "searching", "list": "listing skills", "stats": "the usage statistics",
        "save_skill": "saving a skill", "edit": "editing a skill directly", "approve": "approving a draft", "trust": "trusting a held or risky skill",
        "reject": "rejecting a draft", "deprecate": "deprecating a skill", "restore": "restoring a skill",
        "extend_ttl": "extending a TTL", "rollback": "rolling back a skill", "delete": "deleting a skill",
        "tokens": "managing tokens", "held": "reviewing held skills", "sources": "updating a source",
        "run_evals": "running every skill's evals"}


def caller_of(request: Request) -> Any:
    """The ``Caller`` (token name and role) of a team request; None for a local library."""
    return getattr(request.state, "caller", None)


def allowed(caller: Any, action: str) -> bool:
    try:
        Library.authorize(caller, action)
    except ForbiddenError:
        return False
    return True


def can(request: Request, action: str) -> bool:
    """Whether this request's caller may do ``action`` (always, on a local library)."""
    return allowed(caller_of(request), action)


def author_of(request: Request, given: str = "") -> str:
    """Who a change is recorded as: the token's name in team mode (never a name the client
    sent); ``given`` on a local library, as before."""
    caller = caller_of(request)
    return caller.name if caller is not None else given


def need(action: str) -> Any:
    """A route dependency: the caller's role allows ``action``, else ``ForbiddenError``
    (403) naming the role needed."""
    async def check(request: Request) -> None:      # no I/O: no thread for it
        Library.authorize(caller_of(request), action, WHAT.get(action))

    cast(Any, check).skillshelf_action = action   # read by the test that every route names its action
    return Depends(check)


def safe_next(value: Any, default: str = "/") -> str:
    """A path of this site to go to after signing in (never another site's)."""
    nxt = str(value or "")
    # no control character or space either: a browser drops a tab from "/\t/host", making it "//host"
    ok = nxt.startswith("/") and not nxt.startswith("//") and "\\" not in nxt and len(nxt) <= 2000 \
        and nxt.isprintable() and " " not in nxt and not nxt.startswith(("/login", "/logout"))
    return nxt if ok else default


def session_cookie(response: Response, request: Request, token: str) -> None:
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict", path="/",
                        secure=request.url.scheme == "https")


class TeamAuth:
    """The part of the middleware (``security.Guard``) that finds the caller of a request
    on a team library: ``None`` to go on (``request.state.caller`` set, or a public path),
    or the response that refuses it."""

    def __init__(self, lib: Any):
        self.lib = lib

    def _verify(self, token: str) -> Any:
        token = token.strip()
        if not token or len(token) > TOKEN_MAX:
            return None
        return self.lib.verify_token(token)

    async def __call__(self, request: Request, api: bool) -> Response | None:
        path = request.url.path
        request.state.caller = None
        if path.startswith(PUBLIC_PREFIXES) or path in PUBLIC_FILES:
            return None
        auth = request.headers.get("authorization")
        cookie = request.cookies.get(SESSION_COOKIE)
        try:
            if auth is not None:
                scheme, _, cred = auth.strip().partition(" ")
                caller = await run_in_threadpool(self._verify, cred) if scheme.lower() == "bearer" else None
                if caller is None:      # a script's request: 401 in any case, JSON under /api
                    return _unauthorized(api, "the token sent is not valid (wrong, revoked, or not 'Bearer "
                                              "<token>')")
                request.state.caller, request.state.bearer = caller, True
                return None
            if cookie:
                caller = await run_in_threadpool(self._verify, cookie)
                if caller is not None:
                    request.state.caller = caller
                    return None
        except SkillshelfError as exc:      # the store cannot say who this is: nobody is let in
            message, fix = f"cannot check the token: {exc.message}", exc.fix or "try again in a moment"
            if api:
                return JSONResponse({"error": {"type": type(exc).__name__, "message": message, "fix": fix}}, 503)
            return _refuse(False, 503, message, fix)
        if path in PUBLIC:
            return None
        stale = bool(cookie)
        if api:
            resp: Response = _unauthorized(True, "this session's token is no longer valid" if stale
                                           else "this team library needs a token")
        else:
            target = "/login" + ("?" + urlencode({"next": _here(request)}) if request.method == "GET" else "")
            if stale:
                target += ("&" if "?" in target else "?") + "expired=1"
            if request.headers.get("hx-request") == "true":     # htmx follows a header, not a 303
                resp = Response(status_code=401, headers={"HX-Redirect": target})
            else:
                resp = RedirectResponse(target, 303)
        if stale:
            resp.delete_cookie(SESSION_COOKIE, path="/")
        return resp


def _here(request: Request) -> str:
    q = request.url.query
    return quote(request.url.path, safe="/:@-._~!$&'()*+,;=") + (f"?{q}" if q else "")


def _unauthorized(api: bool, message: str) -> Response:
    fix = ("send 'Authorization: Bearer <token>' with your own token (an admin makes one with "
           f"`{MAKE_TOKEN}`), or sign in at /login")
    resp = _refuse(api, 401, message, fix)
    if api:
        resp = JSONResponse({"error": {"type": "Unauthorized", "message": message, "fix": fix}}, 401)
    resp.headers["WWW-Authenticate"] = 'Bearer realm="skillshelf"'
    return resp
