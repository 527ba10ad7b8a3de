"""Evolution of skills: ARCHIVE / FIX / DERIVE / MERGE, lessons, lineage, rollback, TTL,
deprecate / restore / delete.

Each change is planned from the file as it stands under the skill's lock, and written in an
order that survives a crash at any point: the previous and the new version into the
history first, then SKILL.md (the commit point), then the changelog and the index. A change
found on disk (a person edited SKILL.md in an editor) is kept as a version of its own before
anything else writes the skill, so no edit is ever overwritten unseen.

Where versions and drafts are kept is behind :class:`history.History` and
:class:`review.Drafts` (files in ``<home>/history/`` and ``<home>/drafts/`` by default), and
the commit point itself behind :class:`workspace.Workspace` (an atomic file write by default;
one database transaction, then this server's copy of the file, for a team store).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..catalog import overlay as overlaymod
from ..errors import ConflictError, NotFoundError, SkillshelfError, ValidationError
from ..files import MAX_SKILL_BYTES, FileRefused, contained, locked, read_text_bounded, write_file
from .changes import (Plan, Ports, SaveResult, build_metadata, from_upstream, keep_author_version, merge_sources,
                      same_content)
from .commit import FileWorkspace, Workspace, after_write
from .guards import (MAX_LESSON_CHARS, MAX_REASON_CHARS, RESERVED, check_body, check_description, check_new_name,
    check_ref, check_text, name_dir, now_iso, parse_tags, today)
from .frontmatter import LINEAGE_KEYS, planned_text, rewrite
from .history import ChangelogEntry, FileHistory, History
from .lifecycle import INACTIVE, Lifecycle
from .lessons import LESSONS, carried, compose_body, lesson_lines, merge_lessons, split_sections
from .merges import check_keeps, default_body
from .review import Drafts, FileDrafts, ReviewQueue

__all__ = ["ACTIONS", "LESSONS", "RESERVED", "ChangelogEntry", "Drafts", "Evolver", "FileDrafts", "FileHistory",
           "History", "Plan", "ReviewQueue", "SaveResult", "build_metadata", "check_body", "check_description",
           "check_new_name", "check_text", "compose_body", "lesson_lines", "merge_lessons", "name_dir",
           "parse_tags", "split_sections"]

ACTIONS = ("ARCHIVE", "FIX", "DERIVE", "MERGE")


def _lock_key(name: str) -> str:
    """Writers of one skill name (its workspace folder, history and index rows) share a lock."""
    return "skill:" + name


def _lock_names(keys: set[str]) -> list[str]:
    return sorted(k[len("skill:"):] for k in keys if k.startswith("skill:"))


EDITED_ON_DISK = "edited on disk"      # the author of a change found on disk
FOUND_ON_DISK = "found on disk"        # ... of the first version kept of a skill written outside skillshelf


class Evolver:
    """Runs evolution operations, given what it needs of the library (``Ports``). ``history``
    keeps versions and changelogs (``FileHistory`` by default); ``lock`` serialises the
    writers of one skill name (``files.locked`` on the home by default: a context manager
    taking lock keys); ``workspace`` is the commit point (``FileWorkspace``, the workspace
    folder, by default); ``overlays`` (the ports' by default) keeps the owner's decisions on
    skills of read-only roots."""

    def __init__(self, ports: Ports, *, history: History | None = None, lock: Any = None,
                 workspace: Workspace | None = None, overlays: Any = None):
        self.ports = ports
        self.cfg = ports.config
        self.history = history or FileHistory(self.cfg.home)
        self._lock = lock or (lambda *keys: locked(self.cfg.home, *keys))
        self.ws = workspace or FileWorkspace(lambda: self.cfg.workspace, self.history)
        self._overlays = overlays
        self.lifecycle = Lifecycle(self)

    @property
    def overlays(self) -> Any:
        return self._overlays if self._overlays is not None else self.ports.overlays

    def holding(self, name: str) -> Any:
        """The lock every writer of the skill ``name`` holds (a context manager; not re-entrant)."""
        return self._lock(_lock_key(name))

    # lookups --------------------------------------------------------------------------------
    def _find(self, name: str):
        rows = self.ports.rows_by_name(name)
        return rows[0] if rows else None

    @staticmethod
    def _read(path: str | Path) -> str:
        try:
            return read_text_bounded(path, MAX_SKILL_BYTES)
        except FileRefused:
            raise
        except OSError as exc:
            raise NotFoundError(f"cannot read {path}: {exc.strerror}", fix="run `skillshelf sync` and try again") from None

    def _only_a_copy_of(self, name: str, origin: str) -> None:
        """A FIX of a read-only root's skill writes its copy in the workspace folder of its name:
        one holding another skill (a person's own, or a copy of another root's skill of that name)
        is never written over."""
        path = Path(self.cfg.workspace) / name / "SKILL.md"
        if not path.exists():
            return
        try:
            have = skillmod.parse(self._read(path)).skill
        except SkillshelfError:
            have = None
        theirs = (have.metadata or {}).get("origin") if have is not None else None
        if theirs != origin:
            raise ConflictError(f"the workspace has its own skill named {name!r}"
                                + (f" (a copy of {theirs})" if theirs else "") + f", not a copy of {origin}",
                                fix=f"FIX workspace:{name} itself, or rename that skill first; a copy of {origin} "
                                    "needs its folder")

    def _require(self, name: Any, what: str):
        if not isinstance(name, str) or not name.strip():
            raise ValidationError(f"{what} is required for this action", fix=f"pass {what}")
        rec = self.ports.get(check_ref(name.strip(), what))
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
        if self.ports.may_use is not None and plan.sources:
            # a FIX's target, a DERIVE's parent, a MERGE's sources: their text is copied into
            # what is written, so one held back from agents would be laundered into a readable skill
            self.ports.may_use(plan.sources, action)
        # lessons accumulate: the body that results is held to the same limit as a sent one
        size = len(plan.skill.body.encode("utf-8"))
        if size > max_b:
            raise ValidationError(f"the skill's body would grow to {size:,} bytes; the limit is {max_b:,}",
                                  fix="send a FIX with a shorter body that condenses its Lessons Learned"
                                  if action != "MERGE" else "send a body that condenses what the sources say (each "
                                  "source's text whole would not fit)")
        return plan

    def findability(self, plan: Plan) -> dict[str, Any] | None:
        """A FIX's skill searched for its evals with the new text in place of the old, a
        DERIVE's parent with the child beside it, a MERGE's sources with the merged skill in
        their place, on a copy of the index (``Ports.findability``): None when none keeps evals.
        Raises ``PolicyError`` when ``evolution.findability`` blocks the change."""
        if self.ports.findability is None or plan.action == "ARCHIVE" or not plan.sources:
            return None
        return self.ports.findability(plan.sources, planned_text(plan.action, plan.previous_text, plan.skill),
                                      plan.action, plan.name)

    def _next_version(self, name: str, current: int) -> int:
        """One above the file's version and every version in history: a version number is
        never given twice, even after a hand edit or a crash between two steps."""
        return max([current, *self.history.versions(name)]) + 1

    def _plan(self, action: str, a: dict[str, Any], tags: list[str] | None, common: dict[str, Any],
              lesson: str | None, max_b: int, source: str) -> Plan:

        if action == "ARCHIVE":
            name = check_new_name(a.get("name"))
            if self._find(name) is not None:     # (a person's new skill: the dashboard, whose buttons say Edit)
                raise ConflictError(f"a skill named {name!r} exists already",
                                    fix=f"pick another name, or open {name} and use Edit to improve it or Derive to "
                                        "branch from it" if source == "person" else
                                        "use FIX to improve it or DERIVE to branch from it")
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
            if str(cur.metadata.get("status") or "").lower() == "merged":
                into = cur.metadata.get("merged-into") or "another skill"
                raise ConflictError(f"{target.name} was merged into {into}: a FIX of it would land where no one reads it",
                                    fix=f"FIX {into} instead (or restore {target.name} first)")
            name = check_new_name(cur.name if skillmod.NAME_RE.match(cur.name) else target.name)
            version = self._next_version(name, cur.version)
            new_body = check_body(a["body"], max_b) if a.get("body") else None
            # replace_body (a person editing the whole text): the body sent is the body, its
            # Lessons Learned included; otherwise sections not sent are kept and lessons accumulate
            replace = bool(a.get("replace_body")) and new_body is not None
            lessons = merge_lessons([] if replace else lesson_lines(cur.body), lesson_lines(new_body or ""),
                                    lesson, version)
            for part in a.get("parts") or []:   # lessons other agents added to a draft waiting (``review``)
                more = check_text(part.get("lesson"), "the lesson", max_chars=MAX_LESSON_CHARS).strip()
                lessons = merge_lessons(lessons, [], more or None, version)
            # who asks is not a change: the author alone (every MCP call carries one) must
            # not bump a version
            changes = {k: v for k, v in common.items() if k != "author"}
            if new_body is None and not lesson and not a.get("description") and tags is None \
                    and not any(changes.values()) and not a.get("upstream_keys") and not a.get("follow_origin") \
                    and not a.get("origin_gone"):
                raise ValidationError("FIX needs something to change",
                                      fix="pass a body, a lesson, a description or metadata")
            # who changed it goes in the changelog: the file's author stays as written
            meta = build_metadata(cur.metadata, tags=tags, version=version, **{**common, "author": None})
            top, upstream = from_upstream(cur, target.kind, a, self.ports.get)   # (``sources update``'s merge)
            meta = {k: v for k, v in {**meta, **upstream}.items() if v is not None}
            origin = None
            if target.kind != "workspace":
                origin = target.id
                meta["origin"] = target.id
                meta.pop(skillmod.ORIGIN_GONE, None)     # (the original's own, if it has one, is not this copy's)
                self._only_a_copy_of(name, target.id)
            # a fork keeps every key of the original (unknown ones included)
            sk = cur.replace(name=name,
                             description=check_description(a["description"]) if a.get("description") else cur.description,
                             body=compose_body("" if replace else cur.body, new_body, lessons), metadata=meta, **top)
            if target.kind == "workspace" and same_content(sk, cur):
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
        srcs = merge_sources(a)
        recs = [self.ports.get(check_ref(s, "source_skill_names")) for s in srcs]
        if len({r.id for r in recs}) < len(recs):
            raise ValidationError("MERGE sources repeat a skill", fix="name each source once")
        name = check_new_name(a.get("name") or a.get("target_skill_name"))
        existing = self._find(name)
        src_names = {r.name for r in recs}
        if existing is not None and name not in src_names:
            raise ConflictError(f"a skill named {name!r} exists and is not a source",
                                fix="merge into a new name or into one of the sources")
        body = check_body(a["body"], max_b) if a.get("body") else default_body(recs)
        if a.get("body") and source != "person":
            check_keeps(recs, body)     # an agent's merge retires its sources: refused when it drops them
        all_lessons: list[str] = []
        for r in recs:       # a source's version marks are its own, except the skill merged into
            own = lesson_lines(r.body)
            all_lessons = merge_lessons(all_lessons, own if r.name == name else carried(own, r.name), None, 1)
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

    @staticmethod
    def _write(path: Path, text: str) -> None:
        """An atomic write whose failure (permissions, full disk, read-only folder) is one
        clear error; the previous file is left as it was."""
        write_file(path, text)

    def _commit_skill(self, sk: skillmod.Skill, *, keep_keys: bool = False, keep: Sequence[tuple[int, str]] = (),
                      entry: ChangelogEntry | None = None, over: str | None = None) -> tuple[Path, list[str]]:
        """Check ``sk`` and commit it as its version (with the versions of ``keep`` the
        history lacks and the changelog ``entry``), written over the text ``over`` when given
        (only the keys that differ change: ``frontmatter.rewrite``). Returns its path and notes
        on what failed after the commit point."""
        problems = skillmod.validate_for_write(sk, sk.name, keep_unknown_keys=keep_keys)
        if problems:
            raise ValidationError(f"the result would not be a valid skill: {problems[0].message}",
                                  fix="fix the arguments and try again")
        return self.ws.write(sk.name, rewrite(over, sk), sk.version, keep=list(keep), entry=entry)

    @staticmethod
    def _ref_texts(args: dict[str, Any]) -> list[str]:
        """Every reference a change makes to a skill (a name, an id or a path)."""
        refs = [args.get("name"), args.get("target_skill_name")]
        srcs = args.get("source_skill_names") or []
        refs += [x for x in re.split(r"[,\n]", srcs)] if isinstance(srcs, str) else list(srcs)
        return [ref.strip() for ref in refs if isinstance(ref, str) and ref.strip()]

    def _refs(self, args: dict[str, Any]) -> set[str]:
        """Lock keys for every skill a change may write, from its references resolved as
        they stand now (a name, an id like ``workspace:foo`` or a path all lead to the same
        key). Re-checked against the plan once the locks are held."""
        keys: set[str] = set()
        for ref in self._ref_texts(args):
            try:
                keys.add(_lock_key(self.ports.get(ref).name))
            except SkillshelfError:
                keys.add(_lock_key(ref))   # a new name, or one the plan will refuse
        return keys

    def _capture_refs(self, args: dict[str, Any], keys: set[str]) -> dict[str, int]:
        """Keep the changes found on disk in the workspace skills a change names (their
        locks held), before the change is planned. Returns {name: version kept}."""
        seen: set[str] = set()
        out: dict[str, int] = {}
        for ref in self._ref_texts(args):
            try:
                rec = self.ports.get(ref)
            except SkillshelfError:
                continue
            if rec.id in seen or _lock_key(rec.name) not in keys:
                continue
            seen.add(rec.id)
            version = self._capture(rec)
            if version is not None:
                out[rec.name] = version
        return out

    def apply(self, args: dict[str, Any], *, trigger: str = "agent") -> SaveResult:
        """Plan and write one change. The locks are taken on the skills the change resolves
        to before the plan is made (and the plan is made again if a reference moved while
        they were taken), so two writers of one skill never plan from the same version."""
        if str(args.get("action") or "").strip().upper() == "MERGE":
            for ref in merge_sources(args):     # bounded, and each exists, before any lock is taken
                self.ports.get(check_ref(ref, "source_skill_names"))
        for _ in range(5):
            keys = self._refs(args)
            with self._lock(*keys):
                self.ws.refresh(_lock_names(keys))      # plan from the latest committed files
                self.ports.sync(embed=False)
                kept = self._capture_refs(args, keys)
                if kept:
                    self.ports.sync(embed=False)      # the plan reads the index rows of what was kept
                plan = self.plan(args, source="person" if trigger == "person" else "agent")
                need = {_lock_key(plan.name)} | {_lock_key(r.name) for r in plan.deactivate}
                if need <= keys:
                    found = self.findability(plan)    # (may refuse: evolution.findability) before anything is written
                    res = self._commit(plan, args, trigger, kept)
                    if found is not None:
                        res.findability, res.message = found, f"{res.message}; {found['warning'] or found['line']}"
                    return res
        raise ConflictError("the skills this change names kept changing while it was planned",
                            fix="try again in a moment")

    def _commit(self, plan: Plan, args: dict[str, Any], trigger: str, kept: dict[str, int]) -> SaveResult:
        # The commit point (``Workspace.write``) keeps the text being replaced and the new
        # version, writes SKILL.md and logs the change, in an order (or a transaction) that
        # survives a crash at any point; the sources a MERGE retires and the index follow.
        keep = []
        if plan.previous_text is not None and plan.from_version is not None:
            if plan.from_version not in self.history.versions(plan.name):
                keep.append((plan.from_version, plan.previous_text))
        entry = ChangelogEntry(at=now_iso(), action=plan.action, name=plan.name, from_version=plan.from_version,
                               to_version=plan.skill.version, trigger=trigger, reason=str(args.get("reason") or ""),
                               sources=plan.sources, author=str(args.get("author") or ""))
        path, notes = self._commit_skill(plan.skill, keep_keys=plan.action == "FIX", keep=keep, entry=entry,
                                         over=plan.previous_text if plan.action == "FIX" else None)
        notes = [n for name, v in sorted(kept.items()) if (n := self._kept_note(name, v, named=True))] + notes
        for rec in plan.deactivate:
            try:
                self._set_status(rec, "merged", {"merged-into": plan.name}, trigger=trigger,
                                 reason=f"merged into {plan.name}")
            except SkillshelfError as exc:
                notes.append(f"{rec.name} could not be marked merged: {exc}")
        dups: list[dict] = []

        def index() -> None:
            self.ports.sync(embed=True)
            if plan.action in ("ARCHIVE", "DERIVE", "MERGE"):
                dups.extend(self.duplicates(plan.skill, exclude={plan.name} | {r.name for r in plan.deactivate},
                                            agent=trigger not in ("person", "approved")))

        notes += self._after_write(index)
        msg = f"{plan.action} {plan.name}: version {plan.skill.version}"
        if plan.deactivate:
            msg += (f" ({', '.join(r.name for r in plan.deactivate)} retired; `skillshelf restore {plan.name}` "
                    "undoes the merge)")
        if plan.origin:
            msg += f" (workspace copy overriding read-only {plan.origin})"
        if notes:
            msg += " (saved; " + "; ".join(notes) + ")"
        return SaveResult("saved", plan.action, plan.name, plan.skill.version, str(path), entry.as_dict(), dups, msg)

    @staticmethod
    def _after_write(step) -> list[str]:
        """Run a step that follows a write that happened (``workspace.after_write``)."""
        return after_write(step)

    def _save_version(self, name: str, version: int, text: str) -> None:
        self.history.keep(name, version, text)

    def _set_status(self, rec, status: str, extra: dict[str, str], *, trigger: str, reason: str) -> None:
        """Mark a skill inactive: in its file for a workspace skill, as an overlay in the
        store for a skill of a read-only root (another collection's file is never forked)."""
        if rec.kind != "workspace":
            overlaymod.set_state(self.overlays, rec.id, status="deprecated", reason=reason[:300] or status)
            return
        changes: dict[str, str | None] = {**extra, "status": status}
        if reason:
            changes["status-reason"] = reason[:300]
        self._write_metadata(rec, changes, action=status.upper(), trigger=trigger, reason=reason)

    def _write_metadata(self, rec, changes: dict[str, str | None], *, action: str, trigger: str,
                        reason: str) -> int:
        """A new version of the workspace skill ``rec`` (its lock held) with metadata keys
        set (None removes a key), kept in the history and logged. Returns its number."""
        self._capture(rec)
        text = self._read(rec.path)
        cur = skillmod.parse_strict(text, folder_name=Path(rec.path).parent.name, path=rec.path)
        name = check_new_name(cur.name)
        keep = []
        if cur.version not in self.history.versions(name):     # numbered by hand, same text as the latest
            keep.append((cur.version, text))
        meta = dict(cur.metadata)
        for key, value in changes.items():
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
        version = self._next_version(name, cur.version)
        meta["version"] = str(version)
        meta["last-modified"] = today()
        sk = cur.replace(metadata=meta)
        self._commit_skill(sk, keep_keys=True, keep=keep, over=text,
                           entry=ChangelogEntry(now_iso(), action, name, cur.version, version, trigger, reason))
        return version

    # changes found on disk ------------------------------------------------------------------------
    def _kept_note(self, name: str, version: int, *, named: bool = False) -> str | None:
        """A hand edit kept; None for the text of a skill with no history kept as found (its
        first version: nothing was changed, and a new library's samples are all like that)."""
        if any(e.action == "FOUND" and e.to_version == version for e in self.history.changelog(name)[-3:]):
            return None
        return f"the change found on disk{' in ' + name if named else ''} was kept first as v{version}"

    def _capture(self, rec) -> int | None:
        """Keep the workspace skill ``rec``'s file as a version of its own when it holds no
        kept version: a person changed it in an editor (author "edited on disk"), or it was
        written outside skillshelf and nothing of it is kept yet (its first version, "found on
        disk"). Called with the skill's lock held, before anything writes the skill: no edit
        is overwritten unseen, and a diff never shows it as part of someone else's change.
        Returns the version the file became, or None when it holds a kept version."""
        if rec.kind != "workspace" or not isinstance(rec.name, str) or not skillmod.NAME_RE.match(rec.name):
            return None                 # another collection's file, or a name that has no history
        name = rec.name
        path = Path(rec.path)
        try:
            text = self._read(path)
        except SkillshelfError:
            return None                 # gone or refused: nothing here to keep
        try:
            cur = skillmod.parse_strict(text, folder_name=path.parent.name, path=str(path))
        except SkillshelfError:
            cur = None                  # no longer parses: kept as it is, the text is the person's
        claimed = cur.version if cur is not None else None
        kept = self.history.versions(name)
        if not kept:
            version = claimed or 1
            self._save_version(name, version, text)
            self._after_write(lambda: self.history.append_changelog(ChangelogEntry(
                now_iso(), "FOUND", name, None, version, "person",
                "kept as found on disk (no earlier version of it was kept)", [rec.id], FOUND_ON_DISK)))
            return version
        base = claimed if claimed in kept else kept[-1]
        old = self.history.read_version(name, base)
        if old == text or (cur is not None and self._same_text(old, cur, name)):
            return None
        if claimed is not None and claimed > kept[-1]:
            version, new_text = claimed, text       # the person numbered it above every kept version
        elif cur is None:
            version, new_text = self._next_version(name, 0), text
        else:
            version = self._next_version(name, claimed or 0)
            new_text = rewrite(text, cur.with_metadata(version=str(version), last_modified=self._mtime_date(path)))
        entry = ChangelogEntry(now_iso(), "EDIT", name, base, version, "person", "changed on disk, outside skillshelf",
                               [rec.id], EDITED_ON_DISK)
        if new_text != text and path.resolve() == self._skill_path(name).resolve():
            # renumbered: the skill's text is the new one wherever it is kept (a team store too)
            self.ws.write(name, new_text, version, entry=entry)
            return version
        self._save_version(name, version, new_text)
        if new_text != text:
            self._write(contained(self.cfg.workspace, path), new_text)
        self._after_write(lambda: self.history.append_changelog(entry))
        return version

    @staticmethod
    def _same_text(old_text: str, cur: skillmod.Skill, name: str) -> bool:
        """Whether a kept text says what ``cur`` says (its frontmatter may be written
        differently, its bookkeeping keys may differ)."""
        try:
            old = skillmod.parse_strict(old_text, folder_name=name)
        except SkillshelfError:
            return False
        return same_content(old, cur)

    @staticmethod
    def _mtime_date(path: Path) -> str:
        try:
            return _dt.date.fromtimestamp(path.stat().st_mtime).isoformat()
        except (OSError, ValueError, OverflowError):
            return today()

    def _current(self, ref: str) -> tuple[Any, int | None, str | None]:
        """The skill ``ref`` names, once a change found on disk was kept as a version (for
        history, diff and version reads). Returns (record, the version kept or None, a note
        when the change could not be kept: a library that cannot be written still reads)."""
        import sqlite3

        rec = self._get(ref)
        if rec.kind != "workspace" or not skillmod.NAME_RE.match(rec.name):
            return rec, None, None
        try:
            with self._lock(_lock_key(rec.name)):
                if self.ws.refresh([rec.name]):
                    self.ports.sync(embed=False)
                    rec = self.ports.get(rec.id)
                version = self._capture(rec)
        except (SkillshelfError, OSError, sqlite3.Error) as exc:
            return rec, None, f"a change found on disk could not be kept as a version: {exc}"
        if version is None:
            return rec, None, None
        self._after_write(lambda: self.ports.sync(embed=False))
        with contextlib.suppress(SkillshelfError):
            rec = self.ports.get(rec.id)
        return rec, version, None

    def capture(self, ref: str) -> int | None:
        """Keep a change found on disk in the skill ``ref`` as a version now (see
        :meth:`_capture`). Returns the version it became, or None when there was none."""
        return self._current(ref)[1]

    # reads ---------------------------------------------------------------------------------------
    def history_of(self, ref: str) -> dict[str, Any]:
        """Versions kept, changelog and lineage of a skill (a change on disk kept first). Each
        change's ``by`` is who made it (its author; empty for a change found on disk)."""
        rec, version, note = self._current(ref)
        out = {"name": rec.name, "id": rec.id, "current_version": version or rec.version,
               "versions": self.history.versions(rec.name),
               "changelog": [e.as_dict() | {"by": "" if e.author in (EDITED_ON_DISK, FOUND_ON_DISK) else e.author}
                             for e in self.history.changelog(rec.name)], "lineage": rec.lineage}
        if note:
            out["note"] = note
        return out

    def diff(self, ref: str, v1: int, v2: int) -> str:
        """A unified diff between two versions of a skill (a change on disk kept first)."""
        return self.history.diff(self._current(ref)[0].name, int(v1), int(v2))

    def version_text(self, ref: str, version: int) -> str:
        """The full text of a version of a skill (a change on disk kept first)."""
        return self.history.read_version(self._current(ref)[0].name, int(version))

    def duplicates(self, sk: skillmod.Skill, exclude: set[str], *, agent: bool = True) -> list[dict]:
        """Skills close to ``sk`` (a MERGE to consider). For an ``agent``'s save, the skills held back
        from agents are never named: not their name, nor how close they are."""
        emb, _ = self.ports.embedder()
        if emb is None:
            return []
        from ..search.sync import embedding_text

        searcher = self.ports.searcher
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
        hidden = set(self.ports.hidden()) if agent and self.ports.hidden is not None else set()
        for p in top:
            row = rows.get(p)
            if row is None or row["name"] in exclude or not meta.active[p] or row["id"] in hidden:
                continue
            out.append({"name": row["name"], "id": row["id"], "similarity": round(sims[p], 3),
                        "suggestion": f"MERGE with source_skill_names='{sk.name}, {row['name']}'"})
        return out[:5]

    # one skill, locked ---------------------------------------------------------------------------
    def _get(self, ref: str):
        """``lib.get``, and where nothing answers to ``ref`` yet, once more after bringing the
        skill of that name in (a team store: committed through another server a moment ago)."""
        try:
            return self.ports.get(check_ref(ref))
        except NotFoundError:
            if not (isinstance(ref, str) and skillmod.NAME_RE.match(ref) and self.ws.refresh([ref])):
                raise
        self.ports.sync(embed=False)
        return self.ports.get(ref)

    @contextlib.contextmanager
    def _locked_record(self, ref: str):
        """The skill ``ref`` resolves to, with its lock held and resolved again under it."""
        for _ in range(5):
            name = self._get(ref).name
            with self._lock(_lock_key(name)):
                self.ws.refresh([name])                 # act on the latest committed file
                self.ports.sync(embed=False)
                rec = self.ports.get(ref)
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
            captured = self._capture(rec)       # an edit on disk is a version before it is replaced
            old_text = self.history.read_version(sname, int(version))
            old = skillmod.parse_strict(old_text, folder_name=sname)
            cur_text = self._read(rec.path)
            came_from: dict[str, str] = {}
            try:
                cur = skillmod.parse_strict(cur_text, folder_name=Path(rec.path).parent.name, path=rec.path)
                cur_version = cur.version
                # where it came from stays (a fork's v1 is its original's text, without ``origin``)
                came_from = {k: v for k, v in cur.metadata.items() if k in LINEAGE_KEYS and k not in old.metadata}
            except SkillshelfError:             # a file that no longer parses was kept as the latest
                cur_version = captured or self.history.versions(sname)[-1]
            keep = []
            if cur_version not in self.history.versions(sname):    # numbered by hand, same text as the latest
                keep.append((cur_version, cur_text))
            new_version = self._next_version(sname, cur_version)
            # (an author's version the old text carries that is not a number here is kept beside ours)
            meta = {**old.metadata, **came_from, **keep_author_version(old.metadata)}
            sk = old.replace(metadata=meta).with_metadata(version=str(new_version), last_modified=today())
            entry = ChangelogEntry(now_iso(), "ROLLBACK", sname, cur_version, new_version, "person",
                                   f"rolled back to v{version}", [rec.id], author)
            path, after = self._commit_skill(sk, keep_keys=True, keep=keep, entry=entry, over=old_text)
            notes = [n for n in [self._kept_note(sname, captured) if captured else None] if n]
            notes += after
            notes += self._after_write(lambda: self.ports.sync(embed=True))
        msg = f"{sname} is now v{new_version} (the text of v{version})"
        return SaveResult("saved", "ROLLBACK", sname, new_version, str(path), entry.as_dict(),
                          message=msg + (" (" + "; ".join(notes) + ")" if notes else ""))

    # lifecycle (``lifecycle.Lifecycle``: by id one skill, by name every copy) ------------------
    def extend_ttl(self, name: str, days: int) -> dict:
        return self.lifecycle.extend_ttl(name, days)

    def deprecate(self, name: str, reason: str) -> dict:
        return self.lifecycle.deprecate(name, reason)

    def restore(self, name: str, *, reason: str = "") -> dict:
        return self.lifecycle.restore(name, reason=reason)

    def delete(self, name: str) -> dict:
        return self.lifecycle.delete(name)
