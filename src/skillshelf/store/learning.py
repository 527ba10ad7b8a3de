"""Learning memory: the outcomes ranking learns from, each kept with the vector of the request
it answered (``learned``), and the counters that tell a cached copy it is stale.

Derived from the usage log and deletable (``skillshelf usage forget``): forgetting never
touches the log. Plain values in and out; vectors are little-endian float32 bytes,
timestamps ISO strings."""

from __future__ import annotations

from typing import Any

from .sqlite import Store
from .writes import refused_as_store_error, rowid


def _bump(tx, key: str) -> None:
    tx.execute(f"INSERT INTO meta VALUES ('{key}', '1') ON CONFLICT(key) DO UPDATE"
               " SET value = CAST(value AS INTEGER) + 1")


class LearningMemory:
    """Reported outcomes with their requests' vectors, and two counters: ``generation``
    grows with every change (a report added or forgotten), ``epoch`` with every deletion
    (a cache that only appends must re-read everything). Writes the disk or a lock refuses
    raise ``StoreError``."""

    def __init__(self, store: Store):
        self.store = store

    def state(self) -> tuple[str, str]:
        """(generation, epoch)."""
        return (self.store.get_meta("learned_generation", "0") or "0",
                self.store.get_meta("learned_epoch", "0") or "0")

    def add(self, *, outcome_id: int, at: str, skill_id: str, name_key: str, worked: bool, client: str | None,
            query_id: int, request: str | None, model_id: str, vector: bytes) -> int:
        """Keep one report; returns its id."""
        with refused_as_store_error(self.store), self.store.tx() as tx:
            cur = tx.execute("INSERT INTO learned (outcome_id, at, skill_id, name_key, worked, client, query_id,"
                             " request, model_id, vector) VALUES (?,?,?,?,?,?,?,?,?,?)",
                             (outcome_id, at, skill_id, name_key, int(bool(worked)), client, query_id, request,
                              model_id, vector))
            _bump(tx, "learned_generation")
        return rowid(cur)

    def forget(self, *, name_key: str | None = None, client: str | None = None, before: str | None = None) -> int:
        """Delete the reports matching every condition given (all of them when none is);
        ``client`` "" matches reports without a client. Returns how many were deleted."""
        where, args = [], []
        if name_key is not None:
            where.append("name_key = ?")
            args.append(name_key)
        if client is not None:
            where.append("COALESCE(client, '') = ?")
            args.append(client)
        if before is not None:
            where.append("at < ?")
            args.append(before)
        with refused_as_store_error(self.store), self.store.tx() as tx:
            n = tx.execute("DELETE FROM learned" + (" WHERE " + " AND ".join(where) if where else ""), args).rowcount
            if n:
                _bump(tx, "learned_generation")
                _bump(tx, "learned_epoch")
        return int(n)

    def reports_after(self, model_id: str, after_id: int) -> list[dict[str, Any]]:
        """Reports placed by ``model_id`` with an id above ``after_id``, oldest first:
        ``id, vector, worked, at, client ("" for none), request, name_key``."""
        rows = self.store.db.execute(
            "SELECT id, vector, worked, at, COALESCE(client, ''), request, name_key FROM learned"
            " WHERE model_id = ? AND id > ? ORDER BY id", (model_id, int(after_id)))
        return [{"id": int(r[0]), "vector": bytes(r[1]), "worked": bool(r[2]), "at": r[3], "client": r[4],
                 "request": r[5], "name_key": r[6]} for r in rows]

    def for_skill(self, name_key: str) -> list[dict[str, Any]]:
        """The reports on skills of this name key, oldest first: ``worked, client, request, at``."""
        rows = self.store.db.execute("SELECT worked, COALESCE(client, ''), request, at FROM learned"
                                     " WHERE name_key = ? ORDER BY id", (name_key,))
        return [{"worked": bool(r[0]), "client": r[1], "request": r[2], "at": r[3]} for r in rows]

    def since(self, since: str) -> list[dict[str, Any]]:
        """Reports kept at or after ``since``, oldest first: ``name_key, skill_id, worked,
        client, request``."""
        rows = self.store.db.execute("SELECT name_key, skill_id, worked, COALESCE(client, ''), request FROM learned"
                                     " WHERE at >= ? ORDER BY id", (since,))
        return [{"name_key": r[0], "skill_id": r[1], "worked": bool(r[2]), "client": r[3], "request": r[4]}
                for r in rows]
