"""Evolution of skills: ARCHIVE / FIX / DERIVE / MERGE, lessons, lineage, versions with
full previous text, changelog, rollback, TTL, deprecate/delete, and the review queue.

Files are the truth here too: each skill's versions and changelog live beside the
workspace in ``<home>/history/<name>/`` (``v1.md``, ``v2.md``, …, ``changelog.jsonl``),
drafts in ``<home>/drafts/<name>/``. Every write is atomic (temp file, fsync, rename) and
serialized per skill name with a file lock, so concurrent agents cannot lose updates.
"""

from __future__ import annotations

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

from . import skill as skillmod
from .errors import ConflictError, NotFoundError, ValidationError
from .files import atomic_write, locked

ACTIONS = ("ARCHIVE", "FIX", "DERIVE", "MERGE")
RESERVED = {"con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "lpt1", "lpt2", "lpt3",
            "history", "drafts", "skills", "references", "scripts", "assets"}
LESSONS = "Lessons Learned"


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


def check_body(body: Any, max_bytes: int) -> str:
    if not isinstance(body, str) or not body.strip():
        raise ValidationError("the skill body is empty", fix="send the Markdown body (When to Use, Solution, ...)")
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
    description = " ".join(description.split())
    if len(description) > skillmod.MAX_DESCRIPTION:
        raise ValidationError(f"the description is {len(description)} characters; the limit is "
                              f"{skillmod.MAX_DESCRIPTION}", fix="shorten it")
    return description


