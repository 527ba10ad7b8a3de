"""The change stream's retention: old rows of ``changes`` are pruned, and a reader can tell
when rows it never read were pruned.

Every committed change of shared state adds one row to ``changes`` (``PgStore.record_change``);
the servers read the rows after the last number they saw. Without pruning the table grows by
one row per change forever. ``prune`` deletes the rows that are both older than ``RETAIN``
and not among the newest ``KEEP``, and records in ``meta`` the highest number it deleted
(``HORIZON``), in the same transaction as the delete. A reader compares its position with
that horizon (``horizon``): if the horizon is above the last number it saw, rows it never read
may be gone, so it must bring everything in again (``team.Mirror`` does what a fresh start
does) instead of reading on and silently missing them.

Why age and count together: a transaction takes its number when it writes its row and may
commit later (readers wait ``Mirror.GAP_WAIT`` seconds for such numbers), so a row is deleted
only when it is days older than any transaction could stay open; the count keeps a quiet
team's recent history whatever its age, and means the newest row (the stream's position) is
never deleted.

Each batch is its own short transaction. It deletes old rows only (writers insert new ones and
never wait for it) and takes a transaction-level advisory lock first, without waiting: a
server that finds another one pruning skips its turn, so servers pruning at once are harmless.
"""

from __future__ import annotations

from typing import Any, NamedTuple

RETAIN = 7 * 24 * 3600.0    # seconds: rows younger than this are kept (a server down longer resyncs)
KEEP = 10_000               # the newest rows are kept whatever their age
BATCH = 5_000               # rows deleted per transaction: p50 58 ms each on 1M rows (bench/prune.py)
ROUNDS = 4                  # transactions per call: a call stays well under a second (the rest: ``more``)
HORIZON = "changes_pruned_through"
# the advisory lock of a prune, in the two-int key space (skill locks use the one-bigint space:
# PostgreSQL keeps the two apart, so this key never meets a skill's)
_LOCK = (7402212, 2)


def horizon(conn: Any) -> int:
    """The highest change number pruned so far (0: none), read on ``conn``."""
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (HORIZON,)).fetchone()
    return int(row[0]) if row else 0


class Pruned(NamedTuple):
    deleted: int        # rows deleted by this call (0 when another server was pruning)
    more: bool          # it stopped at its ``rounds``: old rows are left for the next call


def prune(pg: Any, *, retain: float = RETAIN, keep: int = KEEP, batch: int = BATCH,
          rounds: int = ROUNDS) -> Pruned:
    """Delete the change rows older than ``retain`` seconds that are not among the newest
    ``keep``, at most ``batch`` rows per transaction and ``rounds`` transactions per call (a
    large backlog, e.g. a store from before pruning, goes over several calls)."""
    if keep < 1:
        raise ValueError("keep must be at least 1: the newest change is the stream's position")
    total = 0
    for _ in range(max(1, rounds)):
        with pg.tx() as conn:
            if not conn.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", _LOCK).fetchone()[0]:
                return Pruned(total, False)     # another server is pruning: its turn is as good as ours
            # nothing but another pruner takes these rows' locks; never wait long for one
            conn.execute("SET LOCAL lock_timeout = '2s'")
            n, top = conn.execute(
                """WITH bound AS (SELECT seq FROM changes ORDER BY seq DESC OFFSET %(keep)s LIMIT 1),
                        gone AS (DELETE FROM changes WHERE seq IN (
                            SELECT seq FROM changes
                            WHERE seq <= (SELECT seq FROM bound)
                              AND at < now() - make_interval(secs => %(retain)s)
                            ORDER BY seq LIMIT %(batch)s)
                          RETURNING seq)
                   SELECT count(*), max(seq) FROM gone""",
                {"keep": int(keep), "retain": float(retain), "batch": int(batch)}).fetchone()
            if n:
                # with the delete, in its transaction: a reader never sees rows gone without it
                conn.execute("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE"
                             " SET value = GREATEST(meta.value::bigint, EXCLUDED.value::bigint)::text",
                             (HORIZON, str(int(top))))
        total += int(n)
        if n < batch:
            return Pruned(total, False)
    return Pruned(total, True)


__all__ = ["BATCH", "HORIZON", "KEEP", "RETAIN", "ROUNDS", "Pruned", "horizon", "prune"]
