"""A person's edits made in a source's own folder, kept before an update puts the folder back.

A source's folder holds the files of the locked commit, and ``show`` prints their path: a person
may edit one there. An update puts the locked files back, so before it does, each edited skill
becomes a workspace copy of that skill, as a FIX of it makes one (``metadata.origin``; the
person's other changed or added files beside its SKILL.md), with the locked upstream files kept
as its base in ``sources/.bases/``: the update then merges upstream's change into it three-way,
as into any copy. What cannot become a copy (a skill folder the lock does not name, a skill that
already has a workspace copy, a SKILL.md that does not parse) is copied to
``sources/.kept/LABEL/<time>/`` and named. A removed file is named too: upstream's is put back."""

from __future__ import annotations

import contextlib
import datetime as _dt
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..errors import SkillshelfError, ValidationError
from ..files import (
    MAX_RESOURCE_BYTES,
    MAX_SKILL_BYTES,
    FileRefused,
    read_bounded,
    read_text_bounded,
    write_file,
)
from . import fetch as fetchmod, lock as lockmod
from .source_edits import inside


@dataclass
class KeptEdit:
    """One skill of a source's folder a person changed: ``action`` is copy (it becomes the
    workspace copy ``name``), aside (its files are copied to ``kept``) or restored (only files
    removed: upstream's are put back)."""

    skill: str                                          # the skill folder, relative to the source
    files: dict[str, str] = field(default_factory=dict)  # file in the skill folder -> changed | added | missing
    action: str = "copy"
    name: str = ""
    kept: str = ""
    note: str = ""

    @property
    def where(self) -> str:
        return "" if self.skill == "." else self.skill

    def as_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "files": self.files, "action": self.action, "name": self.name,
                "kept": self.kept, "note": self.note}


