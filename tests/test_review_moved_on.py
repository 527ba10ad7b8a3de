"""A draft approved after its skill moved on keeps what was saved meanwhile: the draft's change
is merged three-way with the versions saved since it was made (in a local library and in a
team), a conflict is refused with what to do, and ``review show`` shows what approving writes.
An edit set aside in a team is named by ``doctor`` on that server, after a restart too."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client
from teamlib import close, team_library, until
from test_cli_entry import sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import ConflictError
from skillshelf.mcp.server import build_server

STEPS = ("## Steps\n\nPick a free port.\nCheck nothing listens there.\nWrite it to postgresql.conf.\n"
         "Run initdb once.\nStart the cluster.\n\n## Notes\n\nUse pg_ctl.\n")


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    lib = Library(home, embedder=FakeEmbedder(), auto_sync=False, write_policy="open")
    lib.save("ARCHIVE", name="pg-port", description="Start PostgreSQL on a free port", body=STEPS)
    lib.close()
    return home


def _propose(home: Path, args: dict) -> None:
    async def main():
        lib = lambda: Library(home, embedder=FakeEmbedder(), auto_sync=False, write_policy="propose")
        async with Client(build_server(lib)) as c:
            res = await c.call_tool("save_skill", args)
            assert not res.is_error and "draft" in " ".join(getattr(x, "text", "") for x in res.content)
    anyio.run(main)


def _edit(home: Path, old: str, new: str) -> Path:
    md = home / "skills" / "pg-port" / "SKILL.md"
    md.write_text(md.read_text().replace(old, new))      # a person's edit, on disk
    return md


def test_a_draft_approved_after_a_persons_edit_keeps_that_edit(tmp_path):
    home = _home(tmp_path)
    _propose(home, {"action": "FIX", "target_skill_name": "pg-port", "author": "agent-a",
                    "body": STEPS.replace("Pick a free port.", "Pick a free port with a socket bind.").split(
                        "\n\n## Notes")[0], "lesson": "Bind to the port to test it"})
    md = _edit(home, "Start the cluster.", "Start the cluster with pg_ctl -w.")
    p = sk("review", "show", "pg-port", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "changed since v1, the version this draft was made from" in p.stdout, p.stdout
    assert "+Pick a free port with a socket bind." in p.stdout and "-Start the cluster with pg_ctl -w." not in p.stdout
    p = sk("review", "approve", "pg-port", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    text = md.read_text()
    assert "Pick a free port with a socket bind." in text          # the draft's change
    assert "Start the cluster with pg_ctl -w." in text             # the person's edit, made while it waited
    assert "Bind to the port to test it" in text and "Use pg_ctl." in text


def test_a_draft_that_conflicts_with_a_change_saved_since_is_refused_and_shown(tmp_path):
    home = _home(tmp_path)
    _propose(home, {"action": "FIX", "target_skill_name": "pg-port", "author": "agent-a",
                    "body": STEPS.replace("Pick a free port.", "Pick port 5433.").split("\n\n## Notes")[0]})
    md = _edit(home, "Pick a free port.", "Pick a free port above 50000.")
    before = md.read_text()
    p = sk("review", "show", "pg-port", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "approving it is refused" in p.stdout and "<<<<<<< the draft" in p.stdout, p.stdout
    p = sk("review", "approve", "pg-port", home=home)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "1 part(s) of the body changed both in the draft and in the skill since" in p.stderr, p.stderr
    assert "review reject pg-port" in p.stderr
    assert md.read_text() == before                                 # nothing written
    assert sk("review", "list", home=home).stdout.startswith("pg-port")     # the draft still waits



def _tagged(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "h"
    lib = Library(home, embedder=FakeEmbedder(), auto_sync=False, write_policy="open")
    lib.save("ARCHIVE", name="pg-port", description="Start PostgreSQL on a free port", body=STEPS, tags="alpha")
    lib.close()
    return home, home / "skills" / "pg-port" / "SKILL.md"


def test_a_draft_that_changes_the_tags_a_person_changed_since_is_refused(tmp_path):
    home, md = _tagged(tmp_path)
    _propose(home, {"action": "FIX", "target_skill_name": "pg-port", "author": "agent-a",
                    "description": "Start PostgreSQL on a free port, checked first", "tags": "gamma"})
    md.write_text(md.read_text().replace("tags: alpha", "tags: beta"))     # a person's change, saved since
    before = md.read_text()
    p = sk("review", "show", "pg-port", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "the tags changed both in the draft and in the skill since" in p.stdout, p.stdout
    assert "approving it is refused" in p.stdout
    p = sk("review", "approve", "pg-port", home=home)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "the tags changed both in the draft and in the skill since" in p.stderr, p.stderr
    assert md.read_text() == before                                 # nothing written: tags: beta stays


def test_a_key_the_draft_left_as_it_was_takes_the_value_saved_since(tmp_path):
    home, md = _tagged(tmp_path)
    _propose(home, {"action": "FIX", "target_skill_name": "pg-port", "author": "agent-a",
                    "body": STEPS.replace("Pick a free port.", "Pick a free port with a socket bind.").split(
                        "\n\n## Notes")[0], "tags": "alpha"})
    md.write_text(md.read_text().replace("tags: alpha", "tags: beta"))
    p = sk("review", "approve", "pg-port", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    text = md.read_text()
    assert "tags: beta" in text and "tags: alpha" not in text          # the person's change stays
    assert "Pick a free port with a socket bind." in text             # the draft's change


def test_a_draft_of_frontmatter_keys_only_is_merged_with_the_change_saved_since(tmp_path):
    home, md = _tagged(tmp_path)
    _propose(home, {"action": "FIX", "target_skill_name": "pg-port", "author": "agent-a",
                    "display_name": "Free PostgreSQL port", "tags": "alpha"})
    md.write_text(md.read_text().replace("tags: alpha", "tags: beta"))
    p = sk("review", "show", "pg-port", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "the draft's change merged with the changes saved since" in p.stdout, p.stdout
    assert "-  tags: beta" not in p.stdout and "+  display-name: Free PostgreSQL port" in p.stdout, p.stdout
    p = sk("review", "approve", "pg-port", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    text = md.read_text()
    assert "tags: beta" in text and "display-name: Free PostgreSQL port" in text

def test_a_team_edit_set_aside_is_merged_with_the_version_saved_meanwhile(tmp_path, pg_url):
    a = team_library(tmp_path / "a", pg_url, follow=False)          # A's copy lags behind the store
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.save("ARCHIVE", name="pg-port", description="Start PostgreSQL on a free port", body=STEPS)
        assert until(lambda: b.read("pg-port")[0].version == 1) is not None
        md = a.config.workspace / "pg-port" / "SKILL.md"
        md.write_text(md.read_text().replace("Pick a free port.", "Pick a FREE port (edited on A)."))
        b.save("FIX", target_skill_name="pg-port", lesson="B's lesson while A was offline")    # the store: v2
        a.history("pg-port")                                           # A brings its copy in: the edit is set aside
        shown = b.review.show("pg-port")
        assert shown["approvable"] and "B's lesson while A was offline" in shown["text"]
        assert "Pick a FREE port (edited on A)." in shown["text"] and "changed since v1" in shown["note"]
        # doctor on that server names it, after a restart too
        close(a)
        p = sk("--store", pg_url, "doctor", "--verbose", home=tmp_path / "a")
        assert "Traceback" not in p.stderr, p.stderr
        assert "an edit of pg-port on this server's disk was kept in" in p.stdout, p.stdout
        assert "waits in the review queue (`skillshelf review show pg-port`)" in p.stdout.replace("\n", " ")
        # a draft set aside before drafts named their version: the edit's own version is the base
        ws = b._team.store
        content, rec = ws.draft("pg-port")
        ws.put_draft("pg-port", content, json.dumps({k: v for k, v in json.loads(rec).items() if k != "base_version"}))
        assert "B's lesson while A was offline" in b.review.show("pg-port")["text"]
        p = sk("--store", pg_url, "review", "approve", "pg-port", home=tmp_path / "b")
        assert p.returncode == 0 and "FIX pg-port: version 3" in p.stdout, p.stdout + p.stderr
        a = team_library(tmp_path / "a", pg_url)
        assert until(lambda: b.read("pg-port")[0].version == 3) is not None
        body = b.read("pg-port")[1]
        assert "Pick a FREE port (edited on A)." in body and "B's lesson while A was offline" in body
        line = next(c for c in a.doctor().checks if c.name == "store")
        assert "an edit of pg-port" not in line.detail                # reviewed: no longer waiting
    finally:
        close(b)
        close(a)


def test_a_team_edit_that_conflicts_with_the_store_is_not_approved(tmp_path, pg_url):
    a = team_library(tmp_path / "a", pg_url, follow=False)
    b = team_library(tmp_path / "b", pg_url)
    try:
        a.save("ARCHIVE", name="pg-port", description="Start PostgreSQL on a free port", body=STEPS)
        assert until(lambda: b.read("pg-port")[0].version == 1) is not None
        md = a.config.workspace / "pg-port" / "SKILL.md"
        md.write_text(md.read_text().replace("Pick a free port.", "Pick a FREE port (edited on A)."))
        b.save("FIX", target_skill_name="pg-port", body=STEPS.replace("Pick a free port.", "Pick port 5433."),
               replace_body=True)
        a.history("pg-port")
        assert not b.review.show("pg-port")["approvable"]
        with pytest.raises(ConflictError, match="changed both in the draft and in the skill since"):
            b.review.approve("pg-port", reviewer="ann")
        assert "Pick port 5433." in b.read("pg-port")[1] and b.read("pg-port")[0].version == 2
    finally:
        close(b)
        close(a)
