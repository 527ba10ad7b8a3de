"""What the services may call on the shared state, as ``typing.Protocol`` classes.

Each protocol names the methods a service uses; the SQLite class and its PostgreSQL twin both
satisfy it (``tests/test_store.py`` runs one contract suite over both, and the type checker in
CI checks that ``open_shared`` returns values of these types). A service annotated with a
protocol can call nothing else of the storage it was given."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol


class UsageLogStore(Protocol):
    """The usage log (append-only): what a search and a report write, what ranking and stats read back (``usage.UsageLog``, its ``pg_`` twin)."""

    def log_query(self, *, at: str, text: str | None, text_hash: str, mode: str, filters: dict[str, Any], client: str | None, confident: bool, degraded: bool, n_hits: int, latency_ms: float, recommended: list[tuple[str, str, float]]) -> int:
        ...

    def log_outcome(self, *, at: str, skill_id: str | None, name: str, worked: bool, note: str, query_id: int | None, client: str | None, version: int | None = None) -> int:
        ...

    def prune(self, before: str) -> int:
        ...

    def query(self, query_id: int) -> dict[str, Any] | None:
        ...

    def recent_counts(self, window: int, *, skip_hash: str='') -> dict[str, int]:
        ...

    def recent_requests(self, n: int, *, skip_hash: str='') -> list[dict[str, Any]]:
        ...

    def worked_latest(self, skill_ids: list[str]) -> set[str]:
        ...

    def queries_since(self, since: str) -> list[dict[str, Any]]:
        ...

    def shown_since(self, since: str) -> list[tuple[str, str, int]]:
        ...

    def outcomes_since(self, since: str) -> list[dict[str, Any]]:
        ...

    def ever_recommended(self) -> set[str]:
        ...

    def skill_usage(self, skill_id: str, name: str) -> tuple[int, list[tuple[bool, str, str]]]:
        ...


class UsageReadStore(Protocol):
    """The dashboard's reads of the usage log (``catalog.UsageReads``, its ``pg_`` twin)."""

    def counts(self, ids: list[str]) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
        ...

    def times_shown(self) -> list[tuple[str, int]]:
        ...

    def reports(self) -> list[tuple[str, int, int]]:
        ...

    def marks(self) -> tuple:
        ...

    def queries_per_day(self, since: str) -> list[tuple[str, int, int, int]]:
        ...

    def reported_finds_per_day(self, since: str) -> list[tuple[str, int]]:
        ...

    def outcomes_per_day(self, since: str) -> list[tuple[str, int, int]]:
        ...

    def surfaced(self, skill_id: str, limit: int) -> list[dict[str, Any]]:
        ...

    def outcomes(self, skill_id: str, name: str, limit: int) -> list[dict[str, Any]]:
        ...

    def outcome_days(self, skill_id: str, name: str) -> list[tuple[str, int]]:
        ...


class LearningStore(Protocol):
    """Learning memory: the reports learning replays (``learning.LearningMemory``, its ``pg_`` twin)."""

    def state(self) -> tuple[str, str]:
        ...

    def add(self, *, outcome_id: int, at: str, skill_id: str, name_key: str, worked: bool, client: str | None, query_id: int, request: str | None, model_id: str, vector: bytes) -> int:
        ...

    def forget(self, *, name_key: str | None=None, client: str | None=None, before: str | None=None) -> int:
        ...

    def reports_after(self, model_id: str, after_id: int) -> list[dict[str, Any]]:
        ...

    def for_skill(self, name_key: str) -> list[dict[str, Any]]:
        ...

    def since(self, since: str) -> list[dict[str, Any]]:
        ...


class JudgeLogStore(Protocol):
    """The model judge's log (``judge.JudgeLog``, its ``pg_`` twin)."""

    def add(self, *, at: str, query_id: int | None, mode: str, backend: str, model: str, status: str, latency_ms: float, candidates: int, invented: int, pick: str | None, verdicts: list[dict[str, Any]]) -> int:
        ...

    def since(self, since: str) -> list[dict[str, Any]]:
        ...


class OverlayStore(Protocol):
    """The owner's decisions about skills in read-only roots (``overlay.Overlays``, its ``pg_`` twin)."""

    def get(self, skill_id: str, tx=None) -> dict[str, Any] | None:
        ...

    def update(self, skill_id: str, changes: dict[str, Any], *, at: str) -> dict[str, Any]:
        ...

    def apply_to_index(self, skill_id: str, tx=None) -> None:
        ...

    def refresh(self, skill_ids: list[str] | None = None) -> list[str]:
        ...


class PinStore(Protocol):
    """Pinned roots, their skills' content and the held skills (``pins.PinnedContent``, its
    ``pg_pins`` twin)."""

    def pin_root(self, root: str, path: str, skills: list[dict[str, Any]], *, at: str) -> None:
        ...

    def unpin_root(self, root: str) -> bool:
        ...

    def roots(self) -> list[dict[str, Any]]:
        ...

    def root_labels(self) -> set[str]:
        ...

    def pin_skill(self, root: str, skill: dict[str, Any], *, at: str) -> None:
        ...

    def drop_skill(self, skill_id: str) -> None:
        ...

    def skill(self, skill_id: str) -> dict[str, Any] | None:
        ...

    def files(self, skill_id: str) -> dict[str, dict[str, Any]]:
        ...

    def root_files(self, root: str) -> dict[str, dict[str, dict[str, Any]]]:
        ...

    def skill_ids(self, root: str | None = None) -> dict[str, str]:
        ...

    def touch_files(self, skill_id: str, states: Iterable[tuple[str, int, int]]) -> None:
        ...

    def set_held(self, held: Mapping[str, tuple[str, ...]], released: Iterable[str], *, at: str) -> None:
        ...

    def held(self) -> dict[str, dict[str, str]]:
        ...

    def generation(self) -> str:
        ...


class TrustStore(Protocol):
    """The owner's trust in a skill's content, for a team (``pg_pins.PgTrusts``)."""

    def trust(self, skill_id: str, *, content_key: str, risk: str, note: str, at: str) -> dict[str, Any]:
        ...

    def untrust(self, skill_id: str) -> bool:
        ...

    def trusted(self, skill_id: str) -> dict[str, Any] | None:
        ...

    def trusts(self) -> dict[str, str]:
        ...

    def generation(self) -> str:
        ...


class SourceLockStore(Protocol):
    """A team's sources and their lock: each source's part of ``skillshelf.lock`` as one TOML
    document, by label (``pg_sources.PgSourceLocks``; a local library keeps the file in its home,
    written by ``supply.sources`` under the home's lock)."""

    def documents(self) -> dict[str, str]:
        ...

    def replace(self, documents: dict[str, str], *, expect: dict[str, str], by: str) -> list[str]:
        ...


class VectorCacheStore(Protocol):
    """Vectors kept by model key (the model's id and a digest of its weights) and embedded
    text's hash, beside any one index (``vectors.VectorCache``, its ``pg_vectors`` twin: the
    team's, so a server never embeds what another has)."""

    def get(self, model_key: str, hashes: list[str]) -> dict[str, tuple[int, bytes]]:
        ...

    def put(self, model_key: str, rows: list[tuple[str, int, bytes]]) -> None:
        ...

    def count(self, model_key: str | None = None) -> int:
        ...
