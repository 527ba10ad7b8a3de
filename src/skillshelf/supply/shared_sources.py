"""A team's sources: the sources and their lock live in the team store, every server fetches
the locked commits itself.

The store (``store.protocols.SourceLockStore``) keeps each source's part of ``skillshelf.lock``.
A curator's ``sources add``, ``update`` and ``remove`` on any server write it (a compare-and-set:
two curators cannot both move one source from the same commit), and that server's home keeps
``skillshelf.lock`` as an export of the team's lock, so ``lock --check`` and ``restore`` work as
in a local library.

Every other server learns of a change from the change stream (kind ``source``) and at its start:
:meth:`SharedSources.follow` fetches each source it lacks at the locked commit with the same
hardened fetch, checks every file's digest and size against the lock, and only then puts it in
place as a read-only root and indexes it. A fetch that does not match is refused: the files the
server had stay, and ``doctor`` names the source and the file. A source the team removed is
removed. What this server holds is noted in ``<home>/sources/.state.json`` (``installed``)."""

from __future__ import annotations

import builtins
import contextlib
import datetime as _dt
import os
import shutil
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .. import config as configmod
from ..access import Caller
from ..checks import Check
from ..errors import SkillshelfError
from ..files import FileRefused, locked, read_text_bounded, write_file
from ..net import redact_text, redact_url
from ..store.protocols import SourceLockStore
from . import lock as lockmod, lock_pins, person_files, swap
from .fetch import Spec


