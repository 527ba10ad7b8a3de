"""The fitted ranker (ranker.py): its weights are data, read and checked; its ``why`` names the
signals that lift a hit; search orders candidates by it."""

import dataclasses
import json

import numpy as np
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.search import ranker

MODEL = ranker.bundled()


def test_the_shipped_model_is_data_over_the_features_search_computes():
    d = MODEL.as_dict()
    assert d["features"] == list(ranker.FEATURES)
    assert len(d["weights"]) == len(ranker.FEATURES) and np.isfinite(d["weights"]).all()
    # it says how it was fitted and what it scored on requests held out of the fit
    held = d["about"]["held_out"]
    assert d["about"]["fitted"].startswith("python bench/ranker.py") and 0 < held["dndcg10"] <= 1
    assert ranker.from_dict(json.loads(json.dumps(d))).as_dict() == d


def test_a_model_over_other_features_is_refused_with_the_fix():
    d = MODEL.as_dict()
    d["features"] = d["features"][:-1] + ["something_else"]
    with pytest.raises(ValueError, match="bench/ranker.py --write"):
        ranker.from_dict(d)
    d = MODEL.as_dict()
    d["match"]["features"] = ["cos"]
    with pytest.raises(ValueError, match="likely-match model"):
        ranker.from_dict(d)


def test_why_names_the_signal_that_lifts_a_hit_and_nothing_for_an_average_one():
    assert MODEL.why(MODEL.mean.copy()) == ""
    lifts = [i for i, w in enumerate(MODEL.weights) if w > 0 and ranker.FEATURES[i] not in ("request_terms", "no_words", "rrf")]
    i = max(lifts, key=lambda j: MODEL.weights[j] / MODEL.scale[j])
    x = MODEL.mean.copy()
    x[i] += 3 * MODEL.scale[i]
    assert MODEL.why(x) and MODEL.probability(x[None])[0] > MODEL.probability(MODEL.mean[None])[0]
    # a signal that counts against a hit is never given as a reason for it
    drags = [j for j, w in enumerate(MODEL.weights) if w < 0]
    y = MODEL.mean.copy()
    y[drags] -= 3 * MODEL.scale[drags]
    assert MODEL.why(y) == ""


def test_why_never_says_meaning_for_a_hit_far_in_meaning():
    """In a small library every skill is near the top of the embedding list: a hit whose
    cosine is below the floor of a likely match is not "ranked high by meaning"."""
    from skillshelf.search import confidence

    col = {f: i for i, f in enumerate(ranker.FEATURES)}
    x = MODEL.mean.copy()
    x[col["dense_rank"]] = x[col["dense_score"]] = 1.0   # first in the embedding list
    x[col["cos"]] = x[col["cos_meta"]] = 0.6
    assert "meaning" in MODEL.why(x)
    x[col["cos"]] = x[col["cos_meta"]] = x[col["cos_body"]] = confidence.cosine_floor() - 0.2
    assert "meaning" not in MODEL.why(x)


def test_a_hit_the_ranker_rates_unlikely_to_be_useful_is_not_a_likely_match():
    assert MODEL.useful > 0
    terms = MODEL.match_range[1][-1]
    assert MODEL.likely_match(0.6, 1.0, terms, words=12, useful=1.0)
    assert not MODEL.likely_match(0.6, 1.0, terms, words=12, useful=MODEL.useful / 2)


def test_search_orders_by_the_ranker_and_each_hit_says_why(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "docker-slim-images", description="Shrink Docker images with multi-stage builds and slim bases")
    write_skill(root, "react-forms", description="Build accessible React forms with validation")
    write_skill(root, "postgres-index", description="Pick and tune PostgreSQL indexes for slow queries")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    seen = {}

    def observe(query, meta, cands, feats):
        seen["p"] = lib.searcher.ranker.probability(feats)
        seen["rowids"] = [int(meta.rowids[p]) for p in cands]

    lib.searcher.observe = observe
    res = lib.search("shrink my docker image with a multi-stage build", log=False)
    assert res.hits[0].name == "docker-slim-images" and res.hits[0].why
    # the first hit is the candidate the model scored highest
    best = int(np.searchsorted(lib.searcher.state.meta.rowids, seen["rowids"][int(np.argmax(seen["p"]))]))
    assert res.hits[0].path == lib.searcher.rows([best])[best]["path"]
    # a model that ranks by the opposite of every signal puts it elsewhere: the order is the model's
    lib.searcher.ranker = dataclasses.replace(MODEL, weights=-MODEL.weights)
    assert lib.search("shrink my docker image with a multi-stage build", log=False).hits[0].name != "docker-slim-images"
    lib.close()


def test_a_limit_of_100_is_filled_when_the_best_candidates_are_copies(tmp_path):
    """The ranker scores the best `search.ranked` candidates, and more while they hold fewer
    distinct skills than the limit needs: copies collapse into one hit."""
    root = tmp_path / "r"
    for i in range(30):
        write_skill(root, f"c{i}/docker-build", description=f"Docker build variant {i} with cached layers")
    for i in range(150):
        write_skill(root, f"misc/m{i}", name=f"misc-{i}", description=f"misc skill number {i} about docker and builds")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.searcher.s = dataclasses.replace(lib.searcher.s, ranked=40)
    res = lib.search("docker build with cached layers", limit=100, log=False)
    assert len(res.hits) == 100 and len({h.name for h in res.hits}) == 100
    lib.close()


def test_a_damaged_weights_file_is_a_clear_error_naming_the_fix(tmp_path, monkeypatch):
    from skillshelf.errors import ConfigError

    (tmp_path / "ranker.json").write_text('{"features": ["rrf"', encoding="utf-8")
    monkeypatch.setattr(ranker.resources, "files", lambda package: tmp_path)
    ranker.bundled.cache_clear()
    try:
        with pytest.raises(ConfigError, match="ranker.json.*reinstall skillshelf"):
            ranker.bundled()
    finally:
        monkeypatch.undo()
        ranker.bundled.cache_clear()
    assert ranker.bundled().as_dict() == MODEL.as_dict()


def test_an_empty_body_is_weighed_as_the_shortest_bodies_the_fit_saw():
    """A signal outside what the fit saw is held at its edge: an empty body (none in the corpus)
    gains no more than a body at the 1st percentile."""
    i = ranker.FEATURES.index("body_length")
    x = MODEL.mean.copy()
    x[i] = 0.0
    y = MODEL.mean.copy()
    y[i] = MODEL.span[0][i]
    assert MODEL.span[0][i] > 1.0 and MODEL.logit(x[None])[0] == pytest.approx(MODEL.logit(y[None])[0])
