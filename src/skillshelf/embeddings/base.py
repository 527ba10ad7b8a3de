"""The backend contract and the registry."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import EmbedderError


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors.

    Capability attributes: ``local`` (runs on this machine, no network), ``max_tokens``
    (longer input is truncated), ``batch_size``, ``token_truncation`` (honours a per-call
    ``max_tokens``; other backends embed what they are given, so callers bound long text
    by words first)."""

    name: str = ""
    local: bool = True
    max_tokens: int = 256
    batch_size: int = 32
    token_truncation: bool = False

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Identifies the vector space: vectors of different ids are never mixed."""

    @property
    @abstractmethod
    def dimensions(self) -> int: ...

    @property
    def weights(self) -> str | None:
        """A digest of the weights that make this model's vectors, known without loading it
        (a team shares vectors keyed by it and the model id); None when the backend cannot
        know (a model behind an HTTP endpoint: its name is all there is)."""
        return None

    def load(self) -> None:
        """Load the model now (otherwise the first embed call does)."""

    @abstractmethod
    def _embed(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray: ...

    def embed_batch(self, texts: list[str], *, max_tokens: int | None = None) -> np.ndarray:
        """Vectors for ``texts``; ``max_tokens`` truncates each text where the backend can
        (``token_truncation``), else the backend's own limit applies."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        out = []
        for i in range(0, len(texts), self.batch_size):
            out.append(np.asarray(self._embed(texts[i:i + self.batch_size], max_tokens), dtype=np.float32))
        vecs = np.vstack(out)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return vecs / norms

    def embed(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]


# name -> "module:Class"; modules are imported only when that backend is created.
_REGISTRY: dict[str, str | Callable[..., Embedder]] = {
    "minilm": "skillshelf.embeddings.minilm:MiniLMEmbedder",
    "fastembed": "skillshelf.embeddings.fastembed_backend:FastEmbedEmbedder",
    "ollama": "skillshelf.embeddings.endpoints:OllamaEmbedder",
    "openai": "skillshelf.embeddings.endpoints:OpenAIEmbedder",
    "fake": "skillshelf.embeddings.fake:FakeEmbedder",
}


def register(name: str, factory: str | Callable[..., Embedder]) -> None:
    _REGISTRY[name] = factory


def available() -> list[str]:
    return sorted(_REGISTRY) + ["none"]


def create(name: str, **options: Any) -> Embedder | None:
    """The backend registered as ``name`` (``none`` gives None: lexical-only search)."""
    if name in ("none", "", None):
        return None
    target = _REGISTRY.get(name)
    if target is None:
        raise EmbedderError(f"unknown embedder {name!r}", fix=f"use one of {', '.join(available())}")
    if isinstance(target, str):
        module, _, cls = target.partition(":")
        try:
            target = getattr(importlib.import_module(module), cls)
        except ImportError as exc:
            raise EmbedderError(f"embedder {name!r} needs a package that is not installed: {exc.name}",
                                fix=f"pip install 'skillshelf[{name}]'") from None
    options = {k: v for k, v in options.items() if v not in (None, "")}
    return target(**options)
