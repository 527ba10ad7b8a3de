"""Overlays: the owner's decisions about skills whose files are not theirs to change
(deprecated with a reason, an expiry date), keyed by skill id, with the file's content hash
when the decision was taken; and their effect on the skill's index row.

Plain values in and out (a dict per overlay); ``updated_at`` is an ISO string."""

from __future__ import annotations

from typing import Any

from .sqlite import Store
from .writes import refused_as_store_error

FIELDS = ("skill_id", "status", "reason", "expires_on", "content_hash", "updated_at")


def _get(db, skill_id: str) -> dict[str, Any] | None:
    row = db.execute(f"SELECT {', '.join(FIELDS)} FROM overlay WHERE skill_id = ?", (skill_id,)).fetchone()
    return dict(zip(FIELDS, row)) if row else None


def _apply(db, skill_id: str) -> None:
    ov = _get(db, skill_id)
    if ov is None:
        return
    if ov["status"] == "deprecated":
        db.execute("UPDATE skills SET active = 0 WHERE id = ?", (skill_id,))
    else:   # restored (or never deprecated here): the file's own status decides
        db.execute("UPDATE skills SET active = CASE WHEN lower(coalesce(CASE WHEN json_valid(metadata) THEN"
                   " json_extract(metadata, '$.status') END, 'active')) IN ('inactive', 'deprecated', 'merged')"
                   " THEN 0 ELSE 1 END WHERE id = ?", (skill_id,))
    if ov["expires_on"]:
        db.execute("UPDATE skills SET expires_on = ? WHERE id = ?", (ov["expires_on"], skill_id))


class Overlays:
    """The owner's decisions per skill id (``FIELDS``). Writes the disk or a lock refuses
    raise ``StoreError``."""

    def __init__(self, store: Store | None):
        self.store = store      # None: only calls given a transaction of the caller's

    def _own(self) -> Store:
        """This instance's store (one made for a caller's transaction has none to use alone)."""
        if self.store is None:
            raise RuntimeError(f"{type(self).__name__} was made without a store: pass the caller's transaction")
        return self.store

    def refresh(self, skill_ids: list[str] | None = None) -> list[str]:
        """Nothing to catch up with: a local library's overlays are written where they are read
        (the team store's twin copies other servers' decisions into this server's index)."""
        return []

    def get(self, skill_id: str, tx=None) -> dict[str, Any] | None:
        """The skill's overlay, or None (read inside the caller's transaction ``tx``, if given)."""
        return _get(tx if tx is not None else self._own().db, skill_id)

    def update(self, skill_id: str, changes: dict[str, Any], *, at: str) -> dict[str, Any]:
        """Set ``changes`` (``status``, ``reason``, ``expires_on``) on the skill's overlay,
        record the skill's current content hash and ``at``, apply the overlay to the skill's
        index row and advance the index generation: one transaction. Returns the overlay."""
        unknown = set(changes) - {"status", "reason", "expires_on"}
        if unknown:
            raise ValueError(f"not an overlay field: {', '.join(sorted(unknown))}")
        with refused_as_store_error(self._own()), self._own().tx() as tx:
            data = _get(tx, skill_id) or {"skill_id": skill_id, "status": None, "reason": None, "expires_on": None,
                                          "content_hash": None, "updated_at": ""}
            data.update(changes)
            row = tx.execute("SELECT content_hash FROM skills WHERE id = ?", (skill_id,)).fetchone()
            if row:
                data["content_hash"] = row[0]
            data["updated_at"] = at
            tx.execute("INSERT OR REPLACE INTO overlay VALUES (:skill_id, :status, :reason, :expires_on,"
                       " :content_hash, :updated_at)", data)
            _apply(tx, skill_id)
            tx.execute("INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE"
                       " SET value = CAST(value AS INTEGER) + 1")
        return data

    def apply_to_index(self, skill_id: str, tx=None) -> None:
        """Make the skill's index row reflect its overlay. Indexing calls it inside its own
        transaction (``tx``, from ``Store.tx()``) after every re-index of the skill."""
        _apply(tx if tx is not None else self._own().db, skill_id)