def inside(base: Path, target: Path) -> Path:
    """``target`` resolved, refusing anything outside ``base``."""
    base_r = base.resolve()
    t = target.resolve()
    if t != base_r and base_r not in t.parents:
        raise ValidationError(f"refusing to write outside {base_r}", fix="use a plain skill name")
    return t


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
    pat = re.compile(r"^#{%d}\s+(.+?)\s*#*\s*$" % level)
    for line in lines:
        s = line.lstrip()
        if s.startswith("```") or s.startswith("~~~"):
            fence = not fence
        m = None if fence else pat.match(line)
        if m:
            sections.append((m.group(1).strip(), [line]))
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
    def __init__(self, home: Path):
        self.base = home / "history"

    def dir(self, name: str) -> Path:
        return inside(self.base.parent, self.base / name)

    def save_version(self, name: str, version: int, text: str) -> None:
        atomic_write(self.dir(name) / f"v{version}.md", text)

    def versions(self, name: str) -> list[int]:
        d = self.base / name
        if not d.is_dir():
            return []
        return sorted(int(p.stem[1:]) for p in d.glob("v*.md") if p.stem[1:].isdigit())

    def text(self, name: str, version: int) -> str:
        p = self.base / name / f"v{version}.md"
        if not p.is_file():
            have = ", ".join(f"v{v}" for v in self.versions(name)) or "none"
            raise NotFoundError(f"{name} has no version {version}", fix=f"versions kept: {have}")
        return p.read_text(encoding="utf-8")

    def append(self, entry: ChangelogEntry) -> None:
        d = self.dir(entry.name)
        d.mkdir(parents=True, exist_ok=True)
        line = json.dumps(entry.as_dict(), ensure_ascii=False) + "\n"
        with open(d / "changelog.jsonl", "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def changelog(self, name: str) -> list[ChangelogEntry]:
        p = self.base / name / "changelog.jsonl"
        if not p.is_file():
            return []
        out = []
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(ChangelogEntry(**json.loads(line)))
        return out

    def diff(self, name: str, v1: int, v2: int) -> str:
        a, b = self.text(name, v1), self.text(name, v2)
        return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                            fromfile=f"{name}/v{v1}", tofile=f"{name}/v{v2}"))

    def remove(self, name: str) -> None:
        shutil.rmtree(self.base / name, ignore_errors=True)


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

    def _require(self, name: Any, what: str):
        if not isinstance(name, str) or not name.strip():
            raise ValidationError(f"{what} is required for this action", fix=f"pass {what}")
        rec = self.lib.get(name.strip())
        return rec

    # planning -------------------------------------------------------------------------------
    def plan(self, a: dict[str, Any]) -> Plan:
        action = str(a.get("action") or "").strip().upper()
        if action not in ACTIONS:
            raise ValidationError(f"unknown action {a.get('action')!r}", fix=f"use one of {', '.join(ACTIONS)}")
        tags = parse_tags(a.get("tags"))
        common = dict(skill_type=a.get("skill_type") or None, repo=a.get("repo_name") or None,
                      ttl_days=a.get("ttl_days") or None, display_name=a.get("display_name") or None,
                      author=a.get("author") or None)
        lesson = (a.get("lesson") or "").strip() or None
        max_b = self.cfg.max_body_bytes

        if action == "ARCHIVE":
            name = check_new_name(a.get("name"))
            if self._find(name) is not None:
                raise ConflictError(f"a skill named {name!r} exists already",
                                    fix="use FIX to improve it or DERIVE to branch from it")
            body = check_body(a.get("body"), max_b)
            lessons = merge_lessons(lesson_lines(body), [], lesson, 1)
            meta = build_metadata({}, tags=tags, version=1, source="agent", **common)
            sk = skillmod.Skill(name=name, description=check_description(a.get("description")),
                                body=compose_body(body, None, lessons), license=None, metadata=meta)
            return Plan(action, name, sk, None, [], [], None)

        if action == "FIX":
            target = self._require(a.get("target_skill_name") or a.get("name"), "target_skill_name")
            current_text = Path(target.path).read_text(encoding="utf-8-sig")
            cur = skillmod.parse_strict(current_text, folder_name=Path(target.path).parent.name, path=target.path)
            version = cur.version + 1
            new_body = check_body(a["body"], max_b) if a.get("body") else None
            lessons = merge_lessons(lesson_lines(cur.body), lesson_lines(new_body or ""), lesson, version)
            if new_body is None and not lesson and not a.get("description") and tags is None \
                    and not any(common.values()):
                raise ValidationError("FIX needs something to change",
                                      fix="pass a body, a lesson, a description or metadata")
            meta = build_metadata(cur.metadata, tags=tags, version=version, **common)
            origin = None
            if target.kind != "workspace":
                origin = target.id
                meta["origin"] = target.id
            sk = cur.replace(name=cur.name if skillmod.NAME_RE.match(cur.name) else check_new_name(target.name),
                             description=check_description(a["description"]) if a.get("description") else cur.description,
                             body=compose_body(cur.body, new_body, lessons), metadata=meta, extra={})
            return Plan(action, sk.name, sk, cur.version, [target.id], [], current_text, origin)

        if action == "DERIVE":
            parent = self._require(a.get("target_skill_name"), "target_skill_name")
            name = check_new_name(a.get("name"))
            if self._find(name) is not None:
                raise ConflictError(f"a skill named {name!r} exists already", fix="pick a new name, or FIX that skill")
            body = check_body(a["body"], max_b) if a.get("body") else parent.body
            lessons = merge_lessons(lesson_lines(body), [], lesson, 1)
            meta = build_metadata({k: v for k, v in parent.metadata.items()
                                   if k in ("skill-type", "tags", "repo", "license")},
                                  tags=tags, version=1, source="agent", **common)
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
            prev_text = Path(rec.path).read_text(encoding="utf-8-sig")
        version = base_version + 1
        lessons = merge_lessons(all_lessons, lesson_lines(body), lesson, version)
        union: list[str] = []
        for r in recs:
            union += [t for t in r.tags if t not in union]
        union += [t for t in (tags or []) if t not in union]
        meta = build_metadata({}, tags=union, version=version, source="agent", **common)
        meta["merged-from"] = ", ".join(r.name for r in recs)
        sk = skillmod.Skill(name=name, description=check_description(a.get("description") or recs[0].description),
                            body=compose_body(body, None, lessons), metadata=meta)
        deact = [r for r in recs if r.name != name]
        return Plan(action, name, sk, base_version or None, [r.id for r in recs], deact, prev_text)

    # writing --------------------------------------------------------------------------------
    def _skill_path(self, name: str) -> Path:
        ws = self.cfg.workspace
        return inside(ws, ws / name / "SKILL.md")

    def _write_skill(self, sk: skillmod.Skill) -> Path:
        problems = skillmod.validate_for_write(sk, sk.name)
        if problems:
            raise ValidationError(f"the result would not be a valid skill: {problems[0].message}",
                                  fix="fix the arguments and try again")
        path = self._skill_path(sk.name)
        atomic_write(path, sk.render())
        return path

    def apply(self, args: dict[str, Any], *, trigger: str = "agent") -> SaveResult:
        name_hint = str(args.get("name") or args.get("target_skill_name") or "").strip() or "_"
        lock_name = re.sub(r"[^a-z0-9-]", "_", name_hint.lower())[:64] or "_"
        with locked(self.cfg.home, lock_name):
            self.lib.sync(embed=False)
            plan = self.plan(args)
            if plan.name != lock_name:
                # FIX resolves a target whose real name may differ in case; lock that too
                with locked(self.cfg.home, plan.name):
                    return self._commit(plan, args, trigger)
            return self._commit(plan, args, trigger)

    def _commit(self, plan: Plan, args: dict[str, Any], trigger: str) -> SaveResult:
        if plan.previous_text is not None and plan.from_version is not None:
            if plan.from_version not in self.history.versions(plan.name):
                self.history.save_version(plan.name, plan.from_version, plan.previous_text)
        path = self._write_skill(plan.skill)
        self.history.save_version(plan.name, plan.skill.version, plan.skill.render())
        for rec in plan.deactivate:
            self._set_status(rec, "merged", {"merged-into": plan.name}, trigger=trigger,
                             reason=f"merged into {plan.name}")
        entry = ChangelogEntry(at=now_iso(), action=plan.action, name=plan.name, from_version=plan.from_version,
                               to_version=plan.skill.version, trigger=trigger, reason=str(args.get("reason") or ""),
                               sources=plan.sources, author=str(args.get("author") or ""))
        self.history.append(entry)
        self.lib.sync(embed=True)
        dups = self.duplicates(plan.skill, exclude={plan.name} | {r.name for r in plan.deactivate}) \
            if plan.action in ("ARCHIVE", "DERIVE", "MERGE") else []
        msg = f"{plan.action} {plan.name}: version {plan.skill.version}"
        if plan.origin:
            msg += f" (workspace copy overriding read-only {plan.origin})"
        return SaveResult("saved", plan.action, plan.name, plan.skill.version, str(path), entry.as_dict(), dups, msg)

    def _set_status(self, rec, status: str, extra: dict[str, str], *, trigger: str, reason: str) -> None:
        """Mark a skill inactive (in place in the workspace; as an overriding copy otherwise)."""
        text = Path(rec.path).read_text(encoding="utf-8-sig")
        cur = skillmod.parse_strict(text, folder_name=Path(rec.path).parent.name, path=rec.path)
        if rec.kind != "workspace":
            extra = {**extra, "origin": rec.id}
            check_new_name(cur.name)
        meta = dict(cur.metadata)
        meta.update(extra)
        meta["status"] = status
        if reason:
            meta["status-reason"] = reason[:300]
        version = cur.version + 1
        meta["version"] = str(version)
        meta["last-modified"] = today()
        sk = cur.replace(metadata=meta, extra={})
        if cur.version not in self.history.versions(cur.name):
            self.history.save_version(cur.name, cur.version, text)
        self._write_skill(sk)
        self.history.save_version(cur.name, version, sk.render())
        self.history.append(ChangelogEntry(now_iso(), status.upper(), cur.name, cur.version, version, trigger, reason))

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
        rows = searcher.rows(top)
        out = []
        for p in top:
            row = rows.get(p)
            if row is None or row["name"] in exclude or not meta.active[p]:
                continue
            out.append({"name": row["name"], "id": row["id"], "similarity": round(sims[p], 3),
                        "suggestion": f"MERGE with source_skill_names='{sk.name}, {row['name']}'"})
        return out[:5]

    # versions ----------------------------------------------------------------------------------
    def rollback(self, name: str, version: int, *, author: str = "") -> SaveResult:
        rec = self.lib.get(name)
        with locked(self.cfg.home, rec.name):
            old = skillmod.parse_strict(self.history.text(rec.name, int(version)), folder_name=rec.name)
            cur_text = Path(rec.path).read_text(encoding="utf-8-sig")
            cur = skillmod.parse_strict(cur_text, folder_name=Path(rec.path).parent.name, path=rec.path)
            if cur.version not in self.history.versions(rec.name):
                self.history.save_version(rec.name, cur.version, cur_text)
            new_version = cur.version + 1
            sk = old.with_metadata(version=str(new_version), last_modified=today())
            path = self._write_skill(sk)
            self.history.save_version(rec.name, new_version, sk.render())
            entry = ChangelogEntry(now_iso(), "ROLLBACK", rec.name, cur.version, new_version, "person",
                                   f"rolled back to v{version}", [rec.id], author)
            self.history.append(entry)
        self.lib.sync(embed=True)
        return SaveResult("saved", "ROLLBACK", rec.name, new_version, str(path), entry.as_dict(),
                          message=f"{rec.name} is now v{new_version} (the text of v{version})")

    # lifecycle ---------------------------------------------------------------------------------
    def extend_ttl(self, name: str, days: int) -> SaveResult:
        if not isinstance(days, int) or days < 1:
            raise ValidationError("days must be a positive number", fix="e.g. skillshelf extend-ttl NAME 90")
        rec = self.lib.get(name)
        sk = rec.to_skill()
        start = skillmod.parse_date(sk.metadata.get("last-modified") or sk.metadata.get("created")) \
            or _dt.date.today()
        exp = sk.expires_on() or _dt.date.today()
        new_exp = max(exp, _dt.date.today()) + _dt.timedelta(days=days)
        ttl = (new_exp - start).days
        return self.apply({"action": "FIX", "target_skill_name": rec.name, "ttl_days": ttl,
                           "reason": f"TTL extended by {days} days (expires {new_exp.isoformat()})"},
                          trigger="person")

    def deprecate(self, name: str, reason: str) -> dict:
        if not reason or not reason.strip():
            raise ValidationError("a reason is required to deprecate a skill", fix="pass --reason '...'")
        rec = self.lib.get(name)
        with locked(self.cfg.home, rec.name):
            self._set_status(rec, "inactive", {}, trigger="person", reason=reason.strip())
        self.lib.sync(embed=False)
        return {"name": rec.name, "status": "inactive", "reason": reason.strip()}

    def delete(self, name: str) -> dict:
        rec = self.lib.get(name)
        if rec.kind != "workspace":
            raise ValidationError(f"{rec.name} lives in the read-only root {rec.root}",
                                  fix="delete it there by hand, or `deprecate` it to hide it")
        with locked(self.cfg.home, rec.name):
            folder = inside(self.cfg.workspace, Path(rec.path).parent)
            shutil.rmtree(folder)
            self.history.remove(rec.name)
        self.lib.sync(embed=False)
        return {"name": rec.name, "deleted": str(folder)}


