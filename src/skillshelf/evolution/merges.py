"""What a MERGE keeps of its sources: the body it writes when none is sent (every source's text
whole, under ``## From <name>``), and the check that refuses an agent's merge whose body keeps
far less than its sources say (a merge retires its sources: what its body drops is gone from
search)."""

from __future__ import annotations

import re
from typing import Any

from .. import text as textmod
from ..errors import ValidationError
from .lessons import LESSONS, _without_lessons

# a source whose merged body keeps less than this share of its words is said to be dropped
MIN_KEPT = 0.3
# ... among sources of at least this many distinct words (a stub of a line has little to lose)
MIN_WORDS = 20
_WORD = re.compile(r"[a-z0-9]{4,}")


def _body_without_lessons(body: str) -> str:
    sec = textmod.section(body, LESSONS)
    return body.replace(sec, "").strip("\n") if sec else _without_lessons(body).strip("\n")


def _demoted(body: str, top: int) -> str:
    """``body`` with its headings moved down so the highest is at level ``top`` (code blocks untouched)."""
    lines = body.split("\n")
    code = textmod.in_code(lines)
    levels = [h[0] for line, c in zip(lines, code) if not c and (h := textmod.heading(line))]
    shift = max(0, top - min(levels)) if levels else 0
    if not shift:
        return body
    out = []
    for line, c in zip(lines, code):
        h = None if c else textmod.heading(line)
        out.append("#" * min(6, h[0] + shift) + " " + h[1].strip() if h else line)
    return "\n".join(out)


def default_body(recs: list[Any]) -> str:
    """The body of a MERGE sent without one: each source's text whole (its lessons are carried
    apart), under ``## From <name>``."""
    return "\n\n".join(f"## From {r.name}\n\n" + (_demoted(_body_without_lessons(r.body), 3).strip("\n")
                                                  or r.description) for r in recs)


def _shown(text: str) -> str:
    """``text`` without its HTML comments (a reader never sees them: words hidden there keep nothing)."""
    out, at = [], 0
    while (start := text.find("<!--", at)) != -1:
        out.append(text[at:start])
        end = text.find("-->", start + 4)
        if end == -1:
            return "".join(out)
        at = end + 3
    return "".join(out) + text[at:]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(_shown(text).lower()))


def dropped(recs: list[Any], body: str) -> list[str]:
    """What the merged ``body`` leaves out, one phrase per source (of ``MIN_WORDS`` words or more) it
    keeps less than ``MIN_KEPT`` of: the share of its words kept and the sections of it not in the body."""
    have = _words(body)
    titles = {t.lower() for _, t in textmod.headings(body)}
    out = []
    for r in recs:
        own = _body_without_lessons(r.body)
        words = _words(own)
        if len(words) < MIN_WORDS:
            continue
        kept = len(words & have) / len(words)
        if kept >= MIN_KEPT:
            continue
        gone = [t for lvl, t in textmod.headings(own) if lvl > 1 and t.lower() not in titles]
        out.append(f"{r.name} ({kept:.0%} of its words kept"
                   + (f"; its sections {', '.join(gone[:6])}{' …' if len(gone) > 6 else ''} are not in the body"
                      if gone else "") + ")")
    return out


def check_keeps(recs: list[Any], body: str) -> None:
    """Refuse a merged body that keeps far less than its sources (see :func:`dropped`)."""
    lost = dropped(recs, body)
    if lost:
        raise ValidationError("this MERGE would retire its sources but its body keeps little of what they say: "
                              + "; ".join(lost),
                              fix="send a body that carries each source's steps, causes and checks, or send no "
                                  "body: the merge then keeps each source's text whole under '## From <name>'")
