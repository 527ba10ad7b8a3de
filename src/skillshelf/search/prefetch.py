"""The model's work beside a sync: the texts of the skills a sync adds or changes are embedded in
a background thread while the files are read into the lexical index (``Prefetch``), and handed
to ``sync.embed_pending``, which stores them instead of embedding them again."""

from __future__ import annotations

import contextlib
import sqlite3

import numpy as np

from .. import skill as skillmod
from ..errors import StoreError
from ..store import Store
from ..store.vectors import VectorStore
from .sync import Interrupted, Progress, body_job, embed_jobs, embed_pending, meta_job


class Prefetch:
    """Embeds the texts of the skills a sync adds or changes while the sync goes on, in a
    background thread: the model (which releases the GIL) works while Python builds the
    lexical index. ``finish`` hands the vectors to ``embed_pending``, which stores them
    instead of embedding those texts again. A failure here is left to ``embed_pending``,
    which then embeds (and reports) as usual. A sync that stops (Ctrl-C, an error) calls
    ``finish`` while its exception is on its way: the thread stops after the texts in hand
    and the vectors made so far are stored and linked (``keep``), not thrown away.
    ``progress`` sees (texts done, texts queued) from the thread as it goes: the total grows
    while files are read and is final once they all are (a text already cached counts as done)."""

    BATCH = 128
    STEP = 16    # texts per model call: a cancelled prefetch stops after at most this many

    def __init__(self, store: Store, embedder, body_tokens: int, progress: Progress | None = None, shared=None):
        import queue
        import threading

        self.store, self.embedder, self.body_tokens = store, embedder, body_tokens
        self.progress, self.shared = progress, shared     # ``shared``: see ``embed_pending``
        self.reused: set[str] = set()                     # hashes of ``ready`` taken from ``shared``
        self.ready: dict[str, np.ndarray] = {}
        self.kept = 0
        self.done = 0     # texts embedded or found cached (``progress``)
        self._seen: set[str] = set()
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._cancel = threading.Event()
        # started by the first skill: a sync that changes nothing (the watcher's, every few
        # seconds) starts no thread
        self._thread = threading.Thread(target=self._run, name="skillshelf-prefetch", daemon=True)

    def add(self, sk: skillmod.Skill) -> None:
        if not self._thread.is_alive() and not self._seen:
            self._thread.start()
        jobs = [meta_job(sk.name, sk.description, ",".join(sk.tags)), body_job(sk.body, self.body_tokens)]
        for job in jobs:
            if job and job[0] not in self._seen:
                self._seen.add(job[0])
                self._queue.put(job)

    def _run(self) -> None:
        import queue

        done = False
        while not done:
            jobs = [self._queue.get()]
            while len(jobs) < self.BATCH:
                try:
                    jobs.append(self._queue.get(timeout=0.05))
                except queue.Empty:
                    break
            if None in jobs:
                done = True
                jobs = [j for j in jobs if j is not None]
            if self._error is not None or not jobs or self._cancel.is_set():
                continue
            try:
                getattr(self.embedder, "load", lambda: None)()   # (its model id may settle at load)
                cached = VectorStore(self.store).cached(self.embedder.model_id, [h for h, _, _ in jobs])
                taken = self.shared.take(self.embedder, [h for h, _, _ in jobs if h not in cached]) \
                    if self.shared is not None else {}
                self.ready.update(taken)
                self.reused.update(taken)
                jobs = [j for j in jobs if j[0] not in cached and j[0] not in taken]
                self._report(len(cached) + len(taken))
                made: dict[str, np.ndarray] = {}
                for i in range(0, len(jobs), self.STEP):
                    if self._cancel.is_set():
                        break
                    made.update(embed_jobs(self.embedder, jobs[i:i + self.STEP]))
                    self._report(len(jobs[i:i + self.STEP]))
                self.ready.update(made)
                if self.shared is not None:
                    self.shared.give(self.embedder, made)
            except BaseException as exc:  # left to embed_pending, which embeds and reports as usual
                self._error = exc

    def _report(self, more: int) -> None:
        self.done += more
        if self.progress is None or not more:
            return
        try:
            self.progress(self.done, len(self._seen))
        except Exception:   # a display that fails (or a caller stopping) is not the model's failure
            self.progress = None

    def finish(self, *, cancel: bool | None = None) -> dict[str, np.ndarray]:
        """The vectors made, for ``embed_pending``. With ``cancel`` (by default: when called
        while an exception is on its way, as from a ``finally`` around a sync that stopped)
        the texts not yet embedded are dropped, the thread ends after the texts in hand, and
        the vectors made so far are kept in the store (``keep``); then nothing is returned."""
        import sys

        if not self._seen:
            return {}
        if cancel is None:
            cancel = sys.exc_info()[1] is not None
        if cancel:
            self._cancel.set()
        self._queue.put(None)
        self._thread.join()
        if cancel:
            self.keep()
            return {}
        return {} if self._error is not None else self.ready

    def keep(self) -> int:
        """Store the vectors made so far and link them to their skills (a sync that stopped
        keeps them for the next one); how many texts were stored (also ``kept``). A store that
        cannot be written keeps nothing, silently: the stop is what the caller reports.
        A sync that raised ``Interrupted`` has the count added to its report."""
        import sys

        if self.ready and self._error is None:
            with contextlib.suppress(sqlite3.Error, StoreError):
                self.kept = embed_pending(self.store, self.embedder, body_tokens=self.body_tokens, ready=self.ready,
                                          embed=False)
        exc = sys.exc_info()[1]
        if isinstance(exc, Interrupted):
            exc.report.embedded += self.kept
        return self.kept
