"""The FastAPI application: security middleware, static files, error pages, and the two
routers (pages in :mod:`.pages`, the JSON API in :mod:`.api`); what they share is in
:mod:`.common`."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from ..errors import SkillshelfError, StoreError
from ..version import __version__
from . import actions, api, pages, sources, supply, team as team_routes
from .auth import TeamAuth
from .common import HERE, Pages, error_dict, status_of
from .security import Guard


def build(lib: Any, *, token: str = "", host: str = "127.0.0.1", port: int = 7788) -> FastAPI:
    app = FastAPI(title="skillshelf dashboard", version=__version__,
                  description="The JSON API the dashboard's pages use: browse, search, read, the usage "
                              "flywheel, and the same actions as the CLI (save, deprecate, restore, delete, extend "
                              "TTL, rollback, review drafts). State-changing calls need the CSRF token "
                              "(X-CSRF-Token header, from the session cookie) and a same-origin Origin, or "
                              "'Authorization: Bearer <SKILLSHELF_HTTP_TOKEN>'. On a team store every call "
                              "needs 'Authorization: Bearer <token>' (a person's or an agent's own, from "
                              "`skillshelf tokens add`): a missing or wrong token is 401, a role without the "
                              "right 403 naming the role needed.",
                  docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    app.state.lib = lib
    app.state.pages = Pages(lib)
    team = bool(lib.team)
    app.state.guard = Guard(token=token, host=host, port=port, team=TeamAuth(lib) if team else None)
    app.middleware("http")(app.state.guard)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        from fastapi.responses import FileResponse

        return FileResponse(HERE / "static" / "icon.svg", media_type="image/svg+xml")

    @app.exception_handler(SkillshelfError)
    async def domain_error(request: Request, exc: SkillshelfError) -> Response:
        if request.url.path.startswith("/api"):
            return JSONResponse({"error": error_dict(exc)}, status_of(exc))
        return app.state.pages.render(request, "error.html", status_of(exc), error=error_dict(exc))

    import sqlite3

    @app.exception_handler(sqlite3.DatabaseError)
    async def database_error(request: Request, exc: sqlite3.DatabaseError) -> Response:
        # read errors the store could not wrap (a damaged value is found only when a row is
        # read) and writes the disk refuses: named, with the fix, like any domain error
        from ..library import explain

        err: SkillshelfError | None = explain(exc, db_path=lib.config.db_path, home=lib.config.home)
        if err is None:
            err = StoreError(f"database error: {str(exc).split(' with text ', 1)[0]}",
                             fix="run `skillshelf doctor`; if it reports the database damaged, `skillshelf rebuild`")
        return await domain_error(request, err)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, dict) else {"type": "HTTPError", "message": str(exc.detail),
                                                                   "fix": None}
        if request.url.path.startswith("/api"):
            return JSONResponse({"error": detail}, exc.status_code)
        return app.state.pages.render(request, "error.html", exc.status_code, error=detail)

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        errs = exc.errors()
        first = errs[0] if errs else {}
        where = ".".join(str(x) for x in first.get("loc", ()) if x not in ("body", "query", "form"))
        detail = {"type": "ValidationError", "message": f"{where}: {first.get('msg', 'invalid value')}",
                  "fix": "correct that value and send it again"}
        if request.url.path.startswith("/api"):
            return JSONResponse({"error": detail, "details": [
                {k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errs]}, 422)
        return app.state.pages.render(request, "error.html", 400, error=detail)

    if team:        # signing in and out, the admin's tokens
        app.include_router(team_routes.api)
        app.include_router(team_routes.router)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(actions.router)
    app.include_router(supply.router)
    app.include_router(sources.router)
    app.include_router(sources.api)
    app.state.pages.env.globals["source_of"] = sources.source_of(lib)      # a skill page names its source
    return app
