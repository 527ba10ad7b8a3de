"""``sources restore`` into a home that already has some of the lock's sources.

A lock pulled from version control names sources this home may hold already, at other commits.
Each of those is brought to the locked commit as ``sources update LABEL --to COMMIT`` would:
fetched, every file checked against the lock before anything moves, a person's edits kept
(``kept_edits``, ``source_edits``). A label this home uses for another source or root is refused,
naming it."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ConflictError
from ..files import locked
from . import lock as lockmod
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
    """The source pinned, or not, as the lock says (a lock without the pin unpins it), and the
    home's lock saying so."""
    root = src._root_label(want.label) or want.label
    if want.pinned:
        src.supply.pin(root)
    elif any(p["root"] == root for p in src.supply.pinned_roots()):
        src.supply.unpin(root)
    with locked(src.home, "sources"):
        entries = src.entries()
        if any(e.label == want.label and e.pinned != want.pinned for e in entries):
            src._write_lock(entries, [dataclasses.replace(e, pinned=want.pinned) if e.label == want.label else e
                                      for e in entries], caller=caller)
