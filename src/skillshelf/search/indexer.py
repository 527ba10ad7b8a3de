"""Indexing: the files brought into the index, and kept there.

``LazyEmbedder`` loads the embedding model on first use. ``Indexer`` syncs the roots into
the store (a local model embeds the changed skills beside the lexical indexing) and keeps the
index up to date without costing an idle process anything:

- a one-shot command scans the roots before its first query (``maybe_sync``); a library used
  again later in the same process (the Python API) then watches the roots' file-system events
  and rescans only when they report a change;
- a long-running process (the MCP server, the dashboard) calls ``start``: a background thread
  makes the first index (or loads the search state and catches up with what changed while it
  was down), then waits for file-system events (``watcher.Watcher``) and syncs when they
  report a change, with a full rescan every ``RESCAN`` seconds as a safety net (every
  ``UNWATCHED_RESCAN`` seconds while some root has no events at all);
- ``close`` stops that thread within about a second (a sync in progress stops at its next file
  or embedding batch; what was committed stays) and the watches.

It also hands a request the database writer or the sync lock without waiting long behind an
indexing (``writer``, ``exclusive``), and says what a query answered meanwhile is missing
(``note``)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..catalog.roots import SKILL_FILES, Root, scope
from ..catalog.watcher import Watcher
from ..config import Config
from ..errors import ConflictError, EmbedderError, StoreError
from ..store import Store
from ..store.meta import IndexMeta
from ..store.records import SkillRows
from ..store.vectors import VectorStore
from . import sync as indexmod
from .pipeline import Searcher, SearchResult
from .prefetch import Prefetch
from .progress import SharedProgress, describe, unindexed
from .shared_vectors import SharedVectors

# One-shot use: a stat scan of every SKILL.md costs ~0.2-0.9 s at 5.3k skills, too much
# before each query: at most one every AUTO_SYNC_INTERVAL seconds while no watcher runs.
AUTO_SYNC_INTERVAL = 2.0
POLL_INTERVAL = 0.5      # a library with a watcher asks it for changes at most this often (~1 ms a root)
RESCAN = 600.0           # the safety net's full rescan while watching (seconds)
UNWATCHED_RESCAN = 60.0  # ... while some root has no file-system events at all
TICK = 0.1               # the background thread's look at the watcher, and how fast it stops
GROUP = 1.0              # changes arriving in a burst (a git pull) are synced together, after at most this
ONLY_MAX = 500           # a sync told of more skill folders than this scans every root instead


def _folders(paths: set[Path]) -> set[Path]:
    """The folders to sync for the watcher's changed paths: a skill file's folder; an added
    or deleted folder (or a root) itself."""
    return {p.parent if p.name in SKILL_FILES else p for p in paths}


class Stopped(ConflictError):
    """A sync stopped because the library is closing (what it committed stays)."""

    def __init__(self) -> None:
        super().__init__("the library is closing: the sync stopped (what it indexed so far is kept)",
                         fix="run `skillshelf sync` to finish it")


class LazyEmbedder:
    """The embedding backend, loaded on first use. A backend that cannot load (or fails
    later) leaves the library lexical-only, and says so once."""

    def __init__(self, config: Callable[[], Config], embedder: Any = None):
        self._config = config
        self._embedder = embedder
        self._unloaded: Any = None       # the backend made but not loaded yet (``unloaded``)
        self._error: str | None = None
        self._lock = threading.Lock()

    def state(self) -> tuple[Any, str | None]:
        """(embedder or None, the reason search is lexical-only)."""
        with self._lock:
            if self._embedder is not None:
                return self._embedder, None
            if self._error is not None:
                return None, self._error
            cfg = self._config()
            name = cfg.embedder
            if name == "none":
                self._error = "embedder is 'none': lexical-only search"
                return None, self._error
            from ..embeddings import create

            try:
                emb = self._unloaded or create(name, model=cfg.embedder_model, url=cfg.embedder_url,
                                               api_key=cfg.embedder_api_key, model_path=cfg.embedder_path,
                                               precision=cfg.embedder_precision)
                assert emb is not None   # create gives None only for 'none', answered above
                emb.load()
            except EmbedderError as exc:
                self._error = f"embedder {name!r} unavailable ({exc}): lexical-only search"
                print(f"skillshelf: {self._error}", file=sys.stderr)
                return None, self._error
            self._embedder = emb
            return emb, None

    def unloaded(self) -> Any:
        """The backend without loading its model, for a sync that may have nothing to embed
        (``index.embed_pending`` and the prefetch load it when a text needs a vector: an
        unchanged sync then costs no model load); None when search is lexical-only."""
        with self._lock:
            if self._embedder is not None or self._error is not None:
                return self._embedder
            if self._unloaded is None:
                cfg = self._config()
                if cfg.embedder == "none":
                    return None
                from ..embeddings import create

                try:
                    self._unloaded = create(cfg.embedder, model=cfg.embedder_model, url=cfg.embedder_url,
                                            api_key=cfg.embedder_api_key, model_path=cfg.embedder_path,
                                            precision=cfg.embedder_precision)
                except EmbedderError:
                    return None      # ``state()`` says why, when something needs the model
            return self._unloaded

    def fail(self, reason: str) -> None:
        """The backend failed: lexical-only from now on, for ``reason``."""
        with self._lock:
            self._embedder = None
            self._error = reason


class Indexer:
    """Brings the index up to date with the files and keeps it there (see the module's text).

    ``config`` and ``roots`` are read at each use (a library's settings and roots can be
    replaced while it is open: a root an import registers is indexed by the next sync)."""

    WRITE_WAIT = 2.0     # seconds a server request waits for the database writer
    TEMP_AGE = 600.0     # a ``.tmp-*`` file older than this was left by an interrupted write
    CLOSE_WAIT = 10.0    # the longest ``close`` waits for the background thread

    def __init__(self, store: Store, searcher: Searcher, embedder: LazyEmbedder, *,
                 config: Callable[[], Config], roots: Callable[[], list[Root]], auditor: Any = None,
                 after_sync: Callable[..., None] | None = None, vectors: Any = None):
        """``auditor`` (``auditing.Auditor``) audits each changed skill inside the sync's
        transactions; ``after_sync(audited, removed, present, full=)`` is called after each
        sync with (id, SKILL.md path) of the skills audited, the ids removed, every skill indexed
        now, and whether this was a full rescan (whose bundled files are looked at too).
        ``vectors`` (a ``store.protocols.VectorCacheStore``): vectors computed once, asked
        before the model runs (``shared_vectors``)."""
        self.store = store
        self.shared = SharedVectors(vectors) if vectors is not None else None
        self._auditor = auditor
        self._after_sync = after_sync
        self.searcher = searcher
        self.embedder = embedder
        self._config = config
        self._roots = roots
        self._skills = SkillRows(store)
        self._vectors = VectorStore(store)
        self._sync_lock = threading.RLock()   # re-entered by maybe_sync around sync()
        self._last_check = 0.0                # when the query path last looked (monotonic)
        self._last_full = 0.0                 # when the last full sync ended (monotonic)
        # when skills' other files were last looked at (a one-shot command's query never does)
        self._files_seen = time.monotonic()
        self._synced = False                  # a sync ran in this process
        self._expired = False
        self._temp_cleaned = 0.0
        self._sync_warned = False
        self._watcher: Watcher | None = None
        self._watcher_lock = threading.Lock()
        self.background = False               # a background thread keeps the index up to date
        self._started = False
        self._threads: list[threading.Thread] = []
        self._prefetch: Prefetch | None = None
        self._closed = threading.Event()      # set by close: the background loops end
        self._stop = threading.Event()        # set while closing: a sync in progress stops
        self._progress: dict[str, Any] | None = None
        self._unindexed: list[Root] = []      # roots a rescan still to come indexes first (``start``)
        self.progress_file = SharedProgress(config().home)   # how far a sync is, for the other processes
        # a team server's: reads wait for its start's catching up (``team.Team.current``), and
        # what it may be missing is said with the indexing note (``team.Team.lag``)
        self.before_read: Callable[..., None] | None = None
        self.lag: Callable[[], str | None] | None = None
        # ... and a sync of every root waits for its copy's edits to be kept (``Mirror.settle``)
        self.before_sync: Callable[[], Iterable[Path | str] | None] | None = None
        # how a query path's sync shows progress: a context giving its (files, texts) callbacks
        self.shown: Callable[[], Any] | None = None

    # --- syncing --------------------------------------------------------------------
    def sync(self, *, progress=None, embed: bool = True, embed_progress=None,
             full: bool = True, only=None, settle: bool = False) -> indexmod.SyncReport:
        """Bring the index up to date with the files (every root), then embed what lacks a
        vector (``embed``). ``progress``/``embed_progress`` see (done, total) of the files and
        of the texts. Stops with ``Stopped`` at the next file or batch once ``close`` is called.
        ``full``: every skill's other files are looked at too (a stat each; the audit re-reads
        only what changed) and pinned collections are checked whole; otherwise only the skills
        whose SKILL.md changed are (the query path's and the watcher's syncs).

        ``only``: the skill folders known to have changed (a team store's follower): only their
        skills are indexed, audited (their other files too) and checked against pins, as a full
        sync would; the other rows, the watcher's changes and the rescan schedule are left
        alone (None, or more than ``ONLY_MAX`` folders: every root). ``settle`` (the watcher's
        syncs): with ``only``, the store hook (``before_sync``: a team server keeps its copy's
        edits as versions first) runs as before a sync of every root, and the folders it
        brought in are synced too."""
        with self._sync_lock, self.progress_file.running():
            self._check_stop()
            t0 = time.perf_counter()
            cfg = self._config()
            if only is not None and settle and self.before_sync is not None:
                only = set(only) | {Path(p) for p in (self.before_sync() or ())}
            parts = None if only is None or len(only) > ONLY_MAX else \
                scope(self._roots(), only, exclude=(cfg.home,))
            if parts is None:
                self._changes()       # what the watcher saw so far is covered by this scan
                if self.before_sync is not None:
                    self.before_sync()
            # A local model embeds the changed skills while the lexical index is being built.
            emb = self.embedder.unloaded() if embed else None
            pre = Prefetch(self.store, emb, cfg.search.body_vector_tokens, embed_progress, self.shared) \
                if emb is not None and emb.local else None
            self._prefetch = pre      # close() cancels it, even while it is being waited for
            try:
                try:
                    report = indexmod.sync(self.store, self._roots(),
                                           progress=self._stoppable(progress, "indexing"),
                                           on_skill=pre.add if pre else None, exclude=(cfg.home,),
                                           auditor=self._auditor, only=parts)
                except BaseException:
                    # interrupted (Ctrl-C, closing): the texts still queued for the model are not
                    # waited for (at a first index, minutes of them); those embedded are kept
                    if pre is not None:
                        pre.finish(cancel=True)
                    raise
                ready = pre.finish(cancel=self._stop.is_set()) if pre else None
            finally:
                self._prefetch = None
            self._check_stop()
            self._supply_chain(report, full and parts is None, scoped=parts is not None)
            self._clean_temp_files(report, cfg)
            if embed:
                self.embed_pending(report, self._stoppable(embed_progress, "embedding"), ready,
                                   pre.reused if pre else ())
            if parts is None:
                self._last_check = self._last_full = time.monotonic()
                self._synced = True
            report.seconds = time.perf_counter() - t0    # the whole sync, embedding included
            return report

    def _supply_chain(self, report: indexmod.SyncReport, full: bool, scoped: bool = False) -> None:
        """The supply chain's step after a sync (audits of bundled files, pinned collections);
        a failure there is a note of the sync, never its end. ``scoped``: a sync of some
        folders (``report.present`` holds their skills only)."""
        if self._after_sync is None or self.store.read_only:
            return
        try:
            if scoped:
                self._after_sync(report.audited, report.forgotten, report.present, full=False, scoped=True)
                return
            self._after_sync(report.audited, report.forgotten, report.present, full=full)
            if full:
                self._files_seen = time.monotonic()
        except (OSError, sqlite3.Error, StoreError) as exc:
            report.notes.append(f"auditing after the sync failed: {exc}")

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise Stopped()

    def _stoppable(self, progress, phase: str):
        def step(done: int, total: int) -> None:
            self.progress_file.write(phase, done, total)
            self._check_stop()
            if progress is not None:
                progress(done, total)
        return step

    def _clean_temp_files(self, report: indexmod.SyncReport, cfg: Config) -> None:
        """Remove ``.tmp-*`` files an interrupted write (kill -9, power loss) left in the
        library's own folders; only old ones, never a write in progress."""
        now = time.time()
        if now - self._temp_cleaned < self.TEMP_AGE:
            return
        self._temp_cleaned = now
        for base in (cfg.workspace, cfg.home / "history", cfg.drafts):
            if not base.is_dir():
                continue
            for dirpath, _dirs, files in os.walk(base):
                for f in files:
                    if not f.startswith(".tmp-"):
                        continue
                    p = Path(dirpath) / f
                    try:
                        if now - p.lstat().st_mtime > self.TEMP_AGE:
                            p.unlink()
                            report.notes.append(f"removed {p}, left by an interrupted write")
                    except OSError:
                        continue

    def embed_pending(self, report: indexmod.SyncReport, progress=None, ready=None, reused=()) -> None:
        emb = self.embedder.unloaded()
        if emb is None:
            return
        try:
            report.embedded = indexmod.embed_pending(self.store, emb, progress=progress, ready=ready,
                                                       body_tokens=self._config().search.body_vector_tokens,
                                                       shared=self.shared, reused=reused, into=report)
        except indexmod.Interrupted as exc:
            # the vectors made before Ctrl-C are kept: the report says so with the rest of the sync
            report.embedded += exc.report.embedded
            exc.report = report
            raise
        except EmbedderError as exc:
            # a backend that fails here would fail every query: go lexical-only, loudly
            report.notes.append(f"embedding failed: {exc}")
            self.embedder.fail(f"embedder failed: {exc}: lexical-only search")

    def embedder_status(self) -> dict[str, Any]:
        """The embedder's name, whether it works (``degraded`` says why not), and how many
        skills have their metadata and body vectors for its model."""
        cfg = self._config()
        emb, reason = self.embedder.state()
        total = self._skills.count()
        if emb is None:
            return {"name": cfg.embedder, "ok": False, "degraded": reason, "skills": total, "vectors": 0}
        counts = self._vectors.counts(emb.model_id)
        return {"name": cfg.embedder, "ok": True, "model_id": emb.model_id, "dimensions": emb.dimensions,
                "degraded": None, "skills": total, "vectors": counts.get(indexmod.PART_META, 0),
                "body_vectors": counts.get(indexmod.PART_BODY, 0),
                "body_vector_tokens": cfg.search.body_vector_tokens}

    # --- the query path (one-shot commands, the Python API) ---------------------------
    def maybe_sync(self, *, embed: bool = False) -> None:
        """Pick up editor changes before a query, where no background thread does: the first
        time a stat scan; later on file-system events (or every ``RESCAN`` seconds). The model
        embeds only what changed, or with ``embed`` (a search needs it anyway) every missing
        vector: listing or reading skills never loads it for nothing."""
        # (not from inside a sync; RLock._is_owned is CPython's, missing from typeshed's stub)
        if self.before_read is not None and not self._sync_lock._is_owned():  # type: ignore[attr-defined]
            self.before_read()
        if not self._config().auto_sync or self.background or self.store.read_only:
            return   # (a database open read-only cannot take what a scan finds: doctor says so)
        with self._sync_lock:
            if not self._due():
                return
            try:
                # a full look at every skill's files only at the rescan interval (else what changed)
                with self.shown() if self.shown is not None else contextlib.nullcontext((None, None)) as (on, emb):
                    report = self.sync(embed=embed, full=time.monotonic() - self._files_seen >= RESCAN,
                                       progress=on, embed_progress=emb)
            except (OSError, sqlite3.OperationalError, StoreError) as exc:
                if isinstance(exc, StoreError) and "damaged" in exc.message:
                    raise
                # a full disk or a read-only database must not stop reads: serve the index as
                # it is and say so once
                self._last_check = self._last_full = time.monotonic()
                if not self._sync_warned:
                    self._sync_warned = True
                    print(f"skillshelf: could not update the index ({exc}); serving it as it is",
                          file=sys.stderr)
                return
            if not embed and report.changed:
                self.embed_pending(report)

    def _due(self) -> bool:
        """Whether the query path has to sync now."""
        now = time.monotonic()
        w = self._watcher
        if self._expired:
            self._expired = False
        elif w is None:
            if now - self._last_check < AUTO_SYNC_INTERVAL:
                return False
        else:
            if now - self._last_check < POLL_INTERVAL:
                return False
            self._last_check = now
            w, changed = self._changes()
            if not changed and not (w is not None and w.unwatched and now - self._last_full >= AUTO_SYNC_INTERVAL) \
                    and now - self._last_full < RESCAN:
                return False
        if self._watcher is None and self._synced:
            # used again after its first scan: from now on the roots' events say when to scan
            self._start_watcher()
        return True

    def expire(self) -> None:
        """The next query rescans the roots (whatever the watcher or the interval says)."""
        self._expired = True

    # --- watching -------------------------------------------------------------------
    def _start_watcher(self) -> Watcher | None:
        with self._watcher_lock:
            if self._watcher is None and not self._closed.is_set():
                cfg = self._config()
                try:
                    self._watcher = Watcher(self._roots(), exclude=(cfg.home,)).start()
                except Exception as exc:  # no watcher: the interval's rescans go on as before
                    print(f"skillshelf: cannot watch the roots for changes ({exc}); rescanning them instead",
                          file=sys.stderr)
            return self._watcher

    def root_events(self) -> list[dict]:
        """How each root's changes are seen: ``mode`` "events" (the platform's file-system
        events), "polling" (watchfiles stats the root's tree every few seconds) or "none" (only
        the rescan every ``rescan_minutes``), ``reason`` why not "events", and ``note``, a line
        for ``doctor`` when not "events". Uses the running watcher, or sets one up for a moment."""
        w = self._watcher
        probe = None
        if w is None:
            probe = w = Watcher(self._roots(), exclude=(self._config().home,)).start()
        try:
            out = w.status()
        finally:
            if probe is not None:
                probe.close()
        unwatched = any(r["mode"] == "none" for r in out)
        minutes = (UNWATCHED_RESCAN if unwatched else RESCAN) / 60
        from ..catalog.watcher import POLL_MS

        for r in out:
            r["rescan_minutes"] = minutes
            if r["mode"] == "events":
                r["note"] = None
            elif r["mode"] == "polling":
                r["note"] = (f"root {r['path']} has no file-system events ({r['reason']}); changes are seen by "
                             f"polling it every {POLL_MS / 1000:g} s")
            else:
                r["note"] = (f"root {r['path']} has no file-system events ({r['reason']}); changes are seen by a "
                             f"rescan every {minutes:g} minute{'s' if minutes != 1 else ''}")
        return out

    def watch(self, interval: float = RESCAN, *, now: bool = False) -> None:
        """Keep the index up to date in a daemon thread: a sync whenever the roots'
        file-system events report a change, and a full rescan every ``interval`` seconds
        (``now``: one at once)."""
        if self.background or not self._config().auto_sync:
            return
        self.background = True    # from now on no query syncs on the request path
        self._start_watcher()     # here: a change made once this returns is seen
        self._spawn(self._run, interval, not now)

    def start(self, interval: float = RESCAN, first_answer: Callable[[], object] | None = None) -> None:
        """Index in a daemon thread, then keep the index up to date (``watch``) when ``auto_sync`` is
        on. Returns at once. An empty index is synced first (the model embeds beside it); otherwise the
        model and search state load first and the files are rescanned right after (changes made while
        the server was down show up soon; after ``first_answer()`` returns: a server's first answer)."""
        if self._started:
            return
        self._started = True
        fresh = self._skills.count() == 0
        self._progress = {"first": fresh, "state": "indexing" if fresh else "ready",
                          "phase": "scanning" if fresh else None, "done": 0, "total": 0, "error": None}
        watch = self._config().auto_sync and not self.background
        # a root registered since the last whole sync: its rescan comes after the first answer
        self._unindexed = unindexed(IndexMeta(self.store).synced_roots(), self._roots()) if watch and not fresh \
            else []
        if watch:
            self.background = True    # from now on no query syncs on the request path
        self._spawn(self._first, fresh, watch, interval, first_answer)

    def _spawn(self, target, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, name="skillshelf-index", daemon=True)
        self._threads.append(t)
        t.start()

    @staticmethod
    def _ready_progress() -> dict[str, Any]:
        return {"first": False, "state": "ready", "phase": None, "done": 0, "total": 0, "error": None}

    def _first(self, fresh: bool, watch: bool, interval: float, first_answer: Callable[[], object] | None) -> None:
        if self.before_read is not None:
            try:
                self.before_read(-1)    # a team server: what changed while it was away, indexed first
            except Exception as exc:  # reported; the first read tries again
                if isinstance(exc, Stopped) or self._stop.is_set():
                    return              # the library is closing (a refused start, a stop): nothing to say
                print(f"skillshelf: catching up with the team store failed: {exc}", file=sys.stderr)
        if not fresh:
            try:
                self.warm(sync=False)
            except Exception as exc:  # reported; the watcher and the queries go on
                print(f"skillshelf: loading the search state failed: {exc}", file=sys.stderr)
            if watch and first_answer is not None:
                first_answer()    # the watches (a walk of every root, holding the GIL) and the rescan wait
        if watch:
            self._run(interval, False)    # the watches first (a change from then on is seen), then a scan
        elif fresh:
            self._background_sync()

    def _run(self, interval: float, wait: bool) -> None:
        """The background loop: sync when the watcher reports a change (changes arriving
        together are grouped for up to ``GROUP`` seconds), and a full rescan every
        ``interval`` seconds. ``wait``: no rescan at once."""
        self._start_watcher()
        if not wait and not self._closed.is_set():
            self._background_sync()
        next_full = time.monotonic() + self._rescan_period(interval)
        pending = False
        since = 0.0
        changed: set[Path] = set()
        while not self._closed.wait(TICK):
            now = time.monotonic()
            _, got = self._changes()
            if got:
                changed |= got
                since = since or now
                pending = True
                if now - since < GROUP:
                    continue            # more may be on their way
            if pending:
                pending, since = False, 0.0
                folders, changed = _folders(changed), set()
                # Only the folders the watcher named are synced (a walk of every root costs
                # seconds at 100k skills); on a team server the store hook runs first
                # (``before_sync``: an edit in its copy of the workspace is kept as a version).
                self._background_sync(full=False, only=folders, settle=True)
            elif now >= next_full:
                self._background_sync()
            else:
                continue
            next_full = time.monotonic() + self._rescan_period(interval)

    def _changes(self) -> tuple[Watcher | None, set[Path]]:
        """The watcher (watching the roots as they are now) and the changes it saw since the
        last look. Roots replaced meanwhile (an import registers one) are watched afresh, and
        count as changed; a watcher that fails is dropped (the rescans go on, more often)."""
        w = self._watcher
        if w is None:
            return None, set()
        roots = self._roots()
        if w.roots != roots:
            self._drop_watcher(w)
            return self._start_watcher(), {r.path for r in roots}
        try:
            return w, w.changes()
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # not expected: Watcher.changes handles a failed watch itself
            print(f"skillshelf: watching the roots failed ({exc}); rescanning them instead", file=sys.stderr)
            self._drop_watcher(w)
            return None, {r.path for r in roots}

    def _drop_watcher(self, w: Watcher) -> None:
        with self._watcher_lock:
            if self._watcher is w:
                self._watcher = None
        w.close()

    def _rescan_period(self, interval: float) -> float:
        w = self._watcher
        return interval if w is not None and not w.unwatched else min(interval, UNWATCHED_RESCAN)

    def _background_sync(self, *, full: bool = True, only: set[Path] | None = None, settle: bool = False) -> None:
        """One sync off the request path, its progress kept for ``status``; the search
        state is reloaded here after a change, not in the next query (at 100k skills that is
        seconds an agent would otherwise wait for)."""
        p = self._progress
        if p is None:
            p = self._progress = self._ready_progress()

        def reading(done: int, total: int) -> None:
            p.update(phase="indexing", done=done, total=total)

        def embedding(done: int, total: int) -> None:
            if p["phase"] != "indexing" or p["done"] >= p["total"]:   # the files' count first while they are read
                p.update(phase="embedding", done=done, total=total)

        p.update(phase="scanning", done=0, total=0)
        try:
            rep = self.sync(progress=reading, embed_progress=embedding, full=full, only=only, settle=settle)
            if rep.changed or rep.embedded or p["first"]:
                self.searcher.warm(self.embedder.state()[0])
            p.update(state="ready", error=None)
        except Stopped:
            pass                    # closing: what was committed stays
        except Exception as exc:  # a failed scan must not end the watcher; it is reported
            p.update(state="failed", error=" ".join(str(exc).split())[:300])
            print(f"skillshelf: background sync failed: {exc}", file=sys.stderr)
        finally:
            p.update(phase=None, done=0, total=0, first=False)
            self._unindexed = self._unindexed if only is not None else []

    def warm(self, *, sync: bool = True) -> None:
        """Load the embedding model and the search state now, so that the first query is
        fast (long-running servers). With ``sync`` (an empty index), the files are synced
        first, whose model embeds beside the lexical indexing; otherwise the model loads
        beside the search state (two cores)."""
        if sync:
            self.sync()
        else:
            loader = threading.Thread(target=self.embedder.state, name="skillshelf-model", daemon=True)
            loader.start()
            self.searcher.warm()
            loader.join()
        emb, _ = self.embedder.state()
        self.searcher.warm(emb)

    def close(self, timeout: float | None = None) -> bool:
        """Stop the background threads (a sync in progress stops at its next file or batch)
        and the watches; wait for the threads at most ``timeout`` seconds in all
        (``CLOSE_WAIT``). Returns whether they have ended. Once they have, the library can
        still be used as a one-shot one (its next query scans the roots)."""
        self._closed.set()
        self._stop.set()
        pre = self._prefetch
        if pre is not None:
            # a first index waiting for the model to embed what it queued: drop the rest
            pre.finish(cancel=True)
        deadline = time.monotonic() + (self.CLOSE_WAIT if timeout is None else timeout)
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))
        with self._watcher_lock:
            if self._watcher is not None:
                self._watcher.close()
                self._watcher = None
        ended = not any(t.is_alive() for t in self._threads if t is not threading.current_thread())
        if ended:
            self._stop.clear()
            self.background = False
        return ended

    # --- status ---------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """``state``: ready | indexing (the first index of an empty library) | failed (the last
        background sync; ``error`` says why); ``phase``: None | scanning | indexing (files,
        ``done`` of ``total``) | embedding (texts, ``done`` of ``total``)."""
        p = dict(self._progress or self._ready_progress())
        p.pop("first", None)
        return p

    def note(self) -> str | None:
        """What a query answered now is missing, in words (None: nothing)."""
        return self._note()[0]

    def _note(self) -> tuple[str | None, bool]:
        lag = self.lag() if self.lag is not None else None
        return (lag, True) if lag else describe(self.status(), self._skills.count, self._unindexed,
                                                self.progress_file)

    # --- requests beside an indexing -------------------------------------------------
    def _acquire(self, lock, wait: float | None) -> bool:
        """Take ``lock`` for a request: wait up to ``wait`` seconds (default ``WRITE_WAIT``),
        and longer only while no indexing is under way (a routine rescan ends soon)."""
        deadline = time.monotonic() + (self.WRITE_WAIT if wait is None else wait)
        while not lock.acquire(timeout=0.2):
            if time.monotonic() >= deadline and self.note() is not None:
                return False
        return True

    def _busy(self, what: str, doing: str) -> ConflictError:
        note = self.note()
        return ConflictError(f"{what} has to wait: {doing}" + (f" ({note})" if note else ""),
                             fix="try again in a minute")

    def take_writer(self, wait: float | None = None):
        """Take this process's database writer for a request: its release function (a no-op
        where none is needed), or None while an indexing keeps it busy."""
        lock = getattr(self.store, "_write_lock", None)
        # Only where the request cannot start a sync itself (which would take the sync lock
        # while holding the writer: the order a background sync takes them the other way).
        if lock is None or not (self.background or not self._config().auto_sync):
            return lambda: None
        return lock.release if self._acquire(lock, wait) else None

    @contextlib.contextmanager
    def writer(self, wait: float | None = None, *, what: str = "this write") -> Iterator[None]:
        """Hold the database writer for a request's writes. While an indexing keeps it busy
        for more than ``wait`` seconds (default ``WRITE_WAIT``), raise ``ConflictError`` with
        its progress instead of waiting behind it. Re-entrant: the writes inside take it again."""
        release = self.take_writer(wait)
        if release is None:
            raise self._busy(what, "the index is being written")
        try:
            yield
        finally:
            release()

    @contextlib.contextmanager
    def exclusive(self, wait: float | None = None, *, what: str = "this change") -> Iterator[None]:
        """Hold the sync lock for a request that syncs after writing (saves, reindex): taken
        before the writer, in the order a sync takes them. ``ConflictError`` while an indexing
        keeps it busy for more than ``wait`` seconds."""
        if not self._acquire(self._sync_lock, wait):
            raise self._busy(what, "the library is being indexed")
        try:
            yield
        finally:
            self._sync_lock.release()

    @contextlib.contextmanager
    def logging_writer(self) -> Iterator[bool]:
        """For a server's query: the writer held (True: the query may be logged) unless an
        indexing keeps it busy for more than ``WRITE_WAIT`` seconds, or another process's does (False)."""
        release = self.take_writer(None) if self.progress_file.other() is None else None
        try:
            yield release is not None
        finally:
            if release is not None:
                release()

    def annotate(self, res: SearchResult) -> SearchResult:
        """``res`` with what an indexing under way leaves out in ``degraded`` (and ``partial``)."""
        note, res.partial = self._note()
        if note:
            # while indexing, advice to run a sync ("no vectors yet", "no skills indexed yet") is
            # the note's business, not a fix to apply
            other = res.degraded if res.degraded and "skillshelf sync" not in res.degraded else None
            res.degraded = note + (f"; {other}" if other else "")
        return res
