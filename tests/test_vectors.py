"""The dense index: exact float32 and faiss SQ8, loaded in chunks, aligned with positions."""

import sys

import numpy as np
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.search import vectors
from skillshelf.search.sync import PART_META

TOPICS = ["docker", "cors", "postgres", "kafka", "react", "terraform", "pytest", "graphql", "redis", "nginx"]


def _lib(tmp_path, n=60):
    root = tmp_path / "r"
    for i in range(n):
        a, b = TOPICS[i % 10], TOPICS[(i * 3 + 1) % 10]
        write_skill(root, f"s{i:03d}", description=f"{a} and {b} recipes, variant {i}",
                    body=f"# Steps\n\nUse {b} with {a}; step {i}.\n")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(dim=64), auto_sync=False)
    lib.sync()
    emb, _ = lib._embedder_state()
    return lib, emb


def test_chunked_loading_keeps_rows_aligned(tmp_path, monkeypatch):
    lib, emb = _lib(tmp_path)
    monkeypatch.setattr(vectors, "CHUNK", 7)       # many chunk borders
    meta = lib.searcher._ensure_meta()
    idx = vectors.load(lib.store, emb.model_id, meta.rowids, PART_META)
    assert isinstance(idx, vectors.ExactIndex) and idx.has.all()
    for p in (0, 6, 7, 33, len(meta.rowids) - 1):
        row = lib.searcher.rows([p])[p]
        want = emb.embed(f"{row['name']}: {row['description']}")
        assert np.allclose(idx.vectors([p])[0], want, atol=1e-6)


def test_sq8_index_agrees_with_the_exact_one(tmp_path):
    pytest.importorskip("faiss")
    lib, emb = _lib(tmp_path)
    rowids = lib.searcher._ensure_meta().rowids
    exact = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    sq8 = vectors.load(lib.store, emb.model_id, rowids, PART_META, sq8_above=10)
    assert isinstance(sq8, vectors.SQ8Index) and sq8.nbytes * 3 < exact.nbytes
    assert np.abs(sq8.vectors(range(len(rowids))) - exact.mat).max() < 0.02
    q = emb.embed("docker cors recipes")
    e_pos, e_sc = exact.top(q, 10)
    s_pos, s_sc = sq8.top(q, 10)
    assert len(set(e_pos[:5]) & set(s_pos[:10])) == 5
    assert np.allclose(np.sort(e_sc)[::-1][:3], np.sort(s_sc)[::-1][:3], atol=0.03)
    # filters: only allowed rows come back, in both
    allowed = np.zeros(len(rowids), dtype=bool)
    allowed[::3] = True
    for idx in (exact, sq8):
        pos, _ = idx.top(q, 10, allowed)
        assert len(pos) == 10 and allowed[pos].all()
    # a row without a vector never comes back
    sq8.has[e_pos[0]] = False
    assert e_pos[0] not in set(sq8.top(q, 10)[0])


def test_search_uses_sq8_when_large_and_exact_without_faiss(tmp_path, monkeypatch):
    pytest.importorskip("faiss")
    import dataclasses

    lib, emb = _lib(tmp_path)
    def topics(hits):
        # every topic pair is there 6 times, as twins that differ only in their variant number: the
        # 8-bit vectors may swap two twins (the ranker reads the cosines), never the answer
        return [h.description.split(", variant")[0] for h in hits[:3]]

    exact_hits = topics(lib.search("kafka and redis recipes", log=False).hits)
    lib.searcher.s = dataclasses.replace(lib.searcher.s, sq8_above=10)
    lib.searcher._vec_gen = None
    res = lib.search("kafka and redis recipes", log=False)
    assert isinstance(lib.searcher._vindex, vectors.SQ8Index) and isinstance(lib.searcher._bindex, vectors.SQ8Index)
    assert res.degraded is None and topics(res.hits) == exact_hits
    # faiss missing: the same setting falls back to the exact index
    monkeypatch.setitem(sys.modules, "faiss", None)
    lib.searcher._vec_gen = None
    lib.search("kafka", log=False)
    assert type(lib.searcher._vindex) is vectors.ExactIndex


