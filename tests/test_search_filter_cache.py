"""A search's filter is built once per index generation and the vector indexes keep their
selector for it: the same results, without a pass over every skill per search."""

import numpy as np
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.search import vectors
from skillshelf.search.sync import PART_META

TOPICS = ["docker", "cors", "postgres", "kafka", "react", "terraform", "pytest", "graphql", "redis", "nginx"]


def _lib(tmp_path, n=40):
    root = tmp_path / "r"
    for i in range(n):
        a, b = TOPICS[i % 10], TOPICS[(i * 3 + 1) % 10]
        write_skill(root, f"s{i:03d}", description=f"{a} and {b} recipes, variant {i}",
                    body=f"# Steps\n\nUse {b} with {a}; step {i}.\n")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(dim=64), auto_sync=False)
    lib.sync()
    return lib


def _allowed(lib, exclude):
    meta = lib.searcher._ensure_meta()
    return lib.searcher.state.allowed(meta, "all", None, None, None, False, False, exclude)


def test_the_same_filter_is_the_same_read_only_mask_until_the_filter_or_index_changes(tmp_path):
    lib = _lib(tmp_path)
    ids = [h.id for h in lib.search("docker recipes", limit=5, log=False, for_agents=False).hits]
    one, two = frozenset(ids[:1]), frozenset(ids[1:2])
    a = _allowed(lib, one)
    assert a is _allowed(lib, one) and not a.flags.writeable
    b = _allowed(lib, two)
    assert b is not a and a.sum() == b.sum() == len(a) - 1 and not (a == b).all()
    with pytest.raises(ValueError):
        a[0] = False
    # a search under each filter leaves out its own skill only, in either order
    for ex, left_out in ((one, ids[0]), (two, ids[1]), (one, ids[0])):
        got = [h.id for h in lib.searcher.search("docker recipes", limit=10, exclude=ex).hits]
        assert left_out not in got and set(ids[:2]) - {left_out} <= set(got)
    # a new index generation builds the mask again
    (tmp_path / "r" / "s000" / "SKILL.md").write_text(
        "---\nname: s000\ndescription: docker and cors recipes, rewritten\n---\n\n# Steps\n\nNew.\n")
    lib.sync()
    assert _allowed(lib, one) is not a


@pytest.mark.parametrize("sq8", [False, True])
def test_a_vector_index_keeps_the_selector_of_the_last_filter_and_never_uses_it_for_another(tmp_path, sq8):
    if sq8:
        pytest.importorskip("faiss")
    lib = _lib(tmp_path)
    emb, _ = lib._embedder_state()
    rowids = lib.searcher._ensure_meta().rowids
    idx = vectors.load(lib.store, emb.model_id, rowids, PART_META, sq8_above=10 if sq8 else 10**9)
    assert isinstance(idx, vectors.SQ8Index) == sq8
    q = emb.embed("docker cors recipes")
    thirds = np.zeros(len(rowids), dtype=bool)
    thirds[::3] = True
    halves = np.zeros(len(rowids), dtype=bool)
    halves[1::2] = True
    for m in (thirds, halves):
        m.setflags(write=False)
    want = {k: idx.top(q, 8, m)[0].tolist() for k, m in (("t", thirds), ("h", halves))}
    assert all(thirds[want["t"]]) and all(halves[want["h"]])
    for _ in range(2):
        for k, m in (("t", thirds), ("h", halves), ("h", halves)):
            assert idx.top(q, 8, m)[0].tolist() == want[k]
            assert idx._sel is not None and idx._sel[0] is m    # kept for the next search
    # a mask that can still change is never kept
    loose = thirds.copy()
    assert idx.top(q, 8, loose)[0].tolist() == want["t"]
    assert idx._sel[0] is halves