# --- review queue ---------------------------------------------------------------------------------

class ReviewQueue:
    """Drafts written under the ``propose`` policy, kept apart from live skills."""

    def __init__(self, evolver: Evolver):
        self.ev = evolver
        self.base = evolver.cfg.drafts

    def propose(self, args: dict[str, Any]) -> SaveResult:
        plan = self.ev.plan(args)           # validates now: a bad draft is refused at once
        folder = inside(self.base.parent, self.base / plan.name)
        if (folder / "draft.json").exists():
            raise ConflictError(f"a draft for {plan.name!r} is already waiting for review",
                                fix=f"ask a person to run `skillshelf review approve {plan.name}` or reject it")
        atomic_write(folder / "SKILL.md", plan.skill.render())
        atomic_write(folder / "draft.json", json.dumps({"args": args, "proposed_at": now_iso()}, indent=2))
        return SaveResult("draft", plan.action, plan.name, plan.skill.version, str(folder / "SKILL.md"), None,
                          message=f"draft saved for review: a person approves it with "
                                  f"`skillshelf review approve {plan.name}`")

    def list(self) -> list[dict]:
        out = []
        if not self.base.is_dir():
            return out
        for d in sorted(self.base.iterdir()):
            f = d / "draft.json"
            if f.is_file():
                data = json.loads(f.read_text(encoding="utf-8"))
                a = data["args"]
                out.append({"name": d.name, "action": str(a.get("action", "")).upper(),
                            "reason": a.get("reason", ""), "author": a.get("author", ""),
                            "proposed_at": data.get("proposed_at"), "path": str(d / "SKILL.md")})
        return out

    def _load(self, name: str) -> tuple[Path, dict]:
        folder = inside(self.base.parent, self.base / name)
        f = folder / "draft.json"
        if not f.is_file():
            raise NotFoundError(f"no draft named {name!r}", suggestions=[d["name"] for d in self.list()][:3],
                                fix=None if self.list() else "there are no drafts waiting")
        return folder, json.loads(f.read_text(encoding="utf-8"))

    def show(self, name: str) -> dict:
        folder, data = self._load(name)
        return {"name": name, "args": data["args"], "proposed_at": data.get("proposed_at"),
                "text": (folder / "SKILL.md").read_text(encoding="utf-8")}

    def approve(self, name: str, *, reviewer: str = "") -> SaveResult:
        folder, data = self._load(name)
        args = dict(data["args"])
        if reviewer:
            args["reason"] = (args.get("reason") or "") + f" (approved by {reviewer})"
        res = self.ev.apply(args, trigger="approved")
        shutil.rmtree(folder)
        return res

    def reject(self, name: str, reason: str) -> dict:
        if not reason or not reason.strip():
            raise ValidationError("a reason is required to reject a draft", fix="pass --reason '...'")
        folder, data = self._load(name)
        log = self.base / "rejected.jsonl"
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": name, "reason": reason.strip(), "at": now_iso(), "args": data["args"]}) + "\n")
        shutil.rmtree(folder)
        return {"name": name, "rejected": True, "reason": reason.strip()}
