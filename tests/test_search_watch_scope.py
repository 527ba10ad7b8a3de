"""A long-running library syncs only the folders its watcher names: an edit in a large root
does not walk every root (seconds at 100k skills, see BENCHMARKS.md)."""

import shutil
import time

from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.search import sync as syncmod


def _until(pred, timeout=10.0):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_an_edit_seen_by_the_watcher_syncs_its_folder_not_every_root(tmp_path, monkeypatch):
    root = tmp_path / "r"
    for i in range(30):
        write_skill(root / "col", f"s{i:02d}", description=f"topic{i} recipes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(dim=16))
    walks = []
    real = syncmod.discover
    monkeypatch.setattr(syncmod, "discover", lambda r, ex=(), under=".": walks.append(under) or real(r, ex, under))
    lib.indexer.start()
    try:
        assert _until(lambda: lib.count() == 30 and lib.indexer.status()["phase"] is None)
        time.sleep(1.5)
        walks.clear()
        f = root / "col" / "s07" / "SKILL.md"
        f.write_text(f.read_text() + "\nzebraword\n")
        assert _until(lambda: lib.searcher.lexical("zebraword", 5))
        assert walks and "." not in walks and all(w == "col/s07" for w in walks), walks
        # a folder removed and one added: each synced by itself, nothing lost
        walks.clear()
        shutil.rmtree(root / "col" / "s03")
        write_skill(root / "col", "s99", description="quokkaword recipes")
        assert _until(lambda: lib.count() == 30 and lib.searcher.lexical("quokkaword", 5))
        assert "." not in walks, walks
    finally:
        lib.close()
