import os
import time

import pytest
from conftest import CORPUS, corpus_available, write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder


def _lib(tmp_path, **kw):
    kw.setdefault("embedder", "none")
    kw.setdefault("auto_sync", False)
    return Library(home=tmp_path / "h", roots=[tmp_path / "r"], **kw)


def test_sync_adds_updates_removes_by_hash(tmp_path):
    root = tmp_path / "r"
    a = write_skill(root, "alpha", description="first")
    write_skill(root, "beta", description="second")
    lib = _lib(tmp_path)
    rep = lib.sync()
    assert (rep.added, rep.updated, rep.removed) == (2, 0, 0)
    rep = lib.sync()
    assert (rep.added, rep.updated, rep.removed, rep.unchanged) == (0, 0, 0, 2)
    # touched but same bytes: not re-parsed, not counted as updated
    os.utime(a, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    rep = lib.sync()
    assert rep.updated == 0 and rep.unchanged == 2
    a.write_text(a.read_text().replace("first", "changed"))
    rep = lib.sync()
    assert rep.updated == 1 and lib.get("alpha").description == "changed"
    (root / "beta" / "SKILL.md").unlink()
    rep = lib.sync()
    assert rep.removed == 1 and [r.name for r in lib.list()] == ["alpha"]


def test_invalid_file_reported_then_fixed(tmp_path):
    root = tmp_path / "r"
    bad = root / "bad"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: bad\ndescription: a: b: c\n---\n")
    lib = _lib(tmp_path)
    rep = lib.sync()
    assert len(rep.invalid) == 1 and rep.invalid[0].line == 3 and rep.invalid[0].path.endswith("bad/SKILL.md")
    # reported again on resync without re-reading
    assert len(lib.sync().invalid) == 1
    (bad / "SKILL.md").write_text("---\nname: bad\ndescription: 'a: b: c'\n---\n")
    rep = lib.sync()
    assert rep.added == 1 and not rep.invalid and lib.invalid_files() == []


def test_deleting_database_rebuilds_everything(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "alpha", description="first")
    lib = _lib(tmp_path)
    lib.sync()
    before = [r.as_dict() for r in lib.list()]
    lib.close()
    for suffix in ("", "-wal", "-shm"):
        p = tmp_path / "h" / f"skillshelf.db{suffix}"
        if p.exists():
            p.unlink()
    lib2 = _lib(tmp_path)
    lib2.sync()
    assert [r.as_dict() for r in lib2.list()] == before


def test_editor_change_is_picked_up_without_manual_sync(tmp_path, monkeypatch):
    import skillshelf.search.indexer as indexing

    monkeypatch.setattr(indexing, "AUTO_SYNC_INTERVAL", 0.0)
    root = tmp_path / "r"
    write_skill(root, "alpha", description="first")
    lib = _lib(tmp_path, auto_sync=True)
    lib.sync()
    write_skill(root, "gamma", description="zebra crossing painter")
    hits = lib.search("zebra crossing", log=False).hits
    assert hits and hits[0].name == "gamma"


def test_embeddings_are_cached_by_text_and_model(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "alpha", description="first")
    write_skill(root, "beta", description="second")
    emb = FakeEmbedder()
    lib = _lib(tmp_path, embedder=emb)
    # two metadata texts, and one body text the two skills share (embedded once)
    assert lib.sync().embedded == 3
    assert lib.sync().embedded == 0
    # a body change re-embeds the body vector only; the metadata vector is reused
    p = root / "alpha" / "SKILL.md"
    p.write_text(p.read_text() + "\nmore body\n")
    assert lib.sync().embedded == 1
    parts = lib.store.db.execute("SELECT part, COUNT(*) FROM skill_vectors GROUP BY part").fetchall()
    assert [tuple(r) for r in parts] == [(0, 2), (1, 2)]
    # a different model re-embeds instead of mixing vector spaces
    lib2 = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(dim=32), auto_sync=False)
    assert lib2.sync().embedded == 4


def test_body_vector_setting_change_reembeds_bodies_and_zero_turns_them_off(tmp_path):
    import dataclasses

    root = tmp_path / "r"
    write_skill(root, "alpha", description="first", body="# Steps\n\nPolish the walrus tusk.\n")
    lib = _lib(tmp_path, embedder=FakeEmbedder())
    assert lib.sync().embedded == 2
    lib.config = dataclasses.replace(lib.config, search=dataclasses.replace(lib.config.search, body_vector_tokens=64))
    assert lib.sync().embedded == 1          # the body vector means something else now
    lib.config = dataclasses.replace(lib.config, search=dataclasses.replace(lib.config.search, body_vector_tokens=0))
    lib.sync()
    parts = [r[0] for r in lib.store.db.execute("SELECT part FROM skill_vectors")]
    assert parts == [0]


