"""What a write accepts: names that may become folders, text without control characters,
bodies and descriptions within their limits.

Names come from callers and from files strangers wrote: only a plain spec name (a-z, 0-9,
single hyphens, at most 64) ever becomes a folder (:func:`name_dir`), and the folder is
checked to lie inside its base."""

from __future__ import annotations

import datetime as _dt
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from .. import text as textmod
from ..errors import ValidationError
from ..files import contained

RESERVED = {"con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "lpt1", "lpt2", "lpt3",
            "history", "drafts", "skills", "references", "scripts", "assets"}
MAX_LESSON_CHARS = 2_000
MAX_REASON_CHARS = 1_000
# Control characters (C0 but tab and newline, DEL, C1): an ESC in a description reaches
# every terminal that prints it, a NUL truncates C strings. Refused in what is written.
# Bidirectional overrides and isolates (U+202A-202E, U+2066-2069) reorder what a terminal or
# a page shows (a name that reads differently than it is): refused with them.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def today() -> str:
    return _dt.date.today().isoformat()


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def check_new_name(name: Any) -> str:
    """A name an agent may create: spec-valid, ASCII, not reserved, no path tricks."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("the skill name is empty", fix="pass a name like 'fix-cors-in-express'")
    raw = name
    name = name.strip()
    if unicodedata.normalize("NFKC", name) != name or not name.isascii():
        raise ValidationError(f"name {raw!r} has non-ASCII or look-alike characters",
                              fix="use only a-z, 0-9 and '-'")
    if "/" in name or "\\" in name or name.startswith(".") or os.path.isabs(name) or ".." in name:
        raise ValidationError(f"name {raw!r} looks like a path", fix="use a plain name: a-z, 0-9 and '-'")
    problems = skillmod.check_name(name)
    if problems:
        raise ValidationError("; ".join(p[1] for p in problems),
                              fix="use 1-64 characters of a-z, 0-9 and single hyphens")
    if name in RESERVED:
        raise ValidationError(f"name {name!r} is reserved", fix="pick a more specific name")
    return name


_PARENT = re.compile(r"(?:^|[/\\])\.\.(?:[/\\]|$)")


def check_ref(ref: Any, what: str = "the skill name") -> Any:
    """A reference to a skill (a name, an id or a path) that climbs out with ``..`` is refused
    the way a new name is: it looks like a path, it is no skill's name."""
    if isinstance(ref, str) and _PARENT.search(ref.strip()):
        raise ValidationError(f"{what} {ref.strip()[:80]!r} looks like a path, not a skill name",
                              fix="use the skill's name or id as a search or `skillshelf list` shows it")
    return ref


def check_text(value: Any, what: str, *, max_chars: int | None = None) -> str:
    """Text a caller wants written: a string, no control characters (tab and newline are
    fine), at most ``max_chars``. Returns it with CRLF made LF."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be text, not {type(value).__name__}", fix=f"pass {what} as a string")
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    m = _CONTROL_RE.search(value)
    if m:
        raise ValidationError(f"{what} holds the control character U+{ord(m.group()):04X} at position {m.start()}",
                              fix="remove control characters (escape sequences, NUL) from the text")
    if max_chars is not None and len(value) > max_chars:
        raise ValidationError(f"{what} is {len(value):,} characters; the limit is {max_chars:,}",
                              fix=f"shorten {what}")
    return value


def check_body(body: Any, max_bytes: int) -> str:
    if not isinstance(body, str) or not body.strip():
        raise ValidationError("the skill body is empty", fix="send the Markdown body (When to Use, Solution, ...)")
    body = check_text(body, "the body")
    if body.lstrip("\ufeff \n").startswith("---"):
        raise ValidationError("the body carries its own frontmatter",
                              fix="send only the Markdown body; pass name, description and tags as arguments")
    lines = body.split("\n")
    heads = [None if code else textmod.heading(line) for line, code in zip(lines, textmod.in_code(lines))
             if line.strip()]
    if heads and all(heads):            # headings and nothing under them: an untouched template
        titles = [h[1].strip() for h in heads if h]
        raise ValidationError(f"the body has headings and nothing under them: {', '.join(titles[:6])} "
                              f"{'is' if len(titles) == 1 else 'are'} empty",
                              fix="write what goes under each heading (When to Use: the situation; Solution: "
                                  "the steps), or leave out the headings you have nothing for")
    if len(body.encode("utf-8")) > max_bytes:
        raise ValidationError(f"the body is {len(body.encode('utf-8')):,} bytes; the limit is {max_bytes:,}",
                              fix="send a shorter body: keep the steps and the fix, and leave out long examples "
                                  "and logs (a person can add reference files beside the SKILL.md)")
    return body.replace("\r\n", "\n").strip("\n")


def check_description(description: Any) -> str:
    if not isinstance(description, str) or not description.strip():
        raise ValidationError("the description is empty", fix="say what the skill does and when to use it")
    check_text(description, "the description")
    description = " ".join(description.split())
    if len(description) > skillmod.MAX_DESCRIPTION:
        raise ValidationError(f"the description is {len(description)} characters; the limit is "
                              f"{skillmod.MAX_DESCRIPTION}", fix="shorten it")
    return description


def name_dir(base: Path, name: Any) -> Path:
    """The folder ``base/<name>`` for a skill name, refusing any name that is not a plain
    spec name (a-z, 0-9, single hyphens): names come from files strangers wrote, and
    ``../../x`` or ``..`` must never become a path. The result is checked to lie inside
    ``base`` (a symlinked folder cannot lead out either)."""
    if not isinstance(name, str) or len(name) > skillmod.MAX_NAME or not skillmod.NAME_RE.match(name):
        raise ValidationError(f"the skill name {str(name)[:80]!r} cannot be used as a folder name",
                              fix="rename the skill (its SKILL.md name and its folder) to 1-64 characters of "
                                  "a-z, 0-9 and single hyphens")
    return contained(base, Path(base) / name)


def parse_tags(tags: Any) -> list[str] | None:
    if tags in (None, ""):
        return None
    return skillmod.split_tags(tags)
