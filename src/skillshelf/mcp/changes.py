"""Change notifications: ``notifications/resources/updated`` for the URIs a client subscribed
to, and ``notifications/resources/list_changed`` when skills appear, disappear or their
SKILL.md changes, on both wires.

- 2025-11-25 and older (a session made by ``initialize``): ``resources/subscribe`` and
  ``resources/unsubscribe`` (``subscribe``, ``unsubscribe``); the notifications go to the
  session (on HTTP, its GET stream). Every such session that asked about resources gets
  ``list_changed`` (``seen``).
- 2026-07-28: a ``subscriptions/listen`` stream names its URIs and kinds; its URIs are watched
  for as long as it is open (``listening``) and the events go through the SDK's bus, which
  filters them per stream.

One thread looks every ``POLL`` seconds, only while someone listens: the size, modification
time and inode of each watched file, and a key of the skills listed (``Library.resources
.changes``, through the read gate for an agent). The library's watcher reindexes a new or
edited SKILL.md within about a second, so a client hears of a change within ~2 s. A skill held
from agents is never the subject of a notification: its URIs are not said to have changed
while it is held (the listing's change, it leaving the list, is)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import SkillshelfError

log = logging.getLogger("skillshelf.mcp")

POLL = 0.5          # seconds between two looks at the watched files and the listing
HELD = "held"       # a URI's stamp while the read gate refuses its skill to agents


class Changes:
    """Watches what clients subscribed to and tells them when it changes."""

    def __init__(self, handle: Any, bus: Any):
        self.handle = handle        # the server's ``LibraryHandle``
        self.bus = bus              # the SDK's subscription bus (2026-07-28 listen streams)
        self._lock = threading.Lock()
        # a legacy client's connection -> (the session of its latest request, its URIs). The SDK
        # makes a ServerSession per request; the connection lives as long as the client does
        self._legacy: weakref.WeakKeyDictionary[Any, tuple[Any, set[str]]] = weakref.WeakKeyDictionary()
        self._listens: dict[object, frozenset[str]] = {}
        self._stamps: dict[str, Any] = {}
        self._key: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # --- who listens ----------------------------------------------------------------------
    def seen(self, session: Any) -> None:
        """A legacy session that asked about resources: it gets ``list_changed``."""
        if session is None:
            return
        with self._lock:
            key = _connection(session)
            self._legacy[key] = (session, self._legacy.get(key, (None, set()))[1])
        self._start()

    def subscribe(self, session: Any, uri: str) -> None:
        """``resources/subscribe`` of a legacy session (any URI is honoured: one that names
        nothing never fires); on the event loop, after ``prepare([uri])``."""
        with self._lock:
            key = _connection(session)
            uris = self._legacy.get(key, (None, set()))[1]
            uris.add(uri)
            self._legacy[key] = (session, uris)
        self._start()

    def unsubscribe(self, session: Any, uri: str) -> None:
        with self._lock:
            self._legacy.get(_connection(session), (None, set()))[1].discard(uri)

    def prepare(self, uris: Iterable[str]) -> None:
        """Take what ``uris`` are now (in a worker thread: it waits for the library to open),
        so that the first change after a listen stream opens is heard."""
        self._baseline(uris)

    @contextlib.contextmanager
    def listening(self, uris: Iterable[str]) -> Iterator[None]:
        """A 2026-07-28 listen stream, open for the ``with`` block, watching ``uris``
        (``prepare`` them first)."""
        token = object()
        uris = frozenset(uris)
        with self._lock:
            self._listens[token] = uris
        self._start()
        try:
            yield
        finally:
            with self._lock:
                self._listens.pop(token, None)

    def close(self) -> None:
        self._stop.set()

    # --- the look -------------------------------------------------------------------------
    def _watched(self) -> tuple[set[str], bool]:
        with self._lock:
            uris = set().union(*(u for _, u in self._legacy.values()), *self._listens.values())
            anyone = bool(self._legacy) or bool(self._listens)
        return uris, anyone

    def _state(self, uris: Iterable[str], *, wait: bool = False) -> tuple[str, dict[str, Any]] | None:
        """(the listing's key, each URI's stamp) for an agent, or None while the library is
        not open (or closing). ``wait``: for the library to open (a subscription's baseline)."""
        lib = self.handle.get() if wait else self.handle.current()
        if lib is None:
            return None
        key, stamps = lib.resources.changes(list(uris))
        return key, stamps

    def _baseline(self, uris: Iterable[str]) -> None:
        """What ``uris`` are now, so that the first change after a subscription is heard."""
        new = [u for u in uris if u not in self._stamps]
        try:
            state = self._state(new, wait=True)
        except Exception:   # the next look takes it
            log.debug("baseline failed", exc_info=True)
            return
        if state is not None:
            with self._lock:
                if self._key is None:
                    self._key = state[0]
                for u, s in state[1].items():
                    self._stamps.setdefault(u, s)

    def _start(self) -> None:
        """Start the look (once), and note the event loop serving the sessions: called on it."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            if loop is not None:
                self._loop = loop       # the loop serving the sessions now (tests make several)
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, name="skillshelf-changes", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        failing = False     # a failure is said once, and its end once: not every POLL seconds
        while not self._stop.wait(POLL):
            uris, anyone = self._watched()
            if not anyone:
                continue
            try:
                self._look(uris)
            except SkillshelfError as exc:   # the store away (PostgreSQL down): one line, retried at the next
                if not failing:
                    log.warning("looking for changes failed: %s (%s)", exc.message, exc.fix)
                failing = True
                continue
            except Exception:   # not one of the library's errors: a bug, with its traceback, once
                if not failing:
                    log.warning("looking for changes failed", exc_info=True)
                failing = True
                continue
            if failing:
                log.warning("looking for changes works again")
                failing = False

    def _look(self, uris: set[str]) -> None:
        state = self._state(uris)
        if state is None:
            return
        key, stamps = state
        updated: list[str] = []
        with self._lock:
            listed = self._key is not None and key != self._key
            self._key = key
            for u, s in stamps.items():
                if u in self._stamps and s != self._stamps[u] and s != HELD:
                    updated.append(u)
                self._stamps[u] = s
            for u in list(self._stamps):
                if u not in stamps:
                    del self._stamps[u]
            loop = self._loop
        if (updated or listed) and loop is not None and not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self._send(updated, listed), loop)

    async def _send(self, updated: list[str], listed: bool) -> None:
        from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated

        for uri in updated:
            await self.bus.publish(ResourceUpdated(uri=uri))
        if listed:
            await self.bus.publish(ResourcesListChanged())
        with self._lock:
            sessions = list(self._legacy.items())
        for key, (session, uris) in sessions:
            try:
                for uri in updated:
                    if uri in uris:
                        await session.send_resource_updated(uri)
                if listed:
                    await session.send_resource_list_changed()
            except Exception:   # noqa: BLE001 — a session that went away: forget it
                with self._lock:
                    self._legacy.pop(key, None)


def _connection(session: Any) -> Any:
    """What a legacy client's requests share: its connection (the SDK keeps it private on the
    per-request ``ServerSession``; upstream could expose it), else the session itself."""
    return getattr(session, "_connection", None) or session
