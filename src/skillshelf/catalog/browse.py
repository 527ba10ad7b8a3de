"""What a person's view of the library needs beyond search and read: browsing with filters,
sorting and counts, the overview's totals and the usage flywheel over time, one skill's
usage, its copies and descendants, side-by-side version and draft comparisons, and live
checks of what is being written.

``Catalog`` is a service the ``Library`` facade composes (the dashboard calls it through the
facade; the CLI and MCP server can too). It keeps a per-index-generation snapshot of the few
columns browsing filters and sorts on, as numpy arrays: a table page of a 100k-skill library
is a handful of vector operations plus one read of the rows shown.
"""

from __future__ import annotations

import datetime as _dt
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .. import skill as skillmod
from ..errors import ValidationError
from ..store.catalog import CatalogReads
from ..store.protocols import UsageReadStore

SORTS = ("name", "type", "root", "repo", "version", "modified", "status", "expires", "shown", "success")
STATUSES = ("any", "active", "inactive")
PAGE_MAX = 200
# up to this many skills the browse snapshot and the curation lists are rebuilt on the request
# after an index change (≤ ~0.3 s at 5.3k); above, in the background while the previous answer
SNAPSHOT_SYNC_MAX = 20_000
SEARCH_MAX = 50
_STATUS_CODES = {"active": 0, "deprecated": 1, "merged": 2}
_STATUS_NAMES = {v: k for k, v in _STATUS_CODES.items()}
_NONE_LAST = "\uffff"
_GUARD = threading.Lock()


def _today() -> _dt.date:
    # usage rows are stamped in UTC (store.now): days and weeks are counted in UTC too
    return _dt.datetime.now(_dt.timezone.utc).date()


def _ordinal(day: str | None) -> int:
    try:
        return _dt.date.fromisoformat(day[:10]).toordinal() if day else 0
    except ValueError:
        return 0


def _week_start(day: _dt.date) -> _dt.date:
    return day - _dt.timedelta(days=day.weekday())


def _split(value: str | None) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


# --- results ------------------------------------------------------------------------------

@dataclass
class BrowseRow:
    """One skill as a table row (no body)."""

    id: str
    name: str
    display_name: str
    description: str
    root: str
    kind: str
    repo: str | None
    skill_type: str | None
    tags: list[str]
    version: int
    status: str                   # active | deprecated | merged
    expires_on: str | None
    expired: bool
    modified: str | None
    writable: bool
    times_shown: int = 0
    reports: int = 0
    worked: int = 0
    # set on search results
    match: str | None = None      # likely | weak
    score: float | None = None
    why: str | None = None        # the search's reasons for the hit (its strongest signals, outcomes)
    copies: int = 1
    risk: str | None = None       # what the audit found (none | low | medium | high)
    hidden: str | None = None     # why agents do not see it (held, or blocked by trust.block)

    @property
    def success_rate(self) -> float | None:
        return self.worked / self.reports if self.reports else None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["success_rate"] = None if self.success_rate is None else round(self.success_rate, 3)
        return d


@dataclass
class BrowsePage:
    """A page of the skills table: ``total`` rows match in all; ``items`` are rows
    ``offset`` .. ``offset + len(items)``. With a ``query`` the rows are search hits in
    ranked order (at most ``SEARCH_MAX``), and ``confident`` / ``degraded`` come from search."""

    items: list[BrowseRow]
    total: int
    offset: int
    limit: int
    sort: str
    descending: bool
    query: str | None = None
    confident: bool | None = None
    degraded: str | None = None
    latency_ms: float | None = None
    filters: dict[str, Any] = field(default_factory=dict)
    more: bool = False              # a search that may find more with a larger limit

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["items"] = [r.as_dict() for r in self.items]
        return d


