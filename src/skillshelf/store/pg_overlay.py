"""Overlays in the team store: the PostgreSQL twin of ``overlay.Overlays``.

The owner's decision about a skill of a read-only root is the team's: it lives in the team
store's ``overlay`` table. Its effect on the skill's index row is each server's own, since
every server keeps its own search index in its local SQLite store. So a ``PgOverlays`` takes
both stores:

- the team store holds the truth; ``get`` reads it, ``update`` writes it under the row's lock
  (two servers changing one skill's overlay at once both keep their fields) and records a
  change of kind ``overlay`` (key: the skill id) so the other servers re-apply it;
- the local store's ``overlay`` table is this server's copy of the team's rows, and the index
  rows are changed from it, exactly as in a local library: indexing applies the overlay
  inside its own SQLite transaction (``apply_to_index(skill_id, tx)``, or
  ``overlay.apply_to_row``) without a round trip to the team store per skill.

``refresh`` brings the local copy up to date from the team store (all rows when a server
starts, the rows named by the change stream after that) and applies what changed."""

from __future__ import annotations

from typing import Any

from .overlay import FIELDS, Overlays
from .pg_writes import call, clean, write
from .sqlite import Store
from .writes import refused_as_store_error

_COLS = ", ".join(FIELDS)


def _bump_generation(tx) -> None:
    tx.execute("INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE"
               " SET value = CAST(value AS INTEGER) + 1")


def _mirror(tx, data: dict[str, Any]) -> None:
    tx.execute("INSERT OR REPLACE INTO overlay VALUES (:skill_id, :status, :reason, :expires_on,"
               " :content_hash, :updated_at)", data)


class PgOverlays:
    """The owner's decisions per skill id (``FIELDS``): kept in the team store ``pg``, applied
    to the index rows of the local store ``local``. Refusals and lost connections (of either
    store) raise ``StoreError``."""

    def __init__(self, pg: Any, local: Store):
        self.pg = pg
        self.local = local
        self._local = Overlays(local)

    def get(self, skill_id: str, tx=None) -> dict[str, Any] | None:
        """The skill's overlay, or None. Inside the caller's (local, indexing's) transaction
        ``tx``: this server's copy, which is what its index rows follow."""
        if tx is not None:
            return self._local.get(skill_id, tx)
        with call(self.pg) as conn:
            row = conn.execute(f"SELECT {_COLS} FROM overlay WHERE skill_id = %s", (clean(skill_id),)).fetchone()
        return dict(zip(FIELDS, row)) if row else None

    def update(self, skill_id: str, changes: dict[str, Any], *, at: str) -> dict[str, Any]:
        """Set ``changes`` (``status``, ``reason``, ``expires_on``) on the skill's overlay,
        record the skill's current content hash (of this server's index) and ``at``: one
        transaction in the team store, with a change recorded for the other servers; then
        this server's copy and its index row, and the index generation, in one local
        transaction (which is rolled back when the team store refuses). Returns the overlay."""
        unknown = set(changes) - {"status", "reason", "expires_on"}
        if unknown:
            raise ValueError(f"not an overlay field: {', '.join(sorted(unknown))}")
        key = clean(skill_id)
        with refused_as_store_error(self.local), self.local.tx() as tx:
            row = tx.execute("SELECT content_hash FROM skills WHERE id = ?", (skill_id,)).fetchone()
            with write(self.pg) as conn:
                # the row exists and is locked before it is read: a concurrent update of another
                # field on another server waits and then merges with this one
                conn.execute("INSERT INTO overlay (skill_id, updated_at) VALUES (%s, '') ON CONFLICT DO NOTHING",
                             (key,))
                cur = conn.execute(f"SELECT {_COLS} FROM overlay WHERE skill_id = %s FOR UPDATE", (key,)).fetchone()
                data = dict(zip(FIELDS, cur))
                data.update({k: clean(v) for k, v in changes.items()})
                if row:
                    data["content_hash"] = row[0]
                data["updated_at"] = clean(at)
                conn.execute("UPDATE overlay SET status = %(status)s, reason = %(reason)s,"
                             " expires_on = %(expires_on)s, content_hash = %(content_hash)s,"
                             " updated_at = %(updated_at)s WHERE skill_id = %(skill_id)s", data)
                self.pg.record_change(conn, "overlay", key)
            data["skill_id"] = skill_id
            _mirror(tx, data)
            self._local.apply_to_index(skill_id, tx)
            _bump_generation(tx)
        return data

    def apply_to_index(self, skill_id: str, tx=None) -> None:
        """Make the skill's (local) index row reflect its overlay. Indexing calls it inside
        its own transaction (``tx``, from the local ``Store.tx()``) after every re-index of
        the skill."""
        self._local.apply_to_index(skill_id, tx)

    def refresh(self, skill_ids: list[str] | None = None) -> list[str]:
        """Bring this server's copy of the overlays (all of them, or those of ``skill_ids``)
        up to date with the team store and apply what changed to the index rows; the index
        generation advances when anything did. Returns the skill ids whose overlay changed."""
        with call(self.pg) as conn:
            if skill_ids is None:
                rows = conn.execute(f"SELECT {_COLS} FROM overlay").fetchall()
            else:
                rows = conn.execute(f"SELECT {_COLS} FROM overlay WHERE skill_id = ANY(%s)",
                                    ([clean(s) for s in skill_ids],)).fetchall()
        team = {r[0]: dict(zip(FIELDS, r)) for r in rows}
        changed: list[str] = []
        with refused_as_store_error(self.local), self.local.tx() as tx:
            if skill_ids is None:
                have = {r[0]: dict(zip(FIELDS, r)) for r in tx.execute(f"SELECT {_COLS} FROM overlay")}
            else:
                have = {sid: d for sid in skill_ids if (d := self._local.get(sid, tx)) is not None}
            for sid, data in team.items():
                if have.get(sid) != data:
                    _mirror(tx, data)
                    self._local.apply_to_index(sid, tx)
                    changed.append(sid)
            for sid in set(have) - set(team):
                # gone from the team store (a store emptied by hand): the copy goes too; the
                # index row is put right by the skill's next re-index
                tx.execute("DELETE FROM overlay WHERE skill_id = ?", (sid,))
                changed.append(sid)
            if changed:
                _bump_generation(tx)
        return sorted(changed)
