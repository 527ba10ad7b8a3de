"""Skill records: the library's lookups of one skill (by id, path or name, with the documented
precedence between copies), filtered lists, "did you mean" names, name clashes, and the files
the index could not take; and the ``SkillRecord`` value every adapter shows."""

from __future__ import annotations

import builtins
import contextlib
import difflib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import skill as skillmod, text as textmod
from ..checks import Clash
from ..errors import NotFoundError, ValidationError
from ..store.records import SkillRows
from ..text import name_key
from .roots import precedence_key


class FileList(list):
    """Names of a skill's files (``SkillRecord.files``), capped: ``more`` counts those left
    out, ``complete`` is false when the walk itself was cut short (``more`` is then a lower
    bound)."""

    WALK_CAP = 5000

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.more = 0
        self.complete = True


@dataclass
class SkillRecord:
    """A skill as the library knows it: where it lives plus its parsed content."""

    id: str
    name: str
    path: str
    root: str
    kind: str
    description: str
    body: str
    skill_type: str | None
    tags: list[str]
    repo: str | None
    version: int
    display_name: str
    metadata: dict[str, str]
    findings: list[dict]
    active: bool
    expires_on: str | None
    lineage: list[str] = field(default_factory=list)
    # the owner's decisions on a skill of a read-only root (deprecated, expiry): see overlay.py
    overlay: dict | None = None
    content_hash: str | None = None      # sha256 of the SKILL.md bytes the index holds (``body`` is theirs)

    @property
    def expired(self) -> bool:
        import datetime as _dt

        return bool(self.expires_on and self.expires_on < _dt.date.today().isoformat())

    @property
    def status_note(self) -> str | None:
        """Why the skill is not in use, in words every reader gets (``show``, ``get_skill``): merged
        into another (and which), deprecated by its file or by the owner, or past its TTL."""
        meta, ov = self.metadata, self.overlay or {}
        into = meta.get("merged-into")
        if into or meta.get("status") == "merged":
            return f"merged into {into}: read {into} instead" if into else "merged into another skill"
        if ov.get("status") == "deprecated":
            return f"deprecated by the owner: {ov.get('reason') or 'no reason given'}"
        if not self.active:         # `deprecate` writes status: inactive and the reason
            why = meta.get("status-reason")
            return "deprecated" + (f": {why}" if why else "")
        if self.expired:
            return f"past its TTL ({self.expires_on}): its advice may be out of date"
        return None

    @property
    def folder(self) -> Path:
        return Path(self.path).parent

    @property
    def writable(self) -> bool:
        return self.kind == "workspace"

    def files(self, limit: int = 200) -> "FileList":
        """The skill's other files that can be served (relative paths, sorted): regular files
        inside the skill folder of at most ``files.MAX_RESOURCE_BYTES``. Hidden files, nested
        skills and dependency or VCS folders (``sources.SKIP_DIRS``: node_modules, .git,
        __pycache__, .venv …) are left out. At most ``limit`` names; ``.more`` counts the
        servable files left out (a lower bound when ``.complete`` is false: the walk stops
        after ``FileList.WALK_CAP`` files, so a folder of 100k files costs bounded time)."""
        from ..files import MAX_RESOURCE_BYTES, contained
        from .roots import SKIP_DIRS

        out = FileList()
        base = self.folder
        try:
            base_r = base.resolve()
        except OSError:
            return out
        skill_md = Path(self.path).name
        visited = 0
        for dirpath, dirnames, filenames in os.walk(base):
            here = Path(dirpath)
            rel_dir = here.relative_to(base)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS
                                 and not (here / d / "SKILL.md").exists())
            for f in sorted(filenames):
                if f.startswith(".") or (rel_dir == Path(".") and f == skill_md):
                    continue
                visited += 1
                if visited > FileList.WALK_CAP:
                    out.complete = False
                    return out
                p = here / f
                try:
                    st = os.stat(p)  # follows a symlink: what a read would open
                    if os.path.islink(p):
                        contained(base_r, p)  # a link may point anywhere: keep only those inside
                except (OSError, ValidationError):
                    continue
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RESOURCE_BYTES:
                    continue
                if len(out) < limit:
                    out.append((rel_dir / f).as_posix())
                else:
                    out.more += 1
        return out

    def sections(self, level: int = 2) -> list[str]:
        """The body's headings down to ``level``, in order (what ``read(..., section)`` takes)."""
        return [h for lvl, h in textmod.headings(self.body) if lvl <= level]

    def to_skill(self) -> skillmod.Skill:
        return skillmod.parse_strict(Path(self.path).read_text(encoding="utf-8-sig"),
                                     folder_name=self.folder.name, path=self.path)

    def as_dict(self, *, body: bool = True) -> dict[str, Any]:
        d = asdict(self)
        d["expired"] = self.expired
        if not body:
            d.pop("body")
        return d


