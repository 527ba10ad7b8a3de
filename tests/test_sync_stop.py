"""Ctrl-C during a sync: it stops at once, keeps what was done, and the next sync goes on
from there (the index is consistent at every point it can stop)."""

import threading
import time

import pytest
from conftest import write_skill

from skillshelf.catalog.roots import Root
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.search import sync as indexmod
from skillshelf.store import Store

WORDS = ("walrus", "heron", "otter", "badger", "lynx", "marmot", "puffin", "stoat", "vole", "wombat",
         "gecko", "ibis", "jackal", "kestrel", "lemur", "mink", "newt", "ocelot", "panda", "quail")


def _root(tmp_path, n=20):
    root = tmp_path / "r"
    for i in range(n):
        write_skill(root, f"s{i:02d}", description=f"grooming the {WORDS[i % len(WORDS)]} number {i}",
                    body=f"# Steps\n\nBrush the {WORDS[i % len(WORDS)]} gently, then rinse it {i} times.\n")
    return root


def _store(tmp_path):
    return Store(tmp_path / "h" / "skillshelf.db")


def _roots(root):
    return [Root(root, "other", "r")]


def _names(store):
    return sorted(r[0] for r in store.db.execute("SELECT name FROM skills"))


def _lexical(store, word):
    from skillshelf.search import lexical

    idx = lexical.LexicalIndex(store, (3.0, 2.0, 1.5, 1.0, 1.0))
    names = dict(store.db.execute("SELECT rowid, name FROM skills").fetchall())
    return [names[rid] for rid, _ in idx.search(lexical.terms(word), 10)]


def _stop_at(n):
    def progress(done, total):
        if done == n:
            raise KeyboardInterrupt
    return progress


def test_ctrl_c_keeps_the_files_indexed_before_it_and_the_next_sync_does_the_rest(tmp_path):
    root = _root(tmp_path)
    store = _store(tmp_path)
    with pytest.raises(indexmod.Interrupted) as stopped:
        indexmod.sync(store, _roots(root), progress=_stop_at(12))
    kept = stopped.value.report
    assert (kept.added, kept.updated, kept.removed) == (12, 0, 0)
    assert len(_names(store)) == 12                    # committed, not rolled back with the batch
    assert _lexical(store, WORDS[3]) == ["s03"]        # the postings came with the rows
    rep = indexmod.sync(store, _roots(root))
    assert (rep.added, rep.unchanged) == (8, 12)
    assert len(_names(store)) == 20 and _lexical(store, WORDS[15]) == ["s15"]


def test_a_file_cut_short_leaves_no_postings_behind(tmp_path):
    """Ctrl-C while a file is being indexed undoes that file alone; its postings must not
    stay behind under a document number the next file is given."""
    root = _root(tmp_path, 8)
    store = _store(tmp_path)
    seen = []

    def on_skill(sk):
        seen.append(sk.name)
        if sk.name == "s05":   # after its row and postings were written
            raise KeyboardInterrupt

    with pytest.raises(indexmod.Interrupted) as stopped:
        indexmod.sync(store, _roots(root), on_skill=on_skill)
    assert stopped.value.report.added == 5 and _names(store) == ["s00", "s01", "s02", "s03", "s04"]
    # the file that was cut short is gone before the next sync: whatever document number it had
    # is given to the next skill indexed, which must not be found by the gone file's words
    (root / "s05" / "SKILL.md").unlink()
    indexmod.sync(store, _roots(root))
    assert "s05" not in _names(store) and len(_names(store)) == 7
    assert _lexical(store, WORDS[5]) == []
    assert _lexical(store, WORDS[6]) == ["s06"]


def test_ctrl_c_while_a_batch_is_merged_rolls_back_that_batch_and_says_so(tmp_path, monkeypatch):
    from skillshelf.search import lexical

    root = _root(tmp_path, 6)
    store = _store(tmp_path)
    real = lexical.Writer.flush

    def interrupted_flush(self):
        monkeypatch.setattr(lexical.Writer, "flush", real)
        raise KeyboardInterrupt

    monkeypatch.setattr(lexical.Writer, "flush", interrupted_flush)
    with pytest.raises(indexmod.Interrupted) as stopped:
        indexmod.sync(store, _roots(root))
    assert stopped.value.report.added == 0 and _names(store) == []   # what it says is what is there
    rep = indexmod.sync(store, _roots(root))
    assert rep.added == 6 and _lexical(store, WORDS[2]) == ["s02"]


