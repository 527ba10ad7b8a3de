"""fastembed (optional extra): any of its models, or a local model folder
(``specific_model_path``) so nothing is fetched from a hub."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EmbedderError
from .base import Embedder

if TYPE_CHECKING:
    from fastembed import TextEmbedding


class FastEmbedEmbedder(Embedder):
    name = "fastembed"
    local = True
    batch_size = 32

    def __init__(self, model: str = "BAAI/bge-small-en-v1.5", model_path: str = "", **_: object):
        try:
            import fastembed  # noqa: F401
        except ImportError:
            raise EmbedderError("the fastembed embedder needs the fastembed package",
                                fix="pip install 'skillshelf[fastembed]'") from None
        self.model = model
        self.model_path = model_path
        self._impl: TextEmbedding | None = None
        self._dim: int | None = None

    @property
    def model_id(self) -> str:
        return f"fastembed:{self.model}"

    @property
    def dimensions(self) -> int:
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"]).shape[1])
        return self._dim

    def load(self) -> None:
        if self._impl is not None:
            return
        from fastembed import TextEmbedding

        kwargs: dict[str, Any] = {"specific_model_path": self.model_path} if self.model_path else {}
        try:
            self._impl = TextEmbedding(model_name=self.model, **kwargs)
        except Exception as exc:  # fastembed raises plain exceptions for missing models
            raise EmbedderError(f"fastembed cannot load {self.model}: {exc}",
                                fix="point model_path at a local model folder, or pick another embedder") from None

    def _embed(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray:
        self.load()
        assert self._impl is not None   # load set it (or raised)
        return np.asarray(list(self._impl.embed(texts)), dtype=np.float32)
