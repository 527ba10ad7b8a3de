"""What an unchanged sync costs, and what it reports: it walks the roots without building a
path object per folder, reads no skill row or cached vector in full, loads no model, and says
which invalid files are new (the rest are counted, not listed again)."""

import pathlib

from conftest import write_skill

from skillshelf.catalog import roots as sources
from skillshelf.catalog.roots import Root
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.search import sync as indexmod
from skillshelf.store import Store


def _root(tmp_path, n=30):
    root = tmp_path / "r"
    for i in range(n):
        write_skill(root, f"group-{i % 3}/s{i:02d}", description=f"skill number {i} for tests",
                    body=f"# Steps\n\nStep {i}. " + "A long body that sits in front of the columns a sync needs. " * 200)
    return root


def _plans(db, statements):
    """Each traced SELECT's query plan lines."""
    out = []
    for sql in statements:
        if not sql.lstrip().upper().startswith("SELECT"):
            continue
        rows = db.execute("EXPLAIN QUERY PLAN " + sql, [None] * sql.count("?")).fetchall()
        out.extend((sql, r[3]) for r in rows)
    return out


def _full_row_reads(plans):
    """Plan lines that read rows of ``skills`` or ``embeddings`` in full (not from an index
    that holds the columns read): a body or a vector each."""
    bad = []
    for sql, line in plans:
        words = line.split()
        if len(words) > 1 and words[0] in ("SCAN", "SEARCH") and words[1] in ("skills", "s", "embeddings", "e"):
            if "COVERING INDEX" not in line:
                bad.append((line, " ".join(sql.split())[:120]))
    return bad


def test_an_unchanged_sync_reads_no_skill_row_or_vector_in_full(tmp_path):
    root = _root(tmp_path)
    store = Store(tmp_path / "h" / "skillshelf.db")
    roots = [Root(root, "other", "r")]
    emb = FakeEmbedder()
    indexmod.sync(store, roots)
    assert indexmod.embed_pending(store, emb, body_tokens=128) == 60
    seen: list[str] = []
    store.db.set_trace_callback(seen.append)
    rep = indexmod.sync(store, roots)
    assert indexmod.embed_pending(store, emb, body_tokens=128) == 0
    store.db.set_trace_callback(None)
    assert rep.unchanged == 30 and not rep.changed
    assert _full_row_reads(_plans(store.db, seen)) == []


def test_walking_a_root_builds_no_path_object_per_folder(tmp_path, monkeypatch):
    root = _root(tmp_path, 60)
    made = []

    def counting(*parts):
        made.append(parts)
        return pathlib.Path(*parts)

    monkeypatch.setattr(sources, "Path", counting)
    found, notes = sources.discover(Root(root, "other", "r"))
    assert len(found) == 60 and notes == []
    assert len(made) < 10, f"{len(made)} Path objects for 63 folders and 60 files"
    monkeypatch.undo()
    f = found[0]
    assert f.path == root / "group-0" / "s00" / "SKILL.md" and f.file == str(f.path)


class LateModelId(FakeEmbedder):
    """A backend whose model (and so its id) is settled only when it loads, as the bundled
    model's 8-bit copy is (its float32 fallback has another id)."""

    def __init__(self):
        super().__init__()
        self.loads = 0

    @property
    def model_id(self):
        return "fake-loaded" if self.loads else "fake-guess"

    def load(self):
        self.loads += 1


def test_vectors_are_stored_under_the_id_of_the_model_that_made_them(tmp_path):
    root = _root(tmp_path, 4)
    store = Store(tmp_path / "h" / "skillshelf.db")
    indexmod.sync(store, [Root(root, "other", "r")])
    emb = LateModelId()
    assert indexmod.embed_pending(store, emb, body_tokens=128) == 8
    ids = dict(store.db.execute("SELECT model_id, COUNT(*) FROM embeddings GROUP BY model_id").fetchall())
    assert ids == {"fake-loaded": 8}


def test_the_model_is_not_loaded_when_every_vector_is_there(tmp_path):
    root = _root(tmp_path, 4)
    store = Store(tmp_path / "h" / "skillshelf.db")
    indexmod.sync(store, [Root(root, "other", "r")])

    class Counting(FakeEmbedder):
        loads = 0

        def load(self):
            Counting.loads += 1

    assert indexmod.embed_pending(store, Counting(), body_tokens=128) == 8 and Counting.loads == 1
    assert indexmod.embed_pending(store, Counting(), body_tokens=128) == 0 and Counting.loads == 1


def test_a_resync_says_which_invalid_files_are_new_and_which_were_fixed(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "good", description="fine")
    for name in ("bad-1", "bad-2"):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: a: b\n---\n")
    store = Store(tmp_path / "h" / "skillshelf.db")
    roots = [Root(root, "other", "r")]
    rep = indexmod.sync(store, roots)
    assert len(rep.invalid) == 2 and len(rep.new_invalid) == 2
    rep = indexmod.sync(store, roots)
    assert len(rep.invalid) == 2 and rep.new_invalid == [] and rep.cleared_invalid == []
    (root / "bad-3").mkdir()
    (root / "bad-3" / "SKILL.md").write_text("---\nname: bad-3\ndescription: c: d\n---\n")
    (root / "bad-1" / "SKILL.md").write_text("---\nname: bad-1\ndescription: 'a: b'\n---\n")
    rep = indexmod.sync(store, roots)
    assert [i.path for i in rep.new_invalid] == [str(root / "bad-3" / "SKILL.md")]
    assert len(rep.invalid) == 2 and rep.added == 1
    assert rep.cleared_invalid == [str(root / "bad-1" / "SKILL.md")]
    d = rep.as_dict()
    assert d["invalid"] == 2 and d["new_invalid"] == 1 and d["cleared_invalid"] == rep.cleared_invalid
    assert [f["new"] for f in d["invalid_files"]] == [i.new for i in rep.invalid]
