"""A team computes once: vectors live in the team store keyed by the model (its id and a digest
of its weights) and the embedded text's hash, so a server joining a team runs the model on
nothing another server embedded; a local library keeps the same cache beside its index, so a
rebuild does not embed again."""

from __future__ import annotations

from conftest import write_skill
from teamlib import close, team_library

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder


class Counting(FakeEmbedder):
    """The fake model, counting the texts it is run on."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.texts: list[str] = []

    def embed_batch(self, texts, *, max_tokens=None):
        self.texts.extend(texts)
        return super().embed_batch(texts, max_tokens=max_tokens)


def _root(tmp_path, n: int = 12):
    root = tmp_path / "checkout"
    for i in range(n):
        write_skill(root, f"area-{i}/skill-{i}", description=f"Does task number {i} with tool {i * 7}",
                    body=f"## Steps\n\nRun step {i}, then check the output of tool {i * 7}.\n")
    return root


def test_a_server_joining_a_team_runs_the_model_on_nothing_another_server_embedded(tmp_path, pg_url):
    root = _root(tmp_path)
    first, second = Counting(), Counting()
    a = team_library(tmp_path / "a", pg_url, roots=[root], embedder=first)
    try:
        assert len(first.texts) == 24                  # a metadata and a body text per skill
        b = team_library(tmp_path / "b", pg_url, roots=[root], embedder=second)
        try:
            assert second.texts == [], f"the second server embedded {len(second.texts)} texts the team had"
            # and it searches by meaning with them: every skill has both vectors
            st = b.embedder_status()
            assert st["vectors"] == 12 and st["body_vectors"] == 12
            assert b.search("check the output of tool 35", log=False).hits[0].name == "skill-5"
            # a text only the second server has is embedded once, there, and the first takes it
            second.texts.clear()                        # (the request itself was embedded)
            write_skill(root, "area-new/skill-new", description="Polishes walrus tusks", body="## Steps\n\nPolish.\n")
            b.sync()
            assert len(second.texts) == 2
            a.sync()
            assert len(first.texts) == 24 and a.embedder_status()["vectors"] == 13
        finally:
            close(b)
    finally:
        close(a)


def test_another_model_or_other_weights_never_take_the_teams_vectors(tmp_path, pg_url):
    root = _root(tmp_path, 3)
    a = team_library(tmp_path / "a", pg_url, roots=[root], embedder=Counting())
    close(a)

    class Retrained(Counting):
        @property
        def weights(self):
            return "another-digest"

    for other in (Counting(dim=32), Retrained()):
        b = team_library(tmp_path / f"b{other.dimensions}{type(other).__name__}", pg_url, roots=[root], embedder=other)
        try:
            assert len(other.texts) == 6
        finally:
            close(b)


def test_a_rebuild_of_a_local_library_does_not_embed_again(tmp_path):
    root = _root(tmp_path, 4)
    emb = Counting()
    lib = Library(home=tmp_path / "home", roots=[root], embedder=emb, auto_sync=False)
    assert lib.sync().embedded == 8
    lib.close()
    again = Counting()
    lib, moved = Library.rebuild(tmp_path / "home", roots=[root], embedder=again, auto_sync=False)
    try:
        assert moved is not None and again.texts == []
        assert lib.embedder_status()["vectors"] == 4
    finally:
        lib.close()
