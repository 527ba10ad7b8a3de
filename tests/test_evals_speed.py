"""`eval --all` embeds its queries in batches before searching: each search is given its query's vector
instead of embedding it, and the results are those of a search that embeds its own query."""

from __future__ import annotations

import json

from test_evals import NEGATIVES, POSITIVES, evals, make_home

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder


class Counting(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def embed_batch(self, texts, *, max_tokens=None):
        self.sizes.append(len(texts))
        return super().embed_batch(texts, max_tokens=max_tokens)


def test_eval_all_embeds_its_queries_in_one_batch_and_finds_what_a_plain_search_finds(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h)
    (ws / "docker-build" / "evals").mkdir()
    (ws / "docker-build" / "evals" / "eval_queries.json").write_text(json.dumps(
        evals(pos=["multi-stage docker build with cached layers", POSITIVES[0]], neg=NEGATIVES)))
    emb = Counting()
    with Library(h, embedder=emb, auto_sync=False) as lib:
        lib.sync()
        lib.search("warm up", log=False)
        distinct = len(set(POSITIVES + NEGATIVES + ["multi-stage docker build with cached layers"]))
        emb.sizes.clear()
        batched = lib.evals.run([], everything=True)
        assert emb.sizes == [distinct]          # one batch, each query once; no search embedded its own
        emb.sizes.clear()
        lib.evals._embed = None                  # as before: each search embeds its query
        plain = lib.evals.run([], everything=True)
        assert emb.sizes == [1] * (len(POSITIVES) + len(NEGATIVES) + 2 + len(NEGATIVES))
    assert [r.as_dict() for r in batched.results] == [r.as_dict() for r in plain.results]
    assert [r.checks for r in batched.results] == [r.checks for r in plain.results]
    assert {r.name for r in batched.results} == {"cors-fix", "docker-build"}