class _Snapshot:
    """The browse columns of every skill, in rowid order, for one index generation."""

    def __init__(self, gen: str | None, rows: list) -> None:
        self.gen = gen
        n = len(rows)
        self.n = n
        self.rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        self.ids: list[str] = [r[1] for r in rows]
        self.pos = {sid: i for i, sid in enumerate(self.ids)}
        self.names: list[str] = [r[2] for r in rows]

        def codes(values: list[str | None]) -> tuple[np.ndarray, list[str | None]]:
            labels: dict[str | None, int] = {}
            arr = np.fromiter((labels.setdefault(v, len(labels)) for v in values), dtype=np.int32, count=n)
            return arr, list(labels)

        self.root, self.root_labels = codes([r[3] for r in rows])
        self.kind_of_root = {r[3]: r[4] for r in rows}
        self.repo, self.repo_labels = codes([r[5] or None for r in rows])
        self.type, self.type_labels = codes([(r[6] or "").upper() or None for r in rows])
        tag_pos: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            for t in (r[7] or "").split(","):
                if t:
                    tag_pos.setdefault(t, []).append(i)
        self.tags = {t: np.asarray(p, dtype=np.int64) for t, p in tag_pos.items()}
        self.active = np.fromiter((bool(r[8]) for r in rows), dtype=bool, count=n)
        self.expires = np.fromiter((_ordinal(r[9]) for r in rows), dtype=np.int64, count=n)
        self.version = np.fromiter((int(r[10] or 1) for r in rows), dtype=np.int64, count=n)
        self.status = np.fromiter(
            (0 if r[8] else (2 if (r[11] or "") == "merged" else 1) for r in rows), dtype=np.int8, count=n)
        self.modified: list[str] = [r[12] or "" for r in rows]
        # lineage: parent name -> positions of the skills derived from or merged out of it
        self.children: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            for parent in set(_split(r[13]) + _split(r[14]) + _split(r[15])):
                self.children.setdefault(parent, []).append(i)
        self._orders: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def expired_mask(self) -> np.ndarray:
        return (self.expires > 0) & (self.expires < _today().toordinal())

    def order(self, sort: str) -> np.ndarray:
        """Positions sorted by ``sort`` (then by name, then id), cached per key."""
        with self._lock:
            cached = self._orders.get(sort)
            if cached is not None:
                return cached
            if "name" not in self._orders:
                by_name = sorted(range(self.n), key=lambda i: (self.names[i].casefold(), self.ids[i]))
                self._orders["name"] = np.asarray(by_name, dtype=np.int64)
            name_order = self._orders["name"]
            if sort == "name":
                return name_order
            rank = np.empty(self.n, dtype=np.int64)
            rank[name_order] = np.arange(self.n)

            def by_labels(codes: np.ndarray, labels: list[str | None]) -> np.ndarray:
                ordered = sorted(range(len(labels)), key=lambda c: (labels[c] or _NONE_LAST).casefold())
                lrank = np.empty(len(labels), dtype=np.int64)
                lrank[ordered] = np.arange(len(labels))
                return lrank[codes] if len(labels) else codes

            if sort == "type":
                key = by_labels(self.type, self.type_labels)
            elif sort == "root":
                key = by_labels(self.root, self.root_labels)
            elif sort == "repo":
                key = by_labels(self.repo, self.repo_labels)
            elif sort == "version":
                key = self.version
            elif sort == "status":
                key = self.status.astype(np.int64)
            elif sort == "expires":
                key = np.where(self.expires > 0, self.expires, np.iinfo(np.int64).max)
            elif sort == "modified":
                ordered = sorted(set(self.modified))
                lookup = {m: i for i, m in enumerate(ordered)}
                key = np.fromiter((lookup[m] for m in self.modified), dtype=np.int64, count=self.n)
            else:
                raise ValueError(sort)
            out = np.lexsort((rank, key)).astype(np.int64)
            self._orders[sort] = out
            return out




# --- the service -------------------------------------------------------------------------

