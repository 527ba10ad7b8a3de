import datetime as dt
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import ValidationError
from skillshelf.search.pipeline import rrf


def test_rrf_arithmetic():
    fused = rrf([[1, 2, 3], [3, 1]], [1.0, 0.5], 60)
    assert fused[1] == pytest.approx(1 / 61 + 0.5 / 62)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 0.5 / 61)
    assert max(fused, key=fused.get) == 1


def test_hits_carry_the_api_fields(fake_lib):
    res = fake_lib.search("CORS preflight error in Next.js API", log=False)
    h = res.hits[0]
    assert h.name == "cors-fix" and h.path.endswith("cors-fix/SKILL.md") and h.match in ("likely", "weak")
    assert res.degraded is None and isinstance(res.confident, bool)


def test_copies_collapse_into_one_hit(tmp_path):
    root = tmp_path / "r"
    for coll in ("a", "b", "c"):
        write_skill(root, f"{coll}/docker-build", name="docker-build",
                    description="Multi-stage Docker builds with cached layers")
    write_skill(root, "x/other", description="Something about Docker compose networking")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    for mode in ("find", "brainstorm"):
        hits = [h for h in lib.search("docker multi-stage build", mode=mode, log=False).hits if not h.wildcard]
        names = [h.name for h in hits]
        assert names.count("docker-build") == 1
        assert [h for h in hits if h.name == "docker-build"][0].copies == 3


def test_filters(fake_lib):
    assert {h.name for h in fake_lib.search("build", skill_type="IMPLEMENTATION", log=False).hits} == {"docker-build"}
    assert {h.name for h in fake_lib.search("docker", tags="ci", log=False).hits} == {"docker-build"}
    # repo scope current keeps the current repo + global (no repo) skills
    cur = {h.name for h in fake_lib.search("commit messages", repo_scope="current", current_repo="shop", log=False).hits}
    other = {h.name for h in fake_lib.search("commit messages", repo_scope="current", current_repo="blog", log=False).hits}
    assert "commit-style" in cur and "commit-style" not in other
    with pytest.raises(ValidationError):
        fake_lib.search("x", skill_type="NOPE")
    with pytest.raises(ValidationError):
        fake_lib.search("   ")
    with pytest.raises(ValidationError):
        fake_lib.search("x", mode="wander")


def test_inactive_and_expired_excluded_unless_asked(tmp_path):
    root = tmp_path / "r"
    old = (dt.date.today() - dt.timedelta(days=40)).isoformat()
    write_skill(root, "stale-tip", description="zebra stripes painting guide",
                extra=f"metadata:\n  ttl-days: '10'\n  last-modified: '{old}'\n")
    write_skill(root, "gone-tip", description="zebra stripes cleaning guide", extra="metadata:\n  status: inactive\n")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    assert lib.search("zebra stripes", log=False).hits == []
    hits = lib.search("zebra stripes", include_expired=True, include_inactive=True, log=False).hits
    by = {h.name: h for h in hits}
    assert by["stale-tip"].expired and not by["gone-tip"].active


def test_recency_penalty_and_worked_exemption(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "alpha-guide", description="kubernetes pod crash loop debugging")
    write_skill(root, "beta-guide", description="kubernetes pod crash loop debugging steps")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    q = "kubernetes pod crash loop debugging"
    first = lib.search(q, log=False).hits[0].name
    # other requests (a rewording of q would mean the same: a repeat, exempt from the penalty)
    for other in ("debug a crash loop", "kubernetes debugging help", "pod debugging"):
        lib.search(other, limit=1)  # logged: only the top hit collects recent recommendations
    top_after = lib.search(q, log=False).hits[0].name
    assert top_after != first  # recommended to other requests: pushed down for this one
    lib.report_outcome(first, True, note="it worked")
    assert lib.search(q, log=False).hits[0].name == first  # a confirmed winner is exempt


