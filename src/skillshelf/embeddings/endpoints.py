"""HTTP backends: Ollama's ``/api/embed`` and any OpenAI-compatible ``/v1/embeddings``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import EmbedderError
from .base import Embedder

if TYPE_CHECKING:
    import httpx


class _HTTPEmbedder(Embedder):
    local = False
    batch_size = 64
    default_url = ""

    def __init__(self, model: str = "", url: str = "", api_key: str = "", timeout: float = 30.0,
                 dimensions: int | None = None, **_: object):
        if not model:
            raise EmbedderError(f"the {self.name} embedder needs a model name",
                                fix="set embedder_model in config.toml or SKILLSHELF_EMBEDDER_MODEL")
        self.model = model
        self.url = (url or self.default_url).rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self._dim = dimensions
        self._client: httpx.Client | None = None

    @property
    def model_id(self) -> str:
        return f"{self.name}:{self.model}"

    @property
    def dimensions(self) -> int:
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"]).shape[1])
        return self._dim

    def _post(self, path: str, payload: dict) -> dict:
        import httpx

        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(timeout=self.timeout, headers=headers)
        try:
            resp = self._client.post(self.url + path, json=payload)
        except httpx.HTTPError as exc:
            raise EmbedderError(f"{self.name} embedder at {self.url} is unreachable: {exc}",
                                fix="start the server or fix embedder_url") from None
        if resp.status_code != 200:
            raise EmbedderError(f"{self.name} embedder answered HTTP {resp.status_code}: {resp.text[:200]}",
                                fix="check the model name, the URL and the API key")
        try:
            data = resp.json()
        except ValueError:
            raise EmbedderError(f"{self.name} embedder returned a body that is not JSON",
                                fix="check embedder_url points at the embeddings API") from None
        if not isinstance(data, dict):
            raise EmbedderError(f"{self.name} embedder returned JSON that is not an object",
                                fix="check embedder_url points at the embeddings API")
        return data

    def _check(self, vectors: object, n: int) -> np.ndarray:
        if not isinstance(vectors, list) or len(vectors) != n:
            raise EmbedderError(f"{self.name} embedder returned {len(vectors) if isinstance(vectors, list) else 0} "
                                f"vectors for {n} texts", fix="check the server and model")
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim != 2:
            raise EmbedderError(f"{self.name} embedder returned ragged vectors", fix="check the server and model")
        if self._dim is not None and arr.shape[1] != self._dim:
            raise EmbedderError(f"{self.name} embedder changed dimension {self._dim} → {arr.shape[1]}",
                                fix="run `skillshelf sync --reembed`")
        return arr


class OllamaEmbedder(_HTTPEmbedder):
    name = "ollama"
    default_url = "http://127.0.0.1:11434"

    def _embed(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray:
        data = self._post("/api/embed", {"model": self.model, "input": texts})
        return self._check(data.get("embeddings"), len(texts))


class OpenAIEmbedder(_HTTPEmbedder):
    name = "openai"
    default_url = "https://api.openai.com/v1"

    def _embed(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray:
        data = self._post("/embeddings", {"model": self.model, "input": texts})
        items = data.get("data")
        if not isinstance(items, list):
            raise EmbedderError("openai embedder response has no 'data' list", fix="check embedder_url")
        items = sorted(items, key=lambda d: d.get("index", 0))
        return self._check([d.get("embedding") for d in items], len(texts))
