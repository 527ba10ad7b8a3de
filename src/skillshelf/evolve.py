"""Evolution of skills: ARCHIVE / FIX / DERIVE / MERGE, lessons, lineage, versions with
full previous text, changelog, rollback, TTL, deprecate/delete, and the review queue.

Files are the truth here too: each skill's versions and changelog live beside the
workspace in ``<home>/history/<name>/`` (``v1.md``, ``v2.md``, …, ``changelog.jsonl``),
drafts in ``<home>/drafts/<name>/``. Every write is atomic (temp file, fsync, rename) and
serialized per skill name with a file lock, so concurrent agents cannot lose updates.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import difflib
import json
import os
import re
import shutil
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import overlay as overlaymod
from . import skill as skillmod
from .errors import ConflictError, NotFoundError, SkillshelfError, ValidationError, WriteError
from .files import (MAX_SKILL_BYTES, FileRefused, append_line, atomic_write, contained, is_disk_full, locked,
                    read_text_bounded)

ACTIONS = ("ARCHIVE", "FIX", "DERIVE", "MERGE")
RESERVED = {"con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "lpt1", "lpt2", "lpt3",
            "history", "drafts", "skills", "references", "scripts", "assets"}
LESSONS = "Lessons Learned"
MAX_LESSON_CHARS = 2_000
MAX_REASON_CHARS = 1_000
MAX_CHANGELOG_BYTES = 20_000_000
# Control characters (C0 but tab and newline, DEL, C1): an ESC in a description reaches
# every terminal that prints it, a NUL truncates C strings. Refused in what is written.
# Bidirectional overrides and isolates (U+202A-202E, U+2066-2069) reorder what a terminal or
# a page shows (a name that reads differently than it is): refused with them.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def today() -> str:
    return _dt.date.today().isoformat()


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# --- guards -----------------------------------------------------------------------------

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
        raise ValidationError(problems[0][1], fix="use 1-64 characters of a-z, 0-9 and single hyphens")
    if name in RESERVED:
        raise ValidationError(f"name {name!r} is reserved", fix="pick a more specific name")
    return name


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
    if len(body.encode("utf-8")) > max_bytes:
        raise ValidationError(f"the body is {len(body.encode('utf-8'))} bytes; the limit is {max_bytes}",
                              fix="shorten it or move detail into references/ files")
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


# --- lessons and sections -----------------------------------------------------------------

_VERSION_MARK = re.compile(r"^\s*[-*]\s*(?:\*\*)?v(\d+)(?:\*\*)?\s*[:.)-]\s*", re.I)


def lesson_lines(body: str) -> list[str]:
    sec = skillmod.section(body, LESSONS)
    if not sec:
        return []
    lines = sec.split("\n")[1:]
    out: list[str] = []
    for line in lines:
        if line.strip().startswith(("-", "*")):
            out.append(line.rstrip())
        elif line.strip() and out:
            out[-1] += " " + line.strip()
    return out


def _lesson_text(line: str) -> str:
    return " ".join(_VERSION_MARK.sub("", line).lstrip("-* ").split()).lower()


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
    heads = skillmod.headings(body)
    level = min((lvl for lvl, _ in heads if lvl > 1), default=None)
    if level is None:
        return body, []
    lines = body.split("\n")
    pre: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fence = False
    for line in lines:
        s = line.lstrip()
        if s.startswith("```") or s.startswith("~~~"):
            fence = not fence
        h = None if fence else skillmod.heading(line)
        if h and h[0] == level:
            sections.append((h[1].strip(), [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            pre.append(line)
    return "\n".join(pre).strip("\n"), [(t, "\n".join(ls).strip("\n")) for t, ls in sections]


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
    parts = [pre] if pre else []
    parts += [text for _, text in secs]
    if lessons:
        parts.append(f"## {LESSONS}\n\n" + "\n".join(lessons))
    return "\n\n".join(p for p in parts if p.strip())


# --- history ---------------------------------------------------------------------------------

@dataclass
class ChangelogEntry:
    at: str
    action: str
    name: str
    from_version: int | None
    to_version: int
    trigger: str
    reason: str
    sources: list[str] = field(default_factory=list)
    author: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class History:
    """``<home>/history/<name>/``: every version's full text and the changelog. Every path
    is built by :func:`name_dir`: a name that is not a plain spec name has no history."""

    def __init__(self, home: Path):
        self.base = home / "history"

    def dir(self, name: str) -> Path:
        return name_dir(self.base, name)

    def _existing(self, name: str) -> Path | None:
        try:
            d = self.dir(name)
        except ValidationError:
            return None
        return d if d.is_dir() else None

    def save_version(self, name: str, version: int, text: str) -> None:
        atomic_write(self.dir(name) / f"v{int(version)}.md", text)

    def versions(self, name: str) -> list[int]:
        d = self._existing(name)
        if d is None:
            return []
        return sorted(int(p.stem[1:]) for p in d.glob("v*.md") if p.stem[1:].isdigit() and len(p.stem) < 12)

    def text(self, name: str, version: int) -> str:
        d = self._existing(name)
        p = d / f"v{int(version)}.md" if d is not None else None
        if p is None or not p.is_file():
            have = ", ".join(f"v{v}" for v in self.versions(name)) or "none"
            raise NotFoundError(f"{name} has no version {version}", fix=f"versions kept: {have}")
        return read_text_bounded(p, MAX_SKILL_BYTES)

    def append(self, entry: ChangelogEntry) -> None:
        append_line(self.dir(entry.name) / "changelog.jsonl", json.dumps(entry.as_dict(), ensure_ascii=False))

    def changelog(self, name: str) -> list[ChangelogEntry]:
        d = self._existing(name)
        if d is None or not (d / "changelog.jsonl").is_file():
            return []
        out = []
        fields = set(ChangelogEntry.__dataclass_fields__)
        for line in read_text_bounded(d / "changelog.jsonl", MAX_CHANGELOG_BYTES).splitlines():
            try:
                data = json.loads(line)
                out.append(ChangelogEntry(**{k: v for k, v in data.items() if k in fields}))
            except (ValueError, TypeError, AttributeError):
                continue  # a line torn by a crash, or edited by hand: skipped, the rest is kept
        return out

    def diff(self, name: str, v1: int, v2: int) -> str:
        a, b = self.text(name, v1), self.text(name, v2)
        return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                            fromfile=f"{name}/v{v1}", tofile=f"{name}/v{v2}"))

    def remove(self, name: str) -> None:
        d = self._existing(name)
        if d is not None:
            shutil.rmtree(d)


# --- the result of a save -----------------------------------------------------------------------

@dataclass
class SaveResult:
    status: str                     # saved | draft
    action: str
    name: str
    version: int
    path: str
    changelog: dict | None
    duplicates: list[dict] = field(default_factory=list)
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_metadata(base: dict[str, str], *, skill_type: str | None, tags: list[str] | None, repo: str | None,
                   ttl_days: int | None, display_name: str | None, author: str | None, version: int,
                   source: str | None = None) -> dict[str, str]:
    meta = dict(base)
    if skill_type:
        st = skill_type.strip().upper()
        if st not in skillmod.SKILL_TYPES:
            raise ValidationError(f"unknown skill_type {skill_type!r}", fix=f"use one of {', '.join(skillmod.SKILL_TYPES)}")
        meta["skill-type"] = st
    if tags is not None:
        meta["tags"] = ", ".join(tags)
        if not tags:
            meta.pop("tags")
    if repo:
        meta["repo"] = repo
    if ttl_days not in (None, 0, ""):
        try:
            ttl = int(ttl_days)
        except (TypeError, ValueError):
            raise ValidationError(f"ttl_days {ttl_days!r} is not a number", fix="pass a number of days") from None
        if ttl < 1 or ttl > 36500:
            raise ValidationError(f"ttl_days {ttl} is out of range", fix="use 1 to 36500 days")
        meta["ttl-days"] = str(ttl)
    if display_name:
        meta["display-name"] = " ".join(display_name.split())[:120]
    if author:
        meta["author"] = author[:120]
    if source:
        meta["source"] = source
    meta.setdefault("created", today())
    meta["last-modified"] = today()
    meta["version"] = str(version)
    return meta


def parse_tags(tags: Any) -> list[str] | None:
    if tags in (None, ""):
        return None
    return skillmod.split_tags(tags)


def _same_content(a: skillmod.Skill, b: skillmod.Skill) -> bool:
    """Equal but for the bookkeeping a write always changes (version, last-modified, and
    who wrote it)."""
    skip = ("version", "last-modified", "author")
    return a.replace(metadata={k: v for k, v in a.metadata.items() if k not in skip}) == \
        b.replace(metadata={k: v for k, v in b.metadata.items() if k not in skip})


def _lock_key(name: str) -> str:
    """Writers of one skill name (its workspace folder, history and index rows) share a lock."""
    return "skill:" + name


# --- operations -------------------------------------------------------------------------------

@dataclass
class Plan:
    action: str
    name: str                       # the skill written
    skill: skillmod.Skill
    from_version: int | None
    sources: list[str]              # ids of the skills it came from
    deactivate: list[Any]           # records to mark merged
    previous_text: str | None       # text of the version being replaced (for history)
    origin: str | None = None


class Evolver:
    """Runs evolution operations for a ``Library`` (passed in; this module holds no state)."""

    def __init__(self, lib: Any):
        self.lib = lib
        self.cfg = lib.config
        self.history = History(self.cfg.home)

    # lookups --------------------------------------------------------------------------------
    def _find(self, name: str):
        rows = self.lib._rows_by_name(name)
        return rows[0] if rows else None

    @staticmethod
    def _read(path: str | Path) -> str:
        try:
            return read_text_bounded(path, MAX_SKILL_BYTES)
        except FileRefused:
            raise
        except OSError as exc:
            raise NotFoundError(f"cannot read {path}: {exc.strerror}", fix="run `skillshelf sync` and try again") from None

    def _require(self, name: Any, what: str):
        if not isinstance(name, str) or not name.strip():
            raise ValidationError(f"{what} is required for this action", fix=f"pass {what}")
        rec = self.lib.get(name.strip())
        return rec

    # planning -------------------------------------------------------------------------------
    def plan(self, a: dict[str, Any], *, source: str = "agent") -> Plan:
        """The change ``a`` asks for, checked and composed (nothing is written). ``source``
        is stamped on new skills: who wrote them ('agent' or 'person')."""
        action = str(a.get("action") or "").strip().upper()
        if action not in ACTIONS:
            raise ValidationError(f"unknown action {a.get('action')!r}", fix=f"use one of {', '.join(ACTIONS)}")
        tags = parse_tags(a.get("tags"))
        common = dict(skill_type=check_text(a.get("skill_type"), "skill_type", max_chars=40) or None,
                      repo=check_text(a.get("repo_name"), "repo_name", max_chars=200) or None,
                      ttl_days=a.get("ttl_days") or None,
                      display_name=check_text(a.get("display_name"), "display_name", max_chars=200) or None,
                      author=check_text(a.get("author"), "author", max_chars=200) or None)
        for t in tags or []:
            check_text(t, "a tag", max_chars=100)
        lesson = check_text(a.get("lesson"), "the lesson", max_chars=MAX_LESSON_CHARS).strip() or None
        check_text(a.get("reason"), "the reason", max_chars=MAX_REASON_CHARS)
        max_b = self.cfg.max_body_bytes
        plan = self._plan(action, a, tags, common, lesson, max_b, source)
        # lessons accumulate: the body that results is held to the same limit as a sent one
        size = len(plan.skill.body.encode("utf-8"))
        if size > max_b:
            raise ValidationError(f"the skill's body would grow to {size:,} bytes; the limit is {max_b:,}",
                                  fix="send a FIX with a shorter body that condenses its Lessons Learned")
        return plan

    def _next_version(self, name: str, current: int) -> int:
        """One above the file's version and every version in history: a version number is
        never given twice, even after a hand edit or a crash between two steps."""
        return max([current, *self.history.versions(name)]) + 1

    def _plan(self, action: str, a: dict[str, Any], tags: list[str] | None, common: dict[str, Any],
              lesson: str | None, max_b: int, source: str) -> Plan:

        if action == "ARCHIVE":
            name = check_new_name(a.get("name"))
            if self._find(name) is not None:
                raise ConflictError(f"a skill named {name!r} exists already",
                                    fix="use FIX to improve it or DERIVE to branch from it")
            body = check_body(a.get("body"), max_b)
            version = self._next_version(name, 0)   # 1, unless an old history of the name is kept
            lessons = merge_lessons(lesson_lines(body), [], lesson, version)
            meta = build_metadata({}, tags=tags, version=version, source=source, **common)
            sk = skillmod.Skill(name=name, description=check_description(a.get("description")),
                                body=compose_body(body, None, lessons), license=None, metadata=meta)
            return Plan(action, name, sk, None, [], [], None)

        if action == "FIX":
            target = self._require(a.get("target_skill_name") or a.get("name"), "target_skill_name")
            current_text = self._read(target.path)
            cur = skillmod.parse_strict(current_text, folder_name=Path(target.path).parent.name, path=target.path)
            name = check_new_name(cur.name if skillmod.NAME_RE.match(cur.name) else target.name)
            version = self._next_version(name, cur.version)
            new_body = check_body(a["body"], max_b) if a.get("body") else None
            # replace_body (a person editing the whole text): the body sent is the body, its
            # Lessons Learned included; otherwise sections not sent are kept and lessons accumulate
            replace = bool(a.get("replace_body")) and new_body is not None
            lessons = merge_lessons([] if replace else lesson_lines(cur.body), lesson_lines(new_body or ""),
                                    lesson, version)
            # who asks is not a change: the author alone (every MCP call carries one) must
            # not bump a version
            changes = {k: v for k, v in common.items() if k != "author"}
            if new_body is None and not lesson and not a.get("description") and tags is None \
                    and not any(changes.values()):
                raise ValidationError("FIX needs something to change",
                                      fix="pass a body, a lesson, a description or metadata")
            meta = build_metadata(cur.metadata, tags=tags, version=version, **common)
            origin = None
            if target.kind != "workspace":
                origin = target.id
                meta["origin"] = target.id
            # a fork keeps every key of the original (unknown ones included)
            sk = cur.replace(name=name,
                             description=check_description(a["description"]) if a.get("description") else cur.description,
                             body=compose_body("" if replace else cur.body, new_body, lessons), metadata=meta)
            if target.kind == "workspace" and _same_content(sk, cur):
                raise ValidationError(f"this FIX leaves {name} as it is",
                                      fix="pass a body, lesson, description or metadata that differs from the "
                                          "current skill")
            return Plan(action, sk.name, sk, cur.version, [target.id], [], current_text, origin)

        if action == "DERIVE":
            parent = self._require(a.get("target_skill_name"), "target_skill_name")
            name = check_new_name(a.get("name"))
            if self._find(name) is not None:
                raise ConflictError(f"a skill named {name!r} exists already", fix="pick a new name, or FIX that skill")
            body = check_body(a["body"], max_b) if a.get("body") else parent.body
            version = self._next_version(name, 0)
            lessons = merge_lessons(lesson_lines(body), [], lesson, version)
            meta = build_metadata({k: v for k, v in parent.metadata.items()
                                   if k in ("skill-type", "tags", "repo", "license")},
                                  tags=tags, version=version, source=source, **common)
            meta["derived-from"] = parent.name
            meta["lineage"] = ", ".join(parent.lineage + [parent.name])
            sk = skillmod.Skill(name=name,
                                description=check_description(a.get("description") or parent.description),
                                body=compose_body(body, None, lessons), metadata=meta)
            return Plan(action, name, sk, None, [parent.id], [], None)

        # MERGE
        srcs = a.get("source_skill_names") or []
        if isinstance(srcs, str):
            srcs = [s.strip() for s in re.split(r"[,\n]", srcs) if s.strip()]
        if len(srcs) < 2:
            raise ValidationError("MERGE needs at least two source_skill_names", fix="pass e.g. 'skill-a, skill-b'")
        recs = [self.lib.get(s) for s in srcs]
        if len({r.id for r in recs}) < len(recs):
            raise ValidationError("MERGE sources repeat a skill", fix="name each source once")
        name = check_new_name(a.get("name") or a.get("target_skill_name"))
        existing = self._find(name)
        src_names = {r.name for r in recs}
        if existing is not None and name not in src_names:
            raise ConflictError(f"a skill named {name!r} exists and is not a source",
                                fix="merge into a new name or into one of the sources")
        body = check_body(a["body"], max_b) if a.get("body") else "\n\n".join(
            f"## From {r.name}\n\n{split_sections(r.body)[0] or r.description}" for r in recs)
        all_lessons: list[str] = []
        for r in recs:
            all_lessons = merge_lessons(all_lessons, lesson_lines(r.body), None, 1)
        base_version = 0
        prev_text = None
        if existing is not None:
            rec = next(r for r in recs if r.name == name)
            base_version = rec.version
            prev_text = self._read(rec.path)
        version = self._next_version(name, base_version) if existing is not None else 1
        lessons = merge_lessons(all_lessons, lesson_lines(body), lesson, version)
        union: list[str] = []
        for r in recs:
            union += [t for t in r.tags if t not in union]
        union += [t for t in (tags or []) if t not in union]
        meta = build_metadata({}, tags=union, version=version, source=source, **common)
        meta["merged-from"] = ", ".join(r.name for r in recs)
        sk = skillmod.Skill(name=name, description=check_description(a.get("description") or recs[0].description),
                            body=compose_body(body, None, lessons), metadata=meta)
        deact = [r for r in recs if r.name != name]
        return Plan(action, name, sk, base_version or None, [r.id for r in recs], deact, prev_text)

    # writing --------------------------------------------------------------------------------
    def _skill_path(self, name: str) -> Path:
        return name_dir(self.cfg.workspace, name) / "SKILL.md"

    def _write(self, path: Path, text: str) -> None:
        """An atomic write whose failure (permissions, full disk, read-only folder) is one
        clear error; the previous file is left as it was."""
        try:
            atomic_write(path, text)
        except OSError as exc:
            fix = "free some disk space and try again" if is_disk_full(exc) else \
                f"check that {path.parent} is writable (or pass --home with a writable folder)"
            raise WriteError(f"cannot write {path}: {exc.strerror or exc}; nothing was changed", fix=fix) from None

    def _write_skill(self, sk: skillmod.Skill, *, keep_keys: bool = False) -> Path:
        problems = skillmod.validate_for_write(sk, sk.name, keep_unknown_keys=keep_keys)
        if problems:
            raise ValidationError(f"the result would not be a valid skill: {problems[0].message}",
                                  fix="fix the arguments and try again")
        path = self._skill_path(sk.name)
        self._write(path, sk.render())
        return path

    def _refs(self, args: dict[str, Any]) -> set[str]:
        """Lock keys for every skill a change may write, from its references resolved as
        they stand now (a name, an id like ``workspace:foo`` or a path all lead to the same
        key). Re-checked against the plan once the locks are held."""
        refs = [args.get("name"), args.get("target_skill_name")]
        srcs = args.get("source_skill_names") or []
        refs += [x for x in re.split(r"[,\n]", srcs)] if isinstance(srcs, str) else list(srcs)
        keys: set[str] = set()
        for ref in refs:
            if not isinstance(ref, str) or not ref.strip():
                continue
            try:
                keys.add(_lock_key(self.lib.get(ref.strip()).name))
            except SkillshelfError:
                keys.add(_lock_key(ref.strip()))   # a new name, or one the plan will refuse
        return keys

    def apply(self, args: dict[str, Any], *, trigger: str = "agent") -> SaveResult:
        """Plan and write one change. The locks are taken on the skills the change resolves
        to before the plan is made (and the plan is made again if a reference moved while
        they were taken), so two writers of one skill never plan from the same version."""
        for _ in range(5):
            keys = self._refs(args)
            with locked(self.cfg.home, *keys):
                self.lib.sync(embed=False)
                plan = self.plan(args, source="person" if trigger == "person" else "agent")
                need = {_lock_key(plan.name)} | {_lock_key(r.name) for r in plan.deactivate}
                if need <= keys:
                    return self._commit(plan, args, trigger)
        raise ConflictError("the skills this change names kept changing while it was planned",
                            fix="try again in a moment")

    def _commit(self, plan: Plan, args: dict[str, Any], trigger: str) -> SaveResult:
        # Order matters for a crash at any point: history first (an extra version file is
        # harmless), then SKILL.md (the commit point), then the changelog and the index.
        if plan.previous_text is not None and plan.from_version is not None:
            if plan.from_version not in self.history.versions(plan.name):
                self._save_version(plan.name, plan.from_version, plan.previous_text)
        problems = skillmod.validate_for_write(plan.skill, plan.skill.name, keep_unknown_keys=plan.action == "FIX")
        if problems:
            raise ValidationError(f"the result would not be a valid skill: {problems[0].message}",
                                  fix="fix the arguments and try again")
        self._save_version(plan.name, plan.skill.version, plan.skill.render())
        path = self._write_skill(plan.skill, keep_keys=plan.action == "FIX")
        notes: list[str] = []
        for rec in plan.deactivate:
            try:
                self._set_status(rec, "merged", {"merged-into": plan.name}, trigger=trigger,
                                 reason=f"merged into {plan.name}")
            except SkillshelfError as exc:
                notes.append(f"{rec.name} could not be marked merged: {exc}")
        entry = ChangelogEntry(at=now_iso(), action=plan.action, name=plan.name, from_version=plan.from_version,
                               to_version=plan.skill.version, trigger=trigger, reason=str(args.get("reason") or ""),
                               sources=plan.sources, author=str(args.get("author") or ""))
        notes += self._after_write(lambda: self.history.append(entry))
        dups: list[dict] = []

        def index() -> None:
            self.lib.sync(embed=True)
            if plan.action in ("ARCHIVE", "DERIVE", "MERGE"):
                dups.extend(self.duplicates(plan.skill, exclude={plan.name} | {r.name for r in plan.deactivate}))

        notes += self._after_write(index)
        msg = f"{plan.action} {plan.name}: version {plan.skill.version}"
        if plan.origin:
            msg += f" (workspace copy overriding read-only {plan.origin})"
        if notes:
            msg += " (saved; " + "; ".join(notes) + ")"
        return SaveResult("saved", plan.action, plan.name, plan.skill.version, str(path), entry.as_dict(), dups, msg)

    @staticmethod
    def _after_write(step) -> list[str]:
        """Run a step that follows a write that happened: its failure (a busy or damaged
        database, a full disk) is reported beside the success, never instead of it. An
        agent told "failed" would write again; the index catches up at the next sync."""
        import sqlite3

        try:
            step()
        except (SkillshelfError, OSError, sqlite3.Error) as exc:
            return [f"the index will catch up at the next sync ({type(exc).__name__}: {str(exc)[:200]})"]
        return []

    def _save_version(self, name: str, version: int, text: str) -> None:
        try:
            self.history.save_version(name, version, text)
        except OSError as exc:
            fix = "free some disk space and try again" if is_disk_full(exc) else \
                f"check that {self.history.base} is writable"
            raise WriteError(f"cannot write the history of {name}: {exc.strerror or exc}; nothing was changed",
                             fix=fix) from None

    def _set_status(self, rec, status: str, extra: dict[str, str], *, trigger: str, reason: str) -> None:
        """Mark a skill inactive: in its file for a workspace skill, as an overlay in the
        store for a skill of a read-only root (another collection's file is never forked)."""
        if rec.kind != "workspace":
            overlaymod.set_state(self.lib.store, rec.id, status="deprecated", reason=reason[:300] or status)
            return
        text = self._read(rec.path)
        cur = skillmod.parse_strict(text, folder_name=Path(rec.path).parent.name, path=rec.path)
        name = check_new_name(cur.name)
        meta = dict(cur.metadata)
        meta.update(extra)
        meta["status"] = status
        if reason:
            meta["status-reason"] = reason[:300]
        version = self._next_version(name, cur.version)
        meta["version"] = str(version)
        meta["last-modified"] = today()
        sk = cur.replace(metadata=meta)
        if cur.version not in self.history.versions(name):
            self._save_version(name, cur.version, text)
        self._save_version(name, version, sk.render())
        self._write_skill(sk, keep_keys=True)
        self._after_write(lambda: self.history.append(
            ChangelogEntry(now_iso(), status.upper(), name, cur.version, version, trigger, reason)))

    def duplicates(self, sk: skillmod.Skill, exclude: set[str]) -> list[dict]:
        emb, _ = self.lib._embedder_state()
        if emb is None:
            return []
        from .index import embedding_text

        searcher = self.lib.searcher
        meta = searcher._ensure_meta()
        vi = searcher._ensure_vectors(emb, meta)
        if vi is None:
            return []
        q = emb.embed(embedding_text(sk.name, sk.description, ",".join(sk.tags)))
        pos, sims = vi.top(q, 20)
        top = [int(p) for p, sim in zip(pos, sims) if sim >= self.cfg.duplicate_threshold]
        sims = dict(zip(top, (float(x) for x in sims)))
        rows = searcher.rows(top, meta)
        out = []
        for p in top:
            row = rows.get(p)
            if row is None or row["name"] in exclude or not meta.active[p]:
                continue
            out.append({"name": row["name"], "id": row["id"], "similarity": round(sims[p], 3),
                        "suggestion": f"MERGE with source_skill_names='{sk.name}, {row['name']}'"})
        return out[:5]

    # one skill, locked ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked_record(self, ref: str):
        """The skill ``ref`` resolves to, with its lock held and resolved again under it."""
        for _ in range(5):
            name = self.lib.get(ref).name
            with locked(self.cfg.home, _lock_key(name)):
                self.lib.sync(embed=False)
                rec = self.lib.get(ref)
                if rec.name == name:
                    yield rec
                    return
        raise ConflictError(f"{ref} kept changing while it was being locked", fix="try again in a moment")

    # versions ----------------------------------------------------------------------------------
    def rollback(self, name: str, version: int, *, author: str = "") -> SaveResult:
        with self._locked_record(name) as rec:
            if rec.kind != "workspace":
                raise ValidationError(f"{rec.name} lives in the read-only root {rec.root} and has no versions here",
                                      fix="FIX it to make a workspace copy with versions")
            sname = check_new_name(rec.name)
            old = skillmod.parse_strict(self.history.text(sname, int(version)), folder_name=sname)
            cur_text = self._read(rec.path)
            cur = skillmod.parse_strict(cur_text, folder_name=Path(rec.path).parent.name, path=rec.path)
            if cur.version not in self.history.versions(sname):
                self._save_version(sname, cur.version, cur_text)
            new_version = self._next_version(sname, cur.version)
            sk = old.with_metadata(version=str(new_version), last_modified=today())
            self._save_version(sname, new_version, sk.render())
            path = self._write_skill(sk, keep_keys=True)
            entry = ChangelogEntry(now_iso(), "ROLLBACK", sname, cur.version, new_version, "person",
                                   f"rolled back to v{version}", [rec.id], author)
            notes = self._after_write(lambda: self.history.append(entry))
            notes += self._after_write(lambda: self.lib.sync(embed=True))
        msg = f"{sname} is now v{new_version} (the text of v{version})"
        return SaveResult("saved", "ROLLBACK", sname, new_version, str(path), entry.as_dict(),
                          message=msg + (" (" + "; ".join(notes) + ")" if notes else ""))

    # lifecycle ---------------------------------------------------------------------------------
    def extend_ttl(self, name: str, days: int) -> dict:
        """Push the expiry DAYS further: from the current expiry, or from today when there is
        none or it has passed. What is printed is what is stored."""
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= skillmod.MAX_TTL_DAYS:
            raise ValidationError(f"days must be a number from 1 to {skillmod.MAX_TTL_DAYS:,}",
                                  fix="e.g. skillshelf extend-ttl NAME 90")
        rec = self.lib.get(name)
        today_d = _dt.date.today()
        current = skillmod.parse_date(rec.expires_on)
        new_exp = max(current or today_d, today_d) + _dt.timedelta(days=days)
        if rec.kind != "workspace":
            ov = overlaymod.set_state(self.lib.store, rec.id, expires_on=new_exp.isoformat())
            return {"name": rec.name, "id": rec.id, "expires_on": ov.expires_on,
                    "message": f"{rec.name} now expires on {ov.expires_on} (kept in the library; "
                               f"the read-only file in {rec.root} is untouched)"}
        # a FIX sets last-modified to today, from which ttl-days counts
        ttl = (new_exp - today_d).days
        res = self.apply({"action": "FIX", "target_skill_name": rec.id, "ttl_days": ttl,
                          "reason": f"TTL extended by {days} days (expires {new_exp.isoformat()})"},
                         trigger="person")
        return {"name": res.name, "id": rec.id, "expires_on": new_exp.isoformat(), "version": res.version,
                "message": f"{res.name} now expires on {new_exp.isoformat()} (v{res.version})"}

    def deprecate(self, name: str, reason: str) -> dict:
        reason = check_text(reason, "the reason", max_chars=MAX_REASON_CHARS).strip()
        if not reason:
            raise ValidationError("a reason is required to deprecate a skill", fix="pass --reason '...'")
        rec = self.lib.get(name)
        if rec.kind != "workspace":
            self._set_status(rec, "inactive", {}, trigger="person", reason=reason)
            return {"name": rec.name, "id": rec.id, "status": "deprecated", "reason": reason,
                    "message": f"{rec.name} is deprecated (kept in the library; the read-only file in "
                               f"{rec.root} is untouched)"}
        with self._locked_record(rec.id) as rec:
            self._set_status(rec, "inactive", {}, trigger="person", reason=reason)
        self._after_write(lambda: self.lib.sync(embed=False))
        return {"name": rec.name, "id": rec.id, "status": "inactive", "reason": reason,
                "message": f"{rec.name} is inactive: {reason}"}

    def delete(self, name: str) -> dict:
        rec = self.lib.get(name)
        if rec.kind != "workspace":
            raise ValidationError(f"{rec.name} lives in the read-only root {rec.root}",
                                  fix=f"delete it there by hand, or hide it with `skillshelf deprecate {rec.id} "
                                      "--reason ...` (kept in the library, the file is untouched)")
        with self._locked_record(rec.id) as rec:
            # never the workspace itself, never outside it
            folder = contained(self.cfg.workspace, Path(rec.path).parent)
            try:
                shutil.rmtree(folder)
            except OSError as exc:
                raise WriteError(f"cannot delete {folder}: {exc.strerror or exc}",
                                 fix=f"check that {folder.parent} is writable") from None
            if skillmod.NAME_RE.match(rec.name) and not self.lib._rows_by_name(rec.name)[1:]:
                self.history.remove(rec.name)
        self._after_write(lambda: self.lib.sync(embed=False))
        return {"name": rec.name, "deleted": str(folder)}


# --- review queue ---------------------------------------------------------------------------------

class ReviewQueue:
    """Drafts written under the ``propose`` policy, kept apart from live skills, one folder
    per draft name (a plain spec name: see :func:`name_dir`)."""

    def __init__(self, evolver: Evolver):
        self.ev = evolver
        self.base = evolver.cfg.drafts

    def _lock(self, name: str):
        return locked(self.ev.cfg.home, "draft:" + name)

    def propose(self, args: dict[str, Any]) -> SaveResult:
        plan = self.ev.plan(args)           # validates now: a bad draft is refused at once
        folder = name_dir(self.base, plan.name)
        with self._lock(plan.name):
            if (folder / "draft.json").exists():
                raise ConflictError(f"a draft for {plan.name!r} is already waiting for review",
                                    fix=f"ask a person to run `skillshelf review approve {plan.name}` or reject it")
            self.ev._write(folder / "SKILL.md", plan.skill.render())
            self.ev._write(folder / "draft.json", json.dumps({"args": args, "proposed_at": now_iso()}, indent=2))
        return SaveResult("draft", plan.action, plan.name, plan.skill.version, str(folder / "SKILL.md"), None,
                          message=f"draft saved for review: a person approves it with "
                                  f"`skillshelf review approve {plan.name}`")

    def _read_draft(self, folder: Path) -> dict | None:
        try:
            data = json.loads(read_text_bounded(folder / "draft.json", MAX_SKILL_BYTES * 2))
        except (OSError, ValueError, SkillshelfError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("args"), dict) else None

    def list(self) -> list[dict]:
        out = []
        if not self.base.is_dir():
            return out
        for d in sorted(self.base.iterdir()):
            if not skillmod.NAME_RE.match(d.name) or not d.is_dir():
                continue
            data = self._read_draft(d)
            if data is None:
                continue
            a = data["args"]
            out.append({"name": d.name, "action": str(a.get("action", "")).upper(),
                        "reason": a.get("reason", ""), "author": a.get("author", ""),
                        "proposed_at": data.get("proposed_at"), "path": str(d / "SKILL.md")})
        return out

    def _load(self, name: str) -> tuple[Path, dict]:
        try:
            folder = name_dir(self.base, name)
        except ValidationError:
            folder = None
        data = self._read_draft(folder) if folder is not None else None
        if data is None:
            names = [d["name"] for d in self.list()]
            raise NotFoundError(f"no draft named {str(name)[:80]!r}", suggestions=names[:3],
                                fix=None if names else "there are no drafts waiting")
        return folder, data

    def show(self, name: str) -> dict:
        folder, data = self._load(name)
        return {"name": name, "args": data["args"], "proposed_at": data.get("proposed_at"),
                "text": read_text_bounded(folder / "SKILL.md", MAX_SKILL_BYTES)}

    def approve(self, name: str, *, reviewer: str = "") -> SaveResult:
        with self._lock(name):
            folder, data = self._load(name)
            args = dict(data["args"])
            if reviewer:
                args["reason"] = (args.get("reason") or "") + f" (approved by {reviewer})"
            res = self.ev.apply(args, trigger="approved")
            shutil.rmtree(folder, ignore_errors=True)
        return res

    def reject(self, name: str, reason: str) -> dict:
        reason = check_text(reason, "the reason", max_chars=MAX_REASON_CHARS).strip()
        if not reason:
            raise ValidationError("a reason is required to reject a draft", fix="pass --reason '...'")
        with self._lock(name):
            folder, data = self._load(name)
            append_line(self.base / "rejected.jsonl",
                        json.dumps({"name": name, "reason": reason, "at": now_iso(), "args": data["args"]}))
            shutil.rmtree(folder, ignore_errors=True)
        return {"name": name, "rejected": True, "reason": reason}
