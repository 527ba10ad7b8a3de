"""What ``skillshelf.lock`` says about pins: whether each source is pinned, and, for a pinned
source, what its owner reviewed where that differs from the locked files.

The pins store is the truth; the lock follows it whenever it is written (``reviewed``) and
whenever a person pins, unpins or trusts in a source's root (``follow``). A restore on another
machine pins at the lock's baseline (``baseline``), so a skill held here is held there.

A team's pins live in the team store and every server reads them there. The team's lock in the
store keeps the sources only; the ``skillshelf.lock`` each team server exports says what the
team's pins say (``reviewed``), written again whenever they change on any server (``follow``, on
a change of kind ``pin``), so a copy of it restored elsewhere holds what the team holds."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..files import locked
from . import lock as lockmod


def _skill_md(sk: lockmod.SkillEntry) -> str:
    return next((f.path for f in sk.files if "/" not in f.path and f.path.lower() == "skill.md"), "SKILL.md")


def _sid(root: str, path: str) -> str:
    return f"{root}:{path}"


def _reviewed_of(pins: Any, sid: str, skill_md: Path,
                 files: dict[str, dict[str, Any]]) -> list[lockmod.FileEntry] | None:
    """The files the pin of ``sid`` holds (``files``) when they differ from the skill's files
    now (None when they do not; [] for a skill of the pinned root that was never pinned)."""
    reason = pins.compare(sid, str(skill_md) if skill_md.exists() else None, pinned=files)[0]
    if reason == "added":
        return []
    if reason != "changed":
        return None
    return [lockmod.FileEntry(name, "sha256:" + row["sha256"] if row.get("sha256") else "", int(row["size"]))
            for name, row in sorted(files.items())]


def reviewed(src: Any, entries: list[lockmod.SourceEntry]) -> list[lockmod.SourceEntry]:
    """``entries`` as the pins say: a source whose root is pinned is ``pinned`` and each of its
    skills carries ``reviewed`` where its pin differs from its files. A source whose root is not
    pinned (yet: ``add`` and ``restore`` pin after the lock is written) is left as it is. A team's
    export is what the team's pins say, pinned or not: the pins are the truth, and a source
    pinned or unpinned on another server moves no document of the team's lock."""
    team = src.shared is not None
    pinned = set(src.supply.pins.pins.root_labels())
    if not pinned and not team:
        return entries
    out = []
    for e in entries:
        root = src._root_label(e.label) or e.label
        if root not in pinned:
            out.append(_unpinned(e) if team else e)
            continue
        folder = src.folder(e.label)
        files = src.supply.pins.pins.root_files(root)       # (one read per root: a team's is a round trip)
        skills = []
        for sk in e.skills:
            md = folder.joinpath(*([] if sk.path == "." else sk.path.split("/"))) / _skill_md(sk)
            sid = _sid(root, sk.path)
            seen = _reviewed_of(src.supply.pins, sid, md, files.get(sid, {}))
            if seen and {f.path: (f.digest, f.size) for f in seen} == sk.digests():
                seen = None         # what was reviewed is what is locked (the folder was edited in place)
            skills.append(dataclasses.replace(sk, reviewed=seen))
        out.append(dataclasses.replace(e, pinned=True, skills=skills))
    return out


def _unpinned(e: lockmod.SourceEntry) -> lockmod.SourceEntry:
    return dataclasses.replace(e, pinned=False, skills=[dataclasses.replace(s, reviewed=None) for s in e.skills])


def follow(src: Any, root: str) -> None:
    """After a person pinned, unpinned or trusted in the root ``root``: the lock entry of the
    source it is (if any) says so, written only when it changed. A team server exports the
    team's lock again (``SharedSources.export`` writes only what changed)."""
    if src.shared is not None:
        with locked(src.home, "sources"):
            src.shared.export(src.shared.entries())
        return
    if not src.lock_path.exists():
        return
    with locked(src.home, "sources"):
        entries = src.entries()
        hit = [e for e in entries if (src._root_label(e.label) or e.label) == root]
        if not hit:
            return
        on = root in src.supply.pins.pins.root_labels()
        after = [e if e not in hit or on else _unpinned(e) for e in entries]
        after = reviewed(src, after)
        if lockmod.render(after) != lockmod.render(entries):
            src._write_lock(entries, after)


def baseline(want: lockmod.SourceEntry, root: str) -> dict[str, list[dict[str, Any]]]:
    """What ``Pins.pin_root`` takes from a lock entry: skill id -> the reviewed files (``file``,
    ``sha256``, ``size``), for each skill whose ``reviewed`` differs from its locked files."""
    out: dict[str, list[dict[str, Any]]] = {}
    for sk in want.skills:
        if sk.reviewed is None:
            continue
        out[_sid(root, sk.path)] = [{"file": f.path, "sha256": f.digest.removeprefix("sha256:") or None,
                                     "size": f.size} for f in sk.reviewed]
    return out
