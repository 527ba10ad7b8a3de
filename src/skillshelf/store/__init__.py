"""Storage: every SQL statement of skillshelf lives in this package.

``sqlite`` owns the connection (WAL, busy timeout, read-only fallback) and ``migrations``
the schema as ordered, named steps. The modules beside them are the storage interfaces,
each named by what it stores; services above use those and never write SQL themselves.

May use: the core values only (``errors``, ``access``); no service part."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .protocols import (
    JudgeLogStore,
    LearningStore,
    OverlayStore,
    PinStore,
    SourceLockStore,
    TrustStore,
    UsageLogStore,
    UsageReadStore,
    VectorCacheStore,
)
from .sqlite import Store, damaged, damaged_error, now

if TYPE_CHECKING:       # the team store's classes import psycopg: only for the type checker
    from .postgres import PgStore
    from .tokens import Tokens

__all__ = ["Shared", "Store", "damaged", "damaged_error", "is_team_url", "now", "open_shared"]


@dataclass
class Shared:
    """The state a team shares, each part behind its storage interface: the usage log and its
    dashboard reads, learning memory, the judge log and the owner's overlay. The local library
    keeps them in its SQLite file; a team store keeps them in PostgreSQL (``team``: the
    ``store.postgres.PgStore`` they share, which the library closes; None for a local one)."""

    usage: UsageLogStore            # store.usage.UsageLog | store.pg_usage.PgUsageLog
    usage_reads: UsageReadStore     # store.catalog.UsageReads | store.pg_usage.PgUsageReads
    learning: LearningStore         # store.learning.LearningMemory | store.pg_learning.PgLearningMemory
    judge: JudgeLogStore            # store.judge.JudgeLog | store.pg_judge.PgJudgeLog
    overlays: OverlayStore          # store.overlay.Overlays | store.pg_overlay.PgOverlays
    pins: PinStore | None = None    # store.pins.PinnedContent | store.pg_pins.PgPinnedContent
    trusts: TrustStore | None = None  # the team's trust decisions (store.pg_pins.PgTrusts); None: in Audits
    team: PgStore | None = None     # the team store, or None for a local library
    tokens: Tokens | None = None    # the team store's tokens, or None
    vectors: VectorCacheStore | None = None  # store.vectors.VectorCache | store.pg_vectors.PgVectorCache
    sources: SourceLockStore | None = None  # the team's sources and lock (pg_sources); None: skillshelf.lock

    def close(self) -> None:
        """Close the team store's connections (nothing to do for a local library)."""
        if self.team is not None:
            self.team.close()

    def one_read(self) -> contextlib.AbstractContextManager[None]:
        """A request's scope: a team store's generations (pins, trusts, learning) are read in one
        statement for all of it (``pg_writes.one_meta_read``); nothing for a local library."""
        if self.team is None:
            return contextlib.nullcontext()
        from .pg_writes import one_meta_read
        return one_meta_read()


def is_team_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def open_shared(config: Any, local: Store) -> Shared:
    """The shared state for this configuration: in the team store when ``config.store`` is a
    ``postgresql://`` URL (one connection pool for all its parts; the index rows the overlays
    change stay in ``local``), else in the local SQLite store ``local``."""
    url = getattr(config, "store", "") or ""
    if is_team_url(url):
        from .pg_judge import PgJudgeLog
        from .pg_learning import PgLearningMemory
        from .pg_overlay import PgOverlays
        from .pg_usage import PgUsageLog, PgUsageReads
        from .postgres import PgStore

        pg = PgStore(url)
        try:
            overlays = PgOverlays(pg, local)
            if not local.read_only:
                overlays.refresh()      # this server's copy, before its first sync applies it
            from .pg_pins import PgPinnedContent, PgTrusts
            from .pg_sources import PgSourceLocks
            from .pg_vectors import PgVectorCache
            from .tokens import Tokens

            return Shared(usage=PgUsageLog(pg), usage_reads=PgUsageReads(pg), learning=PgLearningMemory(pg),
                          judge=PgJudgeLog(pg), overlays=overlays, pins=PgPinnedContent(pg), trusts=PgTrusts(pg),
                          team=pg, tokens=Tokens(pg), vectors=PgVectorCache(pg), sources=PgSourceLocks(pg))
        except BaseException:
            pg.close()
            raise

    from .catalog import UsageReads
    from .judge import JudgeLog
    from .learning import LearningMemory
    from .overlay import Overlays
    from .pins import PinnedContent
    from .usage import UsageLog
    from .vectors import VectorCache

    # every vector computed, beside the index: a rebuild (a new index file) takes them from here
    return Shared(usage=UsageLog(local), usage_reads=UsageReads(local), learning=LearningMemory(local),
                  judge=JudgeLog(local), overlays=Overlays(local), pins=PinnedContent(local),
                  vectors=VectorCache(Path(local.path).parent / "vectors.db"))


def status(local: Store, team: Any = None) -> dict[str, Any]:
    """What ``doctor`` says of the store: ``kind`` (local | team), ``where`` (a team URL without
    its password), ``schema`` (the last migration applied), ``reachable`` and, for a team
    store, ``latency_ms`` of a round trip (or ``error`` and ``fix`` when it does not answer)."""
    from ..errors import SkillshelfError

    if team is None:
        return {"kind": "local", "where": str(local.path), "schema": (local.applied_migrations() or ["none"])[-1],
                "reachable": True}
    from .pg_writes import redact

    try:
        ms = team.ping()
        return {"kind": "team", "where": redact(team.url), "schema": team.schema_version(), "reachable": True,
                "latency_ms": round(ms, 2)}
    except SkillshelfError as exc:
        return {"kind": "team", "where": redact(team.url), "schema": None, "reachable": False,
                "error": exc.message, "fix": exc.fix}


def explain(exc: BaseException, *, db_path: Any = None, home: object = "the library folder") -> Any:
    """The library's own error for an exception that escaped it raw: a damaged index (named with
    ``skillshelf rebuild``) or a write the disk or a lock refused (``errors.cannot_write_error``);
    None for anything else. Adapters call this instead of reaching into the store."""
    if damaged(exc):
        return damaged_error(Path(db_path or "skillshelf.db"), exc)
    from ..errors import cannot_write_error

    return cannot_write_error(exc, home)
