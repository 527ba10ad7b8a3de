"""The match probability behind ``match`` and ``confident`` (confidence.py; its weights are
in the ranker's file, ranker.py)."""

import math

import numpy as np
import pytest

from skillshelf import Library
from skillshelf.search import confidence, ranker

MODEL = ranker.bundled()


def terms(n: int) -> float:
    """The request_terms feature of a request of ``n`` distinct words."""
    return math.log2(1 + n)

from conftest import write_skill


def test_fit_recovers_the_weights_that_made_the_data():
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, size=(4000, 2))
    true = np.array([-3.0, 2.0, 5.0])
    y = (rng.uniform(size=4000) < confidence.predict(true, x)).astype(float)
    w = confidence.fit(x, y, l2=0.0)
    assert np.allclose(w, true, atol=0.5), w


def test_fit_best_hit_learns_from_the_hit_that_carries_the_signal():
    """Each request has three hits; only one of them (at a random place) carries what tells
    served from not served. Fitting on the first hit alone cannot see it; the best-hit fit
    must find it."""
    rng = np.random.default_rng(3)
    hits, ys = [], []
    for _ in range(600):
        y = float(rng.uniform() < 0.5)
        h = rng.uniform(0, 0.3, size=(3, 2))
        h[rng.integers(3)] = [0.8, 0.9] if y else [0.3, 0.2]
        hits.append(h)
        ys.append(y)
    ys = np.array(ys)
    w = confidence.fit_best_hit(hits, ys)
    p = np.array([confidence.predict(w, h).max() for h in hits])
    assert ((p >= 0.5) == (ys == 1)).mean() > 0.95
    first_only = confidence.fit(np.array([h[0] for h in hits]), ys)
    p0 = confidence.predict(first_only, np.array([h[0] for h in hits]))
    assert ((p0 >= 0.5) == (ys == 1)).mean() < 0.85


def test_probability_rises_with_score_and_with_the_rare_words_held():
    def p(cos, cover):
        return float(MODEL.match_probability([confidence.row(cos, cover, terms(12))])[0])

    low = p(0.5, 0.1)
    assert p(0.7, 0.1) > low and p(0.5, 0.6) > low


def test_a_request_shorter_than_any_the_model_was_fitted_on_is_weighed_as_the_shortest():
    """The development requests have 10 to 25 words: a three-word request is not extrapolated
    to (it would look far less served than any request the fit saw)."""
    lo = MODEL.match_range[0][confidence.FEATURES.index("request_terms")]
    assert lo >= terms(5)
    short = MODEL.match_probability([confidence.row(0.5, 0.9, terms(3))])
    assert short == pytest.approx(MODEL.match_probability([confidence.row(0.5, 0.9, lo)]))


