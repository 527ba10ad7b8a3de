"""Pinned collections: a root's skills as a person reviewed them, and the skills whose files
have changed since, held back from agents until a person has seen what changed.

Pinning a root (:meth:`Pins.pin_root`) records the sha256 of every file of every skill in it
(the files ``auditing.walk_skill`` takes, each read bounded; a file over the cap is recorded by
size and time, with a finding) and keeps each SKILL.md's text and the skill's audit findings.
A pinned skill is **held** when its files differ from the pin (a file added, removed or
changed), and so is a skill that appears in a pinned root after the pin: :meth:`Pins.refresh`
finds them (a walk and a stat per file; a read only where size or time moved) and
:meth:`Pins.held_ids` is the set a search leaves out. :meth:`Pins.diff` shows what changed:
a unified diff of the SKILL.md, the other files added, removed or changed, and the audit
findings that are new. :meth:`Pins.accept` pins a skill's content as it is now.

A pin may start from a baseline (``pin_root(baseline=...)``): what the owner reviewed on
another machine, as ``skillshelf.lock`` carries it (the digests of a skill's files, or none for
a skill never reviewed). A skill whose files differ from it is held here as it was there.
A skill imported from an archive that marked it held is held too (reason ``imported``) until a
person trusts it in this library; no pin is needed for that. The hold keeps what was imported:
the key of its files' content and its name. A skill elsewhere with that content (a copy, a
renamed folder) is held as well, and so is a skill of that name in its root once its own folder
is gone (a folder renamed and its text edited: an edit is not a review). A hold whose folder is
gone is dropped once another carries it on (:meth:`Pins.held`).

:class:`Gate` puts pins and the audit together: what agents may not see (held skills and,
with ``trust.block``, skills at or above a risk whose content the owner has not trusted), the
message an agent gets instead, and the owner's review and allowance of one skill.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..catalog.roots import Found, Root, discover
from ..checks import Check
from ..errors import NotFoundError, StoreError, ValidationError
from ..files import MAX_SKILL_BYTES, FileRefused, read_bounded
from ..store import Store, now
from ..store.pins import PinnedContent
from ..store.protocols import PinStore
from . import skill_audit as auditing
from .decided import Decided
from .file_audit import Finding, severity_at_least

# a SKILL.md diff is made of at most this many lines a side (difflib is quadratic at worst)
DIFF_MAX_LINES = 20_000


@dataclass
class PinDiff:
    """What changed in a pinned skill since it was pinned."""

    skill_id: str
    reason: str                      # unchanged | changed | added (new in a pinned root) | removed | imported
    skill_md_diff: str = ""          # unified diff of the SKILL.md, pinned -> now
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    new_findings: list[Finding] = field(default_factory=list)
    gone_findings: list[Finding] = field(default_factory=list)
    pinned_at: str | None = None
    added_text: dict[str, str] = field(default_factory=dict)   # the opening lines of the text files added

    def as_dict(self) -> dict[str, Any]:
        return {"skill_id": self.skill_id, "reason": self.reason, "skill_md_diff": self.skill_md_diff,
                "added": self.added, "added_text": self.added_text, "removed": self.removed, "changed": self.changed,
                "new_findings": [f.as_dict() for f in self.new_findings],
                "gone_findings": [f.as_dict() for f in self.gone_findings], "pinned_at": self.pinned_at}

    def text(self) -> str:
        """The diff as a person reads it in a terminal."""
        head = {"changed": "changed since it was pinned", "added": "new in a pinned root (never reviewed)",
                "removed": "removed since it was pinned", "unchanged": "unchanged since it was pinned",
                "imported": "imported from an archive that marked it held (never reviewed here)"}[self.reason]
        out = [f"{self.skill_id}: {head}" + (f" on {self.pinned_at}" if self.pinned_at else "")]
        for label, names in (("added", self.added), ("removed", self.removed), ("changed", self.changed)):
            if names:
                out.append(f"  files {label}: " + ", ".join(names[:50]) + (f" … ({len(names)})" if len(names) > 50 else ""))
        if self.new_findings:
            out.append("  new audit findings:")
            out += [f"    {f.severity:6} {f.rule}  {f.file}:{f.line}  {f.message}" for f in self.new_findings]
        if self.skill_md_diff:
            out += ["", self.skill_md_diff.rstrip("\n")]
        return "\n".join(out)


@dataclass
class PinReport:
    root: str
    skills: int = 0
    files: int = 0
    findings: list[Finding] = field(default_factory=list)   # files not hashed, links outside …
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"root": self.root, "skills": self.skills, "files": self.files,
                "findings": [f.as_dict() for f in self.findings], "notes": self.notes}


def _root_of(skill_id: str) -> str:
    return skill_id.partition(":")[0]


def _read_skill_md(path: str | Path) -> bytes:
    return read_bounded(path, MAX_SKILL_BYTES)


def snapshot(skill_id: str, skill_md: str | Path) -> dict[str, Any]:
    """A skill's content now, as a pin keeps it: ``skill_id``, ``content_key``, ``skill_md``
    (text), ``findings`` (the audit's, as dicts) and ``files`` (``file``, ``sha256``, ``size``,
    ``mtime_ns``)."""
    data = _read_skill_md(skill_md)
    findings, states = auditing.audit_folder(skill_md, skill_md_bytes=data)
    files = [{k: s[k] for k in ("file", "sha256", "size", "mtime_ns")} for s in states]
    key = auditing.content_key((s["file"], s["sha256"], s["size"], s["mtime_ns"]) for s in files)
    return {"skill_id": skill_id, "content_key": key, "skill_md": data.decode("utf-8", "replace"),
            "findings": [f.as_dict() for f in findings], "files": files}


def reviewed_snapshot(skill_id: str, files: list[dict[str, Any]]) -> dict[str, Any]:
    """A pin of content reviewed elsewhere, known by its files' digests only (``file``,
    ``sha256`` or None, ``size``): no SKILL.md text (a diff shows the whole text as new), no
    findings, no times (each file is hashed at the next look)."""
    states = [(str(f["file"]), f.get("sha256") or None, int(f["size"]), 0) for f in files]
    rows = [{"file": n, "sha256": sha, "size": size, "mtime_ns": t} for n, sha, size, t in states]
    key = auditing.content_key(states)
    return {"skill_id": skill_id, "content_key": key, "skill_md": "", "findings": [], "files": rows}


class Pins:
    """Pins kept in ``pins`` (``store.pins.PinnedContent`` or another backend's class with the
    same methods)."""

    def __init__(self, pins: PinStore | Store, *, exclude: tuple[Path, ...] = (),
                 locate: Callable[[str], Path | None] | None = None, roots: Callable[[], list[Root]] | None = None):
        self.pins: PinStore = PinnedContent(pins) if isinstance(pins, Store) else pins
        # the home's decisions file: held whole, the library's roots now when it is damaged
        self.decided = Decided(lambda: self.pins, roots or list)
        self.exclude = exclude          # folders never walked into (the library's home)
        # where a pinned root is on this server (a team's pins name roots by label; each
        # server may keep the collection elsewhere), else where the pinning server had it
        self._locate = locate or (lambda label: None)
        # the content indexed here: (a generation that moves when it does, then skill id -> content
        # key, read only when the generation moved); the gate gives the audit's. Without it an
        # import's hold stays on its id only.
        self.contents: tuple[Callable[[], str], Callable[[], dict[str, str]]] | None = None
        self._followed: tuple[str, str] | None = None
        self._names: dict[str, tuple[str, str]] = {}     # skill id -> (content key, its name)

    # --- pinning --------------------------------------------------------------------------
    def pin_root(self, root: Root, *, baseline: dict[str, list[dict[str, Any]]] | None = None) -> PinReport:
        """Pin every skill of ``root`` as it is now (replacing an earlier pin of it); its held
        skills are released. ``baseline``: skill id -> the files a person reviewed elsewhere
        (``file``, ``sha256``, ``size``; [] for none): those skills are pinned at that content
        instead, in the same write, so a skill that differs from it is held (:meth:`refresh`)."""
        self.take_back()
        found, notes = discover(root, self.exclude)
        report = PinReport(root.label, notes=notes)
        skills = []
        # a skill imported held was never reviewed here: pinning its root does not review it
        imported = {sid: h for sid, h in self.pins.held().items() if h["reason"] == "imported"
                    and _root_of(sid) == root.label}
        baseline = {**{sid: [] for sid in imported}, **(baseline or {})}
        for f in _unique(found):
            if f.id in baseline:
                if baseline[f.id]:
                    skills.append(reviewed_snapshot(f.id, baseline[f.id]))
                    report.files += len(baseline[f.id])
                continue                  # [] : never reviewed, held as new in the pinned root
            try:
                snap = snapshot(f.id, f.path)
            except (OSError, FileRefused) as exc:
                report.notes.append(f"not pinned: {f.file}: {getattr(exc, 'message', None) or exc}")
                continue
            skills.append(snap)
            report.files += len(snap["files"])
            report.findings += [Finding.from_dict(x) for x in snap["findings"]
                                if x["rule"] in ("files.not-audited", "files.outside-link")]
        report.skills = len(skills)
        self.pins.pin_root(root.label, str(root.path), skills, at=now())
        if imported:                        # (held as new in the pinned root meanwhile: never readable)
            self.pins.set_held({sid: _origin(h) for sid, h in imported.items()}, [], at=now())
        self._keep()
        return report

    def unpin_root(self, label: str) -> bool:
        """Forget a root's pin: its skills held because they changed are released; one imported
        held stays held (no one reviewed it)."""
        self.take_back()
        imported = {sid: _origin(h) for sid, h in self.pins.held().items()
                    if h["reason"] == "imported" and h["root"] == label}
        out = self.pins.unpin_root(label)
        if imported:
            self.pins.set_held(imported, [], at=now())
        self._keep()
        return out

    def roots(self) -> list[dict[str, Any]]:
        """The pinned roots: ``root``, ``path``, ``pinned_at``, ``skills``."""
        self.take_back()
        return self.pins.roots()

    def pinned_root(self, skill_id: str) -> str | None:
        """The label of the pinned root a skill id belongs to, or None."""
        label = _root_of(skill_id)
        return label if label in self.pins.root_labels() else None

    def accept(self, skill_id: str, skill_md: str | Path | None) -> PinDiff:
        """Pin one skill's content as it is now (``skill_md`` None: its folder is gone, and the
        pin is dropped). Returns what changed, as :meth:`diff` said it before."""
        label = self.pinned_root(skill_id)
        if label is None:
            raise ValidationError(f"{skill_id} is not in a pinned root",
                                  fix="pin its root first: `skillshelf pin LABEL`")
        before = self.diff(skill_id, skill_md)
        if skill_md is None or not os.path.exists(skill_md):
            self.pins.drop_skill(skill_id)
        else:
            self.pins.pin_skill(label, snapshot(skill_id, skill_md), at=now())
        return before

    # --- what changed ----------------------------------------------------------------------
    def compare(self, skill_id: str, skill_md: str | Path | None, *,
                pinned: dict[str, dict[str, Any]] | None = None,
                hashed: bool = False) -> tuple[str, list[str], list[str], list[str]]:
        """(reason, added, removed, changed) of a skill against its pin: reason is ``unchanged``,
        ``changed``, ``added`` (in a pinned root, not pinned) or ``removed`` (its folder is
        gone); ``pinned`` None for a skill outside any pinned root is ``unchanged``. Files are
        read only where their size or time moved; a same hash updates the pin's times.
        ``pinned``: the pin's files when the caller read them already (``root_files``).
        ``hashed``: every file is read and hashed, also one whose size and time did not move
        (``cp -p``, ``tar -x`` and ``unzip`` keep them): what a read gate's decision needs."""
        pinned = self.pins.files(skill_id) if pinned is None else pinned
        if not pinned:   # every pin has its SKILL.md: not pinned
            if skill_md is None or not os.path.exists(skill_md) or self.pinned_root(skill_id) is None:
                return ("unchanged", [], [], [])
            return ("added", [], [], [])
        if skill_md is None or not os.path.exists(skill_md):
            return ("removed", [], sorted(pinned), [])
        walk = auditing.walk_skill(skill_md)
        now_files = {s.file: s for s in walk.files}
        added = sorted(set(now_files) - set(pinned))
        removed = sorted(set(pinned) - set(now_files))
        changed, touched = [], []
        for name in sorted(set(now_files) & set(pinned)):
            st, pin = now_files[name], pinned[name]
            same = st.size == pin["size"] and st.mtime_ns == pin["mtime_ns"]
            if same and not hashed:
                continue
            if pin["sha256"] is None or st.outside:
                changed.append(name)
                continue
            try:
                sha = hashlib.sha256(auditing.read_file(st, Path(skill_md).name)).hexdigest()
            except (OSError, FileRefused):
                changed.append(name)
                continue
            if sha == pin["sha256"]:
                if not same:
                    touched.append((name, st.size, st.mtime_ns))
            else:
                changed.append(name)
        if touched:
            self.pins.touch_files(skill_id, touched)
        reason = "changed" if (added or removed or changed) else "unchanged"
        return (reason, added, removed, changed)

    def refresh(self, found: Iterable[Found | tuple[str, str | Path]] | None = None) -> dict[str, list[str]]:
        """Hold the skills of pinned roots whose files changed (or that are new), release the
        ones back to their pinned content. ``found``: the skills on disk (``Found`` or (id,
        SKILL.md path)), e.g. a sync's scan; None walks each pinned root. Returns the ids
        ``held`` now and ``released``."""
        roots = self.pins.roots()
        if not roots:
            return {"held": [], "released": []}
        labels = {r["root"] for r in roots}
        current: dict[str, str] = {}
        if found is None:
            for r in roots:
                fs, _ = discover(Root(Path(self._locate(r["root"]) or r["path"]), "other", r["root"]), self.exclude)
                current.update((f.id, f.file) for f in _unique(fs))
        else:
            for f in found:
                sid, path = (f.id, f.file) if isinstance(f, Found) else (f[0], str(f[1]))
                if _root_of(sid) in labels:
                    current.setdefault(sid, path)
        held_before = self.pins.held()
        hold: dict[str, tuple[str, str]] = {}
        for sid, path in current.items():
            reason = self.compare(sid, path)[0]
            if reason in ("changed", "added"):
                hold[sid] = (_root_of(sid), reason)
        # an imported skill outside the pinned roots stays held until a person trusts it
        hold.update((sid, (h["root"], h["reason"])) for sid, h in held_before.items()
                    if h["reason"] == "imported" and sid not in hold
                    and (_root_of(sid) not in labels or sid in current))
        released = [sid for sid in held_before if sid not in hold]
        if hold.keys() != held_before.keys() or any(held_before[s]["reason"] != r for s, (_, r) in hold.items()):
            self.pins.set_held(hold, released, at=now())
        return {"held": sorted(set(hold) - set(held_before)), "released": sorted(released)}

    def check(self, skill_id: str, skill_md: str | Path | None, *, hashed: bool = False) -> str:
        """Compare one skill with its pin now and hold or release it; returns the reason
        (``unchanged`` for a skill outside any pinned root). Call it when one skill's files
        are known to have changed (a watcher's event, a sync that re-indexed it); ``hashed``
        (``compare``) when a gate decides on what it does."""
        reason = self.compare(skill_id, skill_md, hashed=hashed)[0] if self.pinned_root(skill_id) else "unchanged"
        held = self.pins.held()
        if (reason == "unchanged" and held.get(skill_id, {}).get("reason") == "imported"
                and skill_md is not None and os.path.exists(skill_md)):
            return "imported"           # held until a person trusts it (``release``)
        if reason in ("changed", "added"):
            if held.get(skill_id, {}).get("reason") != reason:
                self.pins.set_held({skill_id: (_root_of(skill_id), reason)}, [], at=now())
        elif skill_id in held:
            self.pins.set_held({}, [skill_id], at=now())
        return reason

    def held(self) -> dict[str, dict[str, str]]:
        """Held skill id -> ``root``, ``reason`` (changed | added | imported), ``since`` and, for
        an import, ``content_key`` and ``name``. An import's hold follows its content and name
        first (:meth:`follow_imports`)."""
        self.take_back()
        held = self.pins.held()
        if self.contents is None or not any(h["reason"] == "imported" for h in held.values()):
            return held
        return self.follow_imports(held)

    def follow_imports(self, held: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        """Hold what descends from a held import: a skill indexed here with the content it was
        imported with (a copy, a renamed folder), or, when the import's folder is gone, a
        skill of its name in its root (renamed and edited). An import's hold whose folder is
        gone is dropped once another hold carries its content key and name. Looked at again
        only when the indexed content or the holds changed. Returns the holds now."""
        assert self.contents is not None
        generation, content_keys = self.contents
        gen = generation()
        if (gen, self.pins.generation()) == self._followed:
            return held
        keys = content_keys()      # (every indexed skill's key: only when something changed)
        imports = {sid: h for sid, h in held.items() if h["reason"] == "imported"}
        by_key = {h["content_key"]: h for h in imports.values() if h.get("content_key")}
        gone = {sid: h for sid, h in imports.items() if self._gone(sid)}
        hold: dict[str, tuple[str, ...]] = {}
        for sid, key in keys.items():
            if sid not in held and key in by_key:
                hold[sid] = (_root_of(sid), "imported", by_key[key]["content_key"], by_key[key]["name"])
        for h in gone.values():
            if not h.get("name"):
                continue
            for sid, key in keys.items():
                if (sid not in held and sid not in hold and _root_of(sid) == h["root"]
                        and self._name_of(sid, key) == h["name"]):
                    hold[sid] = (h["root"], "imported", h["content_key"], h["name"])
        carried = {(h.get("content_key"), h.get("name")) for sid, h in imports.items() if sid not in gone}
        carried |= {(v[2], v[3]) for v in hold.values()}
        released = [sid for sid, h in gone.items() if (h.get("content_key"), h.get("name")) in carried]
        if hold or released:
            try:
                self.pins.set_held(hold, released, at=now())
            except StoreError:
                # (a store that refuses the write: agents are kept from them on this read all the same)
                out = {sid: h for sid, h in held.items() if sid not in released}
                out.update((sid, {"root": v[0], "reason": v[1], "since": now(), "content_key": v[2],
                                  "name": v[3]}) for sid, v in hold.items())
                return out
            held = self.pins.held()
            self._keep()
        self._followed = (gen, self.pins.generation())
        return held

    def _folder(self, skill_id: str) -> Path | None:
        """Where a skill's folder is on this server, from its id (None: its root is not here)."""
        label, _, rel = skill_id.partition(":")
        base = self._locate(label)
        if base is None or not rel or rel.startswith("/") or ".." in rel.split("/"):
            return None
        return Path(base) if rel == "." else Path(base) / rel

    def _gone(self, skill_id: str) -> bool:
        folder = self._folder(skill_id)
        return folder is not None and not any((folder / n).is_file() for n in ("SKILL.md", "skill.md"))

    def _name_of(self, skill_id: str, key: str) -> str | None:
        """The name a skill's SKILL.md gives now (read again only when its content key moved)."""
        known = self._names.get(skill_id)
        if known is not None and known[0] == key:
            return known[1]
        folder = self._folder(skill_id)
        name = None
        for n in ("SKILL.md", "skill.md"):
            if folder is not None and (folder / n).is_file():
                try:
                    parsed = skillmod.parse(_read_skill_md(folder / n), folder_name=folder.name)
                except (OSError, FileRefused):
                    break
                name = parsed.skill.name if parsed.skill is not None else None
                break
        self._names[skill_id] = (key, name or "")
        return name

    def unpinned(self) -> set[str]:
        """The indexed skills of pinned roots with no pin (held as new: the rule the read gate uses), before
        :meth:`refresh` writes their holds (a database made anew being filled, a sync cut short)."""
        if isinstance(self.pins, PinnedContent):
            return self.pins.unpinned()
        labels = self.pins.root_labels()       # (a team's pins: the index is this server's own)
        if not labels or self.contents is None:
            return set()
        pinned = self.pins.skill_ids()
        return {sid for sid in self.contents[1]() if _root_of(sid) in labels and sid not in pinned}

    def held_ids(self) -> frozenset[str]:
        self.take_back()
        return frozenset(self.pins.held())

    def hold_imported(self, ids: dict[str, str]) -> None:
        """Hold skills taken in from an archive that marked them held (id -> its root's label),
        until a person trusts them here (:meth:`release`). An id may be held before its folder
        is written (so no reader sees it meanwhile); once the folder is there, the hold keeps
        its content key and name (call again)."""
        if not ids:
            return
        self.take_back()
        hold: dict[str, tuple[str, ...]] = {}
        for sid, root in ids.items():
            folder = self._folder(sid)
            md = next((folder / n for n in ("SKILL.md", "skill.md") if (folder / n).is_file()), None) \
                if folder is not None else None
            try:
                snap = snapshot(sid, md) if md is not None else None
            except (OSError, FileRefused):
                snap = None
            if snap is None:
                hold[sid] = (root, "imported")
                continue
            parsed = skillmod.parse(snap["skill_md"], folder_name=md.parent.name)  # type: ignore[union-attr]
            hold[sid] = (root, "imported", snap["content_key"], parsed.skill.name if parsed.skill else "")
        self.pins.set_held(hold, [], at=now())
        self._keep()

    def release(self, skill_id: str) -> bool:
        """Release an imported skill's hold (a person trusted it). Whether it was held so. When
        its files are still the ones imported, that content is reviewed: its copies are released
        too, and a skill that descends from it with other files stays held by its id and name
        only (so a copy of the reviewed content is not held again)."""
        self.take_back()
        held = self.pins.held()
        h = held.get(skill_id)
        if h is None or h["reason"] != "imported":
            return False
        released, hold = [skill_id], {}
        key = h.get("content_key")
        if key and self._key_now(skill_id) == key:
            keys = self.contents[1]() if self.contents is not None else {}
            for sid, o in held.items():
                if sid != skill_id and o["reason"] == "imported" and o.get("content_key") == key:
                    released.append(sid)
                    if keys.get(sid) != key:
                        hold[sid] = (o["root"], "imported", "", o.get("name") or "")
        self.pins.set_held(hold, released, at=now())
        self._keep()
        return True

    def _key_now(self, skill_id: str) -> str | None:
        """The content key of a skill's files on disk now (None: not here, or not readable)."""
        folder = self._folder(skill_id)
        md = next((folder / n for n in ("SKILL.md", "skill.md") if (folder / n).is_file()), None) \
            if folder is not None else None
        try:
            return snapshot(skill_id, md)["content_key"] if md is not None else None
        except (OSError, FileRefused):
            return None

    # --- the decisions file (``decisions.json``: ``decided.Decided``) --------------------------------
    def _keep(self) -> None:
        self.decided.keep()

    def take_back(self) -> dict[str, Any] | None:
        """A database made anew takes the owner's decisions back (``Decided.take_back``)."""
        return self.decided.take_back()

    def checks(self) -> list[Check]:
        return self.decided.checks()

    def diff(self, skill_id: str, skill_md: str | Path | None) -> PinDiff:
        """What changed in a skill since it was pinned: a unified diff of its SKILL.md, the other
        files added, removed or changed, and the audit findings that are new (or gone)."""
        pinned = self.pins.skill(skill_id)
        if pinned is None and self.pinned_root(skill_id) is None:
            if self.pins.held().get(skill_id, {}).get("reason") == "imported":
                out = PinDiff(skill_id, "imported")
                if skill_md is not None and os.path.exists(skill_md):
                    out.added = [s.file for s in auditing.walk_skill(skill_md).files]
                return out
            raise NotFoundError(f"{skill_id} is not pinned", fix="pin its root: `skillshelf pin LABEL`")
        reason, added, removed, changed = self.compare(skill_id, skill_md)
        out = PinDiff(skill_id, reason, added=added, removed=removed, changed=changed,
                      pinned_at=pinned["pinned_at"] if pinned else None)
        old_text = pinned["skill_md"] if pinned else ""
        old_findings = [Finding.from_dict(f) for f in pinned["findings"]] if pinned else []
        if skill_md is not None and os.path.exists(skill_md):
            now_snap = snapshot(skill_id, skill_md)
            new_text = now_snap["skill_md"]
            new_findings = [Finding.from_dict(f) for f in now_snap["findings"]]
            if pinned is None:
                out.added = [f["file"] for f in now_snap["files"]]
        else:
            new_text, new_findings = "", []
        if old_text != new_text:
            out.skill_md_diff = unified(old_text, new_text, f"pinned/{skill_id}/SKILL.md", f"now/{skill_id}/SKILL.md")
        if skill_md is not None:
            out.added_text = opening_lines(Path(skill_md).parent, out.added)
        old_keys = {f.key() for f in old_findings}
        new_keys = {f.key() for f in new_findings}
        out.new_findings = [f for f in new_findings if f.key() not in old_keys]
        out.gone_findings = [f for f in old_findings if f.key() not in new_keys]
        return out


def unified(a: str, b: str, a_name: str, b_name: str, context: int = 3) -> str:
    """A unified diff of two texts (at most ``DIFF_MAX_LINES`` lines a side: beyond that, the
    count of lines only each side has), for a person to read: every invisible character is
    shown as ``<U+200B>`` (``text.visible``), so a line changed only by them does not look
    unchanged."""
    from ..text import visible

    al, bl = _ended(a.splitlines(keepends=True)), _ended(b.splitlines(keepends=True))
    if len(al) > DIFF_MAX_LINES or len(bl) > DIFF_MAX_LINES:
        sa, sb = set(al), set(bl)
        return visible(f"--- {a_name}\n+++ {b_name}\n(too long to diff line by line: "
                       f"{sum(1 for x in al if x not in sb):,} lines removed, {sum(1 for x in bl if x not in sa):,} "
                       "added)\n")
    return visible("".join(difflib.unified_diff(al, bl, a_name, b_name, n=context)))


def _ended(lines: list[str]) -> list[str]:
    """Lines for a diff: a last line without its end says so on a line of its own, as diff does (it ran
    into the next line of the diff, a removed line and an added one on one line)."""
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


ADDED_SHOWN, ADDED_LINES = 10, 40     # the files added that a review opens, and the lines of each


def opening_lines(folder: Path, names: Iterable[str]) -> dict[str, str]:
    """The opening lines of the text files ``names`` (inside ``folder``; SKILL.md left out: its diff is
    shown) for a person reviewing a held skill: what a script added since the pin does, not only its
    name. At most ``ADDED_SHOWN`` files, ``ADDED_LINES`` lines each; a file that is not UTF-8 text, is
    not a regular file inside the folder, or cannot be read is left out."""
    from ..files import contained, is_regular
    from ..text import visible

    out: dict[str, str] = {}
    for name in names:
        if len(out) >= ADDED_SHOWN or name.lower() == "skill.md":
            continue
        try:
            path = contained(folder, folder / name)
            if not is_regular(path):
                continue
            lines = read_bounded(path, 256 * 1024).decode("utf-8").splitlines()
        except (OSError, FileRefused, ValueError, ValidationError):
            continue
        more = f"\n… ({len(lines) - ADDED_LINES} more lines)" if len(lines) > ADDED_LINES else ""
        out[name] = visible("\n".join(lines[:ADDED_LINES]) + more)
    return out


def _origin(h: dict[str, str]) -> tuple[str, ...]:
    """An import's hold as ``set_held`` takes it again: its root, reason, content key and name."""
    return (h["root"], h["reason"], h.get("content_key") or "", h.get("name") or "")


def _unique(found: list[Found]) -> list[Found]:
    seen: set[str] = set()
    out = []
    for f in found:
        if f.id not in seen:
            seen.add(f.id)
            out.append(f)
    return out


class Gate:
    """What agents may see. ``block()`` is the ``trust.block`` setting now (``none``, ``high``
    or ``medium``). A skill is hidden from agents when it is held (its pinned files changed) or
    when its risk is at or above ``block`` and its current content is not trusted."""

    def __init__(self, auditor: auditing.Auditor, pins: Pins, block: Callable[[], str]):
        self.auditor, self.pins, self.block = auditor, pins, block
        self._cache: tuple[tuple[str, str, str], dict[str, str]] | None = None
        # an import's hold follows its content: the audit knows each indexed skill's content key
        audits = auditor.audits
        pins.contents = (audits.local_generation, lambda: audits.at_risk(("none", "low", "medium", "high")))

    def hidden(self) -> dict[str, str]:
        """Skill id -> why agents do not see it (read again only when an audit, a trust, a pin
        or the setting changed). A skill of a pinned root that no pin has is hidden before its hold
        is written (:meth:`Pins.unpinned`)."""
        self.pins.take_back()           # (a database made anew takes the owner's decisions back first)
        level = self.block() or "none"
        # the audits here; pins, holds and (a team's) trusts in the pins store: one read each
        key = (self.auditor.audits.local_generation(), self.pins.pins.generation(), level)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        out: dict[str, str] = {}
        for sid in self.auditor.blocked(level):
            out[sid] = f"its audit found {level} risk or worse (trust.block = \"{level}\")"
        held = self.pins.held()
        for sid in self.pins.unpinned() - held.keys():
            held[sid] = {"reason": "added"}
        for sid, h in held.items():
            why = {"changed": "it changed since its collection was pinned",
                   "imported": "it was held back from agents where it was exported, and no one has trusted it here"
                   }.get(h["reason"], "it appeared in a pinned collection after the pin")
            out[sid] = f"{why}; {out[sid]}" if sid in out else why
        self._cache = (key, out)
        return out

    def hidden_ids(self) -> frozenset[str]:
        return frozenset(self.hidden())

    def refusal(self, skill_id: str, name: str) -> str | None:
        """The message an agent gets instead of a hidden skill (None when it may see it)."""
        why = self.hidden().get(skill_id)
        if why is None:
            return None
        return (f"{name} is held back from agents: {why}. A person must review it first: "
                f"`skillshelf trust {name}` shows what changed and allows it.")

    def review(self, skill_id: str, skill_md: str | Path | None) -> dict[str, Any]:
        """What the owner reads before allowing a skill: its audit now (re-audited) and, when it
        is in a pinned root, the diff against the pin."""
        out: dict[str, Any] = {"skill_id": skill_id, "hidden": self.hidden().get(skill_id), "diff": None}
        if skill_md is not None and os.path.exists(skill_md):
            a = self.auditor.audit_skill(skill_id, skill_md)
            out.update(risk=a.risk, findings=[f.as_dict() for f in a.findings], trusted=a.trusted)
        if self.pins.pinned_root(skill_id) or self.pins.held().get(skill_id, {}).get("reason") == "imported":
            out["diff"] = self.pins.diff(skill_id, skill_md).as_dict()
        return out

    def allow(self, skill_id: str, skill_md: str | Path | None, *, note: str = "") -> dict[str, Any]:
        """The owner allows the skill as it is now: its pin takes the current content and, if
        its risk is not none, the audit's trust is given to this content."""
        out: dict[str, Any] = {"skill_id": skill_id, "pinned": False, "trusted": False}
        if self.pins.pinned_root(skill_id):
            self.pins.accept(skill_id, skill_md)
            out["pinned"] = True
        if self.pins.release(skill_id):         # an import's hold (no pin to take it)
            out["released"] = True
        if skill_md is not None and os.path.exists(skill_md):
            a = self.auditor.audit_skill(skill_id, skill_md)
            if severity_at_least(a.risk, "low"):
                self.auditor.trust(skill_id, note=note)
                out["trusted"] = True
            out["risk"] = a.risk
        return out
