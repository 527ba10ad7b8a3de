"""The HTML pages a person reads. Each route calls ``Library`` methods and renders a
template; htmx swaps parts of pages where that is quicker. The forms that change something
post to :mod:`.actions`."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from ..errors import SkillshelfError, ValidationError
from ..library import Library
from ..text import STOPWORDS, visible
from . import render, supply
from .auth import caller_of, can, need
from .common import error_dict, lib_of, page, reader_of, redirect, to_int
from .security import require_csrf

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_csrf)])
PAGE = 50
SEARCH_PAGE = 20
# Curate shows each list a page at a time (a screen or two each, not one page of thousands of pixels)
KILL_PAGE = 50             # kill candidates on one page of Curate
INACTIVE_PAGE = 50         # deprecated skills on one page of Curate
LIST_PAGE = 25             # rewrite candidates, and gaps, on one page of Curate
OVERVIEW_TOP = 8           # rows of each curation list on the overview
CURATION_ALL = 1_000_000   # Curate pages through every kill candidate: the lists are asked for whole
FILE_LIST_MAX = 5000
SAVE_FIELDS = ("name", "display_name", "description", "skill_type", "tags", "repo_name", "ttl_days", "body",
               "reason", "lesson", "target_skill_name")
REQUEST_MAX = 1000         # characters of a request carried into the new-skill form


def _tristate(value: str | None) -> bool | None:
    return {"yes": True, "no": False}.get((value or "").lower())


# --- overview -------------------------------------------------------------------------------

@router.get("/", response_class=HTMLResponse, dependencies=[need("stats")])
def overview(request: Request):
    o = lib_of(request).overview()
    fw = o["flywheel"]
    charts = {
        "queries": render.bars(fw["days"], "queries", label="day"),
        "report_rate": render.bars(fw["weeks"], "report_rate", label="week", percent=True),
        "success_rate": render.bars(fw["weeks"], "success_rate", label="week", percent=True),
        "gaps": render.bars(fw["weeks"], "gaps", label="week"),
    }
    # the overview shows the head of each list (Curate has them whole)
    cur = {k: v[:OVERVIEW_TOP] if isinstance(v, list) else v for k, v in o["curation"].items()}
    return page(request, "overview.html", o=o, charts=charts, cur=cur)


# --- curate ---------------------------------------------------------------------------------

def _window(total: int, offset: int, size: int, url: Any) -> dict[str, Any]:
    """One page of a list on Curate: where it starts and ends, and the links to the pages
    before and after it (``url(offset)``)."""
    if offset >= total:             # past the end (the list shrank): its last page
        offset = max((total - 1) // size * size, 0)
    end = min(offset + size, total)
    return {"offset": offset, "end": end, "total": total, "size": size,
            "prev": url(max(offset - size, 0)) if offset > 0 else None,
            "next": url(offset + size) if end < total else None}


@router.get("/curate", response_class=HTMLResponse, dependencies=[need("stats")])
def curate(request: Request):
    lib, reader = lib_of(request), reader_of(request)
    p = request.query_params
    kill_at, gone_at = to_int(p.get("kill_offset"), 0), to_int(p.get("inactive_offset"), 0)
    rewrite_at, gaps_at = to_int(p.get("rewrite_offset"), 0), to_int(p.get("gaps_offset"), 0)

    def url(anchor: str, **at: int) -> str:
        q = {"rewrite_offset": rewrite_at, "gaps_offset": gaps_at, "kill_offset": kill_at, "inactive_offset": gone_at,
             **at}
        query = urlencode({k: v for k, v in q.items() if v})
        return "/curate" + (f"?{query}" if query else "") + f"#{anchor}"

    cur = lib.curation(top=CURATION_ALL)
    lists = {}
    for name, at in (("rewrite", rewrite_at), ("gaps", gaps_at)):
        w = lists[name] = _window(cur[f"{name}_total"], at, LIST_PAGE, lambda o, n=name: url(n, **{f"{n}_offset": o}))
        w["items"] = cur[name][w["offset"]:w["end"]]
    kill = _window(cur["kill_total"], kill_at, KILL_PAGE, lambda o: url("kill", kill_offset=o))
    kill["items"] = cur["kill"][kill["offset"]:kill["end"]]
    # a list kept from a request that asked for fewer rows (above SNAPSHOT_SYNC_MAX skills the
    # lists are recomputed in the background): say so rather than show a short page
    kill["partial"] = len(cur["kill"]) < kill["end"]
    kill["here"] = url("kill", kill_offset=kill["offset"]).split("#")[0]
    first = lib.browse(status="inactive", sort="name", offset=gone_at, limit=INACTIVE_PAGE, reader=reader)
    if gone_at and not first.items and first.total:       # past the end (some were restored): the last page
        gone_at = (first.total - 1) // INACTIVE_PAGE * INACTIVE_PAGE
        first = lib.browse(status="inactive", sort="name", offset=gone_at, limit=INACTIVE_PAGE, reader=reader)
    inactive = _window(first.total, gone_at, INACTIVE_PAGE, lambda o: url("inactive", inactive_offset=o))
    inactive["items"] = first.items
    inactive["here"] = url("inactive", inactive_offset=inactive["offset"]).split("#")[0]
    return page(request, "curate.html", cur=cur, kill=kill, inactive=inactive, rewrite=lists["rewrite"],
                gaps=lists["gaps"], tick=p.get("tick") or "", evals=lib.evals.last_all(reader))


@router.post("/curate/evals", dependencies=[need("run_evals")])
def curate_evals(request: Request):
    """Run every skill's evals now (``skillshelf eval --all``) and show Curate with the result.
    Curate itself only reads the last run: a run is one search per query, too slow for a page
    load on a large library."""
    run = lib_of(request).evals.run(everything=True, caller=caller_of(request))
    failed = sum(not r.passed for r in run.results)
    return redirect("/curate#evals", f"ran the evals of {len(run.results)} skills: {failed} failed, "
                                     f"{len(run.collisions)} collisions")


# --- skills table ---------------------------------------------------------------------------

@router.get("/skills", response_class=HTMLResponse, dependencies=[need("search")])
def skills(request: Request):
    p = request.query_params
    lib = lib_of(request)
    f: dict[str, Any]   # the filters as the form has them (text, and "desc" a flag)
    f = {"q": (p.get("q") or "").strip(), "root": p.get("root") or "", "repo": (p.get("repo") or "").strip(),
         "type": p.get("type") or "", "tag": (p.get("tag") or "").strip(), "status": p.get("status") or "any",
         "expired": p.get("expired") or "", "sort": p.get("sort") if p.get("sort") in Library.SORTS else "name",
         "desc": p.get("desc") == "1"}
    limit = to_int(p.get("limit"), SEARCH_PAGE if f["q"] else PAGE, low=1, high=Library.PAGE_MAX)
    offset = to_int(p.get("offset"), 0)
    error = None
    try:
        result = lib.browse(query=f["q"] or None, root=f["root"] or None, repo=f["repo"] or None,
                            skill_type=f["type"] or None, tag=f["tag"] or None, status=f["status"],
                            expired=_tristate(f["expired"]), sort=f["sort"], descending=f["desc"], offset=offset,
                            limit=limit, reader=reader_of(request))
    except ValidationError as exc:
        error, result = error_dict(exc), None
    ctx = dict(f=f, page=result, error=error, facets=lib.facets(), limit=limit, offset=offset)
    if request.headers.get("hx-request") == "true" and request.headers.get("hx-target") == "results":
        return HTMLResponse(request.app.state.pages.fragment("_results.html", request=request, **ctx))
    return page(request, "skills.html", 400 if error else 200, **ctx)


# --- one skill ------------------------------------------------------------------------------

@router.get("/skill/{skill_id:path}", response_class=HTMLResponse, dependencies=[need("read")])
def skill(request: Request, skill_id: str):
    lib, reader = lib_of(request), reader_of(request)
    rec = lib.get(skill_id, reader=reader)
    tab = request.query_params.get("tab") or "doc"
    ctx: dict[str, Any] = dict(rec=rec, tab=tab, files=rec.files(), copies=lib.copies(rec.id, reader=reader),
                               lineage=lib.lineage(rec.id), usage=lib.skill_usage(rec.id, limit=100))
    ctx["history"] = lib.history(rec.id) if rec.writable else None
    ctx["audit"] = supply.findings(lib, rec.id)     # what the audit found in its files, and if agents see it
    if tab == "doc":
        ctx["html"] = render.markdown(rec.body, rec.id)
    elif tab == "source":
        ctx["source"] = lib.skill_text(rec.id, reader=reader)
    elif tab == "evals":         # this one skill's evals, run now (one search per query)
        ctx["evals"] = lib.evals.of_skill(rec.id)
    elif tab == "usage":         # its outcomes per version: one read of the usage log
        ctx["outcomes"] = lib.evals.versions(rec.id)
        ctx["chart"] = version_chart(ctx["outcomes"]["versions"], ctx["outcomes"]["current"])
    elif tab == "history" and ctx["history"]:
        versions = ctx["history"]["versions"]
        a = to_int(request.query_params.get("a"), 0)
        b = to_int(request.query_params.get("b"), 0)
        if not (a and b) and len(versions) >= 2:
            a, b = versions[-2], versions[-1]
        if a and b:
            try:
                ctx["compare"] = lib.compare(rec.id, a, b, reader=reader)
            except SkillshelfError as exc:
                ctx["compare_error"] = error_dict(exc)
        ctx["a"], ctx["b"] = a, b
    return page(request, "skill.html", **ctx)


CHART_H = 80          # the per-version chart: the height of a 100 % bar, in SVG units
CHART_W = 36          # ... and the room each version takes


def version_chart(rows: list[dict[str, Any]], current: int) -> dict[str, Any] | None:
    """Where each version's bar and interval go in the skill page's per-version chart (an
    inline SVG drawn by the template): the success rate as a bar, the 95 % Wilson interval as
    a line across it. None without reports."""
    rows = [r for r in rows if r["reports"]]
    if not rows:
        return None

    def y(rate: float) -> float:
        return round(10 + CHART_H * (1 - rate), 1)

    bars = [{"version": r["version"], "x": 28 + i * CHART_W, "y": y(r["rate"]), "h": round(CHART_H * r["rate"], 1),
             "low": y(r["low"]), "high": y(r["high"]), "current": r["version"] == current,
             "label": f"v{r['version']}: {r['worked']}/{r['reports']} worked ({r['rate']:.0%}, 95% interval "
                      f"{r['low']:.0%}–{r['high']:.0%})"} for i, r in enumerate(rows)]
    return {"bars": bars, "width": 28 + len(rows) * CHART_W + 8, "height": CHART_H + 30, "base": 10 + CHART_H,
            "mid": y(0.5), "top": y(1.0)}


@router.get("/file/{skill_id:path}", response_class=HTMLResponse, dependencies=[need("read")])
def skill_file(request: Request, skill_id: str):
    lib = lib_of(request)
    path = request.query_params.get("path") or ""
    rec, text = lib.read_file(skill_id, path, listed=FILE_LIST_MAX, reader=reader_of(request))
    html = render.markdown(text, rec.id) if path.lower().endswith((".md", ".markdown")) else render.code(text, path)
    return page(request, "file.html", rec=rec, file_path=path, html=html)


# --- editor ---------------------------------------------------------------------------------

def _form_from(rec: Any, *, action: str) -> dict[str, str]:
    m = rec.metadata
    return {"name": rec.name if action == "FIX" else "", "display_name": m.get("display-name", "") if action == "FIX"
            else "", "description": rec.description, "skill_type": rec.skill_type or "", "tags": ", ".join(rec.tags),
            "repo_name": rec.repo or "", "ttl_days": m.get("ttl-days", "") if action == "FIX" else "",
            "body": rec.body, "reason": "", "lesson": "", "target_skill_name": rec.id}


def name_for(request_text: str, words: int = 6) -> str:
    """A skill name to start from for a request: its first few words that carry meaning,
    in a-z and 0-9, joined by hyphens ("" when none are; the person edits it anyway)."""
    found = [w for w in re.findall(r"[a-z0-9]+", request_text.lower()) if w not in STOPWORDS]
    return "-".join(found[:words])[:64].strip("-")


@router.get("/new", response_class=HTMLResponse, dependencies=[need("save_skill")])
def new(request: Request):
    lib = lib_of(request)
    parent = request.query_params.get("from")
    if parent:
        rec = lib.get(parent, reader=reader_of(request))
        return editor(request, "DERIVE", _form_from(rec, action="DERIVE"), rec=rec)
    blank = {k: "" for k in SAVE_FIELDS}
    blank["body"] = "## When to Use\n\n\n## Solution\n\n"
    # "Write a skill" beside a gap: the request nothing served starts the form
    asked = " ".join((request.query_params.get("request") or "").split())[:REQUEST_MAX]
    if asked:
        blank.update(name=name_for(asked), description=asked[:1024],
                     body=f"## When to Use\n\n{asked}\n\n## Solution\n\n",
                     reason=f"a gap: searches asked for “{asked[:200]}” and nothing served them")
    return editor(request, "ARCHIVE", blank, asked=asked)


@router.get("/edit/{skill_id:path}", response_class=HTMLResponse, dependencies=[need("save_skill")])
def edit(request: Request, skill_id: str):
    rec = lib_of(request).get(skill_id, reader=reader_of(request))
    return editor(request, "FIX", _form_from(rec, action="FIX"), rec=rec)


def editor(request: Request, action: str, form: dict[str, str], *, rec: Any = None, error: dict | None = None,
           status: int = 200, asked: str = "") -> HTMLResponse:
    return page(request, "edit.html", status, action=action, form=form, rec=rec, error=error, types=Library.SKILL_TYPES,
                asked=asked, direct=can(request, "edit"))


# --- review ---------------------------------------------------------------------------------

@router.get("/review", response_class=HTMLResponse, dependencies=[need("read")])
def review(request: Request):
    return page(request, "review.html", drafts=lib_of(request).review.list())


@router.get("/review/{name}", response_class=HTMLResponse, dependencies=[need("read")])
def draft(request: Request, name: str):
    d = lib_of(request).draft_review(name, reader=reader_of(request))
    # what a person reviews: an invisible character in the draft's reason or lesson is shown (<U+200B>)
    d["args"] = {k: visible(v) if isinstance(v, str) else v for k, v in d["args"].items()}
    d["findings"] = supply.finding_rows(d.get("findings") or [])
    return page(request, "draft.html", d=d)
