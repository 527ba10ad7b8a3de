"""The supply chain on the dashboard: the audit's findings on a skill's page (``findings``),
the skills held back from agents since their collection was pinned (``/held``: what changed,
as ``skillshelf trust`` shows it, side by side) and the Accept button that pins the new
content (``/act/trust``, a curator's, with the CSRF token like every form)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from ..errors import NotFoundError, SkillshelfError
from ..text import visible as shown_all
from .auth import need
from .common import error_dict, lib_of, page, redirect
from .security import require_csrf

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_csrf)])
# accepting a held skill is a curator's decision, as approving a draft is
TRUST_ACTION = "trust"
HELD_MAX = 200             # held skills shown with their diff on one page
EXCERPT_MAX = 300          # characters of a finding's excerpt shown
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")



def finding_rows(findings: list[dict]) -> list[dict]:
    """Audit findings as ``_macros.audit_findings`` shows them: ``where`` (file:line) and a
    visible excerpt (invisible characters named)."""
    return [dict(f, where=f"{f.get('file') or 'SKILL.md'}" + (f":{f['line']}" if f.get("line") else ""),
                 shown=visible(f.get("excerpt"))) for f in findings]

def visible(text: Any, limit: int = EXCERPT_MAX) -> str:
    """Text with every character a reader would not see (controls, zero-width and bidi
    characters, other format characters) written as ``<U+200B>``, as the audit's excerpts
    already are; tabs stay."""
    s = str(text or "")[:limit]
    return "".join(c if c.isprintable() or c == "\t" else f"<U+{ord(c):04X}>" for c in s)


def findings(lib: Any, skill_id: str) -> dict[str, Any] | None:
    """The audit of a skill for its page: risk, trusted, findings (with why each matters,
    ``where`` and a visible excerpt), and why agents do not see it (None when they do); None
    if it has not been audited. The audit is brought up to date first (a stat per file: only
    a file that changed is read again)."""
    try:
        found = lib.supply.audit([skill_id])
    except SkillshelfError:     # a read-only index cannot keep a new audit: show the last one
        found = None
    try:
        a = lib.supply.audit_of(skill_id)
    except NotFoundError:
        return None
    if a is None:
        return None
    rows = finding_rows(a.get("findings") or [] if found is None else found)
    return {"risk": a.get("risk") or "none", "trusted": bool(a.get("trusted")), "findings": rows,
            "hidden": lib.supply.hidden().get(skill_id)}


def rows_of_unified(diff: str) -> list[dict[str, Any]]:
    """The rows of the side-by-side table (``_macros.sbs``) for a unified diff: unchanged
    lines on both sides, a run of removed lines beside the added lines that replace it,
    and a ``skip`` row for the lines between hunks."""
    rows: list[dict[str, Any]] = []
    minus: list[tuple[int, str]] = []
    plus: list[tuple[int, str]] = []
    ln = rn = 0
    seen_hunk = False

    def flush() -> None:
        for k in range(max(len(minus), len(plus))):
            left = minus[k] if k < len(minus) else (None, None)
            right = plus[k] if k < len(plus) else (None, None)
            kind = "change" if minus and plus else "delete" if minus else "insert"
            rows.append({"kind": kind, "l_no": left[0], "l": left[1], "r_no": right[0], "r": right[1]})
        minus.clear()
        plus.clear()

    for line in diff.splitlines():
        m = HUNK.match(line)
        if m:
            flush()
            start = int(m.group(1)) or 1        # "-0,0": the file was empty
            if start - 1 > ln:
                rows.append({"kind": "skip", "count": start - 1 - ln, "l_no": None, "l": None, "r_no": None,
                             "r": None})
            ln, rn, seen_hunk = start - 1, max(int(m.group(3)), 1) - 1, True
            continue
        if not seen_hunk:           # the "---" and "+++" lines naming the two sides
            continue
        tag, text = line[:1], line[1:]
        if tag == "-":
            ln += 1
            minus.append((ln, text))
        elif tag == "+":
            rn += 1
            plus.append((rn, text))
        elif tag == " ":
            flush()
            ln, rn = ln + 1, rn + 1
            rows.append({"kind": "equal", "l_no": ln, "l": text, "r_no": rn, "r": text})
    flush()
    return rows


def _held(lib: Any) -> list[dict[str, Any]]:
    out = []
    for sid, h in sorted(lib.supply.held().items())[:HELD_MAX]:
        d = lib.supply.held_diff(sid)
        try:
            name = lib.get(sid, reader=lib.PERSON).name   # the Held page: curators
        except NotFoundError:
            name = None
        d["new_findings"] = [dict(f, shown=visible(f.get("excerpt")),
                                  where=f"{f.get('file') or 'SKILL.md'}" + (f":{f['line']}" if f.get("line") else ""))
                             for f in d.get("new_findings") or []]
        for label in ("added", "removed", "changed"):
            d[label] = [shown_all(str(n)) for n in d.get(label) or []]
        tail = shown_all(d.get("skill_md_diff") or "")    # what got it held may be invisible: <U+200B>
        out.append({"id": sid, "name": name, "held": h, "diff": d, "rows": rows_of_unified(tail),
                    "note": None if HUNK.search(tail) or not tail else tail.splitlines()[-1]})
    return out


@router.get("/held", response_class=HTMLResponse, dependencies=[need("held")])
def held(request: Request):
    lib = lib_of(request)
    items = _held(lib)
    return page(request, "held.html", items=items, total=len(lib.supply.held()), shown_max=HELD_MAX,
                trust_action=TRUST_ACTION)


@router.post("/act/trust", dependencies=[need(TRUST_ACTION)])
async def act_trust(request: Request) -> Response:
    form = await request.form()
    ref = str(form.get("skill") or "")

    def run() -> Response:
        lib = lib_of(request)
        try:
            with lib.exclusive(what="accepting a held skill"):
                lib.supply.trust(ref)
        except SkillshelfError as exc:
            e = error_dict(exc)
            return redirect("/held", e["message"] + (f" — {e['fix']}" if e.get("fix") else ""), "error")
        return redirect("/held", f"accepted {ref}: its new content is pinned and agents see it again")

    return await run_in_threadpool(run)
