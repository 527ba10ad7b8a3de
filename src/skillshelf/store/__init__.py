"""Storage: every SQL statement of skillshelf lives in this package.

``sqlite`` owns the connection (WAL, busy timeout, read-only fallback) and ``migrations``
the schema as ordered, named steps. The modules beside them are the storage interfaces,
each named by what it stores; services above use those and never write SQL themselves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .sqlite import Store, damaged, damaged_error, now

__all__ = ["Shared", "Store", "damaged", "damaged_error", "now", "open_shared"]


@dataclass
class Shared:
    """The state a team shares, each part behind its storage interface: the usage log and its
    dashboard reads, learning memory, the judge log and the owner's overlay. The local library
    keeps them in its SQLite file; a team store keeps them in PostgreSQL."""

    usage: Any          # store.usage.UsageLog
    usage_reads: Any    # store.catalog.UsageReads
    learning: Any       # store.learning.LearningMemory
    judge: Any          # store.judge.JudgeLog
    overlays: Any       # store.overlay.Overlays


def open_shared(config: Any, local: Store) -> Shared:
    """The shared state for this configuration: in the local SQLite store ``local``."""
    from .catalog import UsageReads
    from .judge import JudgeLog
    from .learning import LearningMemory
    from .overlay import Overlays
    from .usage import UsageLog

    return Shared(usage=UsageLog(local), usage_reads=UsageReads(local), learning=LearningMemory(local),
                  judge=JudgeLog(local), overlays=Overlays(local))
