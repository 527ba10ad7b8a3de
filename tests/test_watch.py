"""Editor changes reach the index through file-system events, not rescans: a long-running
library (the MCP server, the dashboard) idles at no cost and sees an edit, a new skill folder
or a deleted one within about a second; the Python API rescans only when events say so."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.catalog import watcher
from skillshelf.catalog.roots import Root
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.search import indexer as indexing, sync as indexmod

SEEN_WITHIN = 2.0   # seconds from a change on disk to a search that finds it


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_skill(root, "web/cors-fix", description="Fix CORS errors in Next.js API routes")
    write_skill(root, "ops/docker-build", description="Multi-stage Docker builds with cached layers")
    return root


def _serving(tmp_path: Path, root: Path, **kw) -> Library:
    """A library as a server runs it: indexed in the background, with no periodic rescan
    before an hour is out (only events can tell it about a change)."""
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder(), **kw)
    lib.start_indexing(3600)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st = lib.indexing_status()
        if st["state"] == "ready" and st["phase"] is None and lib.count() >= 2:
            break
        time.sleep(0.05)
    assert lib.count() == 2
    return lib


def _found_within(lib: Library, query: str, name: str, present: bool = True, limit: float = SEEN_WITHIN) -> float:
    """Seconds until a search for ``query`` finds ``name`` with ``query`` in its description
    (or, ``present`` false, no longer finds ``name`` at all); fails after ``limit``."""
    t0 = time.monotonic()
    while True:
        hits = lib.search_nowait(query, limit=5, log=False).hits
        names = [h.name for h in hits if not present or query in h.description]
        elapsed = time.monotonic() - t0
        if (name in names) == present:
            return elapsed
        assert elapsed < limit, f"{name} {'not found' if present else 'still found'} after {elapsed:.1f} s: {names}"
        time.sleep(0.05)


def test_an_edit_on_disk_is_found_by_the_next_searches_without_a_rescan(tmp_path):
    root = _root(tmp_path)
    lib = _serving(tmp_path, root)
    try:
        write_skill(root, "web/cors-fix", description="Fix CORS errors and polish the walrus tusk")
        _found_within(lib, "walrus tusk", "cors-fix")
    finally:
        lib.close()


def test_a_new_skill_folder_is_found_written_copied_or_moved_in(tmp_path):
    root = _root(tmp_path)
    lib = _serving(tmp_path, root)
    outside = tmp_path / "outside"
    try:
        write_skill(root, "new/zebra-paint", description="Paint zebra crossings on a road")
        _found_within(lib, "zebra crossings", "zebra-paint")
        # a folder copied in: its files appear before the watch on the new folder is set up
        write_skill(outside, "copied/lantern-polish", description="Polish a brass lantern")
        shutil.copytree(outside / "copied", root / "deep" / "copied")
        _found_within(lib, "brass lantern", "lantern-polish")
        # a folder moved in: one event for the folder, none for the file inside it
        write_skill(outside, "moved/kiln-fire", description="Fire a pottery kiln slowly")
        os.rename(outside / "moved", root / "moved")
        _found_within(lib, "pottery kiln", "kiln-fire")
    finally:
        lib.close()


def test_a_deleted_or_moved_out_skill_disappears(tmp_path):
    root = _root(tmp_path)
    write_skill(root, "tools/kiln-fire", description="Fire a pottery kiln slowly")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder())
    lib.sync()
    lib.watch(3600)
    try:
        _found_within(lib, "pottery kiln", "kiln-fire")
        shutil.rmtree(root / "tools" / "kiln-fire")
        _found_within(lib, "pottery kiln", "kiln-fire", present=False)
        assert lib.count() == 2
        # moved out of the root: an event for the folder only
        os.rename(root / "web" / "cors-fix", tmp_path / "elsewhere")
        _found_within(lib, "CORS errors", "cors-fix", present=False)
        assert lib.count() == 1
    finally:
        lib.close()


def test_an_idle_server_does_not_rescan(tmp_path, monkeypatch):
    root = _root(tmp_path)
    lib = _serving(tmp_path, root)
    calls = []
    real = indexmod.sync
    monkeypatch.setattr(indexmod, "sync", lambda *a, **k: calls.append(1) or real(*a, **k))
    try:
        lib.start_indexing()       # a second call changes nothing
        time.sleep(4.0)            # the old watcher rescanned every 3 s
        assert calls == []
        write_skill(root, "web/cors-fix", description="Fix CORS errors and polish the walrus tusk")
        _found_within(lib, "walrus tusk", "cors-fix")
        assert len(calls) == 1     # one sync for one change
    finally:
        lib.close()


def test_the_library_own_writes_and_temporary_files_are_not_changes(tmp_path):
    root = _root(tmp_path)
    roots = [Root(tmp_path / "home" / "skills", "workspace", "workspace"), Root(root, "other", "root")]
    roots[0].path.mkdir(parents=True)
    w = watcher.Watcher(roots, exclude=(tmp_path / "home",)).start()
    try:
        folder = root / "web" / "cors-fix"
        (folder / ".tmp-123-SKILL.md").write_text("x")
        (folder / "SKILL.md.swp").write_text("x")
        (folder / "notes.txt").write_text("x")
        (root / "node_modules" / "pkg").mkdir(parents=True)
        (root / "node_modules" / "pkg" / "SKILL.md").write_text("x")
        (root / "empty-folder").mkdir()
        time.sleep(0.3)
        assert w.changes() == set()
        (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\nmore\n")
        time.sleep(0.3)
        assert w.changes() == {folder / "SKILL.md"}
        assert w.changes() == set()              # taken once
        assert [s["mode"] for s in w.status()] == ["events", "events"]
    finally:
        w.close()


def test_the_python_api_rescans_only_when_events_say_so(tmp_path, monkeypatch):
    monkeypatch.setattr(indexing, "AUTO_SYNC_INTERVAL", 0.0)
    monkeypatch.setattr(indexing, "POLL_INTERVAL", 0.0)
    root = _root(tmp_path)
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder(), auto_sync=True)
    try:
        lib.sync()
        calls = []
        real = indexmod.sync
        monkeypatch.setattr(indexmod, "sync", lambda *a, **k: calls.append(1) or real(*a, **k))
        lib.list()                 # used again: it starts watching, after one more scan
        assert len(calls) == 1
        for _ in range(20):
            lib.list()
            lib.search("docker", log=False)
        assert len(calls) == 1     # nothing changed: no rescan (every one of these rescanned before)
        write_skill(root, "new/zebra-paint", description="Paint zebra crossings on a road")
        t0 = time.monotonic()
        while "zebra-paint" not in [r.name for r in lib.list()]:
            assert time.monotonic() - t0 < SEEN_WITHIN
            time.sleep(0.02)
        assert len(calls) == 2
    finally:
        lib.close()


def test_polling_where_the_platform_gives_no_events(tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHFILES_FORCE_POLLING", "1")
    monkeypatch.setattr(watcher, "POLL_MS", 200)
    root = _root(tmp_path)
    lib = _serving(tmp_path, root)
    try:
        ev = lib.root_events()
        assert {e["mode"] for e in ev} == {"polling"}
        assert all("has no file-system events (WATCHFILES_FORCE_POLLING is set)" in e["note"] for e in ev)
        time.sleep(1.1)   # watchfiles' polling compares modification times in whole seconds
        write_skill(root, "web/cors-fix", description="Fix CORS errors and polish the walrus tusk")
        _found_within(lib, "walrus tusk", "cors-fix")
    finally:
        lib.close()


def test_doctor_learns_which_roots_have_no_events(tmp_path, monkeypatch):
    root = _root(tmp_path)
    lib = Library(home=tmp_path / "home", roots=[root], embedder="none", auto_sync=False)
    ev = lib.root_events()       # no watcher runs: one is set up for a moment
    assert [e["mode"] for e in ev] == ["events", "events"] and all(e["note"] is None for e in ev)

    def refused(path, polling):
        raise OSError(28, "OS file watch limit reached")
    monkeypatch.setattr(watcher, "_notify", refused)
    ev = {e["path"]: e for e in lib.root_events()}
    e = ev[str(root)]
    assert e["mode"] == "none" and "OS file watch limit reached" in e["reason"]
    assert e["note"].startswith(f"root {root} has no file-system events")
    assert e["note"].endswith("changes are seen by a rescan every 1 minute")


def test_a_root_without_events_is_rescanned_on_a_shorter_period(tmp_path, monkeypatch):
    def refused(path, polling):
        raise OSError(28, "OS file watch limit reached")
    monkeypatch.setattr(watcher, "_notify", refused)
    monkeypatch.setattr(indexing, "UNWATCHED_RESCAN", 0.5)
    root = _root(tmp_path)
    lib = _serving(tmp_path, root)
    try:
        write_skill(root, "web/cors-fix", description="Fix CORS errors and polish the walrus tusk")
        _found_within(lib, "walrus tusk", "cors-fix", limit=5.0)
    finally:
        lib.close()


_OTHERS: set[int] = set()


def _index_threads() -> list[threading.Thread]:
    """The indexing threads alive that this test's library started (a library another test
    left open has threads of its own: they are not this test's to judge)."""
    return [t for t in threading.enumerate() if t.name == "skillshelf-index" and t.is_alive()
            and t.ident not in _OTHERS]


