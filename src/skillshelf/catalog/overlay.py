"""The owner's decisions about skills in read-only roots, kept in the store.

A collection someone else maintains is never forked to record that its owner here does
not want a skill (deprecated, with a reason) or wants it to expire on a date. The
decision is kept in the store (``store.overlay.Overlays``), keyed by the skill's id, and
applied to the skill's index row (``active``, ``expires_on``) wherever the skill is ranked or shown.
The file's content hash at decision time is kept: when the file changes, ``show`` says
the decision was taken on an older text.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass
from typing import Any

from ..store import Store, now
from ..store.carry import keep_decisions
from ..store.overlay import Overlays
from ..store.protocols import OverlayStore


@dataclass
class Overlay:
    skill_id: str
    status: str | None           # 'deprecated' or None
    reason: str | None
    expires_on: str | None       # ISO date, or None
    content_hash: str | None
    updated_at: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _overlays(where: Any) -> OverlayStore:
    """``where`` as the overlay store: an ``Overlays`` (or another backend's class with the
    same methods) as given, the one over a ``Store``."""
    if isinstance(where, Store):
        return Overlays(where)
    if hasattr(where, "update") and hasattr(where, "apply_to_index"):
        return where
    raise TypeError(f"not an overlay store: {type(where).__name__}")


def get(overlays: OverlayStore | Store, skill_id: str) -> Overlay | None:
    """The skill's overlay, or None. ``overlays`` may also be a connection inside a
    transaction (indexing's)."""
    if isinstance(overlays, sqlite3.Connection):
        data = Overlays(None).get(skill_id, overlays)
    else:
        data = _overlays(overlays).get(skill_id)
    return Overlay(**data) if data else None


def set_state(overlays: OverlayStore | Store, skill_id: str, **changes: Any) -> Overlay:
    """Set fields of a skill's overlay (``status``, ``reason``, ``expires_on``) and apply
    them to its index row, in one transaction; a local library's decisions file follows
    (``decisions.json``: a team's are kept in the team store)."""
    store = _overlays(overlays)
    out = Overlay(**store.update(skill_id, changes, at=now()))
    if type(store) is Overlays and store.store is not None:
        keep_decisions(store.store)
    return out


def apply_to_row(tx, skill_id: str) -> None:
    """Make the skill's index row reflect its overlay, inside indexing's transaction ``tx``
    (called after every re-index of it)."""
    Overlays(None).apply_to_index(skill_id, tx)