def test_vector_cache_file_is_written_reused_and_never_stale(tmp_path, monkeypatch):
    lib, emb = _lib(tmp_path)
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    monkeypatch.setattr(vectors, "CHUNK", 16)
    rowids = lib.searcher._ensure_meta().rowids
    cache = lib.store.path.parent / "vector-cache"
    first = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    files = list(cache.glob("part0-*.npy"))
    assert len(files) == 1 and not list(cache.glob(".*tmp"))
    # served from the file now: SQLite's vectors are not read again
    monkeypatch.setattr(vectors, "_chunks", lambda *a, **k: pytest.fail("read SQLite despite the cache"))
    again = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    assert np.array_equal(again.mat, first.mat) and np.array_equal(again.has, first.has)
    monkeypatch.undo()
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    # a changed skill: new generation, new file, the old one removed, the new vector served
    skill = tmp_path / "r" / "s000" / "SKILL.md"
    skill.write_text(skill.read_text().replace("variant 0", "walrus tusk polishing"))
    lib.sync()
    rowids = lib.searcher._ensure_meta().rowids
    changed = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    assert [f.name for f in cache.glob("part0-*.npy")] != [f.name for f in files] and not files[0].exists()
    p = int(lib.searcher._meta.positions([lib.store.db.execute(
        "SELECT rowid FROM skills WHERE name='s000'").fetchone()[0]])[0])
    assert not np.allclose(changed.vectors([p]), first.vectors([p]))
    # a damaged (truncated) file is ignored and rewritten
    (f,) = cache.glob("part0-*.npy")
    f.write_bytes(f.read_bytes()[:-100])
    again = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    assert np.array_equal(again.mat, changed.mat) and f.stat().st_size > 100 * 64


def test_a_rebuilt_database_never_reads_the_old_cache(tmp_path, monkeypatch):
    lib, emb = _lib(tmp_path)
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    rowids = lib.searcher._ensure_meta().rowids
    vectors.load(lib.store, emb.model_id, rowids, PART_META)
    old_id = lib.store.get_meta("index_id")
    lib.store.close()
    for f in (tmp_path / "h").glob("skillshelf.db*"):
        f.unlink()
    lib2 = Library(home=tmp_path / "h", roots=[tmp_path / "r"], embedder=FakeEmbedder(dim=64), auto_sync=False)
    lib2.sync()
    assert lib2.store.get_meta("index_id") not in (None, old_id)
    assert vectors.cache_path(lib2.store, emb.model_id, lib2.searcher._ensure_meta().rowids, PART_META, 64) \
        not in set((tmp_path / "h" / "vector-cache").glob("*.npy"))


def test_a_body_setting_put_back_never_serves_the_other_settings_vectors(tmp_path, monkeypatch):
    """Changing search.body_vector_tokens and back re-links vectors that are all cached:
    nothing new is embedded, yet the skills' vectors changed, so the search state and the
    cache file must not be the ones of the other setting."""
    import dataclasses

    from skillshelf.search.sync import PART_BODY

    lib, emb = _lib(tmp_path)
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)

    def body_vectors(tokens):
        lib.config = dataclasses.replace(lib.config, search=dataclasses.replace(lib.config.search,
                                                                                body_vector_tokens=tokens))
        lib.sync()
        rowids = lib.searcher._ensure_meta().rowids
        return vectors.load(lib.store, emb.model_id, rowids, PART_BODY).mat.copy()

    first = body_vectors(128)
    other = body_vectors(3)            # FakeEmbedder truncates by words: other vectors
    assert not np.allclose(first, other)
    back = body_vectors(128)           # all cached already: nothing is embedded
    assert np.allclose(back, first)


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path, monkeypatch):
    lib, emb = _lib(tmp_path)
    rowids = lib.searcher._ensure_meta().rowids
    plain = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    (tmp_path / "h" / "vector-cache").write_text("a file where the folder should be")
    idx = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    assert np.array_equal(idx.mat, plain.mat) and (tmp_path / "h" / "vector-cache").is_file()
    assert not list((tmp_path / "h").glob(".*.tmp"))


def _change_three(tmp_path, lib):
    """Edit one skill, remove one, add one; returns the new rowids."""
    import shutil

    skill = tmp_path / "r" / "s005" / "SKILL.md"
    skill.write_text(skill.read_text().replace("variant 5", "walrus tusk polishing"))
    shutil.rmtree(tmp_path / "r" / "s010")
    write_skill(tmp_path / "r", "s999", description="narwhal horn care", body="# Steps\n\nOil it.\n")
    lib.sync()
    return lib.searcher._ensure_meta().rowids