@pytest.fixture(autouse=True)
def _threads_before():
    _OTHERS.clear()
    _OTHERS.update(t.ident for t in threading.enumerate() if t.name == "skillshelf-index")
    yield


def test_close_stops_the_watcher_and_the_indexing_thread(tmp_path):
    root = _root(tmp_path)
    lib = _serving(tmp_path, root)
    assert _index_threads()
    t0 = time.monotonic()
    lib.close()
    assert time.monotonic() - t0 < 1.0
    assert _index_threads() == []
    assert lib.indexer._watcher is None


class SlowEmbedder(FakeEmbedder):
    """Embeds a batch in 0.2 s, in the calling thread (no prefetch beside the sync)."""

    local = False
    batch_size = 256     # one call per step of embed_pending

    def _embed(self, texts, max_tokens=None):
        time.sleep(0.2)
        return super()._embed(texts, max_tokens)


def test_close_stops_a_background_sync_and_keeps_what_it_committed(tmp_path):
    root = tmp_path / "root"
    for i in range(600):
        write_skill(root, f"s/skill-{i}", description=f"skill number {i} about walrus tusks {i * 7919}",
                    body=f"# S\n\nBody {i} of the walrus.\n")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=SlowEmbedder())
    lib.start_indexing(3600)
    deadline = time.monotonic() + 60
    while lib.indexing_status()["phase"] != "embedding":
        assert time.monotonic() < deadline, lib.indexing_status()
        time.sleep(0.02)
    t0 = time.monotonic()
    lib.close()
    assert time.monotonic() - t0 < 1.5           # the next batch boundary, not the whole sync
    assert _index_threads() == []
    assert lib.indexing_status()["state"] != "failed"
    assert lib.count() == 600                    # the lexical index was committed
    status = lib.embedder_status()
    assert status["vectors"] < 600               # the embedding stopped partway
    # the library can still be used after close: a sync finishes the work
    lib.sync()
    assert lib.embedder_status()["vectors"] == 600


