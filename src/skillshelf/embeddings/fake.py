"""A deterministic fake for unit tests: hashed bag of words, so related texts are close."""

from __future__ import annotations

import hashlib

import numpy as np

from ..text import tokenize
from .base import Embedder


class FakeEmbedder(Embedder):
    name = "fake"
    local = True
    token_truncation = True

    def __init__(self, dim: int = 64, fail: bool = False, **_: object):
        self._dim = int(dim)
        self._fail = fail
        self.calls = 0

    @property
    def model_id(self) -> str:
        return f"fake-{self._dim}"

    @property
    def dimensions(self) -> int:
        return self._dim

    @property
    def weights(self) -> str | None:
        return "blake2b-bag-of-words-1"

    def _embed(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray:
        from ..errors import EmbedderError

        if self._fail:
            raise EmbedderError("fake embedder told to fail", fix="none: this is a test")
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for r, t in enumerate(texts):
            for tok in tokenize(t)[:max_tokens or None]:   # a token limit cuts the text, as models do
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
                out[r, h % self._dim] += 1.0 if (h >> 32) & 1 else -1.0
            if not out[r].any():
                out[r, 0] = 1.0
        return out
