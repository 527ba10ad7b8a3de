"""``Library``: the one service API. The CLI, the MCP server and the dashboard call these
methods and only format what they return."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import index as indexmod
from . import overlay as overlaymod
from . import skill as skillmod
from . import usage as usagemod
from .catalog import PAGE_MAX, SORTS, Catalog
from .comparisons import DIFF_CONTEXT, Comparisons
from .config import Config, load as load_config
from .errors import (EmbedderError, NotFoundError, SkillshelfError, StoreError, ValidationError,
                     cannot_write_error, write_failure)
from .files import MAX_SKILL_BYTES, FileRefused, read_bounded
from .judge import JudgeMixin
from .learning import LearningMixin
from .search import Searcher, SearchResult
from .sources import Root, current_repo as detect_current_repo, make_roots
from .store import Store
from .store.catalog import CatalogReads, UsageReads
from .store.records import SkillRows
from .records import Clash, FileList, Listing, Records, SkillRecord  # noqa: F401  (re-exported: the facade's values)

SAMPLES = ("cors-fix-nextjs-api", "docker-multi-stage-build", "git-conventional-commits")
# A stat scan of every SKILL.md costs ~0.7 s at 5.3k skills (BENCHMARKS.md: unchanged resync),
# too much to pay before each query. One-shot commands scan before their first query; a
# long-running process (the MCP server) calls ``watch()`` and scans in a background thread.
AUTO_SYNC_INTERVAL = 2.0


@dataclass
class Check:
    name: str
    status: str      # ok | warn | fail
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DoctorReport:
    checks: list[Check]
    roots: list[dict]
    invalid_files: list[dict]
    clashes: list[Clash]
    embedder: dict

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.as_dict() for c in self.checks], "roots": self.roots,
                "invalid_files": self.invalid_files, "clashes": [c.as_dict() for c in self.clashes],
                "embedder": self.embedder}


if TYPE_CHECKING:   # pragma: no cover
    from .archive import ExportReport, ImportReport, SkillFiles
    from .pick import PickResult

def explain(exc: BaseException, *, db_path: Path | None = None, home: object = "the library folder") \
        -> SkillshelfError | None:
    """The library's own error for an exception that escaped it raw: a damaged index (named with
    ``skillshelf rebuild``) or a write the disk or a lock refused (``errors.cannot_write_error``);
    None for anything else. Adapters call this instead of reaching into the store."""
    from .store import damaged, damaged_error

    if damaged(exc):
        return damaged_error(Path(db_path or "skillshelf.db"), exc)
    return cannot_write_error(exc, home)


class Library(JudgeMixin, LearningMixin):
    """A skill library: a home (workspace + database) plus read-only roots.

    ``Library(home=PATH, roots=[PATH, ...])`` opens it; ``sync()`` brings the index up to
    date with the files; ``search()`` finds skills."""

    SORTS = SORTS          # the orders ``browse`` accepts
    PAGE_MAX = PAGE_MAX    # the largest page ``browse`` returns

    def __init__(self, home: str | Path | None = None, roots: list[str | Path] | None = None, *,
                 config: Config | None = None, embedder: Any = None, client: str | None = None,
                 **overrides: Any):
        if isinstance(embedder, str):  # a backend name is a setting; an instance is used as is
            overrides["embedder"], embedder = embedder, None
        self.config = config or load_config(home, roots=roots or None, **overrides)
        # A saved root that has gone (unmounted, deleted) must not break every command, the
        # fix (`roots remove`) included: it is left out and reported (``missing_roots``,
        # doctor). A root given for this call only must exist (make_roots raises).
        self.missing_roots = self.config.missing_roots()
        gone = {m.path for m in self.missing_roots}
        self.roots: list[Root] = make_roots(self.config.workspace, [p for p in self.config.roots if p not in gone],
                                            include_clients=self.config.client_roots)
        try:
            self.config.workspace.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            from .errors import ConfigError

            raise ConfigError(f"cannot create the library's home {self.config.home}: {exc.strerror or exc}",
                              fix="pass --home (or SKILLSHELF_HOME) with a folder you can write to") from None
        self.store = Store(self.config.db_path)
        self._records = Records(SkillRows(self.store), roots=lambda: self.roots,
                                overlay_of=lambda sid: overlaymod.get(self.store.db, sid),
                                before_read=lambda: self._maybe_sync(), canonical=self.config.canonical_prefixes)
        self._catalog = Catalog(CatalogReads(self.store), UsageReads(self.store), resolve=self.get, search=self.search,
                                stats=self.stats, root_label=self._root_label, rows_by_name=self._rows_by_name,
                                per_skill_usage=lambda sid, name: usagemod.per_skill_usage(self.store, sid, name),
                                list_drafts=lambda: self.review.list(), roots=lambda: self.roots)
        self._compare = Comparisons(resolve=self.get, diff=self.diff, evolver=lambda: self.evolver, review=lambda: self.review)
        self.client = client
        self._embedder = embedder
        self._embedder_error: str | None = None
        self._embedder_lock = threading.Lock()
        self._last_check = 0.0
        self._watching = False
        self._sync_lock = threading.RLock()   # re-entered by _maybe_sync around sync()
        self.searcher = Searcher(self.store, self.config.search, embedder_provider=self._embedder_state,
                                 canonical=self.config.canonical_prefixes)

    # --- lifecycle ------------------------------------------------------------------
    def close(self) -> None:
        self._watching = False
        self.store.close()

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def init(cls, home: str | Path | None = None, *, samples: bool = True, **kw: Any) -> "Library":
        """Create the home, database and (once) the three sample skills."""
        lib = cls(home, **kw)
        if samples:
            for name in SAMPLES:
                dest = lib.config.workspace / name / "SKILL.md"
                if dest.exists():
                    continue
                src = resources.files("skillshelf") / "samples" / name / "SKILL.md"
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
        return lib

    @classmethod
    def rebuild(cls, home: str | Path | None = None, **kw: Any) -> tuple["Library", Path | None]:
        """Move the database aside (when it is damaged or unwanted) and index the files into a
        new one: the files are the truth. Returns the library and where the old file went.
        Usage history lives in the database: it stays in the moved-aside file."""
        cfg = kw.pop("config", None) or load_config(home, **{k: v for k, v in kw.items() if k in ("roots",)})
        moved = None
        if cfg.db_path.exists():
            stamp = time.strftime("%Y%m%d-%H%M%S")
            moved = cfg.db_path.with_name(f"{cfg.db_path.name}.damaged-{stamp}")
            for suffix in ("", "-wal", "-shm"):
                src = Path(str(cfg.db_path) + suffix)
                if src.exists():
                    os.replace(src, Path(str(moved) + suffix))
        lib = None
        try:
            lib = cls(config=cfg, **{k: v for k, v in kw.items() if k not in ("roots",)})
            lib.sync()
        except BaseException:
            # The new index could not be built (a full disk, a write refused): the old file
            # goes back where it was, so a library that could still be read still can.
            if lib is not None:
                lib.close()
            if moved is not None:
                for suffix in ("", "-wal", "-shm"):
                    new, old = Path(str(cfg.db_path) + suffix), Path(str(moved) + suffix)
                    with contextlib.suppress(OSError):
                        new.unlink()
                    if old.exists():
                        os.replace(old, new)
            raise
        return lib, moved

    # --- embedder -------------------------------------------------------------------
    def _embedder_state(self):
        """(embedder or None, reason when degraded). Loads the backend on first use."""
        with self._embedder_lock:
            if self._embedder is not None:
                return self._embedder, None
            if self._embedder_error is not None:
                return None, self._embedder_error
            name = self.config.embedder
            if name == "none":
                self._embedder_error = "embedder is 'none': lexical-only search"
                return None, self._embedder_error
            from .embeddings import create

            try:
                emb = create(name, model=self.config.embedder_model, url=self.config.embedder_url,
                             api_key=self.config.embedder_api_key, model_path=self.config.embedder_path,
                             precision=self.config.embedder_precision)
                emb.load()
            except EmbedderError as exc:
                self._embedder_error = f"embedder {name!r} unavailable ({exc}): lexical-only search"
                print(f"skillshelf: {self._embedder_error}", file=sys.stderr)
                return None, self._embedder_error
            self._embedder = emb
            return emb, None

    def warm(self, *, sync: bool = True) -> None:
        """Load the embedding model and the search state now, so that the first query is
        fast (long-running servers). With ``sync`` (an empty index), the files are synced
        first by ``sync()``, whose model embeds beside the lexical indexing; otherwise the
        model loads beside the search state (two cores)."""
        if sync:
            self.sync()
        else:
            loader = threading.Thread(target=self._embedder_state, name="skillshelf-model", daemon=True)
            loader.start()
            self.searcher.warm()
            loader.join()
        emb, _ = self._embedder_state()
        self.searcher.warm(emb)

    def embedder_status(self) -> dict[str, Any]:
        emb, reason = self._embedder_state()
        total = self.store.db.execute("SELECT COUNT(*) FROM skills").fetchone()[0]
        if emb is None:
            return {"name": self.config.embedder, "ok": False, "degraded": reason, "skills": total, "vectors": 0}
        counts = dict(self.store.db.execute("""SELECT v.part, COUNT(*) FROM skill_vectors v JOIN embeddings e
            ON e.text_hash=v.text_hash AND e.model_id=? GROUP BY v.part""", (emb.model_id,)).fetchall())
        return {"name": self.config.embedder, "ok": True, "model_id": emb.model_id, "dimensions": emb.dimensions,
                "degraded": None, "skills": total, "vectors": counts.get(0, 0), "body_vectors": counts.get(1, 0),
                "body_vector_tokens": self.config.search.body_vector_tokens}

    # --- sync -----------------------------------------------------------------------
    def sync(self, *, progress=None, embed: bool = True, embed_progress=None) -> indexmod.SyncReport:
        with self._sync_lock:
            t0 = time.perf_counter()
            # A local model embeds the changed skills while the lexical index is being built.
            emb = self._embedder_state()[0] if embed else None
            pre = indexmod.Prefetch(self.store, emb, self.config.search.body_vector_tokens) \
                if emb is not None and emb.local else None
            try:
                report = indexmod.sync(self.store, self.roots, progress=progress,
                                       on_skill=pre.add if pre else None, exclude=(self.config.home,))
            finally:
                ready = pre.finish() if pre else None
            self._clean_temp_files(report)
            if embed:
                self._embed_pending(report, embed_progress, ready)
            self._last_check = time.monotonic()
            report.seconds = time.perf_counter() - t0    # the whole sync, embedding included
            return report

    TEMP_AGE = 600.0

    def _clean_temp_files(self, report: indexmod.SyncReport) -> None:
        """Remove ``.tmp-*`` files an interrupted write (kill -9, power loss) left in the
        library's own folders; only old ones, never a write in progress."""
        now = time.time()
        if now - getattr(self, "_temp_cleaned", 0.0) < self.TEMP_AGE:
            return
        self._temp_cleaned = now
        for base in (self.config.workspace, self.config.home / "history", self.config.drafts):
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

    def _embed_pending(self, report: indexmod.SyncReport, progress=None, ready=None) -> None:
        emb, _ = self._embedder_state()
        if emb is None:
            return
        try:
            report.embedded = indexmod.embed_pending(self.store, emb, progress=progress, ready=ready,
                                                       body_tokens=self.config.search.body_vector_tokens)
        except EmbedderError as exc:
            # a backend that fails here would fail every query: go lexical-only, loudly
            report.notes.append(f"embedding failed: {exc}")
            with self._embedder_lock:
                self._embedder = None
                self._embedder_error = f"embedder failed: {exc}: lexical-only search"

    def _maybe_sync(self, *, embed: bool = False) -> None:
        """Pick up editor changes: a stat scan at most every AUTO_SYNC_INTERVAL seconds
        (never on the query path when a watcher thread does it). The model is loaded to
        embed only what changed, or with ``embed`` (a search, which needs it anyway) to
        fill any missing vector: listing or reading skills never loads it for nothing."""
        if not self.config.auto_sync or self._watching or self.store.read_only:
            return   # (a database open read-only cannot take what a scan finds: doctor says so)
        if time.monotonic() - self._last_check < AUTO_SYNC_INTERVAL:
            return
        with self._sync_lock:
            try:
                report = self.sync(embed=embed)
            except (OSError, sqlite3.OperationalError, StoreError) as exc:
                if isinstance(exc, StoreError) and "damaged" in exc.message:
                    raise
                # a full disk or a read-only database must not stop reads: serve the index as
                # it is and say so once
                self._last_check = time.monotonic()
                if not getattr(self, "_sync_warned", False):
                    self._sync_warned = True
                    print(f"skillshelf: could not update the index ({exc}); serving it as it is",
                          file=sys.stderr)
                return
            if not embed and report.changed:
                self._embed_pending(report)

    def watch(self, interval: float = 3.0, *, now: bool = False) -> None:
        """Rescan the roots every ``interval`` seconds in a daemon thread (``now``: the first
        scan at once)."""
        if self._watching or not self.config.auto_sync:
            return
        self._watching = True
        threading.Thread(target=self._watch_loop, args=(interval, 0.0 if now else interval),
                         name="skillshelf-watch", daemon=True).start()

    def _watch_loop(self, interval: float, wait: float) -> None:
        while self._watching:
            time.sleep(wait)
            wait = interval
            self._background_sync()

    # --- background indexing (long-running servers) -----------------------------------
    # A server opens the library (the Store and the searcher: fast) and answers at once;
    # ``start_indexing`` brings the index up to date in a daemon thread. Queries meanwhile
    # answer from what the index has committed, and ``indexing_note()`` says how far it is.
    _indexer: threading.Thread | None = None
    _progress: dict[str, Any] | None = None
    WRITE_WAIT = 2.0   # seconds a server request waits for the database writer

    def start_indexing(self, interval: float = 3.0) -> None:
        """Index in a daemon thread, then keep the index up to date (``watch``) when
        ``auto_sync`` is on. Returns at once. An empty index is synced first (the model
        embeds beside it); otherwise the model and search state load first and the files are
        rescanned right after (changes made while the server was down show up soon)."""
        if self._indexer is not None:
            return
        fresh = self.count() == 0
        self._progress = {"first": fresh, "state": "indexing" if fresh else "ready",
                          "phase": "scanning" if fresh else None, "done": 0, "total": 0, "error": None}
        watch = self.config.auto_sync and not self._watching
        if watch:
            self._watching = True   # from now on no query syncs on the request path

        def run() -> None:
            if fresh:
                self._background_sync()
            else:
                try:
                    self.warm(sync=False)
                except Exception as exc:  # reported; the watcher and the queries go on
                    print(f"skillshelf: loading the search state failed: {exc}", file=sys.stderr)
            if watch:
                self._watch_loop(interval, interval if fresh else 0.0)

        self._indexer = threading.Thread(target=run, name="skillshelf-index", daemon=True)
        self._indexer.start()

    def _background_sync(self) -> None:
        """One sync off the request path, its progress kept for ``indexing_status``; the
        search state is reloaded here after a change, not in the next query (at 100k skills
        that is seconds an agent would otherwise wait for)."""
        p = self._progress
        if p is None:
            p = self._progress = {"first": False, "state": "ready", "phase": None, "done": 0, "total": 0,
                                  "error": None}

        def reading(done: int, total: int) -> None:
            p.update(phase="indexing", done=done, total=total)

        def embedding(done: int, total: int) -> None:
            p.update(phase="embedding", done=done, total=total)

        p.update(phase="scanning", done=0, total=0)
        try:
            rep = self.sync(progress=reading, embed_progress=embedding)
            if rep.changed or rep.embedded or p["first"]:
                self.searcher.warm(self._embedder_state()[0])
            p.update(state="ready", error=None)
        except Exception as exc:  # a failed scan must not end the watcher; it is reported
            p.update(state="failed", error=" ".join(str(exc).split())[:300])
            print(f"skillshelf: background sync failed: {exc}", file=sys.stderr)
        finally:
            p.update(phase=None, done=0, total=0, first=False)

    def indexing_status(self) -> dict[str, Any]:
        """``state``: ready | indexing (the first index of an empty library) | failed (the last
        background sync; ``error`` says why); ``phase``: None | scanning | indexing (files,
        ``done`` of ``total``) | embedding (texts, ``done`` of ``total``)."""
        p = dict(self._progress or {"state": "ready", "phase": None, "done": 0, "total": 0, "error": None})
        p.pop("first", None)
        return p

    def indexing_note(self) -> str | None:
        """What a query answered now is missing, in words (None: nothing)."""
        p = self.indexing_status()
        phase, done, total = p["phase"], p["done"], p["total"]
        if phase == "scanning" and p["state"] == "indexing":
            return "indexing has just started (finding the skill files); results are partial"
        if phase == "indexing" and total and done < total:
            return (f"indexing {done:,} of {total:,} skills ({self.count():,} searchable so far); "
                    "results are partial and lexical-only until vectors exist")
        if phase == "indexing" and total:
            return f"indexed {total:,} skills, computing their vectors: results are lexical-only until then"
        if phase == "embedding" and total:
            return f"embedding {done:,} of {total:,} texts; results are lexical-only until it finishes"
        if p["state"] == "failed":
            return f"the last indexing failed ({p['error']}); results may be stale: run `skillshelf sync` to see why"
        return None

    def _acquire(self, lock, wait: float | None) -> bool:
        """Take ``lock`` for a request: wait up to ``wait`` seconds (default ``WRITE_WAIT``),
        and longer only while no indexing is under way (a routine rescan ends soon)."""
        deadline = time.monotonic() + (self.WRITE_WAIT if wait is None else wait)
        while not lock.acquire(timeout=0.2):
            if time.monotonic() >= deadline and self.indexing_note() is not None:
                return False
        return True

    def _busy(self, what: str, doing: str):
        from .errors import ConflictError

        note = self.indexing_note()
        return ConflictError(f"{what} has to wait: {doing}" + (f" ({note})" if note else ""),
                             fix="try again in a minute")

    def _take_writer(self, wait: float | None):
        """Take this process's database writer for a request: its release function (a no-op
        where none is needed), or None while an indexing keeps it busy."""
        lock = getattr(self.store, "_write_lock", None)
        # Only where the request cannot start a sync itself (which would take the sync lock
        # while holding the writer: the order a background sync takes them the other way).
        if lock is None or not (self._watching or not self.config.auto_sync):
            return lambda: None
        return lock.release if self._acquire(lock, wait) else None

    @contextlib.contextmanager
    def writer(self, wait: float | None = None, *, what: str = "this write") -> Iterator[None]:
        """Hold the database writer for a request's writes. While an indexing keeps it busy
        for more than ``wait`` seconds (default ``WRITE_WAIT``), raise ``ConflictError`` with
        its progress instead of waiting behind it. Re-entrant: the writes inside take it again."""
        release = self._take_writer(wait)
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

    def search_nowait(self, query: str, **kw: Any) -> SearchResult:
        """``search`` for a long-running server: while the writer is busy with an index
        transaction for more than ``WRITE_WAIT`` seconds, the query is answered without being
        logged (no ``query_id``), and ``degraded`` says how far a background indexing is."""
        release = self._take_writer(None)
        try:
            res = self.search(query, log=release is not None, **kw)
        finally:
            if release is not None:
                release()
        note = self.indexing_note()
        if note:
            # while indexing, advice to run a sync ("no vectors yet", "no skills indexed yet") is
            # the note's business, not a fix to apply
            other = res.degraded if res.degraded and "skillshelf sync" not in res.degraded else None
            res.degraded = note + (f"; {other}" if other else "")
        return res

    # --- reading --------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 10, mode: str = "find", repo_scope: str = "all",
               current_repo: str | None = None, tags: list[str] | str | None = None,
               skill_type: str | None = None, include_inactive: bool = False, include_expired: bool = False,
               log: bool = True, client: str | None = None) -> SearchResult:
        self._maybe_sync(embed=True)
        if isinstance(tags, str):
            tags = [t for t in tags.split(",") if t.strip()]
        if repo_scope == "current" and not current_repo:
            current_repo = detect_current_repo()
        # The anti-repeat policy spreads different requests over the collection; a repeat of
        # this same request is left out of it, so asking again gives the same answer.
        recent = usagemod.recent_counts(self.store, self.config.search.recency_window, exclude_request=query)
        worked = (lambda ids: usagemod.worked_latest(self.store, ids)) if recent else None
        result = self.searcher.search(query, limit=limit, mode=mode, repo_scope=repo_scope,
                                      current_repo=current_repo, tags=tags, skill_type=skill_type,
                                      include_inactive=include_inactive, include_expired=include_expired,
                                      recent=recent, worked=worked)
        if log:
            filters = {k: v for k, v in dict(repo_scope=repo_scope, current_repo=current_repo, tags=tags,
                                                skill_type=skill_type).items() if v and v != "all"}
            try:
                result.query_id = usagemod.log_query(
                    self.store, text=query, mode=mode, filters=filters, client=client or self.client,
                    confident=result.confident, degraded=result.degraded is not None, hits=result.hits,
                    latency_ms=result.latency_ms, hash_text=self.config.hash_queries)
                # kept in memory so a report on this request is learned without embedding it again
                self._remember_vector(result.query_id, result.request_vector)
            except Exception as exc:
                # A read must keep working when the log cannot be written (disk full, read-only
                # database or file system): the hits are returned and `degraded` says what is
                # missing. Any other error is raised.
                reason = write_failure(exc)
                if reason is None:
                    raise
                note = (f"usage not recorded ({reason}): the hits are complete"
                        + ("" if self.store.read_only else "; report_outcome without a query_id"))
                result.degraded = f"{result.degraded}; {note}" if result.degraded else note
                print(f"skillshelf: {note}", file=sys.stderr)
        return result

    # --- reading --------------------------------------------------------------------
    def _rows_by_name(self, name: str) -> list:
        return self._records.rows_by_name(name)

    def get(self, name_or_id: str) -> SkillRecord:
        """The skill with this id, or the one that wins for this name (see ``sources``)."""
        return self._records.get(name_or_id)

    def read(self, name_or_id: str, section: str | None = None) -> tuple[SkillRecord, str]:
        """The skill and its body, or only the named section of the body."""
        return self._records.read(name_or_id, section)

    def suggest(self, text: str, n: int = 3) -> list[str]:
        return self._records.suggest(text, n)

    def list(self, *, root: str | None = None, skill_type: str | None = None, tag: str | None = None,
             name_contains: str | None = None, include_inactive: bool = True, invalid_only: bool = False,
             limit: int | None = None) -> Listing:
        """Skills matching every filter given, by name. ``root`` is a root's label or its path;
        an unknown root or skill type is an error naming the valid ones (not an empty list).
        The result's ``matched`` counts every match, also past ``limit``."""
        return self._records.list(root=root, skill_type=skill_type, tag=tag, name_contains=name_contains,
                                  include_inactive=include_inactive, invalid_only=invalid_only, limit=limit)

    def _root_label(self, root: str) -> str:
        return self._records.root_label(root)

    def count(self) -> int:
        return self._records.count()

    def invalid_files(self) -> list[dict]:
        return self._records.invalid_files()

    def clashes(self) -> list[Clash]:
        return self._records.clashes()

    # --- validation -----------------------------------------------------------------
    @staticmethod
    def validate_paths(paths: list[str | Path]) -> list[tuple[str, list[skillmod.Finding]]]:
        """Findings for each SKILL.md at or under the paths."""
        files: list[Path] = []
        for p in paths:
            p = Path(p)
            if p.is_dir():
                direct = [p / n for n in ("SKILL.md", "skill.md") if (p / n).is_file()]
                files.extend(direct[:1] or sorted(x for x in p.rglob("*") if x.name in ("SKILL.md", "skill.md")))
            elif p.exists() or p.is_symlink():
                files.append(p)      # a special file or a broken link is reported by the read below
            else:
                raise NotFoundError(f"{p} does not exist", fix="pass a SKILL.md file or a folder of skills")
        out = []
        for f in files:
            try:
                parsed = skillmod.parse(read_bounded(f, MAX_SKILL_BYTES), folder_name=f.absolute().parent.name)
            except FileRefused as exc:
                out.append((str(f), [skillmod.Finding("fatal", exc.rule, exc.message)]))
                continue
            except OSError as exc:   # one unreadable file (a link loop, no permission) fails only itself
                out.append((str(f), [skillmod.Finding("fatal", "file.unreadable",
                                                      f"cannot read: {exc.strerror or exc}")]))
                continue
            out.append((str(f), parsed.findings))
        return out

    # --- health ---------------------------------------------------------------------
    def doctor(self) -> DoctorReport:
        self._maybe_sync()
        checks: list[Check] = []
        cfg = self.config
        checks.append(Check("home", "ok", str(cfg.home)))
        checks.append(Check("config", "ok", str(cfg.config_path) if cfg.config_path.exists()
                            else f"{cfg.config_path} (absent: defaults in use)"))
        integrity = self.store.quick_check()
        unwritable = self.store.cannot_write() if integrity == "ok" else None
        if unwritable:
            checks.append(Check("database", "warn", f"{cfg.db_path} is read-only here ({unwritable}):"
                                " searches and reads work; saves, reports and re-indexing fail until the disk has"
                                " room or the folder is writable"))
        elif integrity == "ok":
            checks.append(Check("database", "ok",
                                f"{cfg.db_path}; migrations: {', '.join(self.store.applied_migrations())}"))
        else:
            checks.append(Check("database", "fail", f"{cfg.db_path} is damaged ({integrity[:200]}): run "
                                "`skillshelf rebuild` to move it aside and re-index the files"))
        checks.append(Check("write policy", "ok", cfg.write_policy))
        for m in self.missing_roots:
            # its skills have left the index: the owner has to restore the folder or forget it
            checks.append(Check("missing root", "fail", f"{m.message}: its skills are not indexed; {m.fix}"))
        found, notes = indexmod.scan(self.roots, (self.config.home,))
        roots = []
        for r in self.roots:
            n = sum(1 for f in found if f.root.label == r.label)
            roots.append({"label": r.label, "path": str(r.path), "kind": r.kind, "writable": r.writable,
                          "exists": r.path.is_dir(), "skill_files": n})
        for m in self.missing_roots:
            roots.append({"label": "-", "path": str(m.path), "kind": "missing", "writable": False,
                          "exists": False, "skill_files": 0})
        indexed = {row[0] for row in self.store.db.execute("SELECT id FROM skills")}
        invalid = self.invalid_files()
        on_disk = {f.id for f in found}
        invalid_paths = {i["path"] for i in invalid}
        stale_missing = len([f for f in found if f.id not in indexed and str(f.path) not in invalid_paths])
        stale_extra = len(indexed - on_disk)
        if stale_missing or stale_extra:
            checks.append(Check("index vs files", "warn",
                                f"{stale_missing} files not indexed, {stale_extra} rows without a file: run `skillshelf sync`"))
        else:
            # the files not indexed are the invalid ones, listed by the next check
            n, m = len(indexed), len(found)
            line = f"{n} skill{'s' * (n != 1)} indexed from {m} file{'s' * (m != 1)}"
            if m > n:
                line += f" ({m - n} invalid: see below)" if invalid else f" ({m - n} not indexed)"
            checks.append(Check("index vs files", "ok", line))
        checks.append(Check("invalid files", "warn" if invalid else "ok",
                            f"{len(invalid)} SKILL.md files could not be parsed" if invalid else "none"))
        for note in notes:
            checks.append(Check("scan", "warn", note))
        clashes = self.clashes()
        checks.append(Check("name clashes", "warn" if clashes else "ok",
                            f"{len(clashes)} names are used by more than one skill; lookups by name take the"
                            " winner by precedence" if clashes else "none"))
        emb = self.embedder_status()
        if not emb["ok"]:
            checks.append(Check("embedder", "warn", emb["degraded"]))
        elif emb["vectors"] < emb["skills"]:
            checks.append(Check("embedder", "warn", f"{emb['model_id']}: {emb['vectors']}/{emb['skills']} skills "
                                "embedded: run `skillshelf sync`"))
        else:
            checks.append(Check("embedder", "ok", f"{emb['model_id']} ({emb['dimensions']} dims), "
                                f"{emb['vectors']} skills embedded, {emb['body_vectors']} body vectors"
                                f" ({emb['body_vector_tokens']} tokens)"))
        checks.append(self.judge_check())
        return DoctorReport(checks, roots, invalid, clashes, emb)

    # --- usage ----------------------------------------------------------------------
    def report_outcome(self, skill: str, worked: bool, *, note: str = "", query_id: int | str | None = None,
                       client: str | None = None) -> dict[str, Any]:
        """Record whether a skill worked (append-only)."""
        if not isinstance(worked, bool):
            raise ValidationError("worked must be true or false", fix="pass worked=true or worked=false")
        if note and len(note) > 4000:
            raise ValidationError("note is over 4000 characters", fix="shorten the note")
        rec = self.get(skill)
        qid = None
        if query_id not in (None, ""):
            try:
                qid = int(query_id)
            except (TypeError, ValueError):
                raise ValidationError(f"query id {query_id!r} is not a number",
                                      fix="pass the query id a search returned, or leave it empty") from None
            # past SQLite's integers no query can have the id (and the lookup itself would overflow)
            if not 1 <= qid < 2**63 or not self.store.db.execute("SELECT 1 FROM queries WHERE id=?",
                                                                 (qid,)).fetchone():
                raise NotFoundError(f"no query with id {qid}", fix="pass the query id a search returned, or none")
        oid = usagemod.log_outcome(self.store, skill_id=rec.id, name=rec.name, worked=worked, note=note,
                                   query_id=qid, client=client or self.client)
        # Kept for ranking (learning.py) when it names the request it answers: later requests
        # that mean the same thing see it. Learning is a derived copy; a failure to write it
        # leaves the logged outcome in place.
        try:
            learned = self._learn_outcome(oid, rec.id, rec.name, worked, qid, client or self.client)
        except EmbedderError:
            learned = False         # the model failed to place the request: logged, not learned
        except Exception as exc:
            if write_failure(exc) is None:
                raise
            learned = False
        u = usagemod.per_skill_usage(self.store, rec.id, rec.name)
        return {"outcome_id": oid, "skill": rec.name, "id": rec.id, "worked": worked,
                "reports": u.reports, "success_rate": None if u.success_rate is None else round(u.success_rate, 3),
                "learned": learned}

    def stats(self, *, since: str | None = None) -> usagemod.Stats:
        return usagemod.compute_stats(self.store, since=since, min_uses=self.config.low_success_min_uses,
                                      low_rate=self.config.low_success_rate)

    def usage_report(self, *, since: str | None = None, fmt: str = "md") -> str:
        if fmt not in ("md", "json"):
            raise ValidationError(f"unknown report format {fmt!r}", fix="use md or json")
        return usagemod.render_report(self.stats(since=since), fmt=fmt)

    def prune_usage(self, before: str) -> int:
        try:
            return usagemod.prune(self.store, before)
        except ValueError:
            raise ValidationError(f"{before!r} is not a date", fix="use YYYY-MM-DD") from None

    # --- configuration ----------------------------------------------------------------
    def configured_roots(self) -> list[str]:
        """Roots saved in config.toml (not the ones from the environment or given for one
        command), including any that no longer exist."""
        from .config import saved_roots

        return [str(p) for p in saved_roots(self.config.home)]

    def add_root(self, path: str | Path) -> list[str]:
        """Save a read-only root in config.toml so every later command and the server use it."""
        from .config import save_setting
        from .errors import ConfigError

        p = Path(path).expanduser().resolve()
        if not p.exists():
            raise ConfigError(f"{p} does not exist", fix="pass the folder that holds skill folders")
        if not p.is_dir():
            raise ConfigError(f"{p} is not a folder", fix="pass the folder that holds skill folders")
        roots = self.configured_roots()
        if str(p) not in roots:
            roots.append(str(p))
            save_setting(self.config.home, "roots", roots)
        return roots

    def remove_root(self, path: str | Path) -> list[str]:
        """Forget a saved root, given by its path (it may no longer exist) or its label."""
        from .config import save_setting

        roots = self.configured_roots()
        wanted = Path(path).expanduser()
        target = wanted.resolve()  # strict=False: a root that has gone still resolves
        by_label = {r.label: str(r.path) for r in self.roots if r.kind == "other"}
        match = [r for r in roots if Path(r).expanduser().resolve() == target]
        if not match and str(path) in by_label:
            match = [r for r in roots if Path(r).expanduser().resolve() == Path(by_label[str(path)])]
        if not match:
            raise NotFoundError(f"{target} is not a saved root", suggestions=roots[:3] or None,
                                fix=None if roots else "no roots are saved (see `skillshelf roots list`)")
        roots = [r for r in roots if r not in match]
        save_setting(self.config.home, "roots", roots or None)
        return roots

    # --- evolution ------------------------------------------------------------------
    @property
    def evolver(self):
        from .evolve import Evolver

        if getattr(self, "_evolver", None) is None:
            self._evolver = Evolver(self)
        return self._evolver

    @property
    def review(self):
        """The review queue of drafts (``propose`` policy)."""
        from .evolve import ReviewQueue

        return ReviewQueue(self.evolver)

    def save(self, action: str, *, name: str = "", description: str = "", body: str = "",
             skill_type: str = "", lesson: str = "", repo_name: str = "", tags: str | list[str] = "",
             reason: str = "", target_skill_name: str = "", source_skill_names: str | list[str] = "",
             ttl_days: int | None = None, display_name: str = "", author: str = "",
             replace_body: bool = False, by: str = "agent"):
        """ARCHIVE | FIX | DERIVE | MERGE. ``by='agent'`` is subject to the write policy;
        ``by='person'`` (the CLI, the dashboard) writes directly. A FIX keeps the sections its
        body does not resend and adds to Lessons Learned; with ``replace_body`` (a person
        editing the whole text) the body sent replaces the old one as it is."""
        from .errors import PolicyError

        args = dict(action=action, name=name, description=description, body=body, skill_type=skill_type,
                    lesson=lesson, repo_name=repo_name, tags=tags, reason=reason,
                    target_skill_name=target_skill_name, source_skill_names=source_skill_names,
                    ttl_days=ttl_days, display_name=display_name, author=author)
        if replace_body:
            args["replace_body"] = True
        if by == "agent":
            policy = self.config.write_policy
            if policy == "read-only":
                raise PolicyError("this library is read-only for agents: skills cannot be saved",
                                  fix="report outcomes with report_outcome; the owner can allow writes with "
                                      "write_policy = 'propose' or 'open'")
            if policy == "propose":
                return self.review.propose(args)
        return self.evolver.apply(args, trigger=by)

    def history(self, name: str) -> dict[str, Any]:
        rec = self.get(name)
        h = self.evolver.history
        return {"name": rec.name, "id": rec.id, "current_version": rec.version, "versions": h.versions(rec.name),
                "changelog": [e.as_dict() for e in h.changelog(rec.name)], "lineage": rec.lineage}

    def diff(self, name: str, v1: int, v2: int) -> str:
        return self.evolver.history.diff(self.get(name).name, int(v1), int(v2))

    def rollback(self, name: str, version: int, *, author: str = ""):
        return self.evolver.rollback(name, int(version), author=author)

    def extend_ttl(self, name: str, days: int):
        return self.evolver.extend_ttl(name, int(days))

    def deprecate(self, name: str, reason: str) -> dict[str, Any]:
        return self.evolver.deprecate(name, reason)

    def delete(self, name: str) -> dict[str, Any]:
        return self.evolver.delete(name)

    # --- browsing and comparisons (the dashboard's views) --------------------------------
    def browse(self, *, root: str | None = None, repo: str | None = None, skill_type: str | None = None,
               tag: str | None = None, status: str = "any", expired: bool | None = None, query: str | None = None,
               sort: str = "name", descending: bool = False, offset: int = 0, limit: int = 50):
        """One page of skills matching every filter (``Catalog.browse``)."""
        return self._catalog.browse(root=root, repo=repo, skill_type=skill_type, tag=tag, status=status,
                                    expired=expired, query=query, sort=sort, descending=descending, offset=offset,
                                    limit=limit)

    def facets(self, *, top_tags: int = 60) -> dict[str, Any]:
        return self._catalog.facets(top_tags=top_tags)

    def overview(self, *, days: int = 30, weeks: int = 12, top: int = 8) -> dict[str, Any]:
        import datetime as _dt

        since = (_dt.date.today() - _dt.timedelta(days=days)).isoformat()
        return self._catalog.overview(days=days, weeks=weeks, top=top, judge=self.judge_stats(since=since))

    def curation(self, *, top: int = 25, drafts: list[dict] | None = None, since: str | None = None) -> dict[str, Any]:
        return self._catalog.curation(top=top, drafts=drafts, since=since)

    def flywheel(self, *, days: int = 30, weeks: int = 12) -> dict[str, Any]:
        return self._catalog.flywheel(days=days, weeks=weeks)

    def catalog_warm(self) -> None:
        self._catalog.catalog_warm()

    def skill_usage(self, name_or_id: str, *, limit: int = 50) -> dict[str, Any]:
        return self._catalog.skill_usage(name_or_id, limit=limit)

    def copies(self, name_or_id: str) -> list[dict[str, Any]]:
        return self._catalog.copies(name_or_id)

    def lineage(self, name_or_id: str) -> dict[str, Any]:
        return self._catalog.lineage(name_or_id)

    def version_text(self, name_or_id: str, version: int) -> str:
        return self._compare.version_text(name_or_id, version)

    def compare(self, name_or_id: str, v1: int, v2: int, *, context: int = DIFF_CONTEXT) -> dict[str, Any]:
        return self._compare.compare(name_or_id, v1, v2, context=context)

    def draft_review(self, name: str, *, context: int = DIFF_CONTEXT) -> dict[str, Any]:
        return self._compare.draft_review(name, context=context)

    @staticmethod
    def validate_text(text: str, *, folder_name: str | None = None) -> dict[str, Any]:
        return Comparisons.validate_text(text, folder_name=folder_name)

    def check_save(self, action: str, **args: Any) -> dict[str, Any]:
        return self._compare.check_save(action, **args)

    def skill_text(self, name_or_id: str) -> str:
        return self._compare.skill_text(name_or_id)

    # --- onboarding: export, import, pick (archive.py and pick.py, imported when called) ----
    def export_skills(self, names: list[str] | tuple[str, ...] = (), *, all_skills: bool = False,
                      to: str | Path) -> "ExportReport":
        """Write the named skills (or ``all_skills``: every name, the skill a lookup by name
        finds) to a folder, a ``.zip`` or a ``.tar.gz``, with ``manifest.json`` (names, ids,
        versions, the sha256 of every file)."""
        from .archive import export_skills

        return export_skills(self, list(names), all_skills=all_skills, to=to)

    def import_skills(self, source: str | Path, *, mode: str = "copy", replace: bool = False,
                      dry_run: bool = False) -> "ImportReport":
        """Import the skills of a folder, ``.zip`` or ``.tar.gz``: ``mode='copy'`` into the
        workspace (a name already taken is skipped unless ``replace``, which makes the
        imported text a new version through FIX), ``mode='root'`` as a read-only root.
        Unsafe archives are refused as a whole before anything is written."""
        from .archive import import_skills

        return import_skills(self, source, mode=mode, replace=replace, dry_run=dry_run)

    def pick(self, project: str | Path, *, limit: int = 8) -> "PickResult":
        """The few skills worth installing directly in a client for this project, each with
        the signal or the outcome that chose it."""
        from .pick import pick

        return pick(self, project, limit=limit)

    def skill_folder(self, name_or_id: str) -> tuple[Any, "SkillFiles"]:
        """A skill and its files read into memory (``SKILL.md`` and the others), for copying."""
        from .archive import skill_files

        rec = self.get(name_or_id)
        return rec, skill_files(rec.folder, Path(rec.path).name)
