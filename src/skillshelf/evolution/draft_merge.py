"""A draft whose skill moved on while it waited: its change merged three-way with what was
saved meanwhile, so approving it never drops another writer's change.

A FIX draft keeps the version it was made from (``base_version`` in its record). When the
skill is at a later version at review, the draft's text (its change made on that version)
and the current text are merged against that version with ``merge3`` (as ``sources update``
merges a person's edit with upstream): the description from the side that changed it, the
body line by line apart from its Lessons Learned, which accumulate (a lesson either side
added is kept, one either side removed stays removed). A part both sides changed differently
is a conflict: nothing is written, and the reviewer reads the merge with conflict markers."""

from __future__ import annotations

from dataclasses import dataclass

import merge3

from .. import skill as skillmod, text as textmod
from .lessons import LESSONS, _lesson_text, _without_lessons, lesson_lines


@dataclass
class Rebased:
    clean: bool
    description: str = ""
    body: str = ""            # the merged body, its Lessons Learned included (clean)
    marked: str = ""          # the whole files merged with conflict markers (a conflict)
    why: str = ""             # what conflicts


def _rest(body: str) -> str:
    """The body without its Lessons Learned."""
    sec = textmod.section(body, LESSONS)
    return (body.replace(sec, "") if sec else _without_lessons(body)).strip("\n") + "\n"


def _marked(base: str, draft: str, current: str) -> str:
    return textmod.marked3(base, draft, current, ("the draft", "the skill now", "made from"))


def rebase(base: str, draft: str, current: str, own: list[str]) -> Rebased:
    """Merge the draft's move from ``base`` (the version it was made from) to ``draft`` into
    ``current`` (SKILL.md texts). ``own``: the lessons the draft's change sends itself (its
    ``lesson`` and its parts'), left out of the body: the change adds them, under the version
    it writes."""
    b, d, c = (skillmod.parse(x).skill for x in (base, draft, current))
    if b is None or d is None or c is None:
        return Rebased(False, marked=_marked(base, draft, current), why="a side is not a readable SKILL.md")
    conflicts = []
    desc, clash = textmod.pick3(b.description, d.description, c.description)
    if clash:
        conflicts.append("the description")
    m = merge3.Merge3(textmod.lines3(_rest(b.body)), textmod.lines3(_rest(d.body)), textmod.lines3(_rest(c.body)))
    n = [r[0] for r in m.merge_regions()].count("conflict")
    if n:
        conflicts.append(f"{n} part(s) of the body")
    if conflicts:
        return Rebased(False, marked=_marked(base, draft, current),
                       why=" and ".join(conflicts) + " changed both in the draft and in the skill since")
    keys = {_lesson_text(x) for x in own if x}
    had = {_lesson_text(x) for x in lesson_lines(b.body)}
    kept_d = {_lesson_text(x) for x in lesson_lines(d.body)}
    lessons = [x for x in lesson_lines(c.body) if _lesson_text(x) not in had - kept_d]
    seen = {_lesson_text(x) for x in lessons}
    lessons += [x for x in lesson_lines(d.body) if _lesson_text(x) not in had | seen | keys]
    body = "".join(m.merge_lines()).strip("\n")
    if lessons:
        body += f"\n\n## {LESSONS}\n\n" + "\n".join(lessons)
    return Rebased(True, description=desc, body=body + "\n")