def test_a_keyboard_interrupt_seen_by_the_watcher_is_raised(tmp_path):
    class Interrupted:
        def watch(self, *a):
            return "signal"     # what watchfiles returns when Ctrl-C arrived while it waited

        def close(self):
            pass

    root = _root(tmp_path)
    w = watcher.Watcher([Root(root, "other", "root")]).start()
    w.close()
    w.watches[0].notify = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        w.changes()


def test_a_watch_that_fails_is_set_up_again_and_its_root_counts_as_changed(tmp_path):
    class Broken:
        def watch(self, *a):
            # what watchfiles raises when a file vanished while it read it
            raise RuntimeError("error in underlying watcher: IO error: No such file or directory (os error 2)")

        def close(self):
            pass

    root = _root(tmp_path)
    w = watcher.Watcher([Root(root, "other", "root")]).start()
    try:
        w.watches[0].notify.close()
        w.watches[0].notify = Broken()
        assert w.changes() == {root}                  # events may have been lost: a sync looks
        assert w.status()[0]["mode"] == "events"      # and the root is watched again
        write_skill(root, "new/zebra-paint", description="Paint zebra crossings on a road")
        time.sleep(0.3)
        skill_md = root / "new" / "zebra-paint" / "SKILL.md"
        # the file, or a folder holding it when it was written before the new folder's watch
        assert w.changes() & {skill_md, skill_md.parent, skill_md.parent.parent}
    finally:
        w.close()


