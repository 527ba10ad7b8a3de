"""A hit's score means the same thing in every request: the max-sim cosine between the
request and the skill (not a fraction of the top hit's score), and ``match`` is that score
against the calibrated threshold."""

from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder


def _lib(tmp_path, extra=()):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes",
                body="# CORS\n\nAdd Access-Control-Allow-Origin headers.\n")
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    for name, desc in extra:
        write_skill(root, name, description=desc)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    return lib


def test_score_is_the_cosine_of_the_request_and_the_skill(tmp_path):
    lib = _lib(tmp_path)
    q = "fix CORS errors in API routes"
    res = lib.search(q, log=False)
    s, emb = lib.searcher, lib._embedder_state()[0]
    qv = emb.embed(q)
    for h in res.hits:
        p = int(s._meta.positions([lib.store.db.execute("SELECT rowid FROM skills WHERE id=?", (h.id,))
                                   .fetchone()[0]])[0])
        want = max(float(ix.dot([p], qv)[0]) for ix in (s._vindex, s._bindex) if ix is not None and ix.has[p])
        assert abs(h.score - want) < 1e-3
        assert h.match == ("likely" if h.score >= s._threshold() else "weak")
    assert res.confident == any(h.match == "likely" for h in res.hits[:3])


def test_a_nonsense_request_does_not_score_one(tmp_path):
    lib = _lib(tmp_path)
    res = lib.search("purple elephant tango quartz", log=False)
    assert res.hits and res.hits[0].score < 0.5 and all(h.match == "weak" for h in res.hits)
    assert not res.confident


def test_a_hit_keeps_its_score_whatever_else_the_library_holds(tmp_path):
    """A relative score changes when a better match joins the library; this one does not."""
    q = "docker builds with cached layers"
    alone = {h.name: h.score for h in _lib(tmp_path / "a").search(q, log=False).hits}
    crowd = _lib(tmp_path / "b", extra=[("docker-cache", "Docker builds with cached layers")])
    with_better = {h.name: h.score for h in crowd.search(q, log=False).hits}
    assert with_better["docker-cache"] > with_better["docker-build"]
    assert abs(with_better["docker-build"] - alone["docker-build"]) < 1e-3


def test_lexical_only_scores_are_zero_and_weak(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder="none", auto_sync=False)
    lib.sync()
    res = lib.search("cors errors", log=False)
    assert res.hits[0].name == "cors-fix" and res.hits[0].score == 0.0 and res.hits[0].match == "weak"
    assert "lexical-only" in res.degraded


def test_real_model_scores_compare_across_requests(tmp_path):
    lib = Library.init(tmp_path / "h", auto_sync=False)
    lib.sync()
    hit = lib.search("my browser fetch to a Next.js API route fails with a CORS error", log=False).hits[0]
    miss = lib.search("knit a wool scarf with a cable pattern for winter", log=False).hits[0]
    threshold = lib.searcher._threshold()
    assert hit.score >= threshold > miss.score > -1.0
    assert hit.match == "likely" and miss.match == "weak"
