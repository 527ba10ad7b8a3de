"""A skill body's sections and its Lessons Learned: how a FIX's sections replace the old
ones in place, and how lessons accumulate (old ones kept in order, each new one once, with
the version that learned it)."""

from __future__ import annotations

import re

from .. import text as textmod
from ..errors import ValidationError

LESSONS = "Lessons Learned"
_VERSION_MARK = re.compile(r"^\s*[-*]\s*(?:\*\*)?v(\d+)(?:\*\*)?\s*[:.)-]\s*", re.I)
# a lesson a MERGE carried from another skill: "- (from jest-ci v2) …" (its version is that skill's)
_CARRIED = re.compile(r"^\s*[-*]\s*\(from [a-z0-9-]{1,64} v\d+\)\s*")


def lesson_lines(body: str) -> list[str]:
    """The lessons of a body's Lessons Learned, one item each. A lesson wrapped over several
    lines keeps its lines as written: a FIX that adds a lesson leaves the old ones byte for byte."""
    sec = textmod.section(body, LESSONS)
    if not sec:
        return []
    lines = sec.split("\n")[1:]
    out: list[str] = []
    for line in lines:
        if line.strip().startswith(("-", "*")):
            out.append(line.rstrip())
        elif line.strip() and out:
            out[-1] += "\n" + line.rstrip()
    return out


def _lesson_text(line: str) -> str:
    return " ".join(_VERSION_MARK.sub("", _CARRIED.sub("", line)).lstrip("-* ").split()).lower()


def carried(lines: list[str], source: str) -> list[str]:
    """Lessons a MERGE takes from ``source``: their version marks say whose version learned them
    ("- v2: …" becomes "- (from source v2) …"), so they do not read as the merged skill's v2."""
    out = []
    for line in lines:
        m = _VERSION_MARK.match(line)
        out.append(f"- (from {source} v{m.group(1)}) {line[m.end():].strip()}" if m else line)
    return out


def merge_lessons(existing: list[str], new: list[str], lesson: str | None, version: int) -> list[str]:
    """Old lessons kept in order, new ones appended once, one version marker each."""
    out: list[str] = []
    seen: set[str] = set()
    for line in existing + new:
        key = _lesson_text(line)
        if key and key not in seen:
            seen.add(key)
            out.append(line if line.lstrip().startswith(("-", "*")) else f"- {line}")
    if lesson and lesson.strip():
        key = _lesson_text(lesson)
        if key not in seen:
            text = _VERSION_MARK.sub("", "- " + lesson.strip()).strip() if _VERSION_MARK.match("- " + lesson) else lesson.strip()
            out.append(f"- v{version}: {text.lstrip('-* ')}")
    return out


def split_sections(body: str) -> tuple[str, list[tuple[str, str]]]:
    """(preamble, [(heading title, full section text)]) at the first heading level used (## usually)."""
    heads = textmod.headings(body)
    level = min((lvl for lvl, _ in heads if lvl > 1), default=None)
    if level is None:
        return body, []
    lines = body.split("\n")
    pre: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line, code in zip(lines, textmod.in_code(lines)):
        h = None if code else textmod.heading(line)
        if h and h[0] == level:
            sections.append((h[1].strip(), [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            pre.append(line)
    return "\n".join(pre).strip("\n"), [(t, "\n".join(ls).strip("\n")) for t, ls in sections]


def _without_lessons(text: str) -> str:
    sub = textmod.section(text, LESSONS)
    if not sub or text.lstrip().split("\n", 1)[0].lstrip("#").strip().lower() == LESSONS.lower():
        return text
    return text.replace(sub, "").rstrip()


def compose_body(old: str, new: str | None, lessons: list[str]) -> str:
    """The new body. Sections the caller resent replace the old ones in place; old sections
    it did not resend are kept; new sections follow; the merged Lessons Learned come last."""
    if new is None:
        pre, secs = split_sections(old)
    else:
        old_pre, old_secs = split_sections(old)
        new_pre, new_secs = split_sections(new)
        if not new_secs:            # a body without sections replaces the preamble only
            new_pre, new_secs = new, []
        fresh = {t.lower(): text for t, text in new_secs}
        secs = [(t, fresh.pop(t.lower(), text)) for t, text in old_secs]
        secs += [(t, text) for t, text in new_secs if t.lower() in fresh]
        pre = new_pre or old_pre
    secs = [(t, text) for t, text in secs if t.lower() != LESSONS.lower()]
    # a Lessons Learned heading one level down (### under ## Notes) is the same section: its
    # lessons were read, and it goes with the others
    secs = [(t, _without_lessons(text)) for t, text in secs]
    parts = [pre] if pre else []
    parts += [text for _, text in secs]
    lines = "\n\n".join(parts).split("\n")
    opened = textmod.fences(lines)[1]
    if lessons and opened is not None:
        # the lessons would land inside the code block, where no reader finds them again
        raise ValidationError(f"the skill's body opens a code fence that is never closed ({lines[opened].strip()[:40]!r},"
                              f" line {opened + 1} of the body), so its Lessons Learned cannot be kept apart",
                              fix="close the fence (a line of ``` after the code) in the body you send, or ask a "
                                  "person to close it in the file")
    if lessons:
        # the heading's spacing as the old section had it (a blank line after it, or none)
        sec = textmod.section(old, LESSONS) or textmod.section(new or "", LESSONS) or ""
        gap = "\n" if sec.split("\n")[1:2] not in ([], [""]) else "\n\n"
        parts.append(f"## {LESSONS}{gap}" + "\n".join(lessons))
    return "\n\n".join(p for p in parts if p.strip())
