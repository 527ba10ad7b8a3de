"""Servers of one team store for the tests: a ``Library`` with its own home on one
PostgreSQL database, opened through the facade (``Library(store=url)``)."""

from __future__ import annotations

import time
from pathlib import Path

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.evolution.evolve import ReviewQueue
from skillshelf.team import Team

BODY = "## When to Use\n\nWhen a browser blocks an API call.\n\n## Solution\n\nSend the CORS headers.\n"


def until(pred, timeout: float = 5.0) -> float | None:
    """Seconds until ``pred()`` holds, or None after ``timeout`` (another server's change
    arrives through the change stream, within a second or so)."""
    t0 = time.monotonic()
    while True:
        if pred():
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(0.01)


def found(lib: Library, query: str, name: str) -> bool:
    """Whether a search of ``lib`` (not logged) lists the skill ``name``."""
    return any(h.name == name for h in lib.search(query, log=False).hits)


def team_library(home: Path, url: str, *, follow: bool = True, embedder: str = "fake", **settings) -> Library:
    """A server of the team store ``url`` with its home in ``home``, opened through the facade
    as a user would (``Library(store=url)``); ``embedder``: "fake" (the tests' deterministic
    one) or a backend's name; ``follow=False``: a server that does not follow the store's
    changes (a test of one that lags)."""
    settings.setdefault("write_policy", "open")
    settings.setdefault("auto_sync", False)
    fake = embedder == "fake"
    lib = Library(home=home, store=url, embedder=FakeEmbedder() if fake else embedder, **settings)
    if not follow:
        lib._team.close()
        lib._team = Team.open(lib.config, pg=lib._shared.team, index=lambda paths: lib.indexer.sync(embed=True, only=paths),
                              follow=False)
        lib._team.subscribe("overlay", lib._overlays.refresh)
    lib.sync()
    return lib


def review(lib: Library) -> ReviewQueue:
    return lib.review


def close(lib: Library) -> None:
    lib.close()
