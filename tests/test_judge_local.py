"""The ``local`` judge: an ONNX cross-encoder run by onnxruntime + tokenizers. No package
ships one (BENCHMARKS.md, "Model judge"), so the test builds a tiny one: its relevance
logit counts the passage tokens of the word "docker" (minus 0.5), which makes the
expected order and the likely / weak marks known in advance."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.config import JudgeConfig
from skillshelf.embeddings.fake import FakeEmbedder

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def tiny_cross_encoder(path: Path, word: str = "docker", outputs: int = 1) -> Path:
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(resources.files("skillshelf") / "data" / "minilm-tokenizer.json"))
    vocab = tok.get_vocab_size()
    weights = np.zeros(vocab, dtype=np.float32)
    for i in tok.encode(word, add_special_tokens=False).ids:
        weights[i] = 1.0
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["n", "l"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["n", outputs])
    inits = [helper.make_tensor("w", TensorProto.FLOAT, [vocab], weights.tolist()),
             helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
             helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])]
    nodes = [helper.make_node("Gather", ["w", "input_ids"], ["g"]),
             helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["token_type_ids"], ["t"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["g", "m"], ["gm"]),
             helper.make_node("Mul", ["gm", "t"], ["gmt"]),          # passage tokens only
             helper.make_node("ReduceSum", ["gmt", "axes"], ["s"], keepdims=1),
             helper.make_node("Sub", ["s", "half"], ["rel"])]
    if outputs == 1:
        nodes.append(helper.make_node("Identity", ["rel"], ["logits"]))
    else:   # (not relevant, relevant) as a classification head gives them
        inits.append(helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]))
        nodes += [helper.make_node("Mul", ["rel", "zero"], ["z"]),
                  helper.make_node("Concat", ["z", "rel"], ["logits"], axis=1)]
    graph = helper.make_graph(nodes, "tiny-ce", inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def make_lib(tmp_path: Path, model: Path, **kw) -> Library:
    root = tmp_path / "root"
    write_skill(root, "ops/docker-build", description="Multi-stage Docker builds with cached layers for docker images")
    write_skill(root, "ops/compose", description="Docker compose files for local services")
    write_skill(root, "ops/images", description="Build container images and push them to a registry")
    write_skill(root, "ops/k8s", description="Deploy container images to Kubernetes")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder(), auto_sync=False,
                  judge=JudgeConfig(backend="local", model_path=str(model), **kw))
    lib.sync()
    return lib


@pytest.mark.parametrize("outputs", [1, 2])
def test_local_cross_encoder_reranks_and_filters(tmp_path, outputs):
    lib = make_lib(tmp_path, tiny_cross_encoder(tmp_path / "ce.onnx", outputs=outputs))
    q = "build container images"
    plain = [h.name for h in lib.search(q, log=False, limit=4).hits]
    res = lib.judged_search(q, limit=4)
    assert res.judge == "ok" and res.judge_model == "local:ce.onnx"
    names = [h.name for h in res.hits]
    assert sorted(names) == sorted(plain)
    # two "docker" tokens beat one, one beats none; ties keep the plain order
    assert names[:2] == ["docker-build", "compose"]
    assert names[2:] == [n for n in plain if n not in ("docker-build", "compose")]
    assert res.pick == "docker-build"
    d = res.as_dict()
    scores = [h["judge"]["score"] for h in d["hits"]]
    assert scores[0] > scores[1] > 0 > scores[2]
    filt = lib.judged_search(q, judge="filter", limit=4)
    marks = {h["name"]: h.get("judge", {}).get("verdict") for h in filt.as_dict()["hits"]}
    assert marks["docker-build"] == marks["compose"] == "likely"
    assert [h.name for h in filt.hits][:2] == [n for n in plain if n in ("docker-build", "compose")]
    assert lib.judge_stats()["ok"] == 2
    check = next(c for c in lib.doctor().checks if c.name == "judge")
    assert check.status == "ok" and "loads" in check.detail
    lib.close()


def test_local_judge_without_a_model_file(tmp_path):
    lib = make_lib(tmp_path, tmp_path / "missing.onnx")
    res = lib.judged_search("docker", limit=3)
    assert res.judge.startswith("error: ") and "does not exist" in res.judge and len(res.hits) == 3
    check = next(c for c in lib.doctor().checks if c.name == "judge")
    assert check.status == "warn" and "does not exist" in check.detail
    lib.close()


def test_local_judge_with_a_broken_model_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx model")
    lib = make_lib(tmp_path, bad)
    res = lib.judged_search("docker", limit=3)
    assert res.judge.startswith("error: cannot load judge model")
    lib.close()