class Catalog:
    """Browsing, the overview's totals and flywheel, one skill's usage, copies and lineage (see
    the module doc). Given the index and usage reads and, as callables, what it needs of the
    other services: ``resolve`` (a name or id to its record), ``search``, ``stats``,
    ``root_label``, ``rows_by_name``, ``per_skill_usage`` (skill id, name -> SkillUsage),
    ``list_drafts`` and ``roots`` (the library's roots now)."""

    def __init__(self, reads: CatalogReads, usage: UsageReadStore, *, resolve: Callable, search: Callable,
                 stats: Callable, root_label: Callable[[str], str], rows_by_name: Callable,
                 per_skill_usage: Callable, list_drafts: Callable[[], list], roots: Callable[[], list]):
        self.reads, self.usage = reads, usage
        self.get, self.search, self.stats = resolve, search, stats
        self._root_label, self._rows_by_name = root_label, rows_by_name
        self._per_skill_usage, self._list_drafts, self._roots = per_skill_usage, list_drafts, roots
        self._catalog_snap: _Snapshot | None = None
        self._catalog_lock = threading.Lock()
        self._curation_cache: tuple | None = None
        self._curation_refreshing = False
        self._catalog_building = False
        self._catalog_warming = False

    # --- snapshot -------------------------------------------------------------------------
    def _catalog(self) -> _Snapshot:
        """The snapshot of the current index generation. Building one reads every skill row
        (the browse columns sit behind the body in each row): ~0.3 s at 5.3k skills, seconds
        at 100k. Up to ``SNAPSHOT_SYNC_MAX`` skills it is rebuilt on the request after a
        change (the person who just saved sees the new row); above, the previous snapshot
        answers while a new one is built in the background (rows shown are always read fresh
        from the index; only which rows match and their order can lag). While one request
        builds it, others are answered from the previous snapshot rather than waiting."""
        gen = self.reads.generation()
        snap = self._catalog_snap
        if snap is not None and snap.gen == gen:
            return snap
        if snap is not None and snap.n > SNAPSHOT_SYNC_MAX:
            self._in_background("_catalog_building", self._build_catalog, "rebuilding the browse snapshot")
            return snap
        if not self._catalog_lock.acquire(blocking=snap is None):
            assert snap is not None   # a blocking acquire does not fail
            return snap
        try:
            return self._build_catalog(locked=True)
        finally:
            self._catalog_lock.release()

    def _build_catalog(self, *, locked: bool = False) -> _Snapshot:
        if not locked:
            with self._catalog_lock:
                return self._build_catalog(locked=True)
        gen = self.reads.generation()
        snap = self._catalog_snap
        if snap is not None and snap.gen == gen:
            return snap
        snap = _Snapshot(gen, self.reads.browse_columns())
        self._catalog_snap = snap
        return snap

    def _in_background(self, flag: str, fn, what: str = "updating the dashboard's lists") -> None:
        """Run ``fn`` in a daemon thread unless the one named by ``flag`` still runs."""
        with _GUARD:
            if getattr(self, flag, False):
                return
            setattr(self, flag, True)

        def run() -> None:
            try:
                fn()
            except Exception as exc:  # what is kept stays; the next request tries again
                print(f"skillshelf: {what} failed: {exc}", file=sys.stderr)
            finally:
                setattr(self, flag, False)

        threading.Thread(target=run, name="skillshelf-catalog", daemon=True).start()

    def catalog_warm(self) -> None:
        """Build the browse snapshot and the curation lists in a background thread (a
        long-running server calls this at start: the first pages then wait for neither)."""
        def warm() -> None:
            self._catalog()
            self.curation(top=8)

        self._in_background("_catalog_warming", warm, "preparing the dashboard's lists")

    def _root_code(self, snap: _Snapshot, root: str) -> int:
        label = self._root_label(root)      # a label or a path; unknown ones name the valid ones
        return snap.root_labels.index(label) if label in snap.root_labels else -1

    def _mask(self, snap: _Snapshot, *, root: str | None, repo: str | None, skill_type: str | None,
              tag: str | None, status: str, expired: bool | None) -> np.ndarray:
        mask = np.ones(snap.n, dtype=bool)
        if root:
            mask &= snap.root == self._root_code(snap, root)
        if repo:
            code = snap.repo_labels.index(repo) if repo in snap.repo_labels else -1
            mask &= snap.repo == code
        if skill_type:
            st = skill_type.strip().upper()
            if st not in snap.type_labels and st not in skillmod.SKILL_TYPES:
                known = sorted({t for t in snap.type_labels if t} | set(skillmod.SKILL_TYPES))
                raise ValidationError(f"unknown skill type {skill_type!r}", fix=f"use one of {', '.join(known)}")
            mask &= snap.type == (snap.type_labels.index(st) if st in snap.type_labels else -1)
        if tag:
            pos = snap.tags.get(tag.strip().lower())
            keep = np.zeros(snap.n, dtype=bool)
            if pos is not None:
                keep[pos] = True
            mask &= keep
        if status not in STATUSES:
            raise ValidationError(f"unknown status {status!r}", fix=f"use one of {', '.join(STATUSES)}")
        if status == "active":
            mask &= snap.active
        elif status == "inactive":
            mask &= ~snap.active
        if expired is not None:
            mask &= snap.expired_mask() if expired else ~snap.expired_mask()
        return mask

    def _rows(self, snap: _Snapshot, positions: list[int]) -> list[BrowseRow]:
        """Table rows for these positions, in this order, with their usage counts."""
        if not positions:
            return []
        rids = [int(snap.rowids[p]) for p in positions]
        found = self.reads.rows(rids)
        ids = [snap.ids[p] for p in positions]
        shown, reports = self.usage.counts(ids)
        today = _today().isoformat()
        out = []
        for p, rid in zip(positions, rids):
            r = found.get(rid)
            if r is None:    # removed since the snapshot: left out
                continue
            rep, ok = reports.get(r["id"], (0, 0))
            out.append(BrowseRow(
                id=r["id"], name=r["name"], display_name=r["display_name"] or r["name"],
                description=r["description"], root=r["root"], kind=r["kind"], repo=r["repo"],
                skill_type=r["skill_type"], tags=[t for t in (r["tags"] or "").split(",") if t],
                version=r["version"], status=_STATUS_NAMES[int(snap.status[p])] if not r["active"] else "active",
                expires_on=r["expires_on"], expired=bool(r["expires_on"]) and r["expires_on"] < today,
                modified=snap.modified[p] or None, writable=r["kind"] == "workspace",
                times_shown=shown.get(r["id"], 0), reports=rep, worked=ok))
        return out

    # --- browsing -------------------------------------------------------------------------
    def browse(self, *, root: str | None = None, repo: str | None = None, skill_type: str | None = None,
               tag: str | None = None, status: str = "any", expired: bool | None = None,
               query: str | None = None, sort: str = "name", descending: bool = False,
               offset: int = 0, limit: int = 50, hidden: frozenset[str] = frozenset()) -> BrowsePage:
        """One page of the skills matching every filter given. Without ``query``: sorted by
        ``sort`` (then name) and counted in full. With ``query``: the hybrid search's hits in
        ranked order, filtered the same way (at most ``SEARCH_MAX``; ``more`` says a larger
        ``offset + limit`` may find more), never logged as usage (a person browsing is not an
        agent's request). ``hidden``: the skills held from the reader (``ReadGate.hidden_for``),
        left out of the page and its counts."""
        if not isinstance(limit, int) or not 1 <= limit <= PAGE_MAX:
            raise ValidationError(f"limit {limit!r} is out of range", fix=f"use 1 to {PAGE_MAX}")
        if not isinstance(offset, int) or offset < 0:
            raise ValidationError(f"offset {offset!r} is out of range", fix="use 0 or more")
        if sort not in SORTS:
            raise ValidationError(f"unknown sort {sort!r}", fix=f"use one of {', '.join(SORTS)}")
        status = status or "any"
        snap = self._catalog()
        mask = self._mask(snap, root=root, repo=repo, skill_type=skill_type, tag=tag, status=status, expired=expired)
        for sid in hidden:
            p = snap.pos.get(sid)
            if p is not None:
                mask[p] = False
        filters = {k: v for k, v in dict(root=root, repo=repo, skill_type=skill_type, tag=tag,
                                         status=None if status == "any" else status, expired=expired).items()
                   if v is not None and v != ""}
        if query and query.strip():
            return self._browse_search(snap, mask, query.strip(), filters, status=status, expired=expired,
                                       skill_type=skill_type, tag=tag, offset=offset, limit=limit)
        if sort in ("shown", "success"):
            order = self._usage_order(snap, sort)
        else:
            order = snap.order(sort)
        if descending:
            order = order[::-1]
        ordered = order[mask[order]]
        page = [int(p) for p in ordered[offset:offset + limit]]
        return BrowsePage(self._rows(snap, page), int(len(ordered)), offset, limit, sort, descending,
                          filters=filters)

    def _usage_order(self, snap: _Snapshot, sort: str) -> np.ndarray:
        """Positions by times shown, or by success rate (skills without reports last), each
        ascending, then by name (usage changes without a new index generation: not cached)."""
        name_order = snap.order("name")
        rank = np.empty(snap.n, dtype=np.int64)
        rank[name_order] = np.arange(snap.n)
        key = np.zeros(snap.n, dtype=np.float64)
        if sort == "shown":
            for sid, c in self.usage.times_shown():
                p = snap.pos.get(sid)
                if p is not None:
                    key[p] = c
        else:
            key[:] = 2.0
            for sid, c, ok in self.usage.reports():
                p = snap.pos.get(sid)
                if p is not None and c:
                    key[p] = (ok or 0) / c
        return np.lexsort((rank, key)).astype(np.int64)

    def _browse_search(self, snap: _Snapshot, mask: np.ndarray, query: str, filters: dict, *, status: str,
                       expired: bool | None, skill_type: str | None, tag: str | None, offset: int,
                       limit: int) -> BrowsePage:
        # the search's cost grows with its limit (MMR, rows): ask for the page's worth, or for
        # SEARCH_MAX when filters the search cannot apply itself thin the hits afterwards
        post = bool(filters.get("root") or filters.get("repo")) or status == "inactive" or expired is True
        want = SEARCH_MAX if post else min(SEARCH_MAX, offset + limit)
        res = self.search(query, limit=want, skill_type=skill_type or None, tags=[tag] if tag else None,
                          include_inactive=status != "active", include_expired=expired is not False, log=False,
                          for_agents=False)    # a person browsing sees skills held from agents, marked
        keep = []
        for h in res.hits:
            p = snap.pos.get(h.id)
            if p is not None and mask[p]:
                keep.append((p, h))
        page = keep[offset:offset + limit]
        rows = self._rows(snap, [p for p, _ in page])
        by_id = {h.id: h for _, h in page}
        for r in rows:
            h = by_id[r.id]
            r.match, r.score, r.copies, r.why = h.match, round(float(h.score), 4), h.copies, h.why
            r.risk, r.hidden = getattr(h, "risk", None), getattr(h, "hidden", None)
        more = not post and want < SEARCH_MAX and len(res.hits) >= want
        return BrowsePage(rows, len(keep), offset, limit, "relevance", False, query=query, confident=res.confident,
                          degraded=res.degraded, latency_ms=round(res.latency_ms, 2), filters=filters, more=more)

    def facets(self, *, top_tags: int = 60) -> dict[str, Any]:
        """What the table's filters offer: roots (with kind and count), repos, types and the
        most used tags, each with its number of skills."""
        snap = self._catalog()

        def counted(codes: np.ndarray, labels: list) -> list[tuple[Any, int]]:
            counts = np.bincount(codes, minlength=len(labels)) if snap.n else np.zeros(len(labels), dtype=np.int64)
            return [(labels[i], int(counts[i])) for i in range(len(labels))]

        roots = []
        counts = dict(counted(snap.root, snap.root_labels))
        for r in self._roots():
            roots.append({"label": r.label, "kind": r.kind, "path": str(r.path), "writable": r.writable,
                          "skills": counts.get(r.label, 0)})
        known = {r["label"] for r in roots}
        for label, c in counts.items():
            if label not in known:
                roots.append({"label": label, "kind": snap.kind_of_root.get(label, "other"), "path": "",
                              "writable": False, "skills": c})
        repos = sorted(((lab, c) for lab, c in counted(snap.repo, snap.repo_labels) if lab), key=lambda x: (-x[1], x[0]))
        types = sorted(((lab, c) for lab, c in counted(snap.type, snap.type_labels) if lab), key=lambda x: (-x[1], x[0]))
        untyped = sum(c for lab, c in counted(snap.type, snap.type_labels) if not lab)
        tags = sorted(((t, int(len(p))) for t, p in snap.tags.items()), key=lambda x: (-x[1], x[0]))
        return {"roots": roots, "repos": repos, "types": types, "untyped": untyped, "tags": tags[:top_tags],
                "tags_total": len(tags), "skills": snap.n}

    # --- overview -------------------------------------------------------------------------
    def overview(self, *, days: int = 30, weeks: int = 12, top: int = 8, judge: dict[str, Any] | None = None) \
            -> dict[str, Any]:
        """Totals (active, inactive, expired, drafts waiting, invalid files), skills by root,
        repo and type, the flywheel series, the lists that need a person, and ``judge`` (what
        the model judge did over the last ``days``, from the judge service)."""
        snap = self._catalog()
        expired = snap.expired_mask()
        drafts = self._list_drafts()
        invalid = self.reads.invalid_count()
        totals = {"skills": snap.n, "active": int((snap.active & ~expired).sum()),
                  "deprecated": int((snap.status == 1).sum()), "merged": int((snap.status == 2).sum()),
                  "expired": int((snap.active & expired).sum()), "drafts": len(drafts), "invalid_files": invalid}
        f = self.facets(top_tags=0)
        return {"totals": totals, "by_root": f["roots"], "by_repo": f["repos"][:top + 4],
                "repos_total": len(f["repos"]), "by_type": f["types"], "untyped": f["untyped"],
                "flywheel": self.flywheel(days=days, weeks=weeks),
                "curation": self.curation(top=top, drafts=drafts),
                "judge": judge}

    def curation(self, *, top: int = 25, drafts: list[dict] | None = None, since: str | None = None) -> dict[str, Any]:
        """The lists that need a person: drafts to review, kill candidates (active skills
        never surfaced by a search), rewrite candidates (low success), gaps (requests nothing
        served confidently). Each list is cut at ``top``; ``*_total`` counts it in full;
        ``as_of`` is when the statistics were computed.

        The statistics read every skill row (~0.3 s at 5.3k skills, seconds at 100k). They are
        kept until the index changes (then recomputed at once up to ``SNAPSHOT_SYNC_MAX``
        skills: a person who just deprecated a skill sees it gone) or the usage log grows
        (then the kept lists are returned and recomputed in the background: agents' searches
        arrive all the time, and a page must not wait for them)."""
        drafts = self._list_drafts() if drafts is None else drafts
        # the whole lists are kept, cut at ``top`` on the way out: the overview (a few rows) and
        # Curate (every candidate) share one computation instead of evicting each other
        key = (self.reads.generation(), since)
        usage = self.usage.marks()
        cached = self._curation_cache
        if cached is None or (cached[0] != key and self._catalog().n <= SNAPSHOT_SYNC_MAX):
            out = self._curation(key, usage, since=since)
        else:
            out = cached[2]
            if cached[0] != key or cached[1] != usage:
                self._in_background("_curation_refreshing", lambda: self._curation(key, usage, since=since),
                                    "refreshing the curation lists")
        cut = {k: out[k][:top] for k in ("kill", "rewrite", "gaps", "most_used")}
        return {**out, **cut, "drafts": drafts[:top], "drafts_total": len(drafts)}

    def _curation(self, key: tuple, usage: tuple, *, since: str | None) -> dict[str, Any]:
        st = self.stats(since=since)
        out = {"queries": st.queries, "finds": st.finds, "reports": st.reports,
               "report_rate": round(st.report_rate, 3), "confident_rate": round(st.confident_rate, 3),
               "kill": list(st.never_surfaced), "kill_total": len(st.never_surfaced),
               "rewrite": [u.as_dict() for u in st.low_success], "rewrite_total": len(st.low_success),
               "gaps": [g.as_dict() for g in st.gaps], "gaps_total": len(st.gaps),
               "most_used": [u.as_dict() for u in st.most_used],
               "as_of": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        self._curation_cache = (key, usage, out)
        return out

    def flywheel(self, *, days: int = 30, weeks: int = 12) -> dict[str, Any]:
        """The usage flywheel over time (UTC): queries per day for the last ``days`` days; per
        week for the last ``weeks`` weeks, finds, the share of finds an outcome was reported
        for (report rate), the share of outcomes that worked (success rate) and gaps (finds
        without a confident match, lexical-only runs left out as in ``stats``)."""
        days = max(1, min(int(days), 366))
        weeks = max(1, min(int(weeks), 104))
        today = _today()
        first_day = today - _dt.timedelta(days=days - 1)
        first_week = _week_start(today) - _dt.timedelta(weeks=weeks - 1)
        since = min(first_day, first_week).isoformat()
        per_day: dict[str, int] = {}
        wk: dict[_dt.date, dict[str, int]] = {}

        def week(day: str) -> dict[str, int]:
            start = _week_start(_dt.date.fromisoformat(day))
            return wk.setdefault(start, {"finds": 0, "reported": 0, "outcomes": 0, "worked": 0, "gaps": 0,
                                         "queries": 0})

        for d, n, finds, gaps in self.usage.queries_per_day(since):
            per_day[d] = n
            w = week(d)
            w["queries"] += n
            w["finds"] += finds
            w["gaps"] += gaps
        for d, n in self.usage.reported_finds_per_day(since):
            week(d)["reported"] += n
        for d, n, ok in self.usage.outcomes_per_day(since):
            w = week(d)
            w["outcomes"] += n
            w["worked"] += ok
        day_series = []
        for i in range(days):
            d = (first_day + _dt.timedelta(days=i)).isoformat()
            day_series.append({"day": d, "queries": per_day.get(d, 0)})
        week_series = []
        for i in range(weeks):
            start = first_week + _dt.timedelta(weeks=i)
            w = wk.get(start, {"finds": 0, "reported": 0, "outcomes": 0, "worked": 0, "gaps": 0, "queries": 0})
            iso = start.isocalendar()
            week_series.append({
                "week": f"{iso[0]}-W{iso[1]:02d}", "start": start.isoformat(), **w,
                "report_rate": round(w["reported"] / w["finds"], 3) if w["finds"] else None,
                "success_rate": round(w["worked"] / w["outcomes"], 3) if w["outcomes"] else None})
        return {"days": day_series, "weeks": week_series,
                "queries": sum(per_day.values()), "first_day": first_day.isoformat(), "today": today.isoformat()}

    # --- one skill ------------------------------------------------------------------------
    def skill_usage(self, name_or_id: str, *, limit: int = 50) -> dict[str, Any]:
        """One skill's usage: the searches that listed it (newest first, with the request
        when the log keeps its text), the outcomes reported (with notes), and the success
        rate per week."""
        rec = self.get(name_or_id)
        u = self._per_skill_usage(rec.id, rec.name)
        surfaced = [{"at": r["at"], "rank": r["rank"], "score": round(float(r["score"]), 4), "query_id": r["qid"],
                     "request": r["text"], "mode": r["mode"], "client": r["client"], "confident": bool(r["confident"])}
                    for r in self.usage.surfaced(rec.id, limit)]
        outcomes = [{"id": r["id"], "at": r["at"], "worked": bool(r["worked"]), "note": r["note"],
                     "client": r["client"], "query_id": r["query_id"]}
                    for r in self.usage.outcomes(rec.id, rec.name, limit)]
        weekly: dict[_dt.date, list[int]] = {}
        for d, ok in self.usage.outcome_days(rec.id, rec.name):
            try:
                w = weekly.setdefault(_week_start(_dt.date.fromisoformat(d)), [0, 0])
            except ValueError:
                continue
            w[0] += 1
            w[1] += int(ok)
        series = [{"week": f"{s.isocalendar()[0]}-W{s.isocalendar()[1]:02d}", "start": s.isoformat(),
                   "reports": n, "worked": ok, "success_rate": round(ok / n, 3)}
                  for s, (n, ok) in sorted(weekly.items())][-26:]
        return {"id": rec.id, "name": rec.name, **{k: v for k, v in u.as_dict().items() if k not in ("id", "name",
                                                                                                 "notes")},
                "surfaced": surfaced, "outcomes": outcomes, "weekly": series}

    def copies(self, name_or_id: str, *, hidden: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """The other skills with the same name (same name key: case and separators aside),
        in lookup precedence; ``wins`` marks the one a lookup by name returns. ``hidden``: the
        skills held from the reader, left out."""
        rec = self.get(name_or_id)
        rows = self._rows_by_name(rec.name)
        if not rows:
            return []
        winner = rows[0]["id"]
        return [{"id": r["id"], "name": r["name"], "root": r["root"], "kind": r["kind"], "path": r["path"],
                 "version": r["version"], "active": bool(r["active"]), "description": r["description"],
                 "wins": r["id"] == winner, "same_text": r["content_hash"] == self.reads.content_hash(rec.id)}
                for r in rows if r["id"] != rec.id and r["id"] not in hidden]

    def lineage(self, name_or_id: str) -> dict[str, Any]:
        """Where a skill came from (ancestors by DERIVE, sources of a MERGE, what it was
        merged into) and the skills that came from it."""
        rec = self.get(name_or_id)
        snap = self._catalog()
        children = [{"id": snap.ids[p], "name": snap.names[p]} for p in snap.children.get(rec.name, [])
                    if snap.ids[p] != rec.id]
        return {"ancestors": rec.lineage, "merged_from": _split(rec.metadata.get("merged-from")),
                "merged_into": rec.metadata.get("merged-into") or None,
                "origin": rec.metadata.get("origin") or None, "descendants": children}
