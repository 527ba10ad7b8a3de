"""Who may talk to the dashboard, and how a browser is kept from being used against it.

* **Host.** Bound to loopback without a token, only ``127.0.0.1``, ``localhost`` and
  ``[::1]`` (with the port) are accepted as ``Host``: a page on another site that points a
  DNS name at 127.0.0.1 (DNS rebinding) is refused. With a token (required for any other
  bind) the token is the protection, as for the HTTP MCP server: any Host is accepted.
* **Token.** With ``SKILLSHELF_HTTP_TOKEN`` set, every request needs it: once as
  ``?token=`` (answered with a redirect that drops it from the address and an HttpOnly,
  SameSite=Strict cookie), then the cookie; scripts send ``Authorization: Bearer <token>``.
* **Team.** On a team store each person and agent has a token of their own with a role
  (``team``: :class:`.auth.TeamAuth`, with the login page); any Host is accepted then, as
  with a token, and ``SKILLSHELF_HTTP_TOKEN`` plays no part.
* **CSRF.** Every state-changing request needs a same-origin ``Origin`` (or, without one, a
  same-origin ``Referer``) and the per-session CSRF token: a random value kept in an
  HttpOnly, SameSite=Strict cookie and sent back in the form field ``csrf_token`` or the
  ``X-CSRF-Token`` header (double submit). A request authenticated by its Bearer header is
  not a browser's and needs neither.
* **Headers.** A Content-Security-Policy that allows scripts and styles from the app only
  (no inline script runs, whatever a skill's text holds), no framing, no sniffing.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)

TOKEN_COOKIE = "skillshelf_token"
CSRF_COOKIE = "skillshelf_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


@dataclass
class Guard:
    token: str = ""
    host: str = "127.0.0.1"
    port: int = 7788
    allowed_hosts: set[str] = field(default_factory=set)
    team: Any = None        # async (request, api) -> refusal or None, on a team library (auth.TeamAuth)

    def __post_init__(self) -> None:
        if not self.allowed_hosts:
            names = {"127.0.0.1", "localhost", "[::1]"}
            if self.host not in ("::1", "0.0.0.0", "::"):
                names.add(f"[{self.host}]" if ":" in self.host else self.host)
            self.allowed_hosts = {f"{n}:{self.port}" for n in names}

    # --- checks -----------------------------------------------------------------------
    def host_ok(self, host: str) -> bool:
        return bool(self.token) or self.team is not None or host.lower() in self.allowed_hosts

    def token_ok(self, value: str | None) -> bool:
        return bool(value and hmac.compare_digest(value.encode(), self.token.encode()))

    @staticmethod
    def same_origin(request: Request) -> bool:
        """The request's Origin (or, without one, its Referer) is this site."""
        own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
        origin = request.headers.get("origin")
        if origin is not None:
            return origin.lower() == own
        referer = request.headers.get("referer")
        if not referer:
            return False
        parts = urlsplit(referer)
        return f"{parts.scheme}://{parts.netloc}".lower() == own

    @staticmethod
    def csrf_ok(request: Request, sent: str | None) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE)
        return bool(cookie and sent and hmac.compare_digest(cookie.encode(), sent.encode()))

    # --- the middleware ---------------------------------------------------------------
    async def __call__(self, request: Request, call_next) -> Response:
        api = request.url.path.startswith("/api") or request.url.path == "/openapi.json"
        host = request.headers.get("host", "")
        if not self.host_ok(host):
            return self._finish(_refuse(api, 421, "unknown Host header",
                                        "open the dashboard at http://127.0.0.1 (or localhost) with its port"))
        request.state.bearer = False
        if self.team is not None:
            refused = await self.team(request, api)
            if refused is not None:
                return self._finish(refused)
        elif self.token:
            auth = request.headers.get("authorization", "")
            scheme, _, cred = auth.partition(" ")
            if auth and scheme.lower() == "bearer" and self.token_ok(cred.strip()):
                request.state.bearer = True
            elif self.token_ok(request.cookies.get(TOKEN_COOKIE)):
                pass
            elif request.method in SAFE_METHODS and self.token_ok(request.query_params.get("token")):
                # the token leaves the address bar (and the history) at once
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                resp = RedirectResponse(request.url.path + ("?" + urlencode(rest) if rest else ""), 303)
                resp.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/")
                return self._finish(resp)
            else:
                return self._finish(_refuse(api, 401, "this dashboard needs its token",
                                            "open the address with ?token=<SKILLSHELF_HTTP_TOKEN> once (the "
                                            "browser keeps it in a cookie), or send 'Authorization: Bearer "
                                            "<token>'"))
        if request.method not in SAFE_METHODS and not request.state.bearer and not self.same_origin(request):
            return self._finish(_refuse(api, 403, "cross-origin request refused",
                                        "send changes from the dashboard's own pages (Origin must be this site)"))
        csrf = request.cookies.get(CSRF_COOKIE)
        fresh = None
        if not csrf or len(csrf) < 32:
            csrf = fresh = secrets.token_urlsafe(32)
        request.state.csrf = csrf
        started = time.perf_counter()
        response = await call_next(request)
        if request.url.path.startswith("/static/") and response.status_code == 200:
            # the pages link them with ?v=<version>: a new release is a new URL
            response.headers["cache-control"] = "public, max-age=86400"
        # what the server spent on the page (routing, Library calls, rendering): shown by a
        # browser's developer tools, read by bench/dashboard.py
        response.headers["server-timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
        if fresh:
            response.set_cookie(CSRF_COOKIE, fresh, httponly=True, samesite="strict", path="/",
                                secure=request.url.scheme == "https")
        return self._finish(response)

    @staticmethod
    def _finish(response: Response) -> Response:
        for k, v in HEADERS.items():
            response.headers.setdefault(k, v)
        response.headers.setdefault("cache-control", "no-store")
        return response


def _refuse(api: bool, status: int, message: str, fix: str) -> Response:
    if api:
        return JSONResponse({"error": {"type": "Refused", "message": message, "fix": fix}}, status)
    return PlainTextResponse(f"{message} — {fix}\n", status)


async def require_csrf(request: Request) -> None:
    """A dependency of every state-changing route: the CSRF token from the header or the
    form must equal the session's cookie (requests carrying the Bearer token are exempt)."""
    from fastapi import HTTPException

    if request.method in SAFE_METHODS or getattr(request.state, "bearer", False):
        return
    sent = request.headers.get(CSRF_HEADER)
    if not sent and "form" in request.headers.get("content-type", ""):
        form = await request.form()
        value = form.get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    if not Guard.csrf_ok(request, sent):
        raise HTTPException(403, detail={"type": "Refused", "message": "missing or wrong CSRF token",
                                         "fix": "reload the page and send the form again"})