def test_a_reload_after_a_change_reuses_unchanged_vectors_and_equals_a_full_load(tmp_path, monkeypatch):
    from skillshelf.search.sync import PART_BODY

    lib, emb = _lib(tmp_path)
    rowids = lib.searcher._ensure_meta().rowids
    # below CACHE_ABOVE a load is quick and leaves nothing to reuse (no hashes read, no file)
    assert vectors.previous(vectors.load(lib.store, emb.model_id, rowids, PART_META)) is None
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    monkeypatch.setattr(vectors, "CHUNK", 16)
    before = {part: vectors.load(lib.store, emb.model_id, rowids, part) for part in (PART_META, PART_BODY)}
    old_files = set((tmp_path / "h" / "vector-cache").glob("*.npy"))
    assert len(old_files) == 2
    rowids = _change_three(tmp_path, lib)
    with monkeypatch.context() as m:             # the reference: a full load, writing no cache file
        m.setattr(vectors, "CACHE_ABOVE", 10 ** 9)
        full = {part: vectors.load(lib.store, emb.model_id, rowids, part) for part in (PART_META, PART_BODY)}
    fetched = []
    real_fetch = vectors._fetch
    monkeypatch.setattr(vectors, "_chunks", lambda *a, **k: pytest.fail("a full read despite the previous load"))
    monkeypatch.setattr(vectors, "_fetch", lambda *a: fetched.append(len(a[4])) or real_fetch(*a))
    for part in (PART_META, PART_BODY):
        inc = vectors.load(lib.store, emb.model_id, rowids, part, previous=vectors.previous(before[part]))
        assert np.array_equal(inc.mat, full[part].mat) and np.array_equal(inc.has, full[part].has)
    # read from SQLite: the edited skill's metadata and the new skill's two vectors, nothing else
    assert fetched == [2, 1]
    now = set((tmp_path / "h" / "vector-cache").glob("*.npy"))   # the new state cached, the old gone
    assert len(now) == 2 and not now & old_files


def test_a_reload_after_many_changes_loads_in_full(tmp_path, monkeypatch):
    lib, emb = _lib(tmp_path)
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    rowids = lib.searcher._ensure_meta().rowids
    before = vectors.load(lib.store, emb.model_id, rowids, PART_META)
    for i in range(0, 60, 2):                    # half the skills change
        f = tmp_path / "r" / f"s{i:03d}" / "SKILL.md"
        f.write_text(f.read_text().replace(f"variant {i}", f"rewritten {i}"))
    lib.sync()
    rowids = lib.searcher._ensure_meta().rowids
    calls = []
    real = vectors._chunks
    monkeypatch.setattr(vectors, "_chunks", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = vectors.load(lib.store, emb.model_id, rowids, PART_META, previous=vectors.previous(before))
    assert calls == [1] and again.has.all()


def test_sq8_reload_after_a_change_equals_a_full_load(tmp_path, monkeypatch):
    pytest.importorskip("faiss")
    lib, emb = _lib(tmp_path)
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    rowids = lib.searcher._ensure_meta().rowids
    before = vectors.load(lib.store, emb.model_id, rowids, PART_META, sq8_above=10)
    assert isinstance(before, vectors.SQ8Index) and vectors.previous(before).path.is_file()
    rowids = _change_three(tmp_path, lib)
    with monkeypatch.context() as m:
        m.setattr(vectors, "CACHE_ABOVE", 10 ** 9)
        full = vectors.load(lib.store, emb.model_id, rowids, PART_META, sq8_above=10)
    monkeypatch.setattr(vectors, "_chunks", lambda *a, **k: pytest.fail("a full read despite the previous file"))
    inc = vectors.load(lib.store, emb.model_id, rowids, PART_META, sq8_above=10, previous=vectors.previous(before))
    assert isinstance(inc, vectors.SQ8Index)
    assert np.array_equal(inc.vectors(range(len(rowids))), full.vectors(range(len(rowids))))
    assert np.array_equal(inc.has, full.has)
    # without its file, an SQ8 load has nothing to reuse: it reads SQLite in full
    monkeypatch.undo()
    monkeypatch.setattr(vectors, "CACHE_ABOVE", 10)
    for f in (tmp_path / "h" / "vector-cache").glob("*.npy"):
        f.unlink()
    calls = []
    real = vectors._chunks
    monkeypatch.setattr(vectors, "_chunks", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = vectors.load(lib.store, emb.model_id, rowids, PART_META, sq8_above=10, previous=vectors.previous(before))
    assert calls == [1] and np.array_equal(again.vectors(range(len(rowids))), full.vectors(range(len(rowids))))
