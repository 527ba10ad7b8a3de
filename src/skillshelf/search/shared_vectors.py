"""Vectors computed once: a cache kept beside any one index, keyed by the model and the
embedded text's hash.

The index keeps the vectors of the skills it holds (``store.vectors.VectorStore``, by model id
and text hash). A vector cache (``store.protocols.VectorCacheStore``) keeps every vector
computed, by *model key* — the model's id and a digest of its weights
(``Embedder.weights``), so a vector is taken only from the same weights — and the same text
hash: for a team, the team store's (``store.pg_vectors``): a server joining a team, or one
whose index was rebuilt, takes what any server computed instead of running the model; for a
local library, ``<home>/vectors.db``, which a rebuild keeps. ``search.sync`` asks it for the
texts the index lacks before the model runs (the prefetch beside a sync, and
``embed_pending``) and gives it what the model computed.

The cache is a saving, never a requirement: a cache that cannot be read or written is said
once on stderr and the model embeds as it would without one."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..errors import SkillshelfError


def model_key(embedder: Any) -> str:
    """The model's id, with a digest of its weights when the backend knows one."""
    weights = getattr(embedder, "weights", None)
    return f"{embedder.model_id}|{weights}" if weights else str(embedder.model_id)


class SharedVectors:
    """``take`` the cached vectors of some text hashes, ``give`` the ones the model computed."""

    def __init__(self, cache: Any):
        self.cache = cache
        self.taken = 0          # vectors taken from the cache (for benchmarks and tests)
        self._warned: set[str] = set()

    def take(self, embedder: Any, hashes: list[str]) -> dict[str, np.ndarray]:
        """{hash: vector} of those of ``hashes`` the cache has for this model."""
        if not hashes:
            return {}
        try:
            key = model_key(embedder)
            rows = self.cache.get(key, list(hashes))
        except (SkillshelfError, OSError) as exc:
            self._warn("read", f"the vector cache could not be read ({exc}); the model embeds instead")
            return {}
        out = {h: np.frombuffer(v, dtype="<f4").astype(np.float32) for h, (d, v) in rows.items() if len(v) == 4 * d}
        self.taken += len(out)
        return out

    def give(self, embedder: Any, vecs: dict[str, np.ndarray]) -> None:
        """Keep what the model computed, for every later index (this server's, and the team's)."""
        if not vecs:
            return
        try:
            self.cache.put(model_key(embedder), [(h, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes())
                                                 for h, v in vecs.items()])
        except (SkillshelfError, OSError) as exc:
            self._warn("write", f"the vector cache could not be written ({exc}); vectors stay in this index only")

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            print(f"skillshelf: {message}", file=sys.stderr)


__all__ = ["SharedVectors", "model_key"]