def test_brainstorm_wildcards_are_part_of_the_limit_and_not_logged(tmp_path):
    root = tmp_path / "r"
    for i in range(12):
        write_skill(root, f"topic-{i:02d}", description=f"docker compose recipe number {i}")
    for i in range(12):
        write_skill(root, f"other-{i:02d}", description=f"gardening tip about roses number {i}")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    for limit in range(1, 9):
        hits = lib.search("docker compose recipe", mode="brainstorm", limit=limit, log=False).hits
        assert len(hits) == limit  # a limit is a limit: wildcards are counted in it
        wild = [h for h in hits if h.wildcard]
        assert len(wild) == min(2, (limit - 1) // 2) and all(h.wildcard for h in hits[len(hits) - len(wild):])
    res = lib.search("docker compose recipe", mode="brainstorm", limit=5)
    wild = [h for h in res.hits if h.wildcard]
    assert len(res.hits) == 5 and len(wild) == 2
    rows = lib.store.db.execute("SELECT skill_id FROM recommendations WHERE query_id=?", (res.query_id,)).fetchall()
    assert len(rows) == 3 and {r[0] for r in rows}.isdisjoint({h.id for h in wild})


def test_log_false_leaves_no_trace(fake_lib):
    fake_lib.search("docker", log=False)
    assert fake_lib.store.db.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == 0


def test_degraded_mode_is_loud_and_still_finds(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(fail=True), auto_sync=False)
    lib.sync()
    res = lib.search("cors next.js", log=False)
    assert res.hits[0].name == "cors-fix"
    assert res.degraded and "embedder failed" in res.degraded and res.confident is False
    lib2 = Library(home=tmp_path / "h2", roots=[root], embedder="none", auto_sync=False)
    lib2.sync()
    assert "lexical-only" in lib2.search("cors", log=False).degraded
    assert any(c.name == "embedder" and c.status == "warn" for c in lib2.doctor().checks)


def test_real_model_confidence_on_clear_hit_and_clear_miss(tmp_path):
    lib = Library.init(tmp_path / "h", auto_sync=False)
    lib.sync()
    hit = lib.search("my browser fetch to a Next.js API route fails with a CORS error", log=False)
    assert hit.degraded is None
    assert hit.hits[0].name == "cors-fix-nextjs-api" and hit.confident and hit.hits[0].match == "likely"
    miss = lib.search("knit a wool scarf with a cable pattern for winter", log=False)
    assert not miss.confident and all(h.match == "weak" for h in miss.hits)


def test_lexical_index_bm25f_against_hand_computed_scores(tmp_path):
    """BM25F arithmetic on fixed data, checked against the formula computed by hand."""
    import math

    from skillshelf.search import lexical
    from skillshelf.store import Store

    store = Store(tmp_path / "db.sqlite")
    docs = {1: ("alpha", "red apple", "", "", "apple apple pie"), 2: ("beta", "green pear", "", "", "pie crust"),
            3: ("gamma", "apple tart", "", "", "tart")}
    with store.tx() as tx:
        w = lexical.Writer(tx)
        for rid, fields in docs.items():
            w.add(rid, fields)
        w.flush()
    weights = (4.0, 3.0, 2.0, 1.5, 1.0)
    idx = lexical.LexicalIndex(store, weights)
    got = dict(idx.search(["appl"], 10))
    lens = {rid: [len(lexical.terms(f)) for f in fields] for rid, fields in docs.items()}
    avg = [sum(lens[r][f] for r in docs) / 3 or 1.0 for f in range(5)]
    n, df = 3, 2
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def expected(rid):
        tf = [lexical.terms(f).count("appl") for f in docs[rid]]
        pseudo = sum(weights[f] * tf[f] / (1 - 0.75 + 0.75 * lens[rid][f] / avg[f]) for f in range(5))
        return idf * pseudo * 2.2 / (pseudo + 1.2)

    assert set(got) == {1, 3}
    for rid in (1, 3):
        assert got[rid] == pytest.approx(expected(rid), rel=1e-5)
    # updates: a re-indexed doc replaces its old postings; a removed one disappears
    with store.tx() as tx:
        w = lexical.Writer(tx)
        w.add(2, ("beta", "apple", "", "", ""))
        lexical.remove(tx, 3)
        w.flush()
        store.set_meta("generation", "2")
    assert set(dict(idx.search(["appl"], 10))) == {1, 2}
    with store.tx() as tx:
        lexical.compact(tx)
        store.set_meta("generation", "3")
    assert set(dict(idx.search(["appl"], 10))) == {1, 2}
    assert store.db.execute("SELECT COUNT(*) FROM lex_delta").fetchone()[0] == 0
    # the per-term cache keeps the terms searches ask for most: a word asked again and again
    # stays while one-off words come and go (a least-recently-used cache would drop it for
    # them), and scores stay exact
    before = {t: dict(idx.search([t], 10)) for t in ("appl", "pie", "red")}
    assert [len(before[t]) for t in ("appl", "pie", "red")] == [2, 1, 1]
    st = idx._ensure()
    st.contrib.clear()
    st.cached = 0
    idx._asked = {}
    idx.CACHE_ENTRIES = 3
    for _ in range(3):
        idx.search(["appl"], 10)                   # 2 postings, asked three times
    idx.search(["pie"], 10)                        # 1 posting: at the bound
    idx.search(["red"], 10)                        # over it: the least asked go, the oldest first,
    assert list(st.contrib) == ["appl"] and st.cached == 2   # down to nine tenths of the bound
    idx.search(["pie", "red"], 10)
    assert set(st.contrib) == {"appl"}            # asked twice each: still below "appl"
    assert {t: dict(idx.search([t], 10)) for t in before} == before


def test_hit_ref_names_the_copy_to_get(tmp_path):
    ro = tmp_path / "ro"
    write_skill(ro, "deep/a/b/tip", name="tip", description="walrus tusk polishing, detailed walrus tusk guide",
                body="# Tusks\n\nBeeswax, a soft cloth, and patience.\n")
    write_skill(ro, "tip", description="a shorter note on something else", body="# Other\n\nUnrelated notes.\n")
    lib = Library(home=tmp_path / "h", roots=[ro], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    hit = lib.search("detailed walrus tusk polishing guide", log=False).hits[0]
    assert hit.copies == 2
    # the better match is the deep copy, but the name resolves to the shallower one:
    # the hit says which id to get instead
    assert hit.id == "ro:deep/a/b/tip" and lib.get("tip").id == "ro:tip"
    assert hit.ref == hit.id


def _indexes_from_first_components(meta_first, body_first, has, has_body):
    """Unit vectors whose product with e0 is the given first component."""
    import numpy as np

    from skillshelf.search.vectors import ExactIndex

    def unit(first):
        m = np.zeros((len(first), 4), dtype=np.float32)
        m[:, 0] = first
        m[:, 1] = np.sqrt(1 - np.square(first))
        return m

    return ExactIndex(unit(meta_first), np.array(has)), ExactIndex(unit(body_first), np.array(has_body))


def test_dense_list_scores_each_skill_by_its_better_vector(tmp_path):
    """Max-sim over the metadata and body vectors; a skill without a body vector keeps its
    metadata score; a skill with no vector at all is left out."""
    import numpy as np

    root = tmp_path / "r"
    for name in ("a", "b", "c", "d"):
        write_skill(root, name, description=f"skill {name}")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    s = lib.searcher
    s._vindex, s._bindex = _indexes_from_first_components(
        [0.2, 0.5, 0.6, 0.9], [0.9, 0.99, 0.1, 0.95], [True, True, True, False], [True, False, True, False])
    probe = np.array([1, 0, 0, 0], dtype=np.float32)
    ranked = s.dense(probe, 10, None)
    assert [p for p, _ in ranked] == [0, 2, 1]
    assert [round(v, 2) for _, v in ranked] == [0.9, 0.6, 0.5]
    assert [p for p, _ in s.dense(probe, 10, np.array([False, True, True, True]))] == [2, 1]
    # a top-k cut keeps the skills best by their better score
    assert [p for p, _ in s.dense(probe, 1, None)] == [0]


def test_a_body_only_match_reaches_the_dense_list(tmp_path):
    """The body's opening is embedded: a request worded like the body, not the
    description, finds the skill through the dense list alone."""
    root = tmp_path / "r"
    write_skill(root, "tusk-care", description="General maintenance notes",
                body="# Steps\n\nPolish walrus tusks with beeswax every spring.\n")
    for i in range(5):
        write_skill(root, f"other-{i}", description=f"General maintenance notes number {i}")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    emb, _ = lib._embedder_state()
    s = lib.searcher
    s._ensure_vectors(emb, s._ensure_meta())
    top = s.dense(emb.embed("polish walrus tusks beeswax"), 1, None)[0][0]
    assert s.rows([top])[top]["name"] == "tusk-care"


def test_searches_stay_consistent_while_the_index_changes(tmp_path):
    """A sync in another thread (the server's watcher) changes the index generation
    mid-search: every hit must still name the skill its path holds."""
    import threading

    root = tmp_path / "r"
    for i in range(30):
        write_skill(root, f"topic-{i:02d}", description=f"docker compose recipe number {i}")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    errors: list[BaseException] = []
    stop = threading.Event()

    def churn():
        try:
            for i in range(30, 45):
                write_skill(root, f"topic-{i:02d}", description=f"docker compose recipe number {i}")
                lib.sync()
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    t = threading.Thread(target=churn)
    t.start()
    checked = 0
    while not stop.is_set() or checked < 10:
        for h in lib.search("docker compose recipe", limit=10, log=False).hits:
            assert h.path.endswith(f"/{h.name}/SKILL.md")
        checked += 1
    t.join()
    assert not errors and lib.count() == 45


def test_confidence_scores_a_skill_by_its_better_vector(tmp_path):
    """A terse description over a body that says exactly what the request needs: the body
    vector makes the match likely (confidence uses the same max-sim score as ranking)."""
    root = tmp_path / "r"
    write_skill(root, "acme-helper", description="Internal helper for the Acme team.",
                body="# Acme helper\n\nRotate a leaked AWS access key and purge the secret from the git history "
                     "with git filter-repo, then force-push and tell collaborators to re-clone.\n")
    lib = Library(home=tmp_path / "h", roots=[root], auto_sync=False)
    lib.sync()
    q = "an AWS access key was committed to our repo; rotate it and purge it from git history"
    res = lib.search(q, log=False)
    s, emb = lib.searcher, lib._embedder_state()[0]
    qv = emb.embed(q)
    meta_cos = float(s._vindex.dot([0], qv)[0])
    body_cos = float(s._bindex.dot([0], qv)[0])
    assert meta_cos < s._threshold() <= body_cos
    assert res.hits[0].name == "acme-helper" and res.hits[0].match == "likely" and res.confident


def test_a_skill_removed_by_another_process_mid_search_is_left_out(tmp_path):
    """Another process deletes a skill's row after this search took its snapshot (the
    generation it read is still current): the search answers without it, never KeyError."""
    root = tmp_path / "r"
    for i in range(6):
        write_skill(root, f"topic-{i}", description=f"docker compose recipe number {i}")
    write_skill(root, "other", description="totally unrelated gardening advice")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    first = lib.search("docker compose recipe", limit=5, log=False).hits
    gone = first[0].name
    searcher = lib.searcher
    real_rows = searcher.rows

    def rows_after_a_concurrent_delete(positions, meta=None):
        # the other process's write lands between the snapshot and this read
        lib.store.db.execute("DELETE FROM skills WHERE name = ?", (gone,))
        return real_rows(positions, meta)

    searcher.rows = rows_after_a_concurrent_delete
    for mode in ("find", "brainstorm"):
        hits = lib.search("docker compose recipe", limit=5, mode=mode, log=False).hits
        assert hits and gone not in {h.name for h in hits}


def test_an_empty_library_says_how_to_fill_it(tmp_path):
    lib = Library(home=tmp_path / "h", embedder=FakeEmbedder(), auto_sync=False)
    res = lib.search("fix a CORS error", log=False)
    assert res.hits == [] and not res.confident
    assert "skillshelf init" in res.degraded and "skillshelf roots add" in res.degraded


def test_a_near_copy_under_another_name_is_not_ranked_below_unrelated_skills(tmp_path):
    """A small library (every skill is a candidate) with a renamed copy of a sample skill:
    diversity may not push the copy below skills whose meaning is unrelated to the request."""
    lib = Library.init(tmp_path / "h", auto_sync=False)   # the bundled model
    lib.sync()
    original = next(r for r in lib.list() if r.name == "cors-fix-nextjs-api")
    copy = tmp_path / "r" / "good-skill"
    copy.mkdir(parents=True)
    copy.joinpath("SKILL.md").write_text(
        Path(original.path).read_text().replace("name: cors-fix-nextjs-api", "name: good-skill"))
    lib = Library(home=tmp_path / "h", roots=[tmp_path / "r"], auto_sync=False)
    lib.sync()
    hits = lib.search("fix a CORS error", log=False).hits
    assert {h.name for h in hits[:2]} == {"cors-fix-nextjs-api", "good-skill"}, [(h.name, h.score) for h in hits]
    assert all(h.score <= 0 for h in hits[2:])


def test_a_skill_without_a_vector_yet_still_ranks_by_its_words(tmp_path):
    """A skill whose vectors are missing (an embedder that failed on it, a model change in
    progress) has no cosine: it is not 'unrelated', and its exact word match is shown."""
    root = tmp_path / "r"
    write_skill(root, "postgres-index", description="Tune PostgreSQL indexes for slow queries")
    write_skill(root, "mysql-replication", description="Set up MySQL replication for read scaling")
    write_skill(root, "sql-migrations", description="Write safe SQL schema migrations with rollbacks")
    write_skill(root, "react-forms", description="Build accessible React forms with validation")
    lib = Library(home=tmp_path / "h", roots=[root], auto_sync=False)   # the bundled model
    lib.sync()
    with lib.store.tx() as tx:
        tx.execute("DELETE FROM skill_vectors WHERE skill_rowid = (SELECT rowid FROM skills WHERE name = ?)",
                   ("postgres-index",))
    lib.store.set_meta("vectors_generation", "changed")
    res = lib.search("tune postgresql indexes for slow queries", limit=3, log=False)
    assert res.hits[0].name == "postgres-index" and res.hits[0].score == 0.0, [(h.name, h.score) for h in res.hits]
    assert any(h.score > 0 for h in res.hits[1:])      # the others have vectors and are related


def test_a_search_still_on_the_old_index_does_not_leave_stale_postings_for_the_new_one(tmp_path):
    """A search in another thread still weighs terms against the previous index generation
    when a sync lands: what it caches must not be served to searches on the new one."""
    from skillshelf.search.lexical import LexicalIndex

    root = tmp_path / "r"
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    idx = lib.searcher._lex
    in_flight = idx._ensure()                       # the other thread's search took this state
    write_skill(root, "docker-compose", description="Docker compose files for local stacks")
    lib.sync()
    idx._ensure()                                   # a search on the new generation
    idx._contribution(in_flight, "docker")          # the old search goes on weighing "docker"
    fresh = LexicalIndex(lib.store, tuple(idx.weights)).search(["docker"], 10)
    assert dict(idx.search(["docker"], 10)) == pytest.approx(dict(fresh)) and len(fresh) == 2
