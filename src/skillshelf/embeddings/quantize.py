"""An 8-bit copy of an ONNX encoder, derived once on this machine and cached.

The bundled MiniLM file stores int8 weights that onnxruntime turns back into float32 at
load, so every product runs in float32. Quantising its MatMuls dynamically (int8 weights
per output channel, activations quantised per call) lets onnxruntime use its integer
kernels: on the 2-core CPU of BENCHMARKS.md, queries ~25 % faster, batches ~1.3-1.6x,
~60 MB less memory, vectors at cosine ~0.995 to the float32 ones.

The derived file depends on the source file and the onnxruntime version, so both are in
its name; it is written atomically and rebuilt when missing or unreadable. Deriving needs
the ``onnx`` package (onnxruntime's quantiser is built on it), imported only here.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from ..errors import EmbedderError


def cache_dir() -> Path:
    env = os.environ.get("SKILLSHELF_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("skillshelf"))


def derived_path(source_sha256: str, folder: Path | None = None) -> Path:
    import onnxruntime as ort

    return (folder or cache_dir()) / f"minilm-dq8-{source_sha256[:16]}-ort{ort.__version__}.onnx"


def derive(source: Path, target: Path) -> Path:
    """Write the dynamically quantised copy of ``source`` to ``target`` (atomically)."""
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderError(f"deriving the 8-bit model needs {exc.name}",
                            fix="pip install onnx (or set embedder_precision = 'float32')") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".derive-") as tmp:
        folded = Path(tmp) / "folded.onnx"
        # Let onnxruntime fold the stored int8 weights into plain float32 initializers ...
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.optimized_model_filepath = str(folded)
        opts.log_severity_level = 3
        ort.InferenceSession(str(source), opts, providers=["CPUExecutionProvider"])
        # ... then quantise the MatMuls per output channel (per-tensor scales cost ~0.03
        # of cosine; the embedding table stays float32).
        out = Path(tmp) / "dq8.onnx"
        logging.disable(logging.WARNING)   # its advice to pre-process is for calibrated quantisation
        try:
            quantize_dynamic(str(folded), str(out), op_types_to_quantize=["MatMul"], per_channel=True,
                             weight_type=QuantType.QInt8)
        except Exception as exc:  # the quantiser raises untyped errors on graphs it cannot handle
            raise EmbedderError(f"cannot quantise {source}: {exc}",
                                fix="set embedder_precision = 'float32'") from None
        finally:
            logging.disable(logging.NOTSET)
        os.replace(out, target)
    return target
