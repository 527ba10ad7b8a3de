"""``sources restore`` into a home that already has some of the lock's sources.

A lock pulled from version control names sources this home may hold already, at other commits.
Each of those is brought to the locked commit as ``sources update LABEL --to COMMIT`` would:
fetched, every file checked against the lock before anything moves, a person's edits kept
(``kept_edits``, ``source_edits``). A label this home uses for another source or root is refused,
naming it.

A home whose own ``skillshelf.lock`` cannot be read (``set_aside``) is restored too: the damaged
lock is moved aside as ``skillshelf.lock.damaged-<time>``, the folders of the lock's sources it
held are moved to ``sources/.kept/LABEL/<time>/`` (a person's edits are in them), and the sources
are fetched at the good lock's commits as into a fresh home. A source folder the good lock does
not name is moved there too, and its root, pin and caches forgotten."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import time
from pathlib import Path
from typing import Any

from .. import config as configmod
from ..errors import ConflictError, SkillshelfError, ValidationError
from ..files import locked
from . import lock as lockmod, lock_pins, person_files
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
    pins = pin_as_locked(src, want, caller)
    return {**want.summary(), **pins, "from": frm, "moved": moved, "kept": [k.as_dict() for k in plan.kept],
            "unlisted": plan.unlisted,
            "conflicts": [c.copy for c in plan.changes if c.edit == "conflict"]}


def _holds(src: Any, root: str) -> dict[str, list[dict[str, Any]]]:
    """The skills of the root ``root`` this home holds now (an imported hold aside: ``Pins``
    keeps those), each with the files its own pin has ([] for none: held as new)."""
    pins = src.supply.pins.pins
    return {sid: [{"file": name, "sha256": row.get("sha256"), "size": int(row["size"])}
                  for name, row in sorted(pins.files(sid).items())]
            for sid, h in src.supply.held().items() if h.get("root") == root and h.get("reason") != "imported"}


def pin_as_locked(src: Any, want: lockmod.SourceEntry, caller: Any = None) -> dict[str, Any]:
    """The source pinned as the lock says, at what the lock says was reviewed (``lock_pins.baseline``),
    and the home's lock saying so. A restore never releases a hold at this home: a lock
    that says unpinned leaves this home's pin as it is (``kept_pin``), and a skill held here is
    pinned again at this home's own pin of it, so it stays held. A lock says nothing of what
    its writer held when it has no ``reviewed`` (an older lock, or a teammate's unpinned one).
    Returns ``kept_pin`` and the skills of the source ``held`` afterwards."""
    root = src._root_label(want.label) or want.label
    pinned_here = any(p["root"] == root for p in src.supply.pinned_roots())
    if want.pinned:
        src.supply.pin(root, baseline={**lock_pins.baseline(want, root), **_holds(src, root)})
    pinned = want.pinned or pinned_here
    with locked(src.home, "sources"):
        entries = src.entries()
        if any(e.label == want.label and (e.pinned != pinned or (not e.pinned and any(
                s.reviewed is not None for s in e.skills))) for e in entries):
            src._write_lock(entries, [dataclasses.replace(e, pinned=pinned, skills=[
                dataclasses.replace(s, reviewed=None) for s in e.skills]) if e.label == want.label else e
                for e in entries], caller=caller)
    held = sorted(sid.split(":", 1)[1] for sid, h in src.supply.held().items() if h.get("root") == root)
    return {"kept_pin": pinned_here and not want.pinned, "held": held}


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


def _orphans(src: Any, wanted: list[lockmod.SourceEntry]) -> list[str]:
    """The source folders under ``sources/`` the good lock does not name (a damaged lock
    cannot say which sources they were)."""
    named = {e.label for e in wanted}
    with contextlib.suppress(OSError):
        return sorted(p.name for p in src.base.iterdir() if lockmod.label_ok(p.name) and p.name not in named
                      and (p.is_dir() or p.is_symlink()))
    return []


def set_aside(src: Any, wanted: list[lockmod.SourceEntry]) -> dict[str, Any]:
    """Under the home's ``sources`` lock, once the good lock's sources are fetched and verified:
    move this home's damaged lock aside as ``skillshelf.lock.damaged-<time>`` and each folder of
    ``wanted``'s sources it holds to ``sources/.kept/LABEL/<time>/`` (its saved root forgotten), so
    they are put in place as into a fresh home. A source folder the good lock does not name is
    moved there too and forgotten as ``sources remove`` forgets it (``gone``): it would be a root
    served to agents that no lock lists, which no ``sources`` command could update or remove.
    Returns where each went."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out: dict[str, Any] = {"lock": "", "folders": [], "gone": []}
    if src.lock_path.exists():
        aside = _free(src.lock_path.with_name(f"{lockmod.LOCK_NAME}.damaged-{stamp}"))
        os.replace(src.lock_path, aside)
        out["lock"] = str(aside)
    orphans = _orphans(src, wanted)
    for label in [e.label for e in wanted] + orphans:
        folder = src.folder(label)
        if not (folder.exists() or folder.is_symlink()):
            continue
        root = src._root_label(label)
        with contextlib.suppress(SkillshelfError):
            configmod.remove_root(src.home, folder)
        dest = _free(src.base / ".kept" / label / stamp)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, dest)
        if label in orphans:
            if root is not None:
                src.supply.pins.unpin_root(root)
            for p in (src._cache(label), src._bases(label)):
                shutil.rmtree(p, ignore_errors=True)
            person_files.forget(src.base, label)
        out["gone" if label in orphans else "folders"].append({"label": label, "kept": str(dest)})
    return out
