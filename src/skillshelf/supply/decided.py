"""The home's decisions file kept in step with a local library's pins (``decisions.json``).

A pin, an unpin, a hold on import or an overlay writes the file again; a database made anew (none was
there, or it was deleted or replaced under a running process) takes the decisions back from it before
anything reads the pins. A team keeps its decisions in the team store: nothing here runs for it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import decisions as decisionsmod
from ..catalog.roots import Root
from ..checks import Check
from ..errors import ConfigError
from ..store import Store, carry, now
from ..store.pins import PinnedContent
from ..store.protocols import PinStore


class Decided:
    """``Pins``' side of the decisions file: ``pins()`` gives the pin store, ``roots()`` the library's roots
    now (held whole when the file is damaged)."""

    def __init__(self, pins: Callable[[], PinStore], roots: Callable[[], list[Root]]):
        self._pins = pins
        self._roots = roots
        self._file_seen = False

    def local(self) -> Store | None:
        """The writable local database the pins are kept in (None: a team's store keeps them)."""
        store = getattr(self._pins(), "store", None)
        if not isinstance(self._pins(), PinnedContent) or not isinstance(store, Store) or store.read_only:
            return None
        return store

    def keep(self) -> None:
        """Write the home's decisions file again (after a change of pinned roots or held imports)."""
        store = self.local()
        if store is not None:
            carry.keep_decisions(store)

    def take_back(self) -> dict[str, Any] | None:
        """A database made anew (none was there, or it was deleted or replaced under this process) takes
        the owner's decisions back from the home's decisions file before anything reads the pins: each
        pinned root held whole (pinned with no skills: every skill in it held as new until a person pins
        it), the held imports and the overlays; said once on stderr. From a damaged file, the entries that can
        be read are taken back and every root but the workspace is held whole (the workspace too when which
        skills were held on import cannot be read); the error names the file and the fix, and the file is
        moved aside (``decisions.json.damaged-TIME``) before the database's decisions are written in its place.
        A database that has taken them (or was there before the file) costs one read of ``meta``.
        What was taken back, or None."""
        store = self.local()
        if store is None:
            return None
        home = Path(store.path).parent
        if carry.taken(store):
            if not self._file_seen:          # (a database kept before the file was: the file starts now)
                self._file_seen = True
                if not decisionsmod.path(home).exists():
                    carry.keep_decisions(store)
            return None
        damage: ConfigError | None = None
        try:
            kept = decisionsmod.read(home)
            damage = decisionsmod.damage(decisionsmod.path(home), kept) if kept else None
        except ConfigError as exc:
            kept, damage = None, exc
        here = {r.label: str(r.path) for r in self._roots()}
        for r in kept.pinned if kept else []:       # a root of this library is where the library has it
            r["path"] = here.get(r["root"], r["path"])
        # a damaged file: every root but the workspace held whole; the workspace too when which skills were
        # held on import is not known (the held list, or one of its ids, cannot be read)
        unread = damage is not None and (kept is None or kept.held_unread)
        whole = [(r.label, str(r.path)) for r in self._roots() if r.kind != "workspace" or unread] if damage else []
        got = carry.take_back(store, kept, at=now(), whole=whole,
                              note=f"{damage.message} (fix: {damage.fix})" if damage else "")
        if got is None:
            return None
        if damage is not None:
            print(f"skillshelf: {damage.message}. The database is new, so every root "
                  f"{'' if unread else 'but the workspace '}is held whole (each skill held from agents as new) until "
                  f"you pin it (`skillshelf pin ROOT`); the entries that could be read are taken back. Fix: {damage.fix}",
                  file=sys.stderr)
        carry.keep_decisions(store)           # (a damaged file is moved aside first, and named)
        if damage is not None:
            return got
        took = []
        if got["roots"]:
            one = got["roots"][0] if len(got["roots"]) == 1 else "ROOT"
            took.append(f"pinned root{'s' * (len(got['roots']) != 1)} {', '.join(got['roots'])} held whole (every "
                        f"skill in it held from agents as new until you review it: `skillshelf trust --root {one}` "
                        f"shows each, and pins it again)")
        if got["held"]:
            took.append(f"{got['held']} skill{'s' * (got['held'] != 1)} held on import")
        if got["overlays"]:
            took.append(f"{got['overlays']} overlay{'s' * (got['overlays'] != 1)} (deprecations, expiry dates)")
        if took:
            print(f"skillshelf: the database is new: took back the owner's decisions kept in "
                  f"{decisionsmod.path(home)}: " + "; ".join(took), file=sys.stderr)
        return got

    def checks(self) -> list[Check]:
        """``doctor``'s line on the decisions file: damaged (the fix), roots held whole (the fix), or what it keeps."""
        store = self.local()
        if store is None:
            return []
        self.take_back()
        where = decisionsmod.path(Path(store.path).parent)
        try:
            kept = decisionsmod.read(where.parent)
            bad = decisionsmod.damage(where, kept) if kept else None
        except ConfigError as exc:
            bad = exc
        if bad is not None:
            return [Check("decisions", "fail", f"{bad.message}; fix: {bad.fix}")]
        aside = decisionsmod.damaged_copies(where.parent)
        if aside:
            got = carry.taken_back(store) or {}
            was = f" ({got['note']})" if got.get("note") else ""
            return [Check("decisions", "fail", f"{where.name} was damaged{was}; it was moved to {aside[-1]} and"
                          " written again from the database, which took back the entries that could be read; fix:"
                          " compare it with the file now, pin again what it pinned (`skillshelf trust --root ROOT`),"
                          " hold again what it held, then delete it")]
        hollow = carry.hollow_roots(store)
        if hollow:
            got = carry.taken_back(store) or {}
            since = (f" since the database was made anew on {got['at']} and took back the decisions in {where}"
                     if set(hollow) & set(got.get("roots") or []) else "")
            return [Check("decisions", "warn", f"pinned root{'s' * (len(hollow) != 1)} {', '.join(hollow)} "
                          f"held whole{since}: every skill in {'them' if len(hollow) > 1 else 'it'} is held from agents "
                          f"as new; fix: `skillshelf trust --root {hollow[0] if len(hollow) == 1 else 'ROOT'}` shows"
                          " each skill and pins the root again")]
        return [Check("decisions", "ok", f"{where}: {kept.counts()}" if kept else
                      f"{where}: none yet (written at the first pin, hold on import or overlay)")]
