"""Reads keep working when the database cannot be written: a search on a full disk or a
read-only database still returns its hits, and says what was not recorded."""

import sqlite3

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import ValidationError


@pytest.fixture
def lib(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes")
    write_skill(root, "docker-build", description="Multi-stage Docker builds with cached layers")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    yield lib
    lib.close()


def _logged(lib) -> int:
    return lib.store.db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]


def _fill_the_disk(db: sqlite3.Connection) -> None:
    """No page can be added and no page has room left for even a small row."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    for size in (3000, 1000, 300, 100, 30, 1):
        while True:
            try:
                db.execute("INSERT INTO queries (at, text, text_hash, mode, confident, n_hits, latency_ms)"
                           " VALUES ('2026-01-01', ?, 'h', 'find', 0, 0, 1)", ("x" * size,))
            except sqlite3.OperationalError as exc:
                assert "full" in str(exc)
                break


def test_search_on_a_full_disk_returns_its_hits(lib, capsys):
    _fill_the_disk(lib.store.db)
    before = _logged(lib)
    res = lib.search("cors errors in next.js")
    assert res.hits[0].name == "cors-fix" and res.query_id is None
    assert "usage not recorded" in res.degraded and "full" in res.degraded
    assert "usage not recorded" in capsys.readouterr().err
    assert _logged(lib) == before
    # room again: the next search is logged (no transaction was left open)
    lib.store.db.execute("PRAGMA max_page_count = 1073741823")
    res = lib.search("cors errors in next.js")
    assert res.query_id is not None and res.degraded is None and _logged(lib) == before + 1


def test_search_on_a_read_only_database_returns_its_hits(lib):
    lib.store.db.execute("PRAGMA query_only = 1")
    res = lib.search("docker builds")
    assert res.hits[0].name == "docker-build" and "read-only" in res.degraded
    assert lib.search("docker builds", log=False).degraded is None   # nothing to write: nothing to say
    with pytest.raises(ValidationError):                              # other errors are still errors
        lib.search("   ")
    lib.store.db.execute("PRAGMA query_only = 0")
    assert lib.search("docker builds").query_id is not None


def test_a_rescan_that_cannot_write_leaves_the_last_index_in_use(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=True)
    lib.sync()
    write_skill(root, "cors-fix", description="Fix CORS errors in Next.js API routes and preflight requests")
    lib.indexer.expire()                       # the next search rescans the roots
    lib.store.db.execute("PRAGMA query_only = 1")
    res = lib.search("cors errors")
    assert res.hits[0].name == "cors-fix" and "preflight" not in res.hits[0].description
    assert "usage not recorded" in res.degraded
    lib.store.db.execute("PRAGMA query_only = 0")
    lib.indexer.expire()
    res = lib.search("cors errors")
    assert res.degraded is None and "preflight" in res.hits[0].description
