"""After an edit, a long-running library's search state reads the rows that changed (the change
journal, migration 015), not every row: at 100k skills a full read is ~0.3 s of CPU per edit
(BENCHMARKS.md). The patched state must equal a state built from scratch."""

import numpy as np
import pytest
from conftest import write_later, write_skill

from skillshelf import Library
from skillshelf.search.lexical import LexicalIndex, terms
from skillshelf.search.state import SearchState
from skillshelf.store import meta as metamod


def _library(tmp_path, n=40):
    root = tmp_path / "r"
    for i in range(n):
        write_skill(root / "col", f"s{i:02d}", description=f"topic{i} recipes",
                    body=f"# Title\n\nBody text {i}.\n" + "filler words here. " * (i % 7))
    lib = Library(home=tmp_path / "h", roots=[root], embedder="none", auto_sync=False)
    lib.sync()
    lib.search("topic3 recipes", log=False)      # the state is built
    return lib, root


def _no_full_read(lib, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the state read every row")
    monkeypatch.setattr(lib.searcher.state.reads, "state", refuse)
    monkeypatch.setattr(lib.searcher._lex._store_postings, "live_docs", refuse)


def _partition(snap):
    """Each position's copy group as the set of rowids in it (group ids may be numbered apart)."""
    return [frozenset(snap.rowids[snap.members(p)].tolist()) for p in range(len(snap.rowids))]


def _same_as_fresh(lib):
    st = lib.searcher.state
    patched = st.snapshot()
    fresh = SearchState(lib.store, lib.config.search).snapshot()
    assert np.array_equal(patched.rowids, fresh.rowids)
    assert np.array_equal(patched.active, fresh.active)
    assert np.array_equal(patched.expires, fresh.expires)
    assert _partition(patched) == _partition(fresh)
    lex = lib.searcher._lex._ensure()
    new = LexicalIndex(lib.store, tuple(lib.searcher._lex.weights.tolist()))._ensure()
    assert np.array_equal(lex.to_skill, new.to_skill)     # the same length too: dead documents past it are out
    assert np.array_equal(lex.dead, new.dead)
    assert np.allclose(lex.avg, new.avg) and lex.n == new.n
    live = np.flatnonzero(new.to_skill >= 0)
    assert np.allclose(lex.wnorm[:, live], new.wnorm[:, live])


def test_an_edit_patches_the_state_with_its_own_rows_and_equals_a_fresh_one(tmp_path, monkeypatch):
    lib, root = _library(tmp_path)
    try:
        _no_full_read(lib, monkeypatch)
        f = root / "col" / "s07" / "SKILL.md"
        write_later(f, f.read_text() + "\nzebraword and some more words\n")
        assert lib.sync().updated == 1
        hits = lib.search("zebraword", log=False).hits
        assert hits and hits[0].name == "s07"
        _same_as_fresh(lib)
        # a rename into another skill's name: the two become copies of one group
        write_later(f, f.read_text().replace("name: s07", "name: s08"))
        lib.sync()
        lib.search("topic7", log=False)
        _same_as_fresh(lib)
        # a deprecation (the row's active flag)
        lib.deprecate("s09", "old")
        assert "s09" not in [h.name for h in lib.search("topic9 recipes", log=False).hits]
        _same_as_fresh(lib)
    finally:
        lib.close()


def test_a_skill_added_or_removed_reads_every_row_again(tmp_path):
    lib, root = _library(tmp_path)
    try:
        calls = []
        real = lib.searcher.state.reads.state
        lib.searcher.state.reads.state = lambda: calls.append(1) or real()
        write_skill(root / "col", "s99", description="quokkaword recipes")
        lib.sync()
        assert lib.search("quokkaword", log=False).hits[0].name == "s99"
        assert calls == [1]          # positions moved: a full read
        _same_as_fresh(lib)
    finally:
        lib.close()


@pytest.mark.parametrize("keep", [3])
def test_a_journal_pruned_past_the_state_reads_every_row(tmp_path, monkeypatch, keep):
    lib, root = _library(tmp_path)
    try:
        monkeypatch.setattr(metamod, "JOURNAL_KEEP", keep)
        calls = []
        real = lib.searcher.state.reads.state
        lib.searcher.state.reads.state = lambda: calls.append(1) or real()
        for i in (3, 4, 5, 6):       # more changes than the journal keeps, in one sync
            f = root / "col" / f"s{i:02d}" / "SKILL.md"
            write_later(f, f.read_text() + f"\nwombat{i}word\n")
        lib.sync()
        assert lib.search("wombat5word", log=False).hits[0].name == "s05"
        assert calls == [1]
        _same_as_fresh(lib)
    finally:
        lib.close()


def test_removing_the_newest_document_scores_as_a_fresh_state_does(tmp_path):
    """A full load's arrays end at the last live document, so a dead one past it is not counted
    in a term's document frequency; a patched state must end there too."""
    lib, root = _library(tmp_path, n=10)
    try:
        f = root / "col" / "s09" / "SKILL.md"
        write_later(f, f.read_text() + "\nmore recipes\n")      # s09 gets the newest document
        lib.sync()
        lib.search("recipes", log=False)
        import shutil
        shutil.rmtree(root / "col" / "s09")
        lib.sync()
        words = terms("recipes")
        patched = lib.searcher._lex.search(words, 20)
        fresh = LexicalIndex(lib.store, tuple(lib.searcher._lex.weights.tolist())).search(words, 20)
        assert patched and [(r, round(s, 6)) for r, s in patched] == [(r, round(s, 6)) for r, s in fresh]
        _same_as_fresh(lib)
    finally:
        lib.close()


def test_a_full_read_that_fails_leaves_the_snapshot_where_it_was(tmp_path, monkeypatch):
    lib, _ = _library(tmp_path)
    try:
        st = lib.searcher.state
        lib.deprecate("s03", "old")
        monkeypatch.setattr(SearchState, "PATCH_MAX", -1)      # (stands for a change too large to patch)
        real = st.reads.state
        monkeypatch.setattr(st.reads, "state", lambda: (_ for _ in ()).throw(OSError("disk gone")))
        with pytest.raises(OSError):
            st.snapshot()
        monkeypatch.setattr(st.reads, "state", real)
        monkeypatch.setattr(SearchState, "PATCH_MAX", 2000)
        assert "s03" not in [h.name for h in lib.search("topic3 recipes", log=False).hits]
        _same_as_fresh(lib)
    finally:
        lib.close()