def test_ctrl_c_while_a_batch_is_merged_lets_it_finish_and_keeps_it(tmp_path, monkeypatch):
    """A real Ctrl-C (SIGINT) in the middle of merging a batch's postings is held until the
    batch is committed: the files read before it are not thrown away."""
    import os
    import signal

    from skillshelf.search import lexical

    root = _root(tmp_path, 6)
    store = _store(tmp_path)
    real = lexical.Writer.flush

    def flush_hit_by_ctrl_c(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)             # the signal is handled here, in the middle of the merge
        real(self)

    monkeypatch.setattr(lexical.Writer, "flush", flush_hit_by_ctrl_c)
    with pytest.raises(indexmod.Interrupted) as stopped:
        indexmod.sync(store, _roots(root))
    assert stopped.value.report.added == 6 and len(_names(store)) == 6
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # put back
    monkeypatch.undo()
    assert indexmod.sync(store, _roots(root)).unchanged == 6 and _lexical(store, WORDS[4]) == ["s04"]


def test_a_stop_raised_by_the_callers_progress_keeps_the_work_and_goes_on_unchanged(tmp_path):
    class Closing(Exception):
        pass

    def progress(done, total):
        if done == 7:
            raise Closing("the library is closing")

    root = _root(tmp_path, 10)
    store = _store(tmp_path)
    with pytest.raises(Closing):
        indexmod.sync(store, _roots(root), progress=progress)
    assert len(_names(store)) == 7


def _vectors(store, part=None):
    sql = "SELECT COUNT(*) FROM skill_vectors" + ("" if part is None else f" WHERE part = {part}")
    return store.db.execute(sql).fetchone()[0]


def test_ctrl_c_while_embedding_keeps_and_links_the_vectors_made_so_far(tmp_path):
    root = _root(tmp_path)
    store = _store(tmp_path)
    indexmod.sync(store, _roots(root))
    emb = FakeEmbedder()
    calls = []

    def progress(done, total):
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(indexmod.Interrupted) as stopped:
        indexmod.embed_pending(store, emb, body_tokens=128, progress=progress, batch=4)   # 8 texts a step
    assert stopped.value.report.embedded == 16
    linked = _vectors(store)
    assert 0 < linked < 40                               # the skills of those 16 texts have their vectors
    assert store.get_meta("vectors_generation") not in (None, "0")   # search state sees them
    assert indexmod.embed_pending(store, emb, body_tokens=128) == 24   # the rest, nothing twice
    assert _vectors(store) == 40


class SlowEmbedder(FakeEmbedder):
    """0.03 s per text: a sync's prefetch has plenty left to do when Ctrl-C comes."""

    def _embed(self, texts, max_tokens=None):
        time.sleep(0.03 * len(texts))
        return super()._embed(texts, max_tokens)


def test_ctrl_c_stops_the_prefetch_at_once_and_keeps_its_vectors(tmp_path):
    """The caller's ``finally`` finishes the prefetch while the interrupt is on its way: it
    must not embed what is still queued (on the corpus that took 23-80 s), and what it made
    is stored and linked, and counted in the report."""
    root = _root(tmp_path, 60)
    store = _store(tmp_path)
    emb = SlowEmbedder()
    from skillshelf.search.prefetch import Prefetch

    pre = Prefetch(store, emb, 128)

    def progress(done, total):
        if done == 40:
            time.sleep(0.5)          # the model has embedded some of the texts by now
            raise KeyboardInterrupt

    t0 = None
    with pytest.raises(indexmod.Interrupted) as stopped:
        try:
            indexmod.sync(store, _roots(root), progress=progress, on_skill=pre.add)
        finally:
            t0 = time.monotonic()
            ready = pre.finish()
    assert time.monotonic() - t0 < 1.5          # 80 texts were queued: ~2.4 s of work
    assert ready == {} and not any(t.name == "skillshelf-prefetch" for t in threading.enumerate())
    kept = stopped.value.report
    assert kept.added == 40 and kept.embedded == pre.kept > 0
    assert _vectors(store) > 0                  # linked: searches use them now
    assert indexmod.embed_pending(store, FakeEmbedder(), body_tokens=128) + kept.embedded == 80
    assert _vectors(store) == 80 and len(_names(store)) == 40


def test_a_library_interrupted_mid_sync_is_consistent_and_the_next_sync_completes_it(tmp_path):
    from skillshelf import Library

    root = _root(tmp_path)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    with pytest.raises(KeyboardInterrupt):
        lib.sync(progress=_stop_at(9))
    assert lib.count() == 9 and lib.store.quick_check() == "ok"
    assert lib.search(f"grooming the {WORDS[4]}", log=False).hits[0].name == "s04"
    rep = lib.sync()
    assert rep.added == 11 and lib.count() == 20
    status = lib.embedder_status()
    assert status["vectors"] == 20 and status["body_vectors"] == 20
    lib.close()
