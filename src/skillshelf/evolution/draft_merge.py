"""A draft whose skill moved on while it waited: its change merged three-way with what was
saved meanwhile, so approving it never drops another writer's change.

A FIX draft keeps the version it was made from (``base_version`` in its record). When the
skill is at a later version at review, the draft's text (its change made on that version)
and the current text are merged against that version with ``merge3`` (as ``sources update``
merges a person's edit with upstream): the description from the side that changed it, the
body line by line apart from its Lessons Learned, which accumulate (a lesson either side
added is kept, one either side removed stays removed). A part both sides changed differently
is a conflict: nothing is written, and the reviewer reads the merge with conflict markers.

Each frontmatter key the draft sends (tags, skill_type, display_name, repo_name, ttl_days) is
taken three ways too: a key the draft left as it was in that version takes the current value,
a key both sides changed differently is a conflict. This runs for a draft that sends only such
keys as well; its body is then not merged (its change is made on the current text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import merge3

from .. import skill as skillmod, text as textmod
from .lessons import LESSONS, _lesson_text, _without_lessons, lesson_lines

# the frontmatter keys a FIX may send: argument -> (metadata key, what a message calls it)
META_KEYS = {"tags": ("tags", "the tags"), "skill_type": ("skill-type", "the skill type"),
             "display_name": ("display-name", "the display name"), "repo_name": ("repo", "the repository"),
             "ttl_days": ("ttl-days", "the ttl_days")}


@dataclass
class Rebased:
    clean: bool
    description: str = ""
    body: str = ""            # the merged body, its Lessons Learned included (clean)
    marked: str = ""          # the whole files merged with conflict markers (a conflict)
    why: str = ""             # what conflicts
    changes: dict[str, Any] = field(default_factory=dict)   # the arguments the merge sets (clean)


def _rest(body: str) -> str:
    """The body without its Lessons Learned."""
    sec = textmod.section(body, LESSONS)
    return (body.replace(sec, "") if sec else _without_lessons(body)).strip("\n") + "\n"


def _marked(base: str, draft: str, current: str) -> str:
    return textmod.marked3(base, draft, current, ("the draft", "the skill now", "made from"))


def _meta(sk: skillmod.Skill, key: str) -> str:
    """A frontmatter value as compared: tags as their list, a skill type in capitals."""
    value = str(sk.metadata.get(key) or "").strip()
    if key == "tags":
        return ", ".join(skillmod.split_tags(value))
    return value.upper() if key == "skill-type" else value


def rebase(base: str, draft: str, current: str, own: list[str], *, sent: tuple[str, ...] = (),
           text: bool = True) -> Rebased:
    """Merge the draft's move from ``base`` (the version it was made from) to ``draft`` into
    ``current`` (SKILL.md texts). ``own``: the lessons the draft's change sends itself (its
    ``lesson`` and its parts'), left out of the body: the change adds them, under the version
    it writes. ``sent``: the frontmatter arguments the draft sends (``META_KEYS``); one the
    draft left as it was in ``base`` is set to None in ``changes`` (the current value stays).
    ``text``: the draft sends a body or a description (merged, and set in ``changes``)."""
    b, d, c = (skillmod.parse(x).skill for x in (base, draft, current))
    if b is None or d is None or c is None:
        return Rebased(False, marked=_marked(base, draft, current), why="a side is not a readable SKILL.md")
    conflicts: list[str] = []
    changes: dict[str, Any] = {}
    for k in sent:
        meta, called = META_KEYS[k]
        _, clash = textmod.pick3(_meta(b, meta), _meta(d, meta), _meta(c, meta))
        if clash:
            conflicts.append(called)
        elif _meta(d, meta) == _meta(b, meta):
            changes[k] = None
    if not text:
        if conflicts:
            return Rebased(False, marked=_marked(base, draft, current),
                           why=" and ".join(conflicts) + " changed both in the draft and in the skill since")
        return Rebased(True, changes=changes)
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
    changes.update(body=body + "\n", replace_body=True, description=desc)
    return Rebased(True, description=desc, body=body + "\n", changes=changes)
