"""The model judge's backends: a chat model over HTTP (Ollama ``/api/chat`` or any
OpenAI-compatible ``/chat/completions``) and, as ``local``, an ONNX cross-encoder file the
owner supplies (no PyPI package ships one: see BENCHMARKS.md, "Model judge"). Nothing is
downloaded. Every call has a hard deadline; any failure is a ``JudgeFailure``
(``JudgeTimeout`` past the deadline)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config import JudgeConfig
from ..errors import ConfigError
from .prompts import JudgeFailure, JudgeTimeout, clean_text

if TYPE_CHECKING:
    import httpx
    import onnxruntime
    from tokenizers import Tokenizer

DEFAULT_URLS = {"ollama": "http://127.0.0.1:11434", "openai": "https://api.openai.com/v1"}
MAX_ANSWER_BYTES = 1_000_000     # a chat answer larger than this is refused, not parsed


class ChatBackend:
    """A chat model over HTTP: Ollama ``/api/chat`` or an OpenAI-compatible
    ``/chat/completions``. One request per judgement, with a hard deadline: the connection,
    each read and the whole answer are bounded by the time left."""

    def __init__(self, kind: str, *, url: str = "", model: str = "", api_key: str = ""):
        if kind not in DEFAULT_URLS:
            raise ConfigError(f"unknown chat backend {kind!r}", fix="use ollama or openai")
        if not model:
            raise ConfigError(f"the {kind} judge needs a model name",
                              fix="set judge.model in config.toml (or SKILLSHELF_JUDGE_MODEL)")
        self.kind = kind
        self.model = model
        base = (url or DEFAULT_URLS[kind]).rstrip("/")
        if kind == "openai" and urlsplit(base).path in ("", "/"):
            base += "/v1"   # a bare host: the OpenAI-compatible API lives under /v1
        self.url = base
        self.api_key = api_key if kind == "openai" else ""
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.model}"

    @property
    def endpoint(self) -> str:
        return self.url + ("/api/chat" if self.kind == "ollama" else "/chat/completions")

    def _http(self):
        import httpx

        with self._lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                # proxies from the environment apply to a remote endpoint, never to this machine's
                local = (urlsplit(self.url).hostname or "") in ("127.0.0.1", "localhost", "::1")
                self._client = httpx.Client(headers=headers, follow_redirects=False, trust_env=not local)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def chat(self, system: str, user: str, *, deadline: float) -> str:
        """The model's answer text. ``JudgeTimeout`` past ``deadline`` (a monotonic time),
        ``JudgeFailure`` on any other failure."""
        import httpx

        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        if self.kind == "ollama":
            payload: dict[str, Any] = {"model": self.model, "messages": messages, "stream": False, "format": "json",
                                       "options": {"temperature": 0}}
        else:
            payload = {"model": self.model, "messages": messages, "temperature": 0, "stream": False}
        left = deadline - time.monotonic()
        if left <= 0:
            raise JudgeTimeout("no time left")
        timeout = httpx.Timeout(left, connect=min(left, 10.0))
        chunks: list[bytes] = []
        size = 0
        try:
            with self._http().stream("POST", self.endpoint, json=payload, timeout=timeout) as resp:
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_ANSWER_BYTES:
                        raise JudgeFailure(f"the answer is over {MAX_ANSWER_BYTES:,} bytes")
                    if time.monotonic() > deadline:   # a server trickling bytes must not hold us
                        raise JudgeTimeout("the answer took too long")
                status = resp.status_code
        except httpx.TimeoutException:
            raise JudgeTimeout("no answer in time") from None
        except httpx.HTTPError as exc:
            raise JudgeFailure(f"{self.kind} at {self.url} failed: {type(exc).__name__}: {exc}") from None
        body = b"".join(chunks)
        if status != 200:
            raise JudgeFailure(f"{self.kind} answered HTTP {status}: {clean_text(body.decode('utf-8', 'replace'), 160)}")
        try:
            data = json.loads(body)
        except ValueError:
            raise JudgeFailure(f"{self.kind} answered with a body that is not JSON") from None
        try:
            if self.kind == "ollama":
                content = data["message"]["content"]
            else:
                content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeFailure(f"{self.kind} answer has no message content") from None
        if not isinstance(content, str):
            raise JudgeFailure(f"{self.kind} answer content is not text")
        return content

    def probe(self, timeout: float = 3.0) -> tuple[bool, str]:
        """(reachable, detail): lists the server's models (``/api/tags``, ``/models``)."""
        import httpx

        path = "/api/tags" if self.kind == "ollama" else "/models"
        try:
            resp = self._http().get(self.url + path, timeout=httpx.Timeout(timeout))
        except httpx.HTTPError as exc:
            return False, f"{self.url} is unreachable ({type(exc).__name__})"
        if resp.status_code in (401, 403):
            return False, f"{self.url} refused the API key (HTTP {resp.status_code})"
        if resp.status_code != 200:
            return False, f"{self.url}{path} answered HTTP {resp.status_code}"
        try:
            data = resp.json()
            items = data.get("models") if self.kind == "ollama" else data.get("data")
            names = {str(m.get("name") or m.get("model") or m.get("id")) for m in items or [] if isinstance(m, dict)}
        except (ValueError, AttributeError):
            return True, f"{self.url} answered (model list unreadable)"
        if names and self.model not in names and f"{self.model}:latest" not in names:
            return False, f"{self.url} is up but has no model {self.model!r} (it has {len(names)} others)"
        return True, f"{self.url} is up" + (f" and has {self.model}" if names else "")