@pytest.fixture
def lib(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    write_skill(root, "react-forms", description="Build accessible React forms with validation")
    write_skill(root, "postgres-index", description="Pick and tune PostgreSQL indexes for slow queries")
    lib = Library(home=tmp_path / "h", roots=[root], auto_sync=False)   # the bundled model
    lib.sync()
    return lib


def test_a_close_cosine_without_the_requests_rare_words_is_not_a_match(lib):
    """The request names a tool no skill mentions (Podman quadlet): the Docker skill is
    close in meaning (cosine above the old cosine-only cut, 0.43) but does not serve it."""
    res = lib.search("add a Podman quadlet unit so our container image rebuilds with cached layers", log=False)
    top = res.hits[0]
    assert top.name == "docker-build" and top.score >= 0.43
    assert top.match == "weak" and not res.confident
    assert max(row[confidence.FEATURES.index("cover")] for row in res.signals["first3"]) < 0.3


def test_a_skill_that_holds_the_requests_words_and_meaning_is_a_match(lib):
    res = lib.search("speed up our Docker image build with multi-stage layer caching", log=False)
    assert res.hits[0].name == "docker-build" and res.hits[0].match == "likely" and res.confident


def test_a_set_cosine_threshold_uses_the_cosine_alone(lib):
    """Another embedding model: ``search.confident_threshold`` replaces the model."""
    import dataclasses

    lib.searcher.s = dataclasses.replace(lib.searcher.s, confident_threshold=0.43)
    res = lib.search("add a Podman quadlet unit so our container image rebuilds with cached layers", log=False)
    assert res.hits[0].match == "likely" and res.confident


def test_coverage_matches_a_brute_force_count(tmp_path):
    """coverage() (bisection in cached postings) against a plain count over the raw postings,
    for hits in any order, a skill edited since (a dead old version), and an unknown rowid."""
    import math

    from skillshelf.embeddings.fake import FakeEmbedder

    root = tmp_path / "r"
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    write_skill(root, "react-forms", description="Accessible React forms with validation and Docker previews")
    write_skill(root, "postgres-index", description="Tune PostgreSQL indexes for slow queries")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    write_skill(root, "react-forms", description="Accessible React forms, validated, with Storybook previews")
    lib.sync()
    lex = lib.searcher._lex
    st = lex._ensure()
    terms = lib.searcher._plain_terms("docker previews for react forms with quadlet storybook")
    rowids = [r[0] for r in lib.store.db.execute("SELECT rowid FROM skills ORDER BY rowid DESC")] + [10_000]
    got = lex.coverage(terms, rowids)
    top = math.log(1 + (st.n + 0.5) / 0.5)
    for rid, g in zip(rowids, got):
        live = set(np.flatnonzero(st.to_skill == rid).tolist())
        total = held = 0.0
        for t in dict.fromkeys(terms):
            ids, _ = lex._postings(t)
            ids = ids[ids < len(st.to_skill)]
            df = len(ids)
            idf = math.log(1 + (max(st.n, df) - df + 0.5) / (df + 0.5)) if df else top
            total += idf
            held += idf if live & set(ids.tolist()) else 0.0
        assert g == pytest.approx(held / total), (rid, g, held / total)
    assert got[-1] == 0.0 and max(got) > 0.0


def test_words_of_unspaced_scripts_do_not_count_as_missing(tmp_path):
    """Chinese is not split into words by the tokenizer: a run of it is one term no skill
    holds. Such terms are left out of the coverage, so a Chinese request to a Chinese skill
    is a match by what can be compared (here the Latin words and the cosine)."""
    root = tmp_path / "r"
    write_skill(root, "cors-fix-zh", description="修复 Next.js API 路由中的跨域 CORS 错误")
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    lib = Library(home=tmp_path / "h", roots=[root], auto_sync=False)   # the bundled model
    lib.sync()
    res = lib.search("修复 Next.js API 路由的跨域错误", log=False)
    assert res.hits[0].name == "cors-fix-zh" and res.hits[0].match == "likely" and res.confident
    # nothing comparable at all: the cosine rule decides
    lex = lib.searcher._lex
    assert lex.coverage(["的跨域错误"], [1, 2]) == [None, None]


@pytest.fixture(scope="module", params=["int8", "float32"])
def samples(tmp_path_factory, request):
    """The sample skills under the bundled model, in both precisions: a match decision must
    not depend on which one (or on which CPU kernel runs the 8-bit one)."""
    lib = Library.init(tmp_path_factory.mktemp("samples") / "h", auto_sync=False,
                       embedder_precision=request.param)
    lib.sync()
    assert lib._embedder_state()[0].precision == request.param
    return lib


@pytest.mark.parametrize("query", ["layer", "header", "json", "localhost ports"])
def test_a_word_held_somewhere_in_a_body_is_not_a_match_without_meaning(samples, query):
    """A one-word request whose word a skill's body holds has coverage 1.0; with a cosine
    near 0 it is still not a match."""
    res = samples.search(query, log=False)
    assert not res.confident and all(h.match == "weak" for h in res.hits), [(h.name, h.score) for h in res.hits]


# far more than the ~0.02 the 8-bit model moves a score between CPUs and against float32
MARGIN = 0.05


@pytest.mark.parametrize("query", ["layer", "header", "json", "localhost ports"])
def test_no_decision_sits_near_the_floor_for_a_word_a_body_only_mentions(samples, query):
    """The floor that applies to a request this short is well above what its hits score, so
    another CPU's int8 kernel cannot make one of them a match."""
    floor = confidence.cosine_floor(len(query.split()))
    res = samples.search(query, log=False)
    assert all(h.score <= floor - MARGIN for h in res.hits), (floor, [(h.name, h.score) for h in res.hits])


@pytest.mark.parametrize("query,name", [("docker", "docker-multi-stage-build"), ("cors", "cors-fix-nextjs-api"),
                                        ("commit message", "git-conventional-commits")])
def test_a_short_request_naming_a_skills_subject_is_a_match_with_margin(samples, query, name):
    res = samples.search(query, log=False)
    top = res.hits[0]
    assert top.name == name and top.match == "likely" and res.confident
    assert top.score >= confidence.cosine_floor(len(query.split())) + MARGIN, top.score


def test_the_floor_of_a_short_request_is_higher():
    """One or two words held in a body say next to nothing (coverage is all or nothing): the
    meaning must carry the match. Longer requests keep the fitted rule."""
    assert confidence.cosine_floor(1) == confidence.cosine_floor(2) == confidence.SHORT_COSINE_FLOOR
    assert confidence.cosine_floor(3) == confidence.cosine_floor() == confidence.COSINE_FLOOR
    assert confidence.SHORT_COSINE_FLOOR >= confidence.COSINE_FLOOR + 0.1
    def likely(score, cover, words):
        return MODEL.likely_match(score, cover, terms(words), words=words)

    assert not likely(0.2, 1.0, words=1) and not likely(0.2, 1.0, words=2)
    assert likely(0.45, 1.0, words=1)
    # a development request: most of its words held, a lower cosine
    assert likely(0.25, 0.9, words=15) and not likely(0.1, 0.9, words=15)
    assert not likely(0.0, 1.0, words=15)


def test_a_request_partly_in_an_unspaced_script_uses_the_cosine_rule(samples):
    """One Latin word in a Chinese request does not decide: the request cannot be checked word
    by word, so the cosine alone does (here below its cut)."""
    res = samples.search("怎么 用 git 恢复 已删除 的 分支", log=False)   # restore a deleted git branch
    assert not res.confident and res.hits[0].match == "weak"
    assert samples.searcher._lex.coverage(["git", "的跨域错误"], [1]) == [None]


def test_a_long_request_is_cut_at_a_word_end(samples):
    """Requests are cut to 2,000 characters at a word's end: a cut word would count as a rare
    word no skill holds, so the same request would lose its match at some lengths."""
    flags = {n: samples.search(" ".join(["docker"] * n) + " multi-stage build", log=False).confident
             for n in (280, 285, 286, 290)}
    assert all(flags.values()), flags


def test_search_applies_the_short_request_floor(tmp_path, monkeypatch):
    """A one-word request needs the short-request cosine floor in search itself (the rule is
    not only in confidence.py): raising it makes the same hit weak."""
    lib = Library.init(tmp_path / "h", auto_sync=False)
    lib.sync()
    assert lib.search("docker", log=False).hits[0].match == "likely"
    monkeypatch.setattr(confidence, "SHORT_COSINE_FLOOR", 0.95)
    res = lib.search("docker", log=False)
    assert res.hits[0].match == "weak" and not res.confident
    assert lib.search("docker multi-stage build for smaller images", log=False).hits[0].match == "likely"
    lib.close()