class KeptEdits:
    """The edits of ``src``'s source folders (the ``Sources`` it serves), planned and kept per update."""

    def __init__(self, src: Any):
        self.src = src

    def plan(self, entry: lockmod.SourceEntry, drift: list[lockmod.Drift]) -> list[KeptEdit]:
        """What an update does with each skill of ``drift`` (the files on disk that differ from the lock)."""
        by_skill: dict[str, dict[str, str]] = {}
        for d in drift:
            if not d.skill:            # the whole folder is missing: nothing of a person's to keep
                continue
            rel = d.file if d.skill == "." else d.file[len(d.skill) + 1:]
            by_skill.setdefault(d.skill, {})[rel] = d.problem
        if not by_skill:
            return []
        locked = entry.by_path()
        copies = self.src.edits.copies(entry.label)
        names = self._names(entry.label)
        out = []
        for skill, files in sorted(by_skill.items()):
            k = KeptEdit(skill, files, name=names.get(skill, Path(skill).name if skill != "." else entry.label))
            gone = sorted(f for f, p in files.items() if p == "missing")
            if len(gone) == len(files):
                k.action = "restored"
            elif skill not in locked:
                k.action, k.note = "aside", "a skill folder the source does not have"
            elif skill in copies:
                k.action, k.name = "aside", copies[skill].name
                k.note = f"your workspace copy {k.name} stays as it is; compare the two"
            elif files.get("SKILL.md") == "missing" or self._unreadable(entry.label, skill):
                k.action, k.note = "aside", "its SKILL.md cannot be read as a skill"
            elif gone:
                k.note = "you removed " + ", ".join(gone) + ": upstream's is served beside your copy"
            out.append(k)
        return out

    def _names(self, label: str) -> dict[str, str]:
        """Each skill's name, by its folder in the source."""
        root = self.src._root_label(label) or label
        out = {}
        for rec in self.src._records(root):
            out[rec.id.split(":", 1)[1]] = rec.name
        return out

    def _skill_md(self, label: str, skill: str) -> Path:
        return self.src.folder(label).joinpath(*([] if skill == "." else skill.split("/"))) / "SKILL.md"

    def _unreadable(self, label: str, skill: str) -> bool:
        try:
            return skillmod.parse(read_text_bounded(self._skill_md(label, skill), MAX_SKILL_BYTES)).skill is None
        except (OSError, FileRefused):
            return True

    def _locked(self, plan: Any, skill: str, file: str) -> bytes | None:
        """The file as the lock has it (the base of a person's edit of it): from the git cache, or
        for an archive fetched again at the same digest, from the fetched tree. None when unknown."""
        entry = plan.old
        if entry.kind == "git" and self.src._cache(entry.label).is_dir():
            where = "/".join(p for p in (entry.path, skill, file) if p and p != ".")
            res = fetchmod.git(self.src._cache(entry.label), "show", "--end-of-options", f"{entry.commit}:{where}",
                               check=False)
            return res.stdout if res.returncode == 0 and len(res.stdout) <= MAX_RESOURCE_BYTES else None
        if plan.tree is not None and plan.new.commit == entry.commit:
            path = inside(plan.tree, file if skill == "." else f"{skill}/{file}")
            with contextlib.suppress(OSError, FileRefused):
                return read_bounded(path, MAX_RESOURCE_BYTES) if path is not None else None
        return None

    def keep(self, plan: Any, drift: list[lockmod.Drift]) -> list[KeptEdit]:
        """Before ``plan`` puts the source's folder back: each edited skill becomes a workspace
        copy (its base kept), or its files are copied aside. Returns what was done, by skill."""
        kept = self.plan(plan.old, drift)
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        aside_root = self.src.base / ".kept" / plan.label / stamp
        for k in kept:
            if k.action == "copy":
                try:
                    self._copy(plan, k)
                    continue
                except SkillshelfError as exc:
                    k.action, k.note = "aside", f"it could not become a workspace copy ({exc})"
            if k.action == "aside":
                try:
                    self._aside(plan.label, k, aside_root)
                except OSError as exc:
                    k.note = (k.note + "; " if k.note else "") + f"it could not be copied aside ({exc.strerror})"
                    raise SkillshelfError(f"your edit of sources/{plan.label}/{k.where} could not be kept: "
                                          f"{exc.strerror or exc}",
                                          fix=f"copy the folder {self.src.folder(plan.label)} elsewhere, then "
                                              "run the update again") from None
        return kept

    def aside_drift(self, label: str, installed: str | None) -> Path | None:
        """A team server about to put the team's next commit in place: the files of its folder a
        person changed or added (against the lock it holds at ``installed``) copied to
        ``sources/.kept/LABEL/<time>/`` and named on stderr. None when there are none."""
        try:
            old = next((e for e in lockmod.read(self.src.lock_path) if e.label == label), None)
        except SkillshelfError:
            return None
        if old is None or not installed or old.commit != installed:
            return None               # the lock here is not what the folder holds: no edit can be told
        folder = self.src.folder(label)
        drift = [d for d in lockmod.check(old, folder) if d.problem != "missing" and d.skill]
        if not drift:
            return None
        dest = self.src.base / ".kept" / label / _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        for d in drift:
            src, to = inside(folder, d.file), inside(dest, d.file)
            if src is not None and to is not None and src.is_file():
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, to)
        print(f"skillshelf: {len(drift)} file(s) edited in {folder} kept in {dest} before the team's lock put the "
              "source's files back (edit a source's skill through skillshelf to make a workspace copy)",
              file=sys.stderr)
        return dest

    def _aside(self, label: str, k: KeptEdit, aside_root: Path) -> None:
        folder = self.src.folder(label).joinpath(*([] if k.skill == "." else k.skill.split("/")))
        dest = aside_root.joinpath(*([] if k.skill == "." else k.skill.split("/")))
        for f, problem in k.files.items():
            if problem == "missing":
                continue
            src, to = inside(folder, f), inside(dest, f)
            if src is None or to is None or not src.is_file():
                continue
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, to)
        k.kept = str(dest)

    def _copy(self, plan: Any, k: KeptEdit) -> None:
        """A FIX of the source's skill with the text on disk (a workspace copy, ``metadata.origin``),
        the person's other files beside it, the locked upstream files as its base."""
        label = plan.label
        text = read_text_bounded(self._skill_md(label, k.skill), MAX_SKILL_BYTES)
        parsed = skillmod.parse(text).skill
        if parsed is None:
            raise ValidationError("its SKILL.md cannot be read as a skill", fix="fix its frontmatter")
        root = self.src._root_label(label) or label
        res = self.src._evolver().apply(
            {"action": "FIX", "target_skill_name": f"{root}:{k.skill}", "body": parsed.body,
             "description": parsed.description, "replace_body": True,
             "reason": f"your edit of sources/{label}/{k.where + '/' if k.where else ''}SKILL.md, kept as a "
                       "workspace copy before `skillshelf sources update` put the source back"},
            trigger="person")
        k.name = res.name
        copy_dir = Path(res.path).parent
        folder = self._skill_md(label, k.skill).parent
        for f, problem in k.files.items():
            if problem == "missing" or f == "SKILL.md":
                continue
            src, to = inside(folder, f), inside(copy_dir, f)
            if src is None or to is None:
                continue
            write_file(to, read_bounded(src, MAX_RESOURCE_BYTES))
        # the base of the copy: the locked upstream files (a stale base from an older copy never stays)
        for f in ["SKILL.md", *(f for f, p in k.files.items() if p == "changed" and f != "SKILL.md")]:
            data = self._locked(plan, k.skill, f)
            base = self.src._bases(label).joinpath(*([] if k.skill == "." else k.skill.split("/")))
            if data is not None:
                self.src.edits.keep_base(label, k.skill, data, f)
            else:
                target = inside(base, f)
                if target is not None:
                    target.unlink(missing_ok=True)