class CrossEncoderBackend:
    """A local ONNX cross-encoder: (request, skill text) pairs -> relevance logits, run by
    onnxruntime + tokenizers on this machine. The file is the owner's (``judge.model_path``,
    e.g. an export of an ms-marco MiniLM cross-encoder); nothing is fetched. The tokenizer
    defaults to the bundled MiniLM WordPiece tokenizer (uncased BERT vocabulary, the one the
    ms-marco MiniLM cross-encoders use)."""

    max_tokens = 256

    def __init__(self, model_path: str, tokenizer_path: str = ""):
        if not model_path:
            raise ConfigError("the local judge needs an ONNX cross-encoder file",
                              fix="set judge.model_path in config.toml to a cross-encoder .onnx file "
                                  "(no package ships one: see the README, \"Model judge\")")
        self.model_path = Path(model_path).expanduser()
        self.tokenizer_path = Path(tokenizer_path).expanduser() if tokenizer_path else None
        self.model = self.model_path.name
        self._session: onnxruntime.InferenceSession | None = None
        self._tok: Tokenizer | None = None
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"local:{self.model}"

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            if not self.model_path.is_file():
                raise ConfigError(f"judge model file {self.model_path} does not exist",
                                  fix="set judge.model_path to an ONNX cross-encoder file")
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigError(f"the local judge needs {exc.name}", fix="pip install onnxruntime tokenizers") from None
            from importlib import resources

            tok_path = self.tokenizer_path or Path(str(resources.files("skillshelf") / "data" / "minilm-tokenizer.json"))
            try:
                tok = Tokenizer.from_file(str(tok_path))
            except Exception as exc:  # tokenizers raises a bare Exception on a bad file
                raise ConfigError(f"cannot load judge tokenizer {tok_path}: {exc}",
                                  fix="set judge.tokenizer_path to the model's tokenizer.json") from None
            tok.no_padding()
            tok.enable_truncation(max_length=self.max_tokens)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.log_severity_level = 3
            try:
                sess = ort.InferenceSession(str(self.model_path), sess_options=opts,
                                            providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime's untyped load errors
                raise ConfigError(f"cannot load judge model {self.model_path}: {clean_text(exc, 200)}",
                                  fix="set judge.model_path to an ONNX cross-encoder file") from None
            self._inputs = {i.name for i in sess.get_inputs()}
            self._tok, self._session = tok, sess

    def score(self, query: str, texts: list[str], *, deadline: float) -> list[float]:
        """One relevance logit per text (higher: more relevant)."""
        import numpy as np

        self.load()
        tok, session = self._tok, self._session
        assert tok is not None and session is not None   # load set both (or raised)
        scores: list[float] = []
        for i in range(0, len(texts), 8):
            if time.monotonic() > deadline:
                raise JudgeTimeout("the cross-encoder took too long")
            encs = tok.encode_batch([(query, t) for t in texts[i:i + 8]])
            width = max(len(e.ids) for e in encs)
            ids = np.zeros((len(encs), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, e in enumerate(encs):
                n = len(e.ids)
                ids[r, :n] = e.ids
                mask[r, :n] = 1
                types[r, :n] = e.type_ids
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = types
            try:
                logits = np.asarray(session.run(None, feed)[0], dtype=np.float32)
            except Exception as exc:  # onnxruntime's untyped run errors
                raise JudgeFailure(f"the cross-encoder failed: {clean_text(exc, 160)}") from None
            if logits.ndim == 1:
                logits = logits[:, None]
            # one output: the relevance logit; two: (not relevant, relevant) -> their difference
            col = logits[:, 0] if logits.shape[1] == 1 else logits[:, -1] - logits[:, 0]
            scores.extend(float(x) for x in col)
        return scores

    def probe(self, timeout: float = 3.0) -> tuple[bool, str]:
        try:
            self.load()
        except ConfigError as exc:
            return False, exc.message
        return True, f"{self.model_path} loads"

    def close(self) -> None:
        pass


def make_backend(cfg: JudgeConfig):
    """The backend ``cfg`` names (None for ``none``). ``ConfigError`` when it lacks a setting."""
    if cfg.backend in ("none", ""):
        return None
    if cfg.backend == "local":
        return CrossEncoderBackend(cfg.model_path, cfg.tokenizer_path)
    return ChatBackend(cfg.backend, url=cfg.url, model=cfg.model, api_key=cfg.api_key)