class Listing(list):
    """A page of ``Library.list``: the records, and ``matched``, how many skills match the
    filters in all (more than ``len`` when a limit cut the page)."""

    matched: int = 0


def _record(row) -> SkillRecord:
    meta = json.loads(row["metadata"] or "{}")
    lineage = [x.strip() for x in (meta.get("lineage") or meta.get("derived-from") or "").split(",") if x.strip()]
    return SkillRecord(
        id=row["id"], name=row["name"], path=row["path"], root=row["root"], kind=row["kind"],
        description=row["description"], body=row["body"], skill_type=row["skill_type"],
        tags=[t for t in (row["tags"] or "").split(",") if t], repo=row["repo"], version=row["version"],
        display_name=row["display_name"] or row["name"], metadata=meta, findings=json.loads(row["findings"] or "[]"),
        active=bool(row["active"]), expires_on=row["expires_on"], lineage=lineage,
        content_hash=row.get("content_hash") if hasattr(row, "get") else None)


class Records:
    """Lookups over the skill index (``store.records.SkillRows``). Given ``roots`` (the
    library's roots now), ``overlay_of`` (a skill id to the owner's overlay on it, or None),
    ``before_read`` (brings the index up to date where the library does that before a read)
    and the canonical collection prefixes that decide precedence between copies."""

    def __init__(self, rows: SkillRows, *, roots: Callable[[], list], overlay_of: Callable,
                 before_read: Callable[[], None], canonical: tuple[str, ...] | list[str] = ()):
        self.rows = rows
        self._roots, self._overlay_of, self._before_read = roots, overlay_of, before_read
        self._canonical = canonical

    def rows_by_name(self, name: str) -> list[dict[str, Any]]:
        """The rows holding this name (or, when none does, its name key), in lookup precedence."""
        rows = self.rows.by_name(name) or self.rows.by_name_key(name_key(name))
        return sorted(rows, key=lambda r: precedence_key(r["kind"], r["rel"], r["id"], self._canonical))

    def copies(self, name: str) -> list[dict[str, Any]]:
        """Every copy of a name: the rows of its name key (the copies a search shows as one hit)."""
        rows = self.rows.by_name_key(name_key(name))
        return sorted(rows, key=lambda r: precedence_key(r["kind"], r["rel"], r["id"], self._canonical))

    def _with_overlay(self, row: dict[str, Any]) -> SkillRecord:
        rec = _record(row)
        ov = self._overlay_of(rec.id)
        if ov is not None:
            rec.overlay = ov.as_dict()
            rec.overlay["file_changed_since"] = ov.content_hash is not None and ov.content_hash != row["content_hash"]
        return rec

    def by_id(self, skill_id: str) -> SkillRecord | None:
        """The skill with exactly this id, or None (no name lookup, no suggestions)."""
        row = self.rows.by_id(skill_id) if isinstance(skill_id, str) else None
        return None if row is None else self._with_overlay(row)

    def get(self, name_or_id: str) -> SkillRecord:
        """The skill with this id, or the one that wins for this name (see ``sources``)."""
        self._before_read()
        if not isinstance(name_or_id, str) or not name_or_id.strip():
            raise ValidationError("no skill name given", fix="pass a skill name or id")
        key = name_or_id.strip()
        row = self.rows.by_id(key)
        if row is None:
            row = self.rows.by_path(str(Path(key).expanduser().absolute()))
        if row is None:
            rows = self.rows_by_name(key)
            row = rows[0] if rows else None
        if row is None:
            sugg = self.suggest(key)
            raise NotFoundError(f"no skill named {key!r}", suggestions=sugg,
                                fix=None if sugg else "use a name or id that a search or the skill list returned")
        return self._with_overlay(row)

    def read(self, name_or_id: str, section: str | None = None, *,
             check: Callable[[SkillRecord], Any] | None = None) -> tuple[SkillRecord, str]:
        """The skill and its body, or only the named section of the body. ``check`` (the read gate) is
        asked about the skill as soon as it resolves, before its sections are looked at."""
        rec = self.get(name_or_id)
        if check is not None:
            check(rec)
        if not section:
            return rec, rec.body
        body = textmod.section(rec.body, section)
        if body is None:
            names = [h for lvl, h in textmod.headings(rec.body) if lvl <= 2]
            heads = ", ".join(names[:12]) + (", …" if len(names) > 12 else "") if names else "none"
            raise NotFoundError(f"{rec.name} has no section {section!r}", fix=f"sections: {heads}")
        return rec, body

    def suggest(self, text: str, n: int = 3) -> list[str]:
        names = self.rows.names()
        close = difflib.get_close_matches(text, names, n=n, cutoff=0.5)
        if len(close) < n:
            key = name_key(text)
            close += [nm for nm in names if key and key in name_key(nm) and nm not in close][: n - len(close)]
        return close

    def list(self, *, root: str | None = None, skill_type: str | None = None, tag: str | None = None,
             name_contains: str | None = None, include_inactive: bool = True, invalid_only: bool = False,
             limit: int | None = None) -> "Listing":
        """Skills matching every filter given, by name. ``root`` is a root's label or its path;
        an unknown root or skill type is an error naming the valid ones (not an empty list).
        The result's ``matched`` counts every match, also past ``limit``."""
        if limit is not None and int(limit) < 1:
            raise ValidationError(f"limit {limit} is out of range", fix="use a limit of 1 or more (or none for all)")
        self._before_read()
        st = None
        if skill_type:
            st = skill_type.strip().upper()
            if st not in set(skillmod.SKILL_TYPES) | self.rows.skill_types():
                raise ValidationError(f"unknown skill type {skill_type!r}",
                                      fix=f"use one of {', '.join(skillmod.SKILL_TYPES)}")
        found, matched = self.rows.select(root=self.root_label(root) if root else None, skill_type=st, tag=tag,
                                          name_contains=name_contains, active_only=not include_inactive,
                                          invalid_only=invalid_only, limit=limit)
        rows = Listing(_record(r) for r in found)
        rows.matched = matched
        return rows

    def root_label(self, root: str) -> str:
        """The label of a root given by label or by path (``list --root``)."""
        roots = self._roots()
        labels = {r.label for r in roots}
        if root in labels:
            return root
        target = Path(root).expanduser().resolve()
        for r in roots:
            if r.path.resolve() == target:
                return r.label
        known = ", ".join(f"{r.label} ({r.path})" for r in roots)
        raise ValidationError(f"no root {root!r} in this library", fix=f"use a root's label or path: {known}")

    def count(self) -> int:
        return self.rows.count()

    def invalid_files(self) -> builtins.list[dict]:   # (``list`` here is the method above)
        return self.rows.invalid_files()

    def clashes(self) -> builtins.list[Clash]:
        """Names more than one skill holds; a person's copy of a skill (``metadata.origin``) beside the
        skill it was made from is what a copy is for, not a clash."""
        out: builtins.list[Clash] = []
        for name in self.rows.clashing_names():
            rows = self.rows_by_name(name)
            origins = set()
            for r in rows:
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    origins.add(json.loads(r["metadata"] or "{}").get("origin"))
            others = [r["id"] for r in rows[1:] if r["id"] not in origins]
            if others:          # (a copy that loses the lookup to its original is shadowed: a clash)
                out.append(Clash(name, rows[0]["id"], [r["id"] for r in rows[1:]]))
        return out

    def read_file(self, name_or_id: str, path: str, *, listed: int = 200,
                  check: Callable[[SkillRecord], Any] | None = None) -> tuple[SkillRecord, str]:
        """(the skill, the text of one of its files that ``SkillRecord.files(limit=listed)``
        lists): contained in the skill's folder, at most ``files.MAX_RESOURCE_BYTES``, UTF-8."""
        from ..errors import SkillshelfError
        from ..files import MAX_RESOURCE_BYTES, contained, read_text_bounded

        rec = self.get(name_or_id)
        if check is not None:
            check(rec)          # the read gate first: which files a held skill has is its to say
        if not isinstance(path, str) or path not in rec.files(limit=listed):
            raise ValidationError(f"{rec.name} has no file {path!r} that can be shown",
                                  fix="pick one of the files listed on the skill's page")
        try:
            text = read_text_bounded(contained(rec.folder, rec.folder / path), MAX_RESOURCE_BYTES)
        except (SkillshelfError, OSError, UnicodeDecodeError) as exc:
            raise ValidationError(f"{path} cannot be shown as text ({getattr(exc, 'message', None) or exc})",
                                  fix="open it from the skill's folder on disk") from None
        return rec, text
