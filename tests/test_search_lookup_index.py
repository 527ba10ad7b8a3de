"""A skill looked up by name (get_skill, report_outcome, `skillshelf show`) is found through
indexes only: the look-up also tries the name as a SKILL.md path, and that must not scan
every row (~160 ms per call at 100k skills, see BENCHMARKS.md)."""

from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder


def test_a_lookup_by_name_or_path_uses_an_index_not_a_scan_of_every_skill(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "alpha", description="alpha recipes")
    write_skill(root, "beta", description="beta recipes")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(dim=16), auto_sync=False)
    lib.sync()
    try:
        plan = " ".join(str(r[-1]) for r in lib.store.db.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM skills WHERE path = ?", ("x",)))
        assert "USING INDEX" in plan and "SCAN" not in plan, plan
        assert lib.get("alpha").name == "alpha"
        assert lib.get(str(root / "beta" / "SKILL.md")).name == "beta"
    finally:
        lib.close()
