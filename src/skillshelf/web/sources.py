"""Sources on the dashboard: the collections fetched from git or archives (``/sources``: where
each one comes from, the ref asked, the commit locked, how far behind upstream it is, its skills,
the ones held, and the files that differ from ``skillshelf.lock``), and a curator's Update: the
per-skill summary ``skillshelf sources update --dry-run`` prints first, then Apply, which moves
the lock only if upstream is still where the summary saw it. The JSON twin is under
``/api/sources``. Every call goes to ``Library.sources``, as the CLI's do."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..errors import SkillshelfError
from ..net import redact_url
from ..text import visible as shown_all
from .auth import caller_of, need
from .common import error_dict, lib_of, page, reader_of, redirect, status_of
from .security import require_csrf
from .supply import visible

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_csrf)])
api = APIRouter(prefix="/api", tags=["api"], dependencies=[Depends(require_csrf)])
UPDATE_ACTION = "sources"   # fetching, and moving the lock: a curator's (access.NEEDS)
SKILLS_SHOWN = 40           # a source's skills linked on the page; the rest are a filter of the Skills table
DRIFT_SHOWN = 20            # drifted files named per source
CHANGES_SHOWN = 500         # skills of an update's summary shown on one page


def source_of(lib: Any):
    """For the skill page (a template global): the source a skill came from (``Library.sources.of``:
    label, URL, commit), or None; a lock that cannot be read says nothing there."""
    def of(rec: Any) -> dict[str, Any] | None:
        try:
            return lib.sources.of(rec)
        except SkillshelfError:
            return None
    return of


def masked(url: str) -> str:
    """A source's URL as the dashboard shows it: a user, password or token written into it
    (``https://user:TOKEN@host/…``, ``https://TOKEN@host/…``) is replaced by ``***``, for every role."""
    return redact_url(url)


def _listed(lib: Any) -> list[dict[str, Any]]:
    return [{**s, "url": masked(s["url"]), "source": masked(s["source"])} for s in lib.sources.list()]


def _rows(lib: Any, reader: Any) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Each source as ``sources list`` gives it, with its first skills (id and name, for links)
    and the files of its folder that differ from the lock; and all drifted files."""
    drift = [d.as_dict() for d in lib.sources.check()]
    rows = []
    for s in _listed(lib):
        skills = lib.browse(root=s["root"], limit=SKILLS_SHOWN, reader=reader)
        mine = [d for d in drift if d["source"] == s["label"]]
        rows.append({**s, "skill_links": [{"id": r.id, "name": r.name} for r in skills.items],
                     "indexed": skills.total, "drift": mine[:DRIFT_SHOWN], "drift_total": len(mine),
                     "unreadable": [shown_all(u) for u in s.get("unreadable") or []]})
    return rows, drift


def _summary(d: dict[str, Any]) -> dict[str, Any]:
    """A plan's ``as_dict`` for the page: paths and notes with invisible characters shown, and
    each finding with ``where`` and a visible excerpt (``_macros.audit_findings``)."""
    changes = []
    for c in d["changes"][:CHANGES_SHOWN]:
        base = c["path"] if c["path"] != "." else ""
        found = [dict(f, shown=visible(f.get("excerpt")),
                      where="/".join(p for p in (base, f.get("file") or "SKILL.md") if p)
                      + (f":{f['line']}" if f.get("line") else "")) for f in c["findings"]]
        changes.append(dict(c, path=shown_all(c["path"]), moved_from=shown_all(c.get("moved_from") or ""),
                            files=[shown_all(f) for f in c["files"]],
                            note=shown_all(c["note"] or ""), findings=found))
    return dict(d, changes=changes, changes_total=len(d["changes"]), notes=[shown_all(n) for n in d["notes"]],
                drift=d["drift"][:DRIFT_SHOWN], drift_total=len(d["drift"]),
                kept=[dict(k, skill=shown_all(k["skill"]), name=shown_all(k["name"]), kept=shown_all(k["kept"]),
                           note=shown_all(k["note"])) for k in d.get("kept") or []],
                unlisted=[dict(u, file=shown_all(u["file"]), kept=shown_all(u["kept"]))
                          for u in (d.get("unlisted") or [])[:DRIFT_SHOWN]], unlisted_total=len(d.get("unlisted") or []))


def _failed(exc: SkillshelfError) -> Response:
    e = error_dict(exc)
    return redirect("/sources", e["message"] + (f" — {e['fix']}" if e.get("fix") else ""), "error")


# --- the pages ----------------------------------------------------------------------------------

@router.get("/sources", response_class=HTMLResponse, dependencies=[need("list")])
def sources(request: Request):
    rows, drift = _rows(lib_of(request), reader_of(request))
    return page(request, "sources.html", sources=rows, drift_total=len(drift), update_action=UPDATE_ACTION,
                skills_shown=SKILLS_SHOWN)


@router.post("/sources/{label}/update", dependencies=[need(UPDATE_ACTION)])
async def update(request: Request, label: str) -> Response:
    """Without ``apply``: fetch and show what an update would do (nothing moves). With ``apply``
    and the commits the summary showed (``from``, ``to``): fetch again and apply it, unless the
    lock or upstream moved since, when the new summary is shown to be looked at again."""
    form = await request.form()
    applying = bool(form.get("apply"))
    seen = (str(form.get("from") or ""), str(form.get("to") or ""))

    def run() -> Response:
        lib, caller = lib_of(request), caller_of(request)   # the lock's change is recorded under the token's name
        try:
            with lib.sources.planning([label], caller=caller) as plans:
                plan = plans[0]
                if plan.error:
                    return redirect("/sources", f"{label}: {plan.error}", "error")
                d = plan.as_dict()
                moved_since = applying and (d["from"], d["to"]) != seen
                if not applying or moved_since or not plan.moved:
                    return page(request, "source_update.html", 409 if moved_since else 200, plan=_summary(d),
                                applied=False, moved_since=moved_since, update_action=UPDATE_ACTION)
                with lib.exclusive(what=f"updating the source {label}"):
                    d = lib.sources.apply(plan, caller=caller).as_dict()
        except SkillshelfError as exc:
            return _failed(exc)
        return page(request, "source_update.html", plan=_summary(d), applied=True, moved_since=False,
                    update_action=UPDATE_ACTION)

    return await run_in_threadpool(run)


# --- the JSON API -------------------------------------------------------------------------------

class UpdateBody(BaseModel):
    labels: list[str] = Field(default_factory=list, description="the sources to update (none: all of them)")
    dry_run: bool = Field(False, description="say what would change (per skill: added, removed, changed, the "
                                             "audit of the new text, your edits merged or in conflict); change "
                                             "nothing")
    to: str | None = Field(None, description="move one source to this ref or commit (also how an update is undone)")


@api.get("/sources", dependencies=[need("list")],
         summary="Each source (label, URL, ref, commit locked, behind upstream, last update, skills, held) and "
                 "every file that differs from skillshelf.lock")
def api_sources(request: Request):
    lib = lib_of(request)
    return {"sources": _listed(lib), "drifted": [d.as_dict() for d in lib.sources.check()]}


@api.post("/sources/update", dependencies=[need(UPDATE_ACTION)],
          summary="`skillshelf sources update [--dry-run] [--to REF]`: one plan per source, applied unless "
                  "dry_run; a source that cannot be fetched has its `error` and does not stop the others")
def api_update(request: Request, body: UpdateBody):
    lib, caller = lib_of(request), caller_of(request)
    results = []
    try:
        with lib.sources.planning(body.labels, to=body.to, caller=caller) as plans:
            for plan in plans:
                if body.dry_run or plan.error or not plan.moved:
                    results.append(plan.as_dict())
                    continue
                with lib.exclusive(what=f"updating the source {plan.label}"):
                    results.append(lib.sources.apply(plan, caller=caller).as_dict())
    except SkillshelfError as exc:
        # a source that cannot be fetched (unreachable, no such ref) is upstream's failure, not ours
        status = status_of(exc)
        return JSONResponse({"error": error_dict(exc)}, 502 if status == 500 else status)
    return results