class SharedSources:
    """The team parts of ``src`` (the library's ``Sources``), on the team store ``store``."""

    def __init__(self, src: Any, store: SourceLockStore):
        self.src, self.store = src, store

    def entries(self) -> builtins.list[lockmod.SourceEntry]:
        return lockmod.from_documents(self.store.documents())

    def write(self, before: builtins.list[lockmod.SourceEntry], after: builtins.list[lockmod.SourceEntry], *,
              caller: Caller | None = None) -> None:
        """Move the team's lock from ``before`` to ``after`` (``ConflictError`` when another server
        moved one of the sources it changes since ``before`` was read), then export it."""
        self.store.replace(lockmod.documents(after), expect=lockmod.documents(before),
                           by=caller.name if caller is not None else "")
        was = lockmod.documents(before)
        self.export(after, moved={lb for lb, doc in lockmod.documents(after).items() if was.get(lb) != doc})

    def export(self, entries: builtins.list[lockmod.SourceEntry], *, moved: Collection[str] = ()) -> None:
        """The home's ``skillshelf.lock`` as the team's lock, saying what the team's pins say
        (written when it differs; not at all while the team has no sources and the home no
        lock). A source's entry moves only once its folder has (``moved``: the labels this server
        just put in place): until then the home's lock keeps the entry of the commit the folder
        holds, so a person's edit there can still be told."""
        path = self.src.lock_path
        if not entries and not path.exists():
            return
        self._keep_local(entries)
        # what the team's pins say: pinned or not, and per skill what was reviewed (``lock_pins``)
        entries = lock_pins.reviewed(self.src, self._held(entries, moved))
        text = lockmod.render(entries)
        with contextlib.suppress(OSError, FileRefused):
            if read_text_bounded(path, lockmod.MAX_LOCK_BYTES) == text:
                return
        try:
            write_file(path, text)
        except SkillshelfError as exc:     # the store holds the truth; the next change writes it again
            print(f"skillshelf: cannot write the export of the team's lock to {path}: {exc}", file=sys.stderr)

    def _held(self, entries: builtins.list[lockmod.SourceEntry],
              moved: Collection[str]) -> builtins.list[lockmod.SourceEntry]:
        """Each of the team's ``entries`` as this server's folder holds it: the team's when the
        folder is at that commit (or was just ``moved`` there), else the home lock's entry of the
        commit it holds, else none."""
        state = self.src._state()
        try:
            mine = {e.label: e for e in lockmod.read(self.src.lock_path)}
        except SkillshelfError:
            mine = {}
        out = []
        for e in entries:
            have = (state.get(e.label) or {}).get("installed")
            if e.label in moved or have == e.commit:
                out.append(e)
            elif e.label in mine and mine[e.label].commit == have:
                out.append(mine[e.label])
        return out

    @property
    def local_lock(self) -> Path:
        """Where the lock of a home used as a local library is kept once the team's replaces it."""
        return self.src.lock_path.with_name(lockmod.LOCK_NAME + ".local")

    def _keep_local(self, entries: builtins.list[lockmod.SourceEntry]) -> None:
        """The first export into a home that was a local library's: its own lock, naming sources the
        team's lock lacks, is kept as ``skillshelf.lock.local`` (never overwritten, ``checks`` names them)."""
        state = self.src._state()
        if (state.get("_team") or {}).get("exported") or not self.src.lock_path.exists():
            return
        try:
            local = lockmod.read(self.src.lock_path)
        except SkillshelfError:
            local = []
        team = {e.label for e in entries}
        if any(e.label not in team for e in local) and not self.local_lock.exists():
            write_file(self.local_lock, lockmod.render(local))
        self.src._set_state("_team", exported=True)

    def follow_pins(self, roots: builtins.list[str] | None = None) -> None:
        """Another server pinned, unpinned or trusted in ``roots`` (None: any): the home's
        ``skillshelf.lock`` says what the team's pins say now (``lock_pins.follow``)."""
        lock_pins.follow(self.src, "")

    # --- following the team's lock --------------------------------------------------------
    def follow(self, labels: builtins.list[str] | None = None) -> builtins.list[str]:
        """Bring this server's sources to the team's lock (``labels``: the sources the change
        stream named; None: every one, as at start), then index what changed. Returns the
        labels this server changed."""
        changed = self._follow(labels)
        if changed:
            self.src._reroot()
            self.src._sync()
        return changed

    def _follow(self, labels: builtins.list[str] | None) -> builtins.list[str]:
        src = self.src
        changed: builtins.list[str] = []
        with locked(src.home, "sources"):
            entries = self.entries()
            team = {e.label: e for e in entries}
            state = src._state()
            mine = {lb for lb, st in state.items() if isinstance(st, dict) and st.get("team")}
            for label in sorted((set(team) | mine) if labels is None else set(labels)):
                e = team.get(label)
                if e is None:
                    if label in mine:           # removed from the team's lock: a person's files kept first
                        old = next((x for x in lockmod.read(src.lock_path) if x.label == label), None)
                        if old is not None and (kept := src.kept.before_removal(old, state[label].get("installed"))):
                            print(f"skillshelf: your files in {src.folder(label)} kept in {kept} before the "
                                  f"team removed the source {label}", file=sys.stderr)
                        src._drop_local(label)
                        changed.append(label)
                    continue
                st = state.get(label) or {}
                if st.get("installed") == e.commit and src.folder(label).is_dir():
                    continue
                if st.get("refused") == e.commit:
                    continue                    # a commit refused once is refused again: no fetch per change
                try:
                    if self._take(e):
                        changed.append(label)
                except SkillshelfError as exc:
                    why = redact_text(str(exc))
                    src._set_state(label, failed=e.commit, why=why, at=_now())
                    print(f"skillshelf: cannot fetch the team's source {label} at {e.short}: {why}", file=sys.stderr)
            self.export(entries)
        return changed

    def _take(self, e: lockmod.SourceEntry) -> bool:
        """Fetch one source of the team's lock at its commit, check every file, put it in place
        (False: refused, nothing moved)."""
        src = self.src
        with src._tmp(e.label) as tmp:
            cache = src._cache(e.label)
            spec = Spec(e.kind, e.url, e.path, e.ref, e.label)
            had = (src._state().get(e.label) or {}).get("installed")
            # the new tree made from the one this server holds (unchanged files linked), as an update does
            previous = (had, src.folder(e.label)) if had and cache.is_dir() and src.folder(e.label).is_dir() else None
            got = src._fetch(spec, e.label, tmp, commit=e.commit, cache=cache if cache.is_dir() else None,
                             submodules=e.submodules, previous=previous)
            bad = lockmod.check(e, got.tree)
            if bad and got.changed is not None:     # this server's folder may have drifted: the whole tree
                shutil.rmtree(got.tree)
                got = src._fetch(spec, e.label, tmp, commit=e.commit, cache=cache, submodules=e.submodules)
                bad = lockmod.check(e, got.tree)
            tree = got.tree
            if bad:
                why = (f"{bad[0].file} does not match the team's lock ({bad[0].problem})"
                       + (f", and {len(bad) - 1} more" if len(bad) > 1 else ""))
                src._set_state(e.label, refused=e.commit, why=why, at=_now())
                print(f"skillshelf: refused the team's source {e.label} at {e.short}: {why}", file=sys.stderr)
                return False
            dest, aside = src.folder(e.label), tmp / "previous"
            dest.parent.mkdir(parents=True, exist_ok=True)
            there = dest.exists()
            if there:
                src.kept.aside_drift(e, had, tree)     # a person's edits in the folder are copied aside first
                os.rename(dest, aside)
            try:
                os.rename(tree, dest)
            except BaseException:
                if there:       # (or kept whole in sources/.kept/ when something made dest again)
                    swap.put_back(src.base, e.label, aside, dest)
                raise
            if e.kind != "git":        # what the archive held (a person's file is told from it)
                person_files.record(src.base, e.label, e.commit, person_files.listing(dest))
            if (tmp / "cache.git").is_dir():
                cache.parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(cache, ignore_errors=True)
                os.rename(tmp / "cache.git", cache)
            if dest.resolve() not in {Path(r).resolve() for r in configmod.saved_roots(src.home)}:
                configmod.add_root(src.home, dest)
            src._installed(e)
        return True

    def checks(self, entries: builtins.list[lockmod.SourceEntry]) -> builtins.list[Check]:
        """For ``doctor``: the team's sources this server refused (not what the lock says) or
        could not fetch."""
        state, out = self.src._state(), []
        team = {e.label for e in entries}
        with contextlib.suppress(SkillshelfError):
            mine = [e.label for e in lockmod.read(self.local_lock) if e.label not in team]
            if mine:
                out.append(Check("sources", "warn", f"{', '.join(mine)}: sources of this home from before it joined "
                                                    f"the team store, not in the team's lock (kept in "
                                                    f"{self.local_lock}); they stay roots of this server only — "
                                                    "`skillshelf sources add` them on a curator's server to "
                                                    "share them"))
        for e in entries:
            st = state.get(e.label) or {}
            if st.get("refused") == e.commit:
                out.append(Check("sources", "fail", f"{e.label}: this server refused the team's lock at {e.short}: "
                                                    f"{redact_text(str(st.get('why')))}; it keeps serving the files it had — the "
                                                    f"source at {redact_url(e.url)} is not what was locked: a curator runs "
                                                    f"`skillshelf sources update {e.label}` to lock what it holds"))
            elif st.get("failed") == e.commit and st.get("installed") != e.commit:
                out.append(Check("sources", "warn", f"{e.label}: this server could not fetch the team's lock at "
                                                    f"{e.short} ({redact_text(str(st.get('why')))}); it tries again after 30 s, "
                                                    "then twice as long each time up to 10 minutes, at its next start "
                                                    "and when the team's lock moves"))
        return out


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
