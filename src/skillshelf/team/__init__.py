"""The team workspace: several servers, one PostgreSQL database.

The database holds the truth of the team workspace — each skill's SKILL.md and other files,
every version, the changelog, the drafts (``store.pg_workspace``). Each server keeps a copy of
the workspace in its home (``<home>/team/workspace``, with ``<home>/team/drafts``) that its
library indexes as its workspace root, so search and every read stay as they are; the copy
follows the database's change stream (``Mirror``). Writes go through the same evolution code
as a local library, with three parts swapped in:

- ``lock``: an advisory lock per skill name, across every server (``TeamLock``);
- ``shared_commit``: the commit point, one transaction (``TeamWorkspace``);
- ``shared_history`` and ``drafts``: versions, changelogs and drafts in the database
  (``PgHistory``, ``PgDrafts``).

A library in team mode is built with :meth:`Team.open` and closed with :meth:`Team.close`.

No stale reads: at start the copy is brought up to date with the store before the library is
returned, and the folders that changed are indexed before any read is answered
(:meth:`Team.current`, which the indexer asks before each read: a read waits for it, at most
``CATCH_UP_WAIT`` seconds, then is refused with "catching up, retry" — never answered from the
index as it was). ``status`` says how far behind the store a server is.

May use: ``evolution`` (the same write path), ``catalog`` (the watcher of the copy's
file-system events), ``store`` and the core values."""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConflictError, SkillshelfError, StoreError
from ..files import FileRefused, atomic_write, read_bounded
from ..store.pg_workspace import PgWorkspace
from ..store.pg_writes import redact
from .drafts import PgDrafts
from .mirror import Mirror
from .shared_commit import TeamLock, TeamWorkspace
from .shared_history import PgHistory

__all__ = ["Mirror", "PgDrafts", "PgHistory", "Team", "TeamLock", "TeamWorkspace", "team_paths"]


def team_paths(home: Path) -> dict[str, Path]:
    """Where a server keeps its copy of the team workspace, in its home."""
    base = Path(home) / "team"
    return {"workspace": base / "workspace", "drafts": base / "drafts", "set_aside": base / "set-aside"}


