"""The team's vector cache: every vector any server of the team computed, keyed by the model
(its id and a digest of its weights: ``search.shared_vectors.model_key``) and the hash of
the text it embedded. A server that joins a team, or re-embeds after a rebuild, takes the
vectors it lacks from here instead of running the model; the ones it computes it adds.

The PostgreSQL twin of ``vectors.VectorCache``. Vectors are bytes (float32, little-endian,
L2-normalised) in and out. A row is written once and never changed: the same text under the
same weights gives the same vector, so two servers adding one at once keep the first."""

from __future__ import annotations

from typing import Any

from .pg_writes import call, write

CHUNK = 1000        # hashes asked per statement (``= ANY``): ~1.6 MB of vectors back


class PgVectorCache:
    """``get``/``put`` over the team store's ``vectors`` table (migration 006)."""

    def __init__(self, pg: Any):
        self.pg = pg

    def get(self, model_key: str, hashes: list[str]) -> dict[str, tuple[int, bytes]]:
        """{text hash: (dimensions, vector bytes)} of those of ``hashes`` the team has."""
        out: dict[str, tuple[int, bytes]] = {}
        hashes = list(dict.fromkeys(hashes))
        with call(self.pg) as conn:
            for i in range(0, len(hashes), CHUNK):
                for h, dim, vec in conn.execute("SELECT text_hash, dim, vector FROM vectors WHERE model_key = %s"
                                                " AND text_hash = ANY(%s)", (model_key, hashes[i:i + CHUNK])):
                    out[h] = (int(dim), bytes(vec))
        return out

    def put(self, model_key: str, rows: list[tuple[str, int, bytes]]) -> None:
        """Add (text hash, dimensions, vector bytes) for the model; a vector the team has is kept."""
        if not rows:
            return
        with write(self.pg) as conn, conn.cursor() as cur:
            cur.executemany("INSERT INTO vectors (model_key, text_hash, dim, vector) VALUES (%s, %s, %s, %s)"
                            " ON CONFLICT (model_key, text_hash) DO NOTHING",
                            [(model_key, h, int(d), v) for h, d, v in rows])

    def count(self, model_key: str | None = None) -> int:
        """How many vectors the team keeps (of one model, or of all)."""
        with call(self.pg) as conn:
            if model_key is None:
                return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
            return int(conn.execute("SELECT count(*) FROM vectors WHERE model_key = %s", (model_key,)).fetchone()[0])


__all__ = ["PgVectorCache"]
