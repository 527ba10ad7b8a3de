"""``sources restore`` into a home that already has some of the lock's sources.

A lock pulled from version control names sources this home may hold already, at other commits.
Each of those is brought to the locked commit as ``sources update LABEL --to COMMIT`` would:
fetched, every file checked against the lock before anything moves, a person's edits kept
(``kept_edits``, ``source_edits``). A label this home uses for another source or root is refused,
naming it.

A home whose own ``skillshelf.lock`` cannot be read (``set_aside``) is restored too: the damaged
lock is moved aside as ``skillshelf.lock.damaged-<time>``, the folders of the lock's sources it
held are moved to ``sources/.kept/LABEL/<time>/`` (a person's edits are in them), and the sources
are fetched at the good lock's commits as into a fresh home."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from .. import config as configmod
from ..errors import ConflictError, SkillshelfError, ValidationError
from ..files import locked
from . import lock as lockmod, lock_pins
from .fetch import SourceError


def same_source(have: lockmod.SourceEntry, want: lockmod.SourceEntry) -> None:
    """Refuse to move ``have`` to ``want`` when they are not the same source."""
    if (have.kind, have.url, have.path) != (want.kind, want.url, want.path):
        raise ConflictError(f"the label {want.label!r} is a source from {have.summary()['url']}"
                            + (f" (--path {have.path})" if have.path else "") + " in this library; the lock has it from "
                            + str(want.summary()["url"]) + (f" (--path {want.path})" if want.path else ""),
                            fix=f"`skillshelf sources remove {want.label}`, then restore again")


def bring(src: Any, want: lockmod.SourceEntry, *, progress: dict | None = None,
          caller: Any = None) -> dict[str, Any]:
    """Move the source ``want.label`` of ``src`` (the ``Sources``) to ``want``'s commit, checked
    against ``want``'s digests first. Returns what was done."""
    with src.planning([want.label], to=want.commit, caller=caller) as plans:
        plan = plans[0]
        plan.new.ref = want.ref               # the ref the lock asks for, not the commit it moved to
        if plan.new.commit != want.commit:
            raise SourceError(f"{want.label}: {want.url} has changed: it is not the locked {want.short}",
                              fix="the source is not what was locked; nothing was written")
        have = {s.path: s.digests() for s in plan.new.skills}
        for s in want.skills:
            if have.pop(s.path, None) != s.digests():
                raise SourceError(f"{want.label}: {s.path} does not match the lock",
                                  fix="the source is not what was locked; nothing was written")
        if have:
            raise SourceError(f"{want.label}: {min(have)} is not in the lock",
                              fix="the source is not what was locked; nothing was written")
        frm = plan.old.commit
        moved = plan.moved
        if moved:
            src.apply(plan, progress=progress, caller=caller)
    _pin_as_locked(src, want, caller)
    return {**want.summary(), "from": frm, "moved": moved, "kept": [k.as_dict() for k in plan.kept],
            "unlisted": plan.unlisted,
            "conflicts": [c.copy for c in plan.changes if c.edit == "conflict"]}


def _pin_as_locked(src: Any, want: lockmod.SourceEntry, caller: Any) -> None:
    """The source pinned, or not, as the lock says (a lock without the pin unpins it), at what
    the lock says was reviewed (``lock_pins.baseline``), and the home's lock saying so."""
    root = src._root_label(want.label) or want.label
    if want.pinned:
        src.supply.pin(root, baseline=lock_pins.baseline(want, root))
    elif any(p["root"] == root for p in src.supply.pinned_roots()):
        src.supply.unpin(root)
    with locked(src.home, "sources"):
        entries = src.entries()
        if any(e.label == want.label and (e.pinned != want.pinned or (not e.pinned and any(
                s.reviewed is not None for s in e.skills))) for e in entries):
            src._write_lock(entries, [dataclasses.replace(e, pinned=want.pinned, skills=[
                dataclasses.replace(s, reviewed=None) for s in e.skills]) if e.label == want.label else e
                for e in entries], caller=caller)


def _free(path: Path) -> Path:
    """``path``, or ``path-2``, ``-3`` … when it is taken."""
    out, n = path, 1
    while out.exists() or out.is_symlink():
        n += 1
        out = path.with_name(f"{path.name}-{n}")
    return out


def damaged(src: Any) -> bool:
    """Whether this home's own lock (a local library's) is there but cannot be read."""
    if src.shared is not None:
        return False
    try:
        lockmod.read(src.lock_path)
        return False
    except ValidationError:
        return True


def set_aside(src: Any, wanted: list[lockmod.SourceEntry]) -> dict[str, Any]:
    """Under the home's ``sources`` lock, once the good lock's sources are fetched and verified:
    move this home's damaged lock aside as ``skillshelf.lock.damaged-<time>`` and each folder of
    ``wanted``'s sources it holds to ``sources/.kept/LABEL/<time>/`` (its saved root forgotten), so
    they are put in place as into a fresh home. Returns where each went."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out: dict[str, Any] = {"lock": "", "folders": []}
    if src.lock_path.exists():
        aside = _free(src.lock_path.with_name(f"{lockmod.LOCK_NAME}.damaged-{stamp}"))
        os.replace(src.lock_path, aside)
        out["lock"] = str(aside)
    for e in wanted:
        folder = src.folder(e.label)
        if not (folder.exists() or folder.is_symlink()):
            continue
        with contextlib.suppress(SkillshelfError):
            configmod.remove_root(src.home, folder)
        dest = _free(src.base / ".kept" / e.label / stamp)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, dest)
        out["folders"].append({"label": e.label, "kept": str(dest)})
    return out