class Team:
    """The team parts of one library (see the module's text). ``pg``: the team store's
    ``PgStore`` when the library has one open already (it is then not closed here);
    ``index(paths)``: called with the skill folders a change from another server rewrote
    (None: the whole folder was compared again and something changed: sync everything) — or
    the library's indexer, whose ``sync(only=paths)`` is called and whose reads wait for this
    server to have caught up (its ``before_read`` is :meth:`current`);
    ``follow``: follow the change stream (a server), or only bring everything in now;
    ``sources``: the library's ``Sources``: the team's sources are fetched at start (any this
    server lacks) and whenever the team's lock moves (changes of kind ``source``)."""

    CATCH_UP_WAIT = 20.0    # the longest a read waits for the start's catching up before "retry"
    SOURCE_RETRY = (30.0, 600.0)   # seconds before a failed fetch of a team source is tried again: first, longest

    def __init__(self, config: Any, *, pg: Any = None, index: Any = None, follow: bool = True,
                 sources: Any = None):
        from ..store.postgres import PgStore

        self._own = pg is None
        self.pg = pg if pg is not None else PgStore(config.store)
        indexer = index if hasattr(index, "sync") else None
        if indexer is not None:
            index = lambda paths: indexer.sync(only=paths)
        self._index: Callable[[list[Path] | None], Any] | None = index
        self._changed: list[Path] = []       # the skill folders the start brought in
        self._pending: list[Path] = []       # what is indexed before the first read (``current``)
        self._caught_up = threading.Event()
        self._catching = threading.Lock()
        self._failed: str | None = None      # why the start's catching up could not be indexed
        try:
            self.store = PgWorkspace(self.pg)
            paths = team_paths(config.home)
            self._another_store(config, paths)
            self.mirror = Mirror(self.store, workspace=config.workspace, drafts=config.drafts,
                                 set_aside=paths["set_aside"], index=index)
            self.workspace = TeamWorkspace(self.store, self.mirror)
            self.lock = TeamLock(self.store, on_release=self.workspace.forget)
            self.history = PgHistory(self.store)
            self.drafts = PgDrafts(self.store, self.mirror, self.lock)
            self._changed = self.mirror.start(follow=follow)
        except BaseException:
            self.close()
            raise
        # the whole copy, not only what the start changed: the index may be older than the copy
        # (a server stopped between writing a folder and indexing it, a home used before)
        self._pending = [Path(config.workspace)]
        if self._index is None:
            self._caught_up.set()
        if indexer is not None:
            indexer.before_read, indexer.lag, indexer.before_sync = self.current, self.lag, self.mirror.settle
        self._stop = threading.Event()
        if sources is not None:
            self.subscribe("source", sources.follow)
            self.subscribe("pin", sources.shared.follow_pins)    # its exported lock says what the team's pins say
            try:                        # catching up: what the team's lock names that this server lacks
                sources.follow(None)
            except (SkillshelfError, OSError, sqlite3.Error) as exc:    # the next change of the lock tries again
                print(f"skillshelf: cannot bring in the team's sources ({exc})", file=sys.stderr)
            if follow:
                threading.Thread(target=self._retry_sources, args=(sources,), name="skillshelf-team-sources",
                                 daemon=True).start()

    def _another_store(self, config: Any, paths: dict[str, Path]) -> None:
        """A home whose copy of the team workspace came from another team store (its store URL now
        names a different team): that copy and its drafts are moved aside whole, in one line on
        stderr, before this store's copy is brought in. The home keeps the id of the store its copy
        follows (``team/store-id``); a dump restored into another database keeps its id: no move."""
        sid = self.store.store_id()
        if sid is None:
            return
        mark = paths["workspace"].parent / "store-id"
        try:
            had = read_bounded(mark, 200).decode("utf-8", "replace").strip()
        except (OSError, FileRefused):
            had = ""
        if had == sid:
            return
        if had:
            moved = [p for p in (Path(config.workspace), Path(config.drafts)) if p.is_dir() and any(p.iterdir())]
            dest = paths["set_aside"] / f"{time.strftime('%Y%m%d-%H%M%S')}-another-store"
            for p in moved:
                dest.mkdir(parents=True, exist_ok=True)
                os.replace(p, dest / p.name)
            if moved:
                print(f"skillshelf: this home's copy of the team workspace came from another team store: moved to "
                      f"{dest} (nothing is deleted); it now follows {redact(config.store)} (`doctor` names what is "
                      "kept aside)", file=sys.stderr)
        mark.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(mark, sid + "\n", durable=False)

    def _retry_sources(self, sources: Any) -> None:
        """A source of the team's lock this server could not fetch (its host away, the network
        down) is fetched again after ``SOURCE_RETRY[0]`` seconds, then twice as long each time up
        to ``SOURCE_RETRY[1]``, until it is in place or the lock moves on; nothing is asked while
        every source is in place."""
        wait = self.SOURCE_RETRY[0]
        while not self._stop.wait(wait):
            failed = sources.failed_follows()
            if failed:
                try:
                    sources.follow(failed)
                except (SkillshelfError, OSError, sqlite3.Error) as exc:
                    print(f"skillshelf: cannot bring in the team's sources ({exc})", file=sys.stderr)
            wait = min(wait * 2, self.SOURCE_RETRY[1]) if sources.failed_follows() else self.SOURCE_RETRY[0]

    def current(self, wait: float | None = None) -> None:
        """Return once this server's index holds what the store held when it started: its
        copy of the workspace, as the start brought it in, is indexed first (the folders that
        changed, and any row older than its file), by the first caller (a server's
        indexing thread, or the first read of a one-shot command); others wait at most
        ``wait`` seconds (``CATCH_UP_WAIT``), then ``ConflictError``: catching up, retry."""
        if self._caught_up.is_set():
            return
        if self._catching.acquire(timeout=self.CATCH_UP_WAIT if wait is None else wait):
            try:
                if not self._caught_up.is_set():
                    index = self._index
                    try:
                        if index is not None:
                            index(list(self._pending))
                    except (OSError, sqlite3.Error, StoreError) as exc:
                        # the index cannot be written (a full disk, a read-only file): reads go on from
                        # it as it is, and say so (``lag``, doctor's index line), as a local library's do
                        self._failed = f"what changed in the team store while it was away could not be indexed ({exc})"
                        print(f"skillshelf: {self._failed}", file=sys.stderr)
                    self._caught_up.set()
            finally:
                self._catching.release()
        if not self._caught_up.is_set():
            raise ConflictError(f"this server is catching up with the team store ({len(self._changed)} skill(s) "
                                "changed while it was away are being indexed); nothing is served from before",
                                fix="retry in a few seconds")

    @classmethod
    def open(cls, config: Any, **kw: Any) -> Team:
        return cls(config, **kw)

    def subscribe(self, kind: str, fn: Callable[[list[str] | None], object]) -> None:
        """Call ``fn(keys)`` when other servers commit changes of ``kind`` (e.g. "overlay",
        with the skill ids: ``PgOverlays.refresh``), and ``fn(None)`` when this server fell
        behind the pruned part of the change stream (read every key of the kind again)."""
        self.mirror.subscribe(kind, fn)

    def adopt(self, names: list[str], *, author: str = "", reason: str = "") -> dict[str, int | None]:
        """Add folders written into this server's copy (an import, the samples of ``init``) to
        the store, each as a new skill with its files: {name: its version, or None when the
        store has that name already (the next pull replaces the folder with the store's)}."""
        out: dict[str, int | None] = {}
        for name in names:
            with self.lock("skill:" + name):
                out[name] = self.workspace.adopt(name, author=author, reason=reason)
        return out

    def evolver_parts(self) -> dict[str, Any]:
        """The keyword arguments of ``Evolver`` for this team."""
        return {"history": self.history, "lock": self.lock, "workspace": self.workspace}

    def status(self) -> dict[str, Any]:
        """For ``doctor``: whether this server follows the change stream, the last change it
        has seen, how many the store has that it has not read (``behind``; None when the store
        does not answer), how long ago it last read the stream, whether it is still catching up
        from its start, how often it fell behind the stream's pruned part and brought everything
        in again, and the edits on its disk kept aside because the store had moved on."""
        seen = self.mirror.last_seen
        try:
            behind: int | None = max(0, self.store.last_change() - self.mirror._last)
        except Exception:  # noqa: BLE001 -- the store line says why it does not answer
            behind = None
        return {"following": self.mirror.following, "last_change": self.mirror._last, "behind": behind,
                "seconds_since_read": None if not seen else round(time.monotonic() - seen, 1),
                "catching_up": None if self._caught_up.is_set() else len(self._changed),
                "resyncs": self.mirror.resyncs, "set_aside": list(self.mirror.kept_aside)}

    def lag(self) -> str | None:
        """What a read answered now may miss, in words, from what this server knows without
        asking the store (the dashboard's banner, a search's ``degraded``): None when current."""
        if self._failed:
            return self._failed + ": reads may be behind the store"
        if not self._caught_up.is_set():
            return (f"this server is catching up with the team store ({len(self._changed)} skill(s) changed while "
                    "it was away)")
        seen = self.mirror.last_seen
        if self.mirror.following and seen and time.monotonic() - seen > 10 * self.mirror.POLL:
            return (f"this server last read the team store's changes {time.monotonic() - seen:.0f} s ago: what it "
                    "serves may be behind the store")
        return None

    def close(self) -> None:
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()
        mirror = getattr(self, "mirror", None)
        if mirror is not None:
            mirror.close()
        store = getattr(self, "store", None)
        if store is not None:
            store.close()
        if self._own and getattr(self, "pg", None) is not None:
            self.pg.close()