@pytest.mark.skipif(not corpus_available(), reason="corpus not present")
def test_real_corpus_syncs_and_names_unparsable_files(tmp_path):
    import json

    lib = Library(home=tmp_path / "h", roots=[CORPUS / "skills"], embedder="none", auto_sync=False)
    rep = lib.sync()
    index = [json.loads(line) for line in (CORPUS / "index.jsonl").read_text().splitlines()]
    expected_bad = {r["id"] for r in index if r.get("parse_error")}
    reported = {str(__import__("pathlib").Path(i.path).relative_to((CORPUS / "skills").resolve())) for i in rep.invalid}
    assert expected_bad <= reported  # every file whose YAML does not parse is named
    assert all(i.rule in ("yaml.invalid", "description.missing", "frontmatter.missing", "frontmatter.unclosed",
                          "frontmatter.not-mapping") for i in rep.invalid)
    assert rep.added + len(rep.invalid) == len(index)
    assert lib.sync().unchanged == rep.added
    assert len(lib.clashes()) > 100


def test_watcher_picks_up_changes_in_the_background(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "alpha", description="first")
    lib = _lib(tmp_path, auto_sync=True, embedder=FakeEmbedder())
    lib.sync()
    lib.watch(interval=0.2)
    write_skill(root, "delta-skill", description="walrus tusk polishing")
    deadline = time.time() + 10
    while time.time() < deadline and lib.count() < 2:
        time.sleep(0.1)
    assert lib.count() == 2
    # the watcher also reloads the search state, so the next query does not wait for it
    gen = lib.store.get_meta("generation")
    while time.time() < deadline and (lib.searcher._vec_gen or ("",))[0] != gen:
        time.sleep(0.05)
    assert lib.searcher._gen == gen and lib.searcher._vec_gen[0] == gen
    assert lib.search("walrus tusk", log=False).hits[0].name == "delta-skill"
    lib.close()


def test_first_sync_embeds_beside_the_lexical_index_and_stores_the_same_vectors(tmp_path, monkeypatch):
    import numpy as np

    from skillshelf.search import sync as indexmod

    root = tmp_path / "r"
    for i in range(12):
        write_skill(root, f"skill-{i:02d}", description=f"recipe {i} for docker builds",
                    body=f"# Steps\n\nStep {i}: cache the layers.\n")
    seen = {}
    real = indexmod.embed_pending

    def spy(*a, **k):
        seen["ready"] = len(k.get("ready") or {})
        return real(*a, **k)

    monkeypatch.setattr(indexmod, "embed_pending", spy)
    emb = FakeEmbedder()
    lib = _lib(tmp_path, embedder=emb)
    rep = lib.sync()
    assert rep.embedded == 24 and seen["ready"] == 24     # every text came from the prefetch
    # stored vectors are what embedding the text now gives
    row = lib.store.db.execute("""SELECT s.name, s.description, e.vector FROM skills s
        JOIN skill_vectors v ON v.skill_rowid = s.rowid AND v.part = 0
        JOIN embeddings e ON e.text_hash = v.text_hash AND e.model_id = ?""", (emb.model_id,)).fetchone()
    want = emb.embed(indexmod.embedding_text(row["name"], row["description"], ""))
    assert np.allclose(np.frombuffer(row["vector"], dtype="<f4"), want)


def test_a_failing_model_during_sync_is_reported_and_search_degrades(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "alpha", description="walrus tusk polishing")
    lib = _lib(tmp_path, embedder=FakeEmbedder(fail=True))
    rep = lib.sync()
    assert any("embedding failed" in n for n in rep.notes)
    res = lib.search("walrus tusk", log=False)
    assert res.hits[0].name == "alpha" and "lexical-only" in res.degraded


def test_listing_does_not_load_the_model_unless_something_changed(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "alpha", description="first")
    lib = _lib(tmp_path, auto_sync=True, embedder=FakeEmbedder())
    lib.sync()
    asked = []
    real, real_unloaded = lib.model.state, lib.model.unloaded
    lib.model.state = lambda: asked.append(1) or real()
    lib.model.unloaded = lambda: asked.append(1) or real_unloaded()   # the backend, to load if it must
    lib.indexer.expire()
    lib.list()
    assert asked == []                       # nothing changed: no model, no embedding
    write_skill(root, "beta", description="second")
    lib.indexer.expire()
    assert {r.name for r in lib.list()} == {"alpha", "beta"}
    assert asked                             # a change: its vectors are made right away
    status = lib.embedder_status()
    assert status["vectors"] == status["skills"] == 2
