"""The search state kept in memory between queries, rebuilt only when the index changes.

Only numbers per skill stay in memory: rowids, copy groups, active flags and expiry dates
(a ``Snapshot``, a few MB at 100k skills), and the two vector indexes aligned with it.
Names, paths and descriptions are read from the store for the hits shown; filters on
repo, tags and type are answered by the store and cached per index generation. Holding
those strings as Python lists cost ~150 MB at 100k skills."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import SearchConfig
from ..errors import ValidationError
from ..store import Store
from ..store.meta import ChangeJournal, IndexMeta
from ..store.skills import SearchReads
from . import vectors
from .sync import PART_BODY, PART_META


def _ordinal(day: str | None) -> int:
    """Date ordinal of an ISO date (0 for none or unreadable: never expires)."""
    try:
        return _dt.date.fromisoformat(day[:10]).toordinal() if day else 0
    except ValueError:
        return 0


@dataclass
class Snapshot:
    """The per-skill state kept in memory between queries: numbers only, indexed by
    position (skills in rowid order)."""

    gen: str                    # the index generation this snapshot belongs to
    rowids: np.ndarray          # int64, ascending: position -> skill rowid
    group: np.ndarray           # int32 copy group (same name key) per position
    group_order: np.ndarray     # positions sorted by group ...
    group_start: np.ndarray     # ... and each group's offset into group_order
    active: np.ndarray          # bool
    expires: np.ndarray         # int32 date ordinal of expires_on, 0 = never

    def positions(self, rowids) -> np.ndarray:
        """Positions of skill rowids (-1 where the rowid is not in this snapshot)."""
        r = np.asarray(rowids, dtype=np.int64)
        p = np.searchsorted(self.rowids, r)
        p[p >= len(self.rowids)] = 0
        return np.where(self.rowids[p] == r, p, -1) if len(self.rowids) else np.full(len(r), -1)

    def members(self, p: int) -> np.ndarray:
        """Positions of the copies in ``p``'s group, ``p`` included."""
        g = self.group[p]
        return self.group_order[self.group_start[g]:self.group_start[g + 1]]

    def expired(self) -> np.ndarray:
        """Positions past their expiry date (bool per position)."""
        return (self.expires > 0) & (self.expires < _dt.date.today().toordinal())


