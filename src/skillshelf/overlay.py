"""The owner's decisions about skills in read-only roots, kept in the store.

A collection someone else maintains is never forked to record that its owner here does
not want a skill (deprecated, with a reason) or wants it to expire on a date. The
decision lives in the ``overlay`` table, keyed by the skill's id, and is applied to the
skill's index row (``active``, ``expires_on``) wherever the skill is ranked or shown.
The file's content hash at decision time is kept: when the file changes, ``show`` says
the decision was taken on an older text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .store import Store, now


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


def get(db, skill_id: str) -> Overlay | None:
    row = db.execute("SELECT skill_id, status, reason, expires_on, content_hash, updated_at FROM overlay"
                     " WHERE skill_id = ?", (skill_id,)).fetchone()
    return Overlay(*row) if row else None


def set_state(store: Store, skill_id: str, **changes: Any) -> Overlay:
    """Set fields of a skill's overlay (``status``, ``reason``, ``expires_on``) and apply
    them to its index row, in one transaction."""
    with store.tx() as tx:
        cur = get(tx, skill_id)
        row = tx.execute("SELECT content_hash FROM skills WHERE id = ?", (skill_id,)).fetchone()
        data = cur.as_dict() if cur else {"skill_id": skill_id, "status": None, "reason": None,
                                          "expires_on": None, "content_hash": None, "updated_at": ""}
        data.update(changes)
        data["content_hash"] = row[0] if row else data["content_hash"]
        data["updated_at"] = now()
        tx.execute("INSERT OR REPLACE INTO overlay VALUES (:skill_id, :status, :reason, :expires_on,"
                   " :content_hash, :updated_at)", data)
        apply_to_row(tx, skill_id)
        store.set_meta("generation", str(int(store.get_meta("generation", "0") or 0) + 1))
    return Overlay(**data)


def apply_to_row(db, skill_id: str) -> None:
    """Make the skill's index row reflect its overlay (called after every re-index of it)."""
    ov = get(db, skill_id)
    if ov is None:
        return
    if ov.status == "deprecated":
        db.execute("UPDATE skills SET active = 0 WHERE id = ?", (skill_id,))
    if ov.expires_on:
        db.execute("UPDATE skills SET expires_on = ? WHERE id = ?", (ov.expires_on, skill_id))
