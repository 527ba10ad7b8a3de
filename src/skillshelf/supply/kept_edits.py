"""A person's edits made in a source's own folder, kept before an update puts the folder back.

A source's folder holds the files of the locked commit, and ``show`` prints their path: a person
may edit one there. An update puts the locked files back, so before it does, each edited skill
becomes a workspace copy of that skill, as a FIX of it makes one (``metadata.origin``; the
person's other changed or added files beside its SKILL.md), with the locked upstream files kept
as its base in ``sources/.bases/``: the update then merges upstream's change into it three-way,
as into any copy. What cannot become a copy (a skill folder the lock does not name, a skill that
already has a workspace copy, a SKILL.md that does not parse, a skill held until it is trusted:
a FIX of it is refused) is copied to ``sources/.kept/LABEL/<time>/`` and named, a held one with
the way back that keeps upstream's change (``after_held``). A removed file is named too:
upstream's is put back. A person's file the lock does not list is told from upstream's by the old
commit's tree (``person_files``): carried into the new tree, or kept. Once the folder is moved aside it is looked
at again: what a person wrote while the update ran is kept, and never rides in a linked file."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..catalog.roots import SKIP_DIRS
from ..errors import SkillshelfError, ValidationError
from ..files import (
    MAX_RESOURCE_BYTES,
    MAX_SKILL_BYTES,
    FileRefused,
    read_bounded,
    read_text_bounded,
    write_file,
)
from . import fetch as fetchmod, lock as lockmod, person_files
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
    held: str = ""           # why agents do not see it (a FIX of it, so a copy, is refused until it is trusted)

    @property
    def where(self) -> str:
        return "" if self.skill == "." else self.skill

    def as_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "files": self.files, "action": self.action, "name": self.name,
                "kept": self.kept, "note": self.note, "held": self.held}


class KeptEdits:
    """The edits of ``src``'s source folders (the ``Sources`` it serves), planned and kept per update."""

    def __init__(self, src: Any):
        self.src = src
        self.seen: dict[str, dict[str, str]] = {}     # label -> each file kept, its sha256 when it was read

    def _saw(self, label: str, folder: Path, files: Any) -> None:
        seen = self.seen.setdefault(label, {})
        for rel in files:
            p = inside(folder, rel)
            with contextlib.suppress(OSError):
                if p is not None and p.is_file():
                    seen[rel] = person_files.sha256(p)

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
        names = self.names(entry.label)
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
            elif why := self._held(entry.label, skill):
                root = self.src._root_label(entry.label) or entry.label
                k.action, k.held = "aside", why
                k.note = (f"it is held until you trust it ({why}), and a held skill cannot become a workspace copy; "
                          f"to make it one that upstream's change merges into, do not apply this update: run "
                          f"`skillshelf trust {root}:{skill}` (it shows your edit), then the update again")
            elif gone:
                k.note = "you removed " + ", ".join(gone) + ": upstream's is served beside your copy"
            out.append(k)
        return out

    def _held(self, label: str, skill: str) -> str | None:
        """Why the source's skill at ``skill`` is held back from agents, its files on disk compared
        with its pin first (as a FIX of it compares them, and refuses a held one); None when it is not."""
        sid = f"{self.src._root_label(label) or label}:{skill}"
        supply, md = self.src.supply, self._skill_md(label, skill)
        try:
            if supply.pins.pinned_root(sid) is not None:
                supply.pins.check(sid, str(md) if md.exists() else None)
            return supply.hidden().get(sid)
        except (OSError, SkillshelfError):
            return None

    def after_held(self, plan: Any, k: KeptEdit) -> str:
        """How to make the edit of a held skill, copied aside, a workspace copy that upstream's change
        merges into: from the commit it was made on (the base of a three-way merge). Putting the kept
        text in place at the new commit (``import --replace``, a copy over the new files) would
        take the older upstream text with it, undoing upstream's change."""
        label, root = plan.label, self.src._root_label(plan.label) or plan.label
        where = f"sources/{label}/{k.where + '/' if k.where else ''}"
        back = plan.old.ref or "''"
        return (f"held until you trust it ({k.held}), so it could not become a workspace copy. To make it one that "
                f"upstream's change merges into: `skillshelf sources update {label} --to {plan.old.commit[:12]} "
                f"--yes` (the commit your edit was made on), copy {k.kept}/ over {where}, `skillshelf trust "
                f"{root}:{k.skill}`, then `skillshelf sources update {label} --to {back} --yes` (putting your text "
                f"in place at the new commit, or `import --replace`, would undo upstream's change)")

    def names(self, label: str) -> dict[str, str]:
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
        self.seen[plan.label] = {}
        self._saw(plan.label, self.src.folder(plan.label), [d.file for d in drift])
        made: list[Path] = []

        def aside_root() -> Path:      # one new folder per update, made when something goes in it
            if not made:
                made.append(person_files.kept_dir(self.src.base, plan.label))
            return made[0]

        for k in kept:
            if k.action == "copy":
                try:
                    self._copy(plan, k)
                    continue
                except SkillshelfError as exc:
                    k.action, k.note = "aside", f"it could not become a workspace copy ({exc})"
            if k.action == "aside":
                try:
                    self._aside(plan.label, k, aside_root())
                    if k.held:
                        k.note = self.after_held(plan, k)
                except OSError as exc:
                    k.note = (k.note + "; " if k.note else "") + f"it could not be copied aside ({exc.strerror})"
                    raise SkillshelfError(f"your edit of sources/{plan.label}/{k.where} could not be kept: "
                                          f"{exc.strerror or exc}",
                                          fix=f"copy the folder {self.src.folder(plan.label)} elsewhere, then "
                                              "run the update again") from None
        return kept

    def before_removal(self, entry: lockmod.SourceEntry, installed: str | None) -> Path | None:
        """Before a source's folder is removed: a person's edits and files in it (told from the commit
        it holds, ``installed``) copied to ``sources/.kept/LABEL/<time>/``; where, or None."""
        if not self.src.folder(entry.label).is_dir():
            return None
        try:
            return self.aside_drift(entry, installed, None, say=False)
        except OSError as exc:
            raise SkillshelfError(f"your files in {self.src.folder(entry.label)} could not be kept before removing "
                                  f"it: {exc.strerror or exc}", fix="free some space (or copy the folder "
                                  "elsewhere) and remove the source again") from None

    def aside_drift(self, entry: lockmod.SourceEntry, installed: str | None, tree: Path | None, *,
                    say: bool = True) -> Path | None:
        """A team server about to put ``tree`` (the team's next commit of ``entry``) in place: the
        files of its folder a person changed or added, told from the commit the folder holds
        (``installed``: the home's lock when it names that commit, and that commit's tree in the git
        cache), copied to ``sources/.kept/LABEL/<time>/`` and named on stderr; a person's file the
        new tree holds already (linked) stays. When nothing tells, every file is copied. None when
        nothing was copied. (``tree`` None: the folder is about to be removed; ``say``: named on stderr.)"""
        label, folder = entry.label, self.src.folder(entry.label)
        try:
            old = next((e for e in lockmod.read(self.src.lock_path) if e.label == label), None)
        except SkillshelfError:
            old = None
        if old is not None and (not installed or old.commit != installed):
            old = None                # the home's lock is not what the folder holds
        files: dict[str, str] = {}
        listed: set[str] = set()
        if old is not None:
            files = {d.file: d.problem for d in lockmod.check(old, folder) if d.problem != "missing" and d.skill}
            listed = {f.path if s.path == "." else f"{s.path}/{f.path}" for s in old.skills for f in s.files}
        ref = self._tree(entry, installed)
        if ref is not None:
            files.update(person_files.persons(folder, ref, skip=listed | set(files)))
        else:                         # nothing tells a person's file from upstream's: each one is kept
            files.update({rel: "unknown" for rel, _ in person_files.walk(folder) if rel not in listed and rel not in files})
        made: list[Path] = []

        def dest() -> Path:
            made.append(person_files.kept_dir(self.src.base, label))
            return made[-1]

        _, copied = person_files.keep(folder, files, tree, dest, carry=False)
        if not copied or not say:
            return made[0] if copied else None
        print(f"skillshelf: {len(copied)} file(s) edited in {folder} kept in {made[0]} before the team's lock put "
              "the source's files back (edit a source's skill through skillshelf to make a workspace copy)",
              file=sys.stderr)
        return made[0]

    def _tree(self, entry: lockmod.SourceEntry, commit: str | None) -> person_files.Tree | None:
        """Every file of the source at ``commit`` (the git cache, or what was recorded of an archive)."""
        if not commit:
            return None
        if entry.kind == "git":
            return person_files.git_tree(self.src._cache(entry.label), commit, entry.path)
        return person_files.recorded(self.src.base, entry.label, commit)

    def keep_unlisted(self, plan: Any, since: float | None = None) -> list[dict[str, str]]:
        """Before ``plan`` puts its new tree in place: the files of the source's folder the lock
        does not list (hidden files, ``node_modules``, files over the size bound) that the old
        commit does not hold, or holds otherwise, are a person's: carried into the new tree where
        it has no file of that path, else copied to ``sources/.kept/``. ``since``: only files
        written at or after that time. Returns each such file, where it went."""
        folder, tree = self.src.folder(plan.label), plan.tree
        if tree is None or not folder.is_dir():
            return []
        files = self._persons(plan, folder, since)
        self._saw(plan.label, folder, files)
        if not files:
            return []
        made: list[Path] = []

        def dest() -> Path:
            made.append(person_files.kept_dir(self.src.base, plan.label))
            return made[-1]

        carried, copied = person_files.keep(folder, files, tree, dest)
        # one the new lock would list (a skill folder the old tree did not read as one) is kept aside instead
        for rel in self._listed_in(plan.new, tree, carried):
            to, at = inside(made[0] if made else dest(), rel), inside(tree, rel)
            if to is not None and at is not None:
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(at, to)
                src = inside(folder, rel)
                if plan.new.kind == "git" and src is not None and os.path.samefile(src, at):
                    person_files.unlink_shared(folder, tree, [rel], self.src._cache(plan.label), plan.new.commit,
                                               plan.new.path)     # upstream's file, written from git
                else:
                    at.unlink()
                carried.remove(rel)
                copied.append(rel)
        why = "a file the lock does not list"
        return ([{"file": f, "problem": files[f], "why": why, "kept": ""} for f in carried]
                + [{"file": f, "problem": files[f], "why": why, "kept": str(made[0] / f)} for f in copied])

    def _persons(self, plan: Any, folder: Path, since: float | None = None) -> dict[str, str]:
        """A person's files in ``folder`` the lock does not list (added, changed, or ``unknown``)."""
        listed = {f.path if s.path == "." else f"{s.path}/{f.path}" for s in plan.old.skills for f in s.files}
        listed |= {d.file for d in plan.drift}
        ref = self._tree(plan.old, plan.old.commit)
        if ref is not None:
            return person_files.persons(folder, ref, skip=listed, since=since)
        # nothing tells upstream's from a person's: each one is kept (the same file in the new tree is not)
        return {rel: "unknown" for rel, _ in person_files.walk(folder) if rel not in listed}

    def unlisted(self, plan: Any) -> list[dict[str, str]]:
        """What applying ``plan`` does with a person's files the lock does not list (``keep_unlisted``),
        shown before it is applied; nothing is written. ``kept`` names the folder a copy goes under."""
        folder, tree = self.src.folder(plan.label), plan.tree
        if tree is None or not folder.is_dir():
            return []
        files = self._persons(plan, folder)
        carried, copied = person_files.keep(folder, files, tree, Path, write=False)
        skills = sorted((s.path for s in plan.new.skills), key=len, reverse=True)
        for rel in list(carried):        # one the new lock would list goes aside instead (as ``_listed_in``)
            sp = next((p for p in skills if p == "." or rel.startswith(p + "/")), None)
            parts = (rel if sp == "." or sp is None else rel[len(sp) + 1:]).split("/")
            with contextlib.suppress(OSError):
                if (sp is not None and not any(p.startswith(".") or p in SKIP_DIRS for p in parts)
                        and (folder / rel).stat().st_size <= MAX_RESOURCE_BYTES):
                    carried.remove(rel)
                    copied.append(rel)
        where = str(self.src.base / ".kept" / plan.label)
        why = "a file the lock does not list"
        return ([{"file": f, "problem": files[f], "why": why, "kept": ""} for f in carried]
                + [{"file": f, "problem": files[f], "why": why, "kept": where} for f in sorted(copied)])

    @staticmethod
    def _listed_in(entry: lockmod.SourceEntry, tree: Path, files: list[str]) -> list[str]:
        """Those of ``files`` (paths in ``tree``) that ``entry``'s skills would list."""
        skills = sorted((s.path for s in entry.skills), key=len, reverse=True)
        served: dict[str, set[str]] = {}
        out = []
        for rel in files:
            sp = next((p for p in skills if p == "." or rel.startswith(p + "/")), None)
            if sp is None:
                continue
            if sp not in served:
                served[sp] = set(lockmod.skill_files(tree.joinpath(*([] if sp == "." else sp.split("/")))))
            if (rel if sp == "." else rel[len(sp) + 1:]) in served[sp]:
                out.append(rel)
        return out

    def late(self, plan: Any, previous: Path, since: float) -> list[dict[str, str]]:
        """After the source's folder was moved aside (to ``previous``), before the new tree takes its
        place: a file a person wrote there while the update ran (at or after ``since``), kept as the
        update did not see it, is copied to ``sources/.kept/``; a file of the new tree linked to one a
        person wrote is made upstream's again. Returns what was kept."""
        tree = plan.tree
        if tree is None:
            return []
        ref = self._tree(plan.old, plan.old.commit)
        if ref is None:
            ref = {}
            for s in plan.old.skills:
                for f in s.files:
                    ref[f.path if s.path == "." else f"{s.path}/{f.path}"] = ("sha256", f.digest[7:], f.size)
        files = person_files.persons(previous, ref, since=since)
        shared = [d.file for d in plan.drift if d.problem == "changed"] + sorted(files)
        seen = self.seen.pop(plan.label, {})
        for rel in [f for f in files if f in seen]:      # kept above as it is now
            with contextlib.suppress(OSError):
                if person_files.sha256(previous / rel) == seen[rel]:
                    del files[rel]
        if plan.old.kind == "git":
            person_files.unlink_shared(previous, tree, shared, self.src._cache(plan.label), plan.new.commit,
                                       plan.new.path)
        if not files:
            return []
        dest = person_files.kept_dir(self.src.base, plan.label)
        _, copied = person_files.keep(previous, files, None, lambda: dest, carry=False)
        return [{"file": f, "problem": files[f], "why": "written while the update ran", "kept": str(dest / f)}
                for f in copied]

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
