"""What a search answered now may be missing, beyond this process's own indexing.

Two things a server cannot see from its own sync's progress: a root its index has never
covered (registered after the last whole sync: known before any scan, from the roots that
sync recorded), and an indexing run by another process on the same library (a `skillshelf
sync` in a terminal). A process that syncs writes its progress to ``indexing.json`` in the
library's home, at most every ``EVERY`` seconds, and removes it when done; the others read it.
A file whose process has ended, or not written for ``STALE`` seconds, is not believed.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import SkillshelfError
from ..files import atomic_write, read_bounded

FILE = "indexing.json"
EVERY = 0.5      # seconds between two writes of the progress file
STALE = 120.0    # a progress file not written for this long is left over
SKEW = 5.0       # seconds a file's time may lie ahead of this clock (a file from the future is not believed)


def unindexed(synced: list[str] | None, roots: list[Any]) -> list[Any]:
    """The roots the last whole sync did not cover (``synced``: its roots' labels, which name
    their skills' ids, so a moved home is still indexed; None: not recorded, nothing is claimed)."""
    if synced is None:
        return []
    seen = set(synced)
    return [r for r in roots if r.label not in seen]


def unindexed_note(roots: list[Any]) -> str:
    names = ", ".join(r.label for r in roots[:3]) + (f" and {len(roots) - 3} more" if len(roots) > 3 else "")
    one = len(roots) == 1
    return (f"{len(roots)} root{'' if one else 's'} not indexed yet ({names}): {'its' if one else 'their'} scan"
            " starts in a moment; results are partial")


class SharedProgress:
    """The progress file of a library's home: written by the process that syncs, read by the others."""

    def __init__(self, home: Path):
        self.path = Path(home) / FILE
        self._written = 0.0
        self._mine = False
        self._depth = 0

    def write(self, phase: str, done: int, total: int) -> None:
        """Say how far this process's sync is: ``done`` of ``total`` files read (``phase``
        "indexing") or texts embedded ("embedding"), at most every ``EVERY`` seconds. A sync with
        nothing to index (a rescan that found no change) writes nothing. A failed write (a
        read-only home, a full disk) only means the others do not see it."""
        now = time.monotonic()
        if not total or now - self._written < EVERY:
            return
        self._written = now
        data = {"pid": os.getpid(), "host": socket.gethostname(), "at": time.time(), "phase": phase,
                "done": done, "total": total}
        try:
            atomic_write(self.path, json.dumps(data), durable=False)
            self._mine = True
        except OSError:
            pass

    def clear(self) -> None:
        """This process's sync ended: remove its progress file (only its own)."""
        self._written = 0.0
        if not self._mine:
            return
        self._mine = False
        try:
            if (self._read() or {}).get("pid") == os.getpid():
                self.path.unlink()
        except OSError:
            pass

    def _read(self) -> dict[str, Any] | None:
        try:
            data = json.loads(read_bounded(self.path, 4096))
        except (OSError, ValueError, RecursionError, SkillshelfError):
            return None     # (too big, not a file, not JSON: not a progress file this code wrote)
        return data if isinstance(data, dict) else None

    def other(self) -> dict[str, Any] | None:
        """Another live process's sync of this library (``phase``, ``done``, ``total``, ``pid``), or None."""
        if not self.path.exists():
            return None
        p = self._read()
        if not p or not all(_count(p.get(k)) for k in ("pid", "done", "total")) or p["pid"] <= 0:
            return None
        at = p.get("at")
        if isinstance(at, bool) or not isinstance(at, (int, float)) or not -SKEW <= time.time() - at <= STALE:
            return None     # (NaN and infinities fail the comparison too)
        if p.get("host") == socket.gethostname():
            if p["pid"] == os.getpid():
                return None
            try:
                os.kill(p["pid"], 0)
            except ProcessLookupError:
                return None
            except OSError:
                pass     # alive, another user's
        return p

    def note(self) -> str | None:
        """What another process's sync leaves out of a search now, in words (None: nothing)."""
        p = self.other()
        if p is None:
            return None
        done, total = p["done"], p["total"]
        who = f"another process (pid {p['pid']}) is indexing this library"
        if p.get("phase") == "embedding":
            return f"{who}: embedding {done:,} of {total:,} texts; results are partial until it finishes"
        return f"{who}: {done:,} of {total:,} skills read; results are partial until it finishes"

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around a sync of this process: its progress file is removed when it ends (re-entrant)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.clear()


def _count(v: Any) -> bool:
    """A whole number as the progress file writes it (not a bool, not negative, not absurd)."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40


def describe(p: dict[str, Any], searchable: Callable[[], int], unindexed: list[Any],
             others: SharedProgress) -> tuple[str | None, bool]:
    """(what a query answered now is missing, in words (None: nothing); whether its results are
    partial: a request not served then is not a gap). ``p``: this process's indexing status
    (``Indexer.status``); ``searchable()``: the skills indexed so far; ``unindexed``: the roots
    a rescan still to come will index first."""
    phase, done, total = p["phase"], p["done"], p["total"]
    if phase == "scanning" and p["state"] == "indexing":
        return "indexing has just started (finding the skill files); results are partial", True
    if phase == "indexing" and total and done < total:
        return (f"indexing {done:,} of {total:,} skills ({searchable():,} searchable so far); "
                "results are partial and lexical-only until vectors exist"), True
    if phase == "indexing" and total:
        return f"indexed {total:,} skills, computing their vectors: results are lexical-only until then", True
    if phase == "embedding" and total:
        return f"embedding {done:,} of {total:,} texts; results are lexical-only until it finishes", True
    if (other := others.note()) is not None:
        return other, True
    if unindexed:
        return unindexed_note(unindexed), True
    if p["state"] == "failed":
        return (f"the last indexing failed ({p['error']}); results may be stale: run `skillshelf sync` to see"
                " why"), False
    return None, False
