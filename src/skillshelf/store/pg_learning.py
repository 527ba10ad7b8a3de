"""Learning memory in the team store: the PostgreSQL twin of ``learning.LearningMemory``.

Every server learns from every server's reports. The two counters a cached copy checks
(``state()``) live in the team store's ``meta`` table, so a report another server added
changes them here too; each change is also recorded on the change stream (kind
``learning``, key the skill's name key, ``*`` for a forget) so a server can reload at once
instead of at its next search.

The cache (``learning.Learner``) appends the reports with an id above the last it read. With
several writers an id could otherwise become visible after a higher one (two transactions
committing out of order) and be skipped for good: ``add`` therefore takes the counter's row
lock *before* the row gets its id, so ids become visible in the order they were given."""

from __future__ import annotations

from typing import Any

from .pg_writes import call, clean, meta_values, write

_BUMP = ("INSERT INTO meta (key, value) VALUES (%s, '1') ON CONFLICT (key) DO UPDATE"
         " SET value = (meta.value::bigint + 1)::text")


class PgLearningMemory:
    """Reported outcomes with their requests' vectors, and two counters: ``generation``
    grows with every change (a report added or forgotten), ``epoch`` with every deletion.
    Refusals and lost connections raise ``StoreError``."""

    def __init__(self, pg: Any):
        self.pg = pg

    def state(self) -> tuple[str, str]:
        """(generation, epoch)."""
        gen, epoch = meta_values(self.pg, ("learned_generation", "learned_epoch"))
        return (gen or "0", epoch or "0")

    def add(self, *, outcome_id: int, at: str, skill_id: str, name_key: str, worked: bool, client: str | None,
            query_id: int, request: str | None, model_id: str, vector: bytes) -> int:
        """Keep one report; returns its id."""
        with write(self.pg) as conn:
            conn.execute(_BUMP, ("learned_generation",))      # first: the lock orders the ids (see above)
            rid = conn.execute("INSERT INTO learned (outcome_id, at, skill_id, name_key, worked, client, query_id,"
                               " request, model_id, vector) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                               " RETURNING id",
                               (int(outcome_id), clean(at), clean(skill_id), clean(name_key), int(bool(worked)),
                                clean(client), query_id, clean(request), clean(model_id), bytes(vector))).fetchone()[0]
            self.pg.record_change(conn, "learning", clean(name_key))
        return int(rid)

    def forget(self, *, name_key: str | None = None, client: str | None = None, before: str | None = None) -> int:
        """Delete the reports matching every condition given (all of them when none is);
        ``client`` "" matches reports without a client. Returns how many were deleted."""
        where, args = [], []
        if name_key is not None:
            where.append("name_key = %s")
            args.append(clean(name_key))
        if client is not None:
            where.append("COALESCE(client, '') = %s")
            args.append(clean(client))
        if before is not None:
            where.append("at < %s")
            args.append(clean(before))
        with write(self.pg) as conn:
            n = conn.execute("DELETE FROM learned" + (" WHERE " + " AND ".join(where) if where else ""),
                             args).rowcount
            if n:
                conn.execute(_BUMP, ("learned_generation",))
                conn.execute(_BUMP, ("learned_epoch",))
                self.pg.record_change(conn, "learning", "*" if name_key is None else clean(name_key))
        return int(n)

    def reports_after(self, model_id: str, after_id: int) -> list[dict[str, Any]]:
        """Reports placed by ``model_id`` with an id above ``after_id``, oldest first:
        ``id, vector, worked, at, client ("" for none), request, name_key``."""
        with call(self.pg) as conn:
            rows = conn.execute("SELECT id, vector, worked, at, COALESCE(client, ''), request, name_key FROM learned"
                                " WHERE model_id = %s AND id > %s ORDER BY id",
                                (clean(model_id), int(after_id))).fetchall()
        return [{"id": int(r[0]), "vector": bytes(r[1]), "worked": bool(r[2]), "at": r[3], "client": r[4],
                 "request": r[5], "name_key": r[6]} for r in rows]

    def for_skill(self, name_key: str) -> list[dict[str, Any]]:
        """The reports on skills of this name key, oldest first: ``worked, client, request, at``."""
        with call(self.pg) as conn:
            rows = conn.execute("SELECT worked, COALESCE(client, ''), request, at FROM learned"
                                " WHERE name_key = %s ORDER BY id", (clean(name_key),)).fetchall()
        return [{"worked": bool(r[0]), "client": r[1], "request": r[2], "at": r[3]} for r in rows]

    def since(self, since: str) -> list[dict[str, Any]]:
        """Reports kept at or after ``since``, oldest first: ``name_key, skill_id, worked,
        client, request``."""
        with call(self.pg) as conn:
            rows = conn.execute("SELECT name_key, skill_id, worked, COALESCE(client, ''), request FROM learned"
                                " WHERE at >= %s ORDER BY id", (clean(since),)).fetchall()
        return [{"name_key": r[0], "skill_id": r[1], "worked": bool(r[2]), "client": r[3], "request": r[4]}
                for r in rows]
