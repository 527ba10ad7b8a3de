"""A team server syncs only the folders its watcher names, as a local library does: an edit
in one of its roots, or in its copy of the team workspace, does not walk every root (seconds
at 100k skills, see BENCHMARKS.md); the workspace edit is still kept as a version first."""

from __future__ import annotations

import time

from conftest import write_skill
from teamlib import BODY, close, team_library, until

from skillshelf.search import sync as syncmod


def test_a_team_servers_watcher_syncs_the_changed_folder_not_every_root(tmp_path, pg_url, monkeypatch):
    root = tmp_path / "r"
    for i in range(30):
        write_skill(root / "col", f"s{i:02d}", description=f"topic{i} recipes")
    a = team_library(tmp_path / "a", pg_url, roots=[root], auto_sync=True)
    try:
        a.save("ARCHIVE", name="cors-fix-nextjs-api", description="Fix CORS errors in Next.js API routes", body=BODY)
        walks: list[str] = []
        real = syncmod.discover
        monkeypatch.setattr(syncmod, "discover",
                            lambda r, ex=(), under=".": walks.append(under) or real(r, ex, under))
        a.indexer.start()
        assert until(lambda: a.indexer.status()["phase"] is None, timeout=10) is not None
        time.sleep(1.5)
        walks.clear()
        f = root / "col" / "s07" / "SKILL.md"
        f.write_text(f.read_text() + "\nzebraword\n")
        assert until(lambda: a.searcher.lexical("zebraword", 5), timeout=10) is not None
        assert walks and "." not in walks, walks
        # an edit in the server's copy of the workspace: a version in the store, then indexed,
        # without a walk of every root
        walks.clear()
        md = a.config.workspace / "cors-fix-nextjs-api" / "SKILL.md"
        with md.open("a", encoding="utf-8") as fh:
            fh.write("\n## hand edit quokkaword\n")
        assert until(lambda: a.read("cors-fix-nextjs-api")[0].version == 2, timeout=10) is not None
        assert until(lambda: a.searcher.lexical("quokkaword", 5), timeout=10) is not None
        assert "." not in walks, walks
    finally:
        close(a)
