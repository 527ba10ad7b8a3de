"""An 8-bit copy of an ONNX encoder, derived once on this machine and cached.

The bundled MiniLM file stores int8 weights that onnxruntime turns back into float32 at
load, so every product runs in float32. Quantising its MatMuls dynamically (int8 weights
per output channel, activations quantised per call) lets onnxruntime use its integer
kernels: on the 2-core CPU of BENCHMARKS.md, queries ~25 % faster, batches ~1.3-1.6x,
~60 MB less memory, vectors at cosine ~0.995 to the float32 ones.

Two exact rewrites then trim the graph (``simplify``): the NaN guards the exporter put after
each attention softmax go (a softmax row is NaN only when every key is masked, and [CLS] is
never masked), and each erf-GELU spelled out in five operators becomes onnxruntime's one
``Gelu`` kernel. Together ~10-15 % faster per text (BENCHMARKS.md).

The derived file depends on the source file, the recipe and the onnxruntime version, so all
three are in its name; it is written atomically and rebuilt when missing or unreadable. Deriving needs
the ``onnx`` package (onnxruntime's quantiser is built on it), imported only here.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EmbedderError

if TYPE_CHECKING:
    from onnx import NodeProto

RECIPE = 2   # bump when derive() changes what it writes: the cached copy is then rebuilt


def cache_dir() -> Path:
    env = os.environ.get("SKILLSHELF_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("skillshelf"))


def derived_path(source_sha256: str, folder: Path | None = None) -> Path:
    import onnxruntime as ort

    return (folder or cache_dir()) / f"minilm-dq8-{source_sha256[:16]}-r{RECIPE}-ort{ort.__version__}.onnx"


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
        import onnx

        model = onnx.load(str(out))
        simplify(model)
        onnx.save(model, str(out))
        os.replace(out, target)
    return target


def simplify(model) -> int:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place; returns how many rewrites were
    made. Both keep every output value; a pattern that does not match is left alone."""
    from onnx import helper, numpy_helper

    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    users: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    scalars = {i.name: float(numpy_helper.to_array(i).reshape(-1)[0]) for i in g.initializer
               if math.prod(i.dims) == 1}   # (dims () or (1,): no weight tensor is converted)

    def is_const(name: str, value: float) -> bool:
        return name in scalars and abs(scalars[name] - value) < 1e-6

    def only_user(name: str, op: str):
        u = users.get(name, [])
        return u[0] if len(u) == 1 and u[0].op_type == op else None

    drop: set[int] = set()
    rename: dict[str, str] = {}
    replace: dict[int, NodeProto] = {}
    for n in g.node:
        # Where(IsNaN(p), 0, p) after p = Softmax(...): p itself
        if n.op_type == "Where" and len(n.input) == 3:
            guard = producer.get(n.input[0])
            soft = producer.get(n.input[2])
            if (guard is not None and guard.op_type == "IsNaN" and guard.input[0] == n.input[2]
                    and soft is not None and soft.op_type == "Softmax" and is_const(n.input[1], 0.0)
                    and len(users.get(guard.output[0], [])) == 1):
                drop.update((id(n), id(guard)))
                rename[n.output[0]] = n.input[2]
        # x * (0.5 * (1 + erf(x / sqrt(2)))): Gelu(x)
        if n.op_type == "Erf":
            div = producer.get(n.input[0])
            if div is None or div.op_type != "Div" or not is_const(div.input[1], 2 ** 0.5):
                continue
            x = div.input[0]
            add = only_user(n.output[0], "Add")
            half = add and only_user(add.output[0], "Mul")
            mul = half and only_user(half.output[0], "Mul")
            if (mul is None or not any(is_const(i, 1.0) for i in add.input)
                    or not any(is_const(i, 0.5) for i in half.input) or x not in mul.input
                    or len(users.get(div.output[0], [])) != 1):
                continue
            drop.update(id(m) for m in (div, n, add, half))
            replace[id(mul)] = helper.make_node("Gelu", [x], [mul.output[0]], name=f"{mul.name}_gelu",
                                                domain="com.microsoft")
    if not drop or any(o.name in rename for o in g.output):   # a guard's output is never a graph output
        return 0
    nodes = [replace.get(id(n), n) for n in g.node if id(n) not in drop]
    for n in nodes:
        for k, i in enumerate(n.input):
            if i in rename:
                n.input[k] = rename[i]
    del g.node[:]
    g.node.extend(nodes)
    if replace and not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(rename) + len(replace)
