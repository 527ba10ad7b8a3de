"""A person's edits of a source's skills, kept through an update.

A FIX of a source's skill makes a copy in the workspace (``metadata.origin``). When an update
changes that skill upstream, the copy is merged three-way (``upstream_merge``) with the
upstream text the edit was made from as the base (kept in ``<home>/sources/.bases/``): a clean
merge is a new version of the copy, a conflict a draft in the review queue with both sides and
the base. A pinned source's merges wait in the review queue too, for the same person to look.
A skill upstream moved to another folder (``moves``: the same name removed at one and added at
another) takes its copy with it: the copy's origin follows (``follow``), its base moves to the new
folder, and upstream's change merges as for any changed skill. The name is the skill's identity: a
folder whose skill now has another name holds another skill (``renames``), so two skills that swap
folders are two moves, and a copy is never merged with another skill's text. A copy whose skill
upstream renamed (in its folder, or moved and renamed at once) or removed stays as it is, and its
frontmatter says so (``metadata.origin-gone``, naming the skill upstream has there now): its
``origin`` stays what it was made from, and upstream's changes are not merged into it any more.

The copy's other files (``scripts/``, ``references/``: a person put their own version beside the
copy's SKILL.md) are merged the same way when upstream changes them, each with the upstream file
the edit was made from as its base: a clean merge is written into the copy, a conflict leaves
the person's file as it is (upstream's is in the source's folder, to compare), and a pinned
source's changes are not merged into them."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..errors import SkillshelfError, ValidationError
from ..files import (
    MAX_RESOURCE_BYTES,
    MAX_SKILL_BYTES,
    FileRefused,
    contained,
    read_bounded,
    read_text_bounded,
    write_file,
)
from . import fetch as fetchmod, lock as lockmod
from .upstream_merge import Merged, decided_base, merge as merge3way, merge_file


@dataclass
class FileEdit:
    """One of a copy's other files that upstream changed: ``edit`` is merged | kept | conflict |
    pinned | failed (the merge could not be written)."""

    file: str                     # relative to the skill's folder
    edit: str
    note: str = ""
    target: Path | None = None    # the copy's file
    data: bytes | None = None     # what is written there (merged)
    theirs: bytes | None = None   # upstream's new file (the next base)
    ours: bytes | None = None     # the copy's file as the plan read it
    base: bytes | None = None     # the upstream file the copy's was made from

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "edit": self.edit, "note": self.note}


def inside(folder: Path, rel: str) -> Path | None:
    """``folder``/``rel`` when it stays inside ``folder`` (``rel`` comes from the lock), else None."""
    try:
        return contained(folder, folder.joinpath(*rel.split("/")))
    except ValidationError:
        return None


def _short(text: str, n: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[:n - 1] + "…"


def _read(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return read_bounded(path, MAX_RESOURCE_BYTES)
    except (OSError, FileRefused):
        return None


class EditedCopies:
    """The workspace copies of the skills of ``src`` (the ``Sources`` it serves: its records,
    roots, folders, git caches, evolver and review queue), planned and merged per update;
    ``change`` makes a plan's change of one skill (``sources.SkillChange``)."""

    def __init__(self, src: Any, change: Any = None):
        self.src = src
        self.change = change

    def copies(self, label: str) -> dict[str, Any]:
        """The workspace copies of this source's skills: origin id -> record (not a copy whose
        original upstream renamed or removed: ``metadata.origin-gone``)."""
        root = self.src._root_label(label) or label
        out = {}
        for rec in self.src._records("workspace"):
            origin = (rec.metadata or {}).get("origin") or ""
            if origin.startswith(root + ":") and not (rec.metadata or {}).get(skillmod.ORIGIN_GONE):
                out[origin.split(":", 1)[1]] = rec
        return out

    def base_text(self, entry: lockmod.SourceEntry, path: str) -> str | None:
        """The upstream text a person's copy was made from: the one kept at the last merge, else the
        source's SKILL.md at the locked commit (from the git cache; for an archive, the folder's file
        when it still has the locked digest). None when it cannot be known."""
        rel = [] if path == "." else path.split("/")
        with contextlib.suppress(OSError, FileRefused):
            return read_text_bounded(self.src._bases(entry.label).joinpath(*rel) / "SKILL.md", MAX_SKILL_BYTES)
        if entry.kind == "git" and self.src._cache(entry.label).is_dir():
            where = "/".join(p for p in (entry.path, path, "SKILL.md") if p and p != ".")
            res = fetchmod.git(self.src._cache(entry.label), "show", "--end-of-options", f"{entry.commit}:{where}",
                               check=False)
            if res.returncode == 0 and len(res.stdout) <= MAX_SKILL_BYTES:
                return res.stdout.decode("utf-8", "replace")
        locked_digest = entry.by_path().get(path)
        want = locked_digest.digests().get("SKILL.md") if locked_digest else None
        try:
            data = read_text_bounded(self.src.folder(entry.label).joinpath(*rel) / "SKILL.md", MAX_SKILL_BYTES)
        except (OSError, FileRefused):
            return None
        raw = data.encode("utf-8")
        return data if want and want == ("sha256:" + hashlib.sha256(raw).hexdigest(), len(raw)) else None

    def _name(self, text: str | None) -> str | None:
        parsed = skillmod.parse(text).skill if text else None
        return parsed.name if parsed is not None else None

    def _new_name(self, plan: Any, path: str) -> str | None:
        """The name of upstream's skill at ``path`` in the update (its fetched files; once applied, the
        source's folder)."""
        tree = plan.tree if plan.tree is not None else self.src.folder(plan.label)
        md = tree.joinpath(*([] if path == "." else path.split("/"))) / "SKILL.md"
        with contextlib.suppress(OSError, FileRefused):
            return self._name(read_text_bounded(md, MAX_SKILL_BYTES))
        return None

    def renames(self, plan: Any) -> None:
        """A skill ``changed`` in place whose frontmatter ``name`` is not the one it had is another
        skill in that folder (upstream swapped two folders, or renamed the skill): the change is
        the removal of the old name and the addition of the new one, which ``moves`` pairs with
        their other folders. A copy is never merged with another skill's text."""
        names = self.src.kept.names(plan.label)       # (the index: the skills at the locked commit)
        before, after = plan.old.by_path(), plan.new.by_path()
        for c in [c for c in plan.changes if c.change == "changed" and "SKILL.md" in c.files]:
            new = self._new_name(plan, c.path)
            old = names.get(c.path) or self._name(self.base_text(plan.old, c.path))
            if not old or not new or old == new:
                continue
            gone = dataclasses.replace(c, change="removed", files=[f.path for f in before[c.path].files],
                                       findings=[], note=f"upstream's skill in {c.path} is now named {new}, "
                                                         f"not {old}")
            c.change, c.files = "added", [f.path for f in after[c.path].files]
            plan.changes.insert(plan.changes.index(c), gone)

    def moves(self, plan: Any) -> None:
        """A skill removed at one folder and added at another in one update, with the same
        frontmatter ``name`` (one of each), is a move: the two changes become one, ``moved``, at
        the new folder, its ``files`` those that differ. The name is the skill's identity (what
        people and agents call it, the folder a copy lives in); git's history would miss a move
        whose text changed much, and an archive has none. A skill moved and renamed at once is
        another skill to this: a removal and an addition (a copy of it stays as it is)."""
        self.renames(plan)
        removed = [c for c in plan.changes if c.change == "removed"]
        added = [c for c in plan.changes if c.change == "added"]
        if not removed or not added:
            return
        old_names: dict[str, list[Any]] = {}
        for c in removed:
            name = self._name(self.base_text(plan.old, c.path)) or self.src.kept.names(plan.label).get(c.path)
            if name:
                old_names.setdefault(name, []).append(c)
        new_names: dict[str, list[Any]] = {}
        for c in added:
            name = self._new_name(plan, c.path)
            if name:
                new_names.setdefault(name, []).append(c)
        before, after = plan.old.by_path(), plan.new.by_path()
        for name, olds in old_names.items():
            news = new_names.get(name, [])
            if len(olds) != 1 or len(news) != 1:
                continue       # two skills of one name: which went where is not known
            gone, came = olds[0], news[0]
            da, db = before[gone.path].digests(), after[came.path].digests()
            came.change, came.moved_from = "moved", gone.path
            came.files = sorted(f for f in set(da) | set(db) if da.get(f) != db.get(f))
            plan.changes.remove(gone)

    def plan(self, plan: Any) -> None:
        with contextlib.suppress(SkillshelfError, OSError):
            self.settle(plan.label)
        self.moves(plan)
        copies = self.copies(plan.label)
        self.untaken(plan, copies)
        tree = plan.tree
        assert tree is not None
        added = [c.path for c in plan.changes if c.change == "added"]
        for c in plan.changes:
            was = c.moved_from or c.path          # the folder the copy's origin names
            rec = copies.get(was)
            if rec is not None and c.change in ("changed", "moved") and self._new_name(plan, c.path) != rec.name:
                # (an origin left naming a folder upstream gave to another skill): never merged with its text
                c.copy, c.edit = rec.name, "kept"
                c.note = (f"upstream's skill in {c.path} is not named {rec.name}: your copy is left as it is, and "
                          "that skill's changes are not merged into it; its origin is marked gone")
                continue
            if rec is not None and c.change == "moved":
                c.copy, c.edit = rec.name, "kept"
                c.note = (f"moved upstream from {was}; your copy follows it: its origin becomes "
                          f"{self.src._root_label(plan.label) or plan.label}:{c.path}")
            if rec is not None and c.change in ("changed", "moved"):
                c.file_edits = self.plan_files(plan, c.path, c.files, Path(rec.path).parent, was)
                c.copy = rec.name if c.file_edits else c.copy
            if rec is None or c.change not in ("changed", "moved") or "SKILL.md" not in c.files:
                if rec is not None and c.change == "removed":
                    c.copy, c.edit = rec.name, "kept"
                    c.note = ((c.note or "removed upstream") + "; your copy stays in the workspace as it is, its "
                              "origin marked gone (upstream's changes are not merged into it)")
                    others = [p for p in added if p != c.path]     # (its own folder: renamed in place, said)
                    if others:     # a skill moved and renamed at once is another skill: the copy does not follow it
                        c.note += (f"; upstream added {', '.join(others[:3])}{' …' if len(others) > 3 else ''}: "
                                   f"if one is {rec.name} renamed, it is another skill here (a skill's name is its "
                                   "identity), and your copy does not follow it")
                continue
            c.copy = rec.name
            moved = c.note if c.change == "moved" else self._untaken_note(plan) if c.untaken else ""
            base = self.base_text(plan.old, was)
            try:
                ours = read_text_bounded(rec.path, MAX_SKILL_BYTES)
                theirs = read_text_bounded(tree.joinpath(*c.path.split("/")) / "SKILL.md", MAX_SKILL_BYTES)
            except (OSError, FileRefused) as exc:
                c.edit, c.note = "conflict", f"cannot read a side: {exc}"
                continue
            if base is None:   # never guessed: a wrong base would drop your edit or upstream's change
                c.edit, c.note = "conflict", "the upstream text your edit was made from is not known"
                c.sides = ("", ours, theirs, Merged(False, why=c.note))
                continue
            m = merge3way(base, ours, theirs)
            c.sides = (base, ours, theirs, m)
            if not m.clean:
                c.edit, c.note = "conflict", m.why
            elif m.same:
                c.edit, c.note = "kept", "your copy already has upstream's change"
                if m.untaken:       # upstream changed only what the copy keeps as its own
                    c.note = ("upstream changed only " + ", ".join(m.untaken) + ", which your copy keeps as its own;"
                              " your copy is left as it is")
            else:
                c.edit = "review" if plan.old.pinned else "merged"
                own = f"upstream also changed {', '.join(m.untaken)}, which your copy keeps as its own"
                c.note = "; ".join(m.taken + ([own] if m.untaken else []))
            c.note = "; ".join(n for n in (moved, c.note, self._waiting_note(plan, c)) if n)

    def untaken(self, plan: Any, copies: dict[str, Any]) -> None:
        """A copy whose kept base is not upstream's text at the update's commit, when the update does
        not change that skill and no draft of it waits: upstream's change the copy has not taken (the
        clean part of a conflict draft a person rejected, a merge that could not be saved) is offered
        again, as a change of that skill, so that an update never calls the copy up to date without it."""
        touched = {c.path for c in plan.changes} | {c.moved_from for c in plan.changes if c.moved_from}
        after = plan.new.by_path()
        for path in sorted(set(copies) - touched) if self.change is not None else []:
            rel = [] if path == "." else path.split("/")
            if path not in after or (self._pending(plan.label).joinpath(*rel) / "draft.json").exists():
                continue
            try:
                kept = read_text_bounded(self.src._bases(plan.label).joinpath(*rel) / "SKILL.md", MAX_SKILL_BYTES)
                now = read_text_bounded(plan.tree.joinpath(*rel) / "SKILL.md", MAX_SKILL_BYTES)
            except (OSError, FileRefused):
                continue
            if kept != now:
                plan.changes.append(self.change(path, "changed", ["SKILL.md"], untaken=True))

    @staticmethod
    def _untaken_note(plan: Any) -> str:
        return (f"upstream's text at {plan.new.commit[:7]} holds a change your copy has not taken: a rejected draft "
                "left it out, or its merge could not be saved")

    def base_bytes(self, entry: lockmod.SourceEntry, path: str, file: str) -> bytes | None:
        """The upstream file ``file`` of the skill at ``path`` that a person's copy of it was made
        from: the one kept at the last merge, else the file at the locked commit (the git cache),
        else the source folder's when it still has the locked digest. None when it cannot be known."""
        rel = [] if path == "." else path.split("/")
        kept = _read(inside(self.src._bases(entry.label).joinpath(*rel), file))
        if kept is not None:
            return kept
        if entry.kind == "git" and self.src._cache(entry.label).is_dir():
            where = "/".join(p for p in (entry.path, path, file) if p and p != ".")
            res = fetchmod.git(self.src._cache(entry.label), "show", "--end-of-options", f"{entry.commit}:{where}",
                               check=False)
            if res.returncode == 0 and len(res.stdout) <= MAX_RESOURCE_BYTES:
                return res.stdout
        skill = entry.by_path().get(path)
        want = skill.digests().get(file) if skill else None
        data = _read(inside(self.src.folder(entry.label).joinpath(*rel), file))
        if data is None or want != ("sha256:" + hashlib.sha256(data).hexdigest(), len(data)):
            return None
        return data

    def plan_files(self, plan: Any, path: str, files: list[str], copy_dir: Path,
                   was: str | None = None) -> list[FileEdit]:
        """What an update does to the files (other than SKILL.md) of the copy at ``copy_dir`` that
        upstream changed: the copy's own versions are merged with upstream's; a file the copy does
        not have is served from the source as it is. ``was``: the folder the skill was at (a move)."""
        tree = plan.tree.joinpath(*([] if path == "." else path.split("/")))
        out = []
        for f in files:
            mine = inside(copy_dir, f) if f != "SKILL.md" else None
            if mine is None or not mine.is_file():
                continue
            ours = _read(mine)
            theirs = _read(inside(tree, f))
            where = f"sources/{plan.label}/{f if path == '.' else path + '/' + f}"
            if ours is None:
                out.append(FileEdit(f, "conflict", "your file cannot be read: it is left as it is", mine))
                continue
            if theirs is None:
                out.append(FileEdit(f, "kept", "removed upstream; your file stays", mine))
                continue
            base = self.base_bytes(plan.old, was or path, f)
            m = merge_file(base, ours, theirs) if base is not None else \
                merge_file(ours, ours, theirs) if ours == theirs else None
            if m is None or not m.clean:
                why = m.why if m is not None else "the upstream file your edit was made from is not known"
                out.append(FileEdit(f, "conflict", f"{why}: your file is left as it is; upstream's is {where}", mine))
            elif m.same:
                out.append(FileEdit(f, "kept", "your file already has upstream's change", mine, theirs=theirs))
            elif plan.old.pinned:
                out.append(FileEdit(f, "pinned", f"the source is pinned: upstream's change is not merged into your "
                                                 f"file (upstream's is {where})", mine))
            else:
                out.append(FileEdit(f, "merged", "", mine, m.data, theirs, ours, base))
        return out

    # --- a conflict a person decides ---------------------------------------------------------------
    def _pending(self, label: str) -> Path:
        """Upstream's texts of conflicts waiting in the review queue (``.bases/.pending/LABEL``)."""
        self.src._bases(label)            # the label is checked
        return self.src.base / ".bases" / ".pending" / label

    def keep_pending(self, label: str, path: str, draft: str, text: str, *, clean: bool = False) -> None:
        """Upstream's text of a merge queued as the draft ``draft`` (a conflict, or a pinned source's
        ``clean`` merge): the next base once a person approves or rejects it (either way they decided
        on upstream at that commit; a rejected conflict leaves upstream's clean changes offered)."""
        folder = self._pending(label).joinpath(*([] if path == "." else path.split("/")))
        write_file(folder / "SKILL.md", text)
        write_file(folder / "draft.json", json.dumps({"draft": draft, **({"clean": True} if clean else {})}))

    def settle(self, label: str) -> None:
        """The merges of this source a person has decided (their draft is no longer waiting):
        upstream's text of that commit becomes the base, so the same conflict does not come back
        and upstream's later changes merge again; of a conflict, the parts upstream changed that the
        copy still holds as they were stay the old base's (``_decided``), so they are offered again."""
        pending = self._pending(label)
        if not pending.is_dir():
            return
        waiting = {d["name"] for d in self.src._review().list()}
        for meta in sorted(pending.rglob("draft.json")):
            try:
                data = json.loads(read_text_bounded(meta, 10_000))
                draft, clean = data.get("draft"), data.get("clean")
                text = read_text_bounded(meta.parent / "SKILL.md", MAX_SKILL_BYTES)
            except (OSError, FileRefused, ValueError, AttributeError):
                continue
            if draft in waiting:
                continue
            rel = meta.parent.relative_to(pending).as_posix()
            rel = "." if rel in ("", ".") else rel
            self.keep_base(label, rel, text if clean else self._decided(label, rel, text))
            (meta.parent / "SKILL.md").unlink(missing_ok=True)
            meta.unlink(missing_ok=True)

    def _decided(self, label: str, path: str, theirs: str) -> str:
        """The next base of the copy of ``path`` once a person decided its conflict draft of
        upstream's ``theirs``: ``decided_base`` of the base it was merged from and the copy as it is
        now (upstream's clean changes a rejection left out stay offered); ``theirs`` when one of
        them cannot be read."""
        rec = self.copies(label).get(path)
        rel = [] if path == "." else path.split("/")
        try:
            base = read_text_bounded(self.src._bases(label).joinpath(*rel) / "SKILL.md", MAX_SKILL_BYTES)
            ours = read_text_bounded(rec.path, MAX_SKILL_BYTES) if rec is not None else None
        except (OSError, FileRefused):
            return theirs
        return decided_base(base, ours, theirs) if ours is not None else theirs

    def waiting(self, label: str, c: Any) -> dict | None:
        """The draft of the copy ``c.copy`` waiting in the review queue: its ``upstream`` part (the
        source, commit and skill it merged) for a draft of an older upstream change of this skill,
        ``{}`` for any other draft (an agent's change), None when none waits."""
        rec = self.src._review().drafts.record(c.copy) if c.copy else None
        if rec is None:
            return None
        up = rec["args"].get("upstream")
        ours = isinstance(up, dict) and up.get("source") == label and up.get("skill") in (c.path, c.moved_from)
        return up if ours else {}

    def _waiting_note(self, plan: Any, c: Any) -> str:
        """What this update does with the copy's draft waiting in the review queue (said in the plan)."""
        try:
            up = self.waiting(plan.label, c)
        except (SkillshelfError, OSError):
            return ""
        short = plan.new.commit[:7]
        if up is None:
            return ""
        if up:
            return (f"the draft of upstream {str(up.get('commit') or '')[:7]} waiting in the review queue is replaced "
                    f"by this merge of upstream {short}" if c.edit in ("conflict", "review") else
                    f"the draft of upstream {str(up.get('commit') or '')[:7]} waiting in the review queue is dropped")
        return (f"another draft of {c.copy} waits in the review queue: this merge cannot be queued until a person "
                f"decides it (`skillshelf review show {c.copy}`)" if c.edit in ("conflict", "review") else "")

    def supersede(self, plan: Any, c: Any) -> str | None:
        """A draft of an older upstream change of the copy ``c.copy`` waiting in the review queue is
        replaced by this update's merge (made from the same base, the text the copy last merged
        with, and upstream's newest text): it is removed, with upstream's text kept for it. Returns
        the commit it named (short), None when no such draft waits."""
        drafts = self.src._review().drafts
        with drafts.lock(c.copy):
            up = self.waiting(plan.label, c)
            if not up:
                return None
            drafts.remove(c.copy)
        folder = self._pending(plan.label).joinpath(*([] if c.path == "." else c.path.split("/")))
        for f in ("draft.json", "SKILL.md"):
            with contextlib.suppress(OSError):
                (folder / f).unlink()
        return str(up.get("commit") or "")[:7] or "?"

    def _superseded(self, plan: Any, c: Any, why: str) -> None:
        """A draft of an older upstream change of the copy that this update's merge makes stale goes."""
        with contextlib.suppress(SkillshelfError, OSError):
            if older := self.supersede(plan, c):
                c.note = (c.note + "; " if c.note else "") + f"the draft of upstream {older} is dropped: {why}"

    def keep_base(self, label: str, path: str, text: str | bytes, file: str = "SKILL.md") -> None:
        base = self.src._bases(label).joinpath(*([] if path == "." else path.split("/")))
        target = inside(base, file) if file != "SKILL.md" else base / "SKILL.md"
        if target is not None:
            write_file(target, text)

    def merge_files(self, plan: Any, c: Any) -> None:
        """Write the merged files into the copy and keep upstream's as the next base; each read,
        merged and written with the copy's lock held (as every writer of the copy holds it)."""
        if not c.file_edits:
            return
        with self.src._evolver().holding(c.copy):
            self._merge_files(plan, c)

    def _merge_files(self, plan: Any, c: Any) -> None:
        for fe in c.file_edits:
            if fe.edit == "merged" and fe.target is not None and fe.theirs is not None:
                now = _read(fe.target)       # a person may have changed it while the update waited
                if now != fe.ours:
                    m = merge_file(fe.base, now, fe.theirs) if now is not None and fe.base is not None else None
                    if m is None or not m.clean:
                        fe.edit, fe.data = "conflict", None
                        fe.note = ("you changed it while the update waited, and upstream's change does not merge "
                                   "with that: it is left as it is")
                    else:
                        fe.data = m.data
            try:
                if fe.edit == "merged" and fe.target is not None and fe.data is not None:
                    write_file(fe.target, fe.data)
                if fe.edit in ("merged", "kept") and fe.theirs is not None:
                    self.keep_base(plan.label, c.path, fe.theirs, fe.file)
            except SkillshelfError as exc:
                fe.edit, fe.note = "failed", f"the merge could not be written ({exc}); your file is unchanged"

    def follow(self, plan: Any, c: Any) -> bool:
        """Upstream moved the skill of the copy ``c.copy``: the copy's origin follows it (a version
        of the copy); its base goes to the new folder with ``move_bases``. False when the copy could
        not be saved (``c`` says why)."""
        root = self.src._root_label(plan.label) or plan.label
        args = {"action": "FIX", "target_skill_name": f"workspace:{c.copy}", "follow_origin": f"{root}:{c.path}",
                "reason": f"upstream {plan.new.commit[:7]} moved {root}:{c.moved_from} to {root}:{c.path}: "
                          "the copy's origin follows it"}
        try:
            res = self.src._evolver().apply(args, trigger="upstream")
        except SkillshelfError as exc:
            c.edit, c.note = "failed", f"its origin could not follow upstream's move ({exc}); your copy is unchanged"
            return False
        if c.sides is not None:          # the merge reads the copy as it is now
            now = _read(Path(res.path))
            if now is not None:
                base, _, theirs, _ = c.sides
                ours = now.decode("utf-8", "replace")
                c.sides = (base, ours, theirs, merge3way(base, ours, theirs) if base else c.sides[3])
        return True

    def move_bases(self, plan: Any, followed: list[Any]) -> None:
        """The upstream files kept as the bases of the copies that followed their skill go to the
        new folders, with their conflicts waiting in the review queue, all read before any is moved
        (two skills that swap folders swap bases). A base SKILL.md the update wrote at the new
        folder before anything moved stays; one whose old folder holds another's now is not moved
        (the locked commit's text serves as its base)."""
        bases = self.src._bases(plan.label)
        written = {c.path for c in followed if c.sides is not None and c.sides[0]}

        def at(path: str) -> Path:
            return bases.joinpath(*([] if path == "." else path.split("/")))

        put: dict[Path, bytes] = {}
        olds: set[Path] = set()
        for c in followed:
            skill = plan.old.by_path().get(c.moved_from)
            for f in ["SKILL.md", *(x.path for x in skill.files if x.path != "SKILL.md")] if skill else ["SKILL.md"]:
                old, new = inside(at(c.moved_from), f), inside(at(c.path), f)
                if old is None or new is None or not old.is_file():
                    continue
                if f != "SKILL.md" or c.moved_from not in written:
                    olds.add(old)
                if f == "SKILL.md" and (c.path in written or c.moved_from in written):
                    continue
                data = _read(old)
                if data is not None:
                    put[new] = data
        for old in olds - set(put):
            with contextlib.suppress(OSError):
                old.unlink()
        for new, data in put.items():
            with contextlib.suppress(SkillshelfError, OSError):
                write_file(new, data)
        # a conflict of a copy waiting in the review queue: upstream's text becomes the base at the new folder
        pending = self._pending(plan.label)
        places = [(inside(pending, "" if c.moved_from == "." else c.moved_from),
                   inside(pending, "" if c.path == "." else c.path)) for c in followed]
        leaving = {old / "draft.json" for old, _ in places if old is not None}
        waiting: dict[Path, bytes] = {}
        for old_p, new_p in places:
            if old_p is None or new_p is None or not (old_p / "draft.json").is_file() \
                    or ((new_p / "draft.json").exists() and new_p / "draft.json" not in leaving):
                continue
            for f in ("SKILL.md", "draft.json"):
                data = _read(old_p / f)
                if data is not None:
                    waiting[new_p / f] = data
                    with contextlib.suppress(OSError):
                        (old_p / f).unlink()
        for new, data in waiting.items():
            with contextlib.suppress(SkillshelfError, OSError):
                write_file(new, data)
        for c in followed:
            was = at(c.moved_from)
            for d in [was, *was.parents]:       # its folders, left empty
                if d == bases or bases not in d.parents or not d.is_dir() or any(d.iterdir()):
                    break
                d.rmdir()

    def gone(self, plan: Any, c: Any) -> str | None:
        """What upstream did to the skill the copy ``c.copy`` was made from, when this change leaves
        the copy without it (one line, for ``metadata.origin-gone``); None when the copy still has it."""
        if not c.copy or c.edit != "kept" or c.change not in ("removed", "changed", "moved"):
            return None
        root, at = self.src._root_label(plan.label) or plan.label, plan.new.commit[:7]

        def named(path: str) -> str:
            return _short(self._new_name(plan, path) or "(no readable name)", 64)

        if c.change != "removed":
            new = self._new_name(plan, c.path)
            if c.sides is not None or new == c.copy:
                return None
            why = (f"upstream's skill in {root}:{c.path} is named {named(c.path)} at {at} (another skill here); "
                   "its changes are not merged into this copy")
        elif any(a.change == "added" and a.path == c.path for a in plan.changes):
            why = (f"upstream renamed it {named(c.path)} at {at} ({root}:{c.path} is that skill now: another skill "
                   "here); its changes are not merged into this copy")
        else:
            added = [a.path for a in plan.changes if a.change == "added"]
            why = f"upstream removed it at {at}; this copy stays as it is"
            if added:          # moved and renamed at once, perhaps: named, never followed
                why += (" (upstream added " + ", ".join(f"{named(p)} at {root}:{p}" for p in added[:3])
                        + (" …" if len(added) > 3 else "") + " then: if one is it renamed, it is another skill here, "
                        "and its changes are not merged into this copy)")
        return _short(why, 1000)

    def mark_gone(self, plan: Any, c: Any, why: str) -> None:
        """The copy ``c.copy`` says in its frontmatter what upstream did to its original (a version of
        the copy, ``metadata.origin-gone``); the bases kept for that folder go (a copy of the skill
        upstream has there now is merged from that skill's own text)."""
        args = {"action": "FIX", "target_skill_name": f"workspace:{c.copy}", "origin_gone": why,
                "reason": f"its origin is gone: {why}"}
        try:
            self.src._evolver().apply(args, trigger="upstream")
        except SkillshelfError as exc:
            c.note = (c.note + "; " if c.note else "") + f"its origin could not be marked gone ({exc})"
            return
        was = c.moved_from or c.path
        rel = [] if was == "." else was.split("/")
        skill = plan.old.by_path().get(was)
        files = {"SKILL.md", "draft.json", *(f.path for f in (skill.files if skill else []))}
        for folder in (self.src._bases(plan.label).joinpath(*rel), self._pending(plan.label).joinpath(*rel)):
            for f in files:
                p = inside(folder, f)
                if p is not None:
                    with contextlib.suppress(OSError):
                        p.unlink()

    def merge(self, plan: Any) -> None:
        short = plan.new.commit[:7]
        gone = []
        for c in plan.changes:       # a copy whose original upstream renamed or removed: its origin says so
            if (why := self.gone(plan, c)) is not None:
                self.mark_gone(plan, c, why)
                c.sides, c.file_edits = None, []
                gone.append(c)
        moved = [c for c in plan.changes if c.change == "moved" and c.copy and c not in gone]
        followed = [c for c in moved if self.follow(plan, c)]
        self.move_bases(plan, followed)
        for c in plan.changes:
            if c in moved and c not in followed:
                continue
            self.merge_files(plan, c)
            if c.sides is None:
                continue
            base, ours, theirs, m = c.sides
            if c.edit == "kept":
                self.keep_base(plan.label, c.path, theirs)
                self._superseded(plan, c, "your copy has upstream's text now")
                continue
            rec = self.copies(plan.label).get(c.path) if c.edit in ("merged", "review") else None
            now = _read(Path(rec.path)) if rec is not None else None
            if now is not None and now.decode("utf-8", "replace") != ours:     # changed while the update waited
                ours = now.decode("utf-8", "replace")
                m = merge3way(base, ours, theirs)
                c.sides = (base, ours, theirs, m)
                if not m.clean:
                    c.edit, c.note = "conflict", m.why + " (you changed your copy while the update waited)"
            args: dict[str, Any] = {"action": "FIX", "target_skill_name": f"workspace:{c.copy}",
                                    "replace_body": True}
            if m.keys:                     # upstream's frontmatter changes (its license, its author's version...)
                args["upstream_keys"] = m.keys
            if c.edit == "merged":
                args.update(body=m.body, description=m.description, reason=f"merged upstream {short}")
                try:
                    self.src._evolver().apply(args, trigger="upstream")
                    self.keep_base(plan.label, c.path, theirs)
                    self._superseded(plan, c, "upstream's text merged into your copy now")
                except SkillshelfError as exc:
                    c.edit, c.note = "failed", f"the merge could not be saved ({exc}); your copy is unchanged"
                continue
            # a conflict (or a pinned source's merge): a draft a person approves or rejects
            taken = m if m.clean else None
            t = skillmod.parse(theirs).skill
            o = skillmod.parse(ours).skill
            history = (f"your text stays in the history: `skillshelf history {c.copy}`"
                       + (f", `skillshelf rollback {c.copy} {o.version}`" if o is not None and o.version else ""))
            if taken:
                body, desc, note = taken.body, taken.description, ""
                reason = f"merged upstream {short} into your copy (the source is pinned: approve to apply)"
            elif base and m.theirs_body:      # the merge, upstream's side taken where both changed
                body, desc = m.theirs_body, m.theirs_description
                parts = "; ".join(repr(_short(r)) for r in m.replaced[:3]) + (" …" if len(m.replaced) > 3 else "")
                note = (f"upstream's text replaced {len(m.replaced)} part(s) of your copy ({parts}); your other "
                        f"edits stay; {history}")
                reason = (f"upstream {short} conflicts with your edit in {m.why.replace(' changed on both sides', '')}:"
                          " approve to take upstream's text there (your other edits stay), reject to keep yours")
            else:                             # no merge can be made: upstream's whole text
                body, desc = (t.body if t else ""), (t.description if t else "")
                note = f"upstream's text replaced your copy's whole text; {history}"
                reason = (f"upstream {short} conflicts with your edit: approve to take upstream's text (your edit "
                          "stays in the history), reject to keep yours")
            args.update(body=body, description=desc, reason=reason,
                        upstream={"source": plan.label, "commit": plan.new.commit, "skill": c.path,
                                  "base": base, "yours": ours, "upstream": theirs, "merged": m.marked or None,
                                  "replaced": m.replaced, "note": note})
            try:
                older = self.supersede(plan, c)
                self.src._review().propose(args)
                c.note = (c.note + "; " if c.note else "") + f"in the review queue: `skillshelf review show {c.copy}`"
                if older and f"the draft of upstream {older}" not in c.note:
                    c.note += f" (it replaces the draft of upstream {older}: it merges upstream {short} instead)"
                # once a person decides, upstream's text at this commit is the next base (the base stays
                # what the copy merged while the draft waits: a newer upstream change is merged from it)
                self.keep_pending(plan.label, c.path, c.copy, theirs, clean=bool(taken))
            except SkillshelfError as exc:
                c.edit = "failed"
                c.note = (c.note + "; " if c.note else "") + f"not queued ({exc}); your copy is unchanged"