def test_a_root_added_to_a_serving_library_is_indexed_and_watched(tmp_path):
    from skillshelf.catalog.roots import make_roots

    root = _root(tmp_path)
    lib = _serving(tmp_path, root)
    extra = tmp_path / "extra"
    write_skill(extra, "kiln/kiln-fire", description="Fire a pottery kiln slowly")
    try:
        lib.roots = make_roots(lib.config.workspace, [root, extra])   # what an import as a root does
        _found_within(lib, "pottery kiln", "kiln-fire")
        write_skill(extra, "new/zebra-paint", description="Paint zebra crossings on a road")
        _found_within(lib, "zebra crossings", "zebra-paint")
        assert [e["mode"] for e in lib.root_events()] == ["events"] * 3
    finally:
        lib.close()


class SlowLocalEmbedder(FakeEmbedder):
    """A local model (its texts are embedded beside the lexical indexing) taking 0.1 s a call."""

    def _embed(self, texts, max_tokens=None):
        time.sleep(0.1)
        return super()._embed(texts, max_tokens)


def test_close_does_not_wait_for_the_texts_a_first_index_queued_for_the_model(tmp_path):
    root = tmp_path / "root"
    for i in range(300):
        write_skill(root, f"s/skill-{i}", description=f"skill number {i} about walrus tusks {i * 7919}",
                    body=f"# S\n\nBody {i} of the walrus.\n")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=SlowLocalEmbedder())
    lib.start_indexing(3600)
    deadline = time.monotonic() + 60
    while True:       # the files are indexed; the model is still embedding what they queued
        st = lib.indexing_status()
        if st["phase"] == "indexing" and st["total"] and st["done"] == st["total"]:
            break
        assert time.monotonic() < deadline and st["phase"] != "embedding", st
        time.sleep(0.01)
    t0 = time.monotonic()
    lib.close()
    assert time.monotonic() - t0 < 1.0           # ~6 s of texts were left in the queue
    assert _index_threads() == []
    assert not [t for t in threading.enumerate() if t.name == "skillshelf-prefetch" and t.is_alive()]
    assert lib.count() == 300 and lib.indexing_status()["state"] != "failed"
    assert lib.embedder_status()["vectors"] < 300
    lib.sync()
    assert lib.embedder_status()["vectors"] == 300


def test_close_waits_no_longer_than_its_timeout(tmp_path):
    class VerySlow(SlowEmbedder):
        def _embed(self, texts, max_tokens=None):
            time.sleep(1.0)
            return FakeEmbedder._embed(self, texts, max_tokens)

    root = tmp_path / "root"
    for i in range(300):    # two model calls for the metadata texts: the second is under way
        write_skill(root, f"s/skill-{i}", description=f"skill number {i} about walrus tusks")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=VerySlow())
    lib.start_indexing(3600)
    deadline = time.monotonic() + 60
    while lib.indexing_status()["phase"] != "embedding":
        assert time.monotonic() < deadline, lib.indexing_status()
        time.sleep(0.01)
    t0 = time.monotonic()
    assert lib.close(timeout=0.1) is False        # a model call under way: not ended yet, said so
    assert time.monotonic() - t0 < 0.5
    while _index_threads():                       # and it ends after that call
        assert time.monotonic() - t0 < 3.0
        time.sleep(0.05)