def _groups(group: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions sorted by group, each group's offset into them) for ``count`` group ids."""
    order = np.argsort(group, kind="stable").astype(np.int32)
    return order, np.searchsorted(group[order], np.arange(count + 1)).astype(np.int32)


class SearchState:
    """The snapshot, its vector indexes and its filter masks. Not locked: the searcher
    takes its lock around ``snapshot`` and ``vectors``."""

    def __init__(self, store: Store, settings: SearchConfig):
        self.store = store
        self.s = settings
        self.reads = SearchReads(store)
        self._index_meta = IndexMeta(store)
        self.meta: Snapshot | None = None
        self.gen: str | None = None          # the generation ``meta`` was read at
        self.vec_gen: tuple | None = None
        self.vindex: vectors.ExactIndex | None = None   # metadata vectors (part 0), aligned with meta
        self.bindex: vectors.ExactIndex | None = None   # body vectors (part 1), or None
        self._masks: dict[tuple, np.ndarray] = {}
        self._journal = ChangeJournal(store)
        self._seq = 0                         # the change-journal entry ``meta`` is current to
        self._db = ""                         # the index id of the database ``meta`` was read from
        self._keys: dict[str, int] = {}       # name key -> its group id in ``meta``

    PATCH_MAX = 2000   # changed rows a snapshot is patched with; more are read in full

    def snapshot(self) -> Snapshot:
        """The snapshot of the current index generation (read again when it changed: only the
        rows the change journal names when the skills are the same ones, every row otherwise)."""
        gen = self._index_meta.generation()
        if self.meta is not None and gen == self.gen:
            return self.meta
        m = self._patched(self.meta, gen) if self.meta is not None else None
        if m is None:
            seq = self._journal.head()    # before the rows: a change after it is read again later
            db = self._index_meta.index_id()
            rows = sorted(self.reads.state())   # by rowid: positions are in rowid order
            keys: dict[str, int] = {}
            rowids, group, active, expires = [], [], [], []
            for rid, key, act, exp in rows:
                rowids.append(rid)
                group.append(keys.setdefault(key, len(keys)))
                active.append(bool(act))
                expires.append(_ordinal(exp))
            g = np.asarray(group, dtype=np.int32)
            order, start = _groups(g, len(keys))
            m = Snapshot(gen=gen, rowids=np.asarray(rowids, dtype=np.int64), group=g, group_order=order,
                         group_start=start, active=np.asarray(active, dtype=bool),
                         expires=np.asarray(expires, dtype=np.int32))
            # (kept only now: a read that failed leaves the old snapshot with the position it is current to)
            self._keys, self._seq, self._db = keys, seq, db
        self.meta, self.gen, self._masks = m, gen, {}
        return m

    def _patched(self, old: Snapshot, gen: str) -> Snapshot | None:
        """``old`` with the rows changed since it was built read again, or None when that is not
        enough: a row added or removed (positions move, and every index aligned with them), the
        journal pruned past it, or more than ``PATCH_MAX`` rows. At 100k skills a full read is
        ~0.2 s of CPU; an edit's patch reads one row."""
        got = self._journal.since(self._seq, "s", index_id=self._db, most=self.PATCH_MAX)
        if got is None:
            return None
        ids, head = got
        rows = self.reads.state_of(ids)
        pos = old.positions(ids)
        if len(rows) != len(ids) or (pos < 0).any():
            return None
        at = dict(zip(ids, pos.tolist()))
        group, active, expires = old.group.copy(), old.active.copy(), old.expires.copy()
        regroup = False
        for rid, key, act, exp in rows:
            p = at[rid]
            g = self._keys.setdefault(key, len(self._keys))
            if g != group[p]:
                group[p], regroup = g, True
            active[p] = bool(act)
            expires[p] = _ordinal(exp)
        order, start = _groups(group, len(self._keys)) if regroup else (old.group_order, old.group_start)
        self._seq = head
        return Snapshot(gen=gen, rowids=old.rowids, group=group, group_order=order, group_start=start,
                        active=active, expires=expires)

    def vectors(self, embedder, meta: Snapshot) -> vectors.ExactIndex | None:
        """The metadata vector index aligned with the snapshot's positions (None: no vectors
        yet); the body vector index is loaded beside it into ``bindex``."""
        # keyed by the snapshot the vectors are aligned with, not by whatever is current
        key = (meta.gen, embedder.model_id, self._index_meta.vectors_generation())
        if self.vec_gen == key:
            return self.vindex
        # what the new load may reuse (unchanged skills' vectors), then free the old indexes
        # before loading the new ones
        prev = vectors.previous(self.vindex), vectors.previous(self.bindex)
        self.vindex = self.bindex = None
        big = self.s.sq8_above
        self.vindex = vectors.load(self.store, embedder.model_id, meta.rowids, PART_META, sq8_above=big,
                                   previous=prev[0])
        self.bindex = vectors.load(self.store, embedder.model_id, meta.rowids, PART_BODY, sq8_above=big,
                                   previous=prev[1])
        self.vec_gen = key
        return self.vindex

    def rows(self, positions: list[int], meta: Snapshot | None = None) -> dict[int, Any]:
        """The display columns (``store.skills.HIT_COLUMNS``, as dicts) of the skills at these
        positions of ``meta`` (default: the current snapshot), by position."""
        meta = meta or self.meta
        assert meta is not None, "rows are read from a loaded snapshot"
        found = self.reads.hit_rows([int(meta.rowids[p]) for p in positions])
        out: dict[int, Any] = {}
        for r, p in zip(found, meta.positions([r["rowid"] for r in found])):
            if p >= 0:
                out[int(p)] = r
        return out

    def _mask(self, meta: Snapshot, key: tuple, select, ready: bool = False):
        """Positions of the rowids ``select()`` returns (a read of the store), cached for
        this index generation; ``ready``: ``select()`` returns the mask itself (or None)."""
        if key in self._masks:
            return self._masks[key]
        if ready:
            mask = select()
            if mask is not None:
                mask.setflags(write=False)
        else:
            ids = select()
            mask = np.zeros(len(meta.rowids), dtype=bool)
            pos = meta.positions(ids)
            mask[pos[pos >= 0]] = True
        if len(self._masks) > 64:
            self._masks.clear()
        self._masks[key] = mask
        return mask

    def allowed(self, meta: Snapshot, repo_scope, current_repo, tags, skill_type, include_inactive,
                include_expired, exclude: frozenset[str] | None = None) -> np.ndarray | None:
        """The positions a search may return under these filters (None: every one);
        ``exclude``: skill ids left out (those held back from agents). The same filters on the
        same day give the same array (read-only), cached for this index generation: the vector
        indexes keep the selector they build from it for the next search."""
        tag_key = tuple(sorted({t.strip().lower() for t in tags if t.strip()})) if tags else ()
        key = ("allowed", meta.gen, repo_scope, current_repo, tag_key, skill_type, include_inactive, include_expired,
               exclude if isinstance(exclude, frozenset) else None, _dt.date.today().toordinal())
        if exclude and not isinstance(exclude, frozenset):   # (a set cannot key the cache)
            return self._allowed(meta, repo_scope, current_repo, tags, skill_type, include_inactive,
                                 include_expired, exclude)
        if self.meta is not meta:    # an older snapshot than the cache's: not cached
            return self._allowed(meta, repo_scope, current_repo, tags, skill_type, include_inactive,
                                 include_expired, exclude)
        return self._mask(meta, key, lambda: self._allowed(meta, repo_scope, current_repo, tags, skill_type,
                                                           include_inactive, include_expired, exclude),
                          ready=True)

    def _allowed(self, meta: Snapshot, repo_scope, current_repo, tags, skill_type, include_inactive,
                 include_expired, exclude: frozenset[str] | None = None) -> np.ndarray | None:
        n = len(meta.rowids)
        mask = np.ones(n, dtype=bool)
        filtered = False
        if not include_inactive and not meta.active.all():
            mask &= meta.active
            filtered = True
        if not include_expired:
            exp = meta.expired()
            if exp.any():
                mask &= ~exp
                filtered = True
        if repo_scope == "current":
            if not current_repo:
                raise ValidationError("repo_scope 'current' needs the current repo",
                                      fix="pass current_repo, set WORKSPACE_FOLDER, or run inside a git repo")
            want = current_repo.lower()
            mask &= self._mask(meta, ("repo", want), lambda: self.reads.rowids_for_repo(want))
            filtered = True
        if tags:
            want_tags = {t.strip().lower() for t in tags if t.strip()}
            if want_tags:
                mask &= self._mask(meta, ("tags", *sorted(want_tags)), lambda: [
                    rid for rid, tags in self.reads.tags() if want_tags & set(tags.split(","))])
                filtered = True
        if skill_type:
            st = skill_type.strip().upper()
            from ..skill import SKILL_TYPES

            if st not in SKILL_TYPES:
                raise ValidationError(f"unknown skill_type {skill_type!r}", fix=f"use one of {', '.join(SKILL_TYPES)}")
            mask &= self._mask(meta, ("type", st), lambda: self.reads.rowids_of_type(st))
            filtered = True
        if exclude:
            ids = exclude
            # (copies() reads each id's rows with their same-named copies: only the ids' own are left out)
            mask &= ~self._mask(meta, ("exclude", ids),
                                lambda: [rid for rid, sid in self.reads.copies(sorted(ids)) if sid in ids])
            filtered = True
        return mask if filtered else None
