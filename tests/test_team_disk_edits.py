"""A person's edit on a server's disk is a version, in a team too: an edit of a SKILL.md in a
server's copy of the team workspace becomes the skill's next version in the store (author
"edited on disk on <host>"), seen by every server within 2 s, and no two servers serve
different texts under one version number. If the store moved on meanwhile, the edit is kept
(set aside, in the review queue, said on stderr and by ``doctor``), never dropped."""

from __future__ import annotations

import json
import socket
import time

import pytest
from teamlib import BODY, close, review, team_library, until


def _rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.mark.parametrize("auto_sync", [False, True], ids=["index-fed-by-the-store", "index-scanning-its-files"])
def test_an_edit_on_one_servers_disk_is_the_next_version_on_every_server_within_2s(tmp_path, pg_url, auto_sync):
    a = team_library(tmp_path / "a", pg_url, auto_sync=auto_sync)
    b = team_library(tmp_path / "b", pg_url, auto_sync=auto_sync)
    try:
        a.save("ARCHIVE", name="cors-fix-nextjs-api", description="Fix CORS errors in Next.js API routes", body=BODY)
        assert until(lambda: b.read("cors-fix-nextjs-api")[0].version == 1) is not None
        md = a.config.workspace / "cors-fix-nextjs-api" / "SKILL.md"
        with md.open("a", encoding="utf-8") as f:       # printf '\n## hand edit\n' >> .../SKILL.md
            f.write("\n## hand edit\n")
        seen: dict[int, set[str]] = {}                   # version -> the bodies served under it

        def both_have_it() -> bool:
            got = [lib.read("cors-fix-nextjs-api") for lib in (a, b)]
            for rec, body in got:
                seen.setdefault(rec.version, set()).add(body)
            return all(rec.version == 2 and "## hand edit" in body for rec, body in got)

        assert until(both_have_it, timeout=2.0) is not None, "the edit did not reach both servers within 2 s"
        assert all(len(bodies) == 1 for bodies in seen.values()), f"two texts under one version: {seen}"
        # a version of the store, by the person's hand, renumbered on disk too
        (version, text, by), = _rows(pg_url, "SELECT version, text, updated_by FROM skills WHERE name = %s",
                                     ("cors-fix-nextjs-api",))
        assert version == 2 and b"## hand edit" in bytes(text) and by == f"edited on disk on {socket.gethostname()}"
        assert md.read_bytes() == bytes(text)
        entry = a.history("cors-fix-nextjs-api")["changelog"][-1]
        assert entry["action"] == "EDIT" and entry["to_version"] == 2
        # and it stays: no later comparison takes it back
        a._team.mirror._reconciled = -1e9
        time.sleep(1.5)
        assert "## hand edit" in md.read_text() and "## hand edit" in b.read("cors-fix-nextjs-api")[1]
    finally:
        close(b)
        close(a)


def test_an_edit_the_store_moved_past_is_kept_aside_for_review_never_dropped(tmp_path, pg_url, capfd):
    a = team_library(tmp_path / "a", pg_url, follow=False)          # A's copy lags behind the store
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
        assert until(lambda: b.read("cors-fix")[0].version == 1) is not None
        b.save("FIX", target_skill_name="cors-fix", lesson="Send Vary: Origin")          # the store moves on
        md = a.config.workspace / "cors-fix" / "SKILL.md"
        edited = md.read_text() + "\n## my own note\n\nKeep the allow-list short.\n"
        md.write_text(edited)                                          # ... while a person edits A's copy of v1
        a.history("cors-fix")                                          # A looks at the skill: its copy is brought in
        # the store's text wins the copy, the edit is kept: set aside, waiting for review, said, in doctor
        assert "Send Vary: Origin" in md.read_text() and "my own note" not in md.read_text()
        kept = list((tmp_path / "a" / "team" / "set-aside").rglob("SKILL.md"))
        assert [p.read_text() for p in kept] == [edited]
        draft = review(b).show("cors-fix")
        assert "Keep the allow-list short." in draft["text"] and draft["args"]["action"] == "FIX"
        assert "edited on disk while the team store moved on" in capfd.readouterr().err
        line = next(c for c in a.doctor().checks if c.name == "store")
        assert line.status != "ok" and "an edit of cors-fix" in line.detail and str(kept[0]) in line.detail
        # approving the draft makes the edit the next version
        res = review(b).approve("cors-fix", reviewer="ann")
        assert res.version == 3
        assert "Keep the allow-list short." in b.read("cors-fix")[1]
        assert [json.loads(e)["action"] for (e,) in _rows(pg_url, "SELECT entry FROM changelog ORDER BY id")] \
            == ["ARCHIVE", "FIX", "FIX"]
    finally:
        close(b)
        close(a)
