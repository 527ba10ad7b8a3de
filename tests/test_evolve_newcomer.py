"""What a new user met learning and curating: merges that drop their sources, lessons rewritten,
drafts of deleted skills, names that look like paths. Checked where they met it: a real MCP
client, the console script as a subprocess."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from test_cli_entry import sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import ValidationError
from skillshelf.mcp.server import build_server

SOURCES = "cors-fix-nextjs-api,docker-multi-stage-build"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    Library.init(home, embedder=FakeEmbedder(), auto_sync=False).close()
    return home


def _lib(home: Path) -> Library:
    lib = Library(home, embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    return lib


def _text(res) -> str:
    return " ".join(getattr(c, "text", "") for c in res.content)


def _save(home: Path, policy: str, *calls: dict) -> list:
    out: list = []

    async def main():
        lib = lambda: Library(home, embedder=FakeEmbedder(), auto_sync=False, write_policy=policy)
        async with Client(build_server(lib)) as c:
            for args in calls:
                out.append(await c.call_tool("save_skill", args))
    anyio.run(main)
    return out


# --- a MERGE that keeps little of its sources --------------------------------------------------

def test_an_agent_merge_that_drops_its_sources_is_refused_naming_what_it_drops(tmp_path):
    home = _home(tmp_path)
    (res,) = _save(home, "open", {"action": "MERGE", "source_skill_names": SOURCES, "name": "web-ops-merged",
                                  "description": "Merged notes on CORS and Docker builds.",
                                  "body": "# Merged\n\n## Solution\nsee parts\n", "author": "agent-a"})
    t = _text(res)
    assert res.is_error
    assert "cors-fix-nextjs-api (1% of its words kept; its sections When to Use, Root Causes" in t, t
    assert "docker-multi-stage-build" in t and "send no body" in t
    with _lib(home) as lib:
        assert lib.get("cors-fix-nextjs-api").active and lib.get("docker-multi-stage-build").active
        assert not (home / "skills" / "web-ops-merged").exists()



def test_the_sources_words_hidden_in_a_comment_keep_nothing(tmp_path):
    """Words a reader never sees (an HTML comment holding the sources' words) do not count as kept."""
    home = _home(tmp_path)
    with _lib(home) as lib:
        words = " ".join(sorted({w for n in SOURCES.split(",") for w in lib.get(n).body.split()}))
    (res,) = _save(home, "open", {"action": "MERGE", "source_skill_names": SOURCES, "name": "web-ops-merged",
                                  "description": "Merged notes on CORS and Docker builds.",
                                  "body": f"# Merged\n\n## Solution\nsee parts\n<!-- {words} -->\n",
                                  "author": "agent-a"})
    assert res.is_error and "of its words kept" in _text(res), _text(res)
    with _lib(home) as lib:
        assert lib.get("cors-fix-nextjs-api").active and lib.get("docker-multi-stage-build").active

def test_a_merge_without_a_body_keeps_every_source_whole_and_one_restore_undoes_it(tmp_path):
    home = _home(tmp_path)
    with _lib(home) as lib:
        before = {n: lib.get(n).body for n in SOURCES.split(",")}
    (res,) = _save(home, "open", {"action": "MERGE", "source_skill_names": SOURCES, "name": "web-ops-merged",
                                  "description": "Merged notes on CORS and Docker builds."})
    assert not res.is_error, _text(res)
    assert "`skillshelf restore web-ops-merged` undoes the merge" in _text(res)
    with _lib(home) as lib:
        body = lib.get("web-ops-merged").body
        # every line of each source's text is there (headings moved down under "## From <name>")
        for name, text in before.items():
            assert f"## From {name}" in body
            for line in text.split("## Lessons Learned")[0].split("\n"):
                assert line.lstrip("#").strip() in body
        assert not lib.get("cors-fix-nextjs-api").active
    p = sk("restore", "web-ops-merged", home=home)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "the merge into web-ops-merged is undone: cors-fix-nextjs-api, docker-multi-stage-build are active" \
           in " ".join(p.stdout.split())
    with _lib(home) as lib:
        assert lib.get("cors-fix-nextjs-api").active and lib.get("docker-multi-stage-build").active
        assert not lib.get("web-ops-merged").active
    # restoring what is active names an option `list` has
    p = sk("restore", "cors-fix-nextjs-api", home=home)
    assert p.returncode == 1 and "nothing to restore" in p.stderr and "show as (inactive) in `skillshelf list`" in p.stderr
    assert "list --all" not in p.stderr


# --- a FIX leaves the lines it did not touch as they were ---------------------------------------

def test_a_fix_adding_a_lesson_leaves_a_wrapped_lesson_byte_for_byte(tmp_path):
    home = _home(tmp_path)
    path = home / "skills" / "cors-fix-nextjs-api" / "SKILL.md"
    old = path.read_text()
    lessons = old[old.index("## Lessons Learned"):]
    assert lessons.count("\n") >= 3          # the sample's v1 lesson is wrapped over two lines
    (res,) = _save(home, "open", {"action": "FIX", "target_skill_name": "cors-fix-nextjs-api",
                                  "lesson": "With credentials, Access-Control-Allow-Origin must not be '*'.",
                                  "author": "agent-a"})
    assert not res.is_error, _text(res)
    new = path.read_text()
    assert new.endswith(lessons.rstrip("\n") + "\n- v2: With credentials, Access-Control-Allow-Origin must not "
                                               "be '*'.\n"), new[-600:]


# --- who made a change, and names that look like paths ------------------------------------------

def test_plain_history_says_which_agent_made_an_approved_change(tmp_path):
    home = _home(tmp_path)
    (res,) = _save(home, "propose", {"action": "FIX", "target_skill_name": "cors-fix-nextjs-api",
                                     "lesson": "Never answer a preflight with a redirect.", "author": "agent-a",
                                     "reason": "learned in a run"})
    assert not res.is_error, _text(res)
    assert sk("review", "approve", "cors-fix-nextjs-api", home=home).returncode == 0
    p = sk("history", "cors-fix-nextjs-api", home=home)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    line = next(x for x in p.stdout.splitlines() if "FIX" in x)
    assert "[approved] by agent-a: learned in a run (approved by cli)" in line, p.stdout
    found = next(x for x in p.stdout.splitlines() if "FOUND" in x)
    assert " by " not in found          # a change found on disk has no author to name


def test_a_reference_that_climbs_out_is_refused_as_a_path_everywhere(tmp_path):
    home = _home(tmp_path)
    fix, merge = _save(home, "open",
                       {"action": "FIX", "target_skill_name": "../cors-fix-nextjs-api", "lesson": "a lesson"},
                       {"action": "MERGE", "source_skill_names": "../cors-fix-nextjs-api,docker-multi-stage-build",
                        "name": "both"})
    for res in (fix, merge):
        assert res.is_error and "'../cors-fix-nextjs-api' looks like a path, not a skill name" in _text(res)
    assert 'version: "1"' in (home / "skills" / "cors-fix-nextjs-api" / "SKILL.md").read_text()
    p = sk("history", "../../etc", home=home)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "'../../etc' looks like a path, not a skill name" in p.stderr and "did you mean" not in p.stderr


# --- drafts of a skill that is deleted ------------------------------------------------------------

def test_delete_names_the_drafts_waiting_and_each_can_still_be_settled(tmp_path):
    home = _home(tmp_path)
    with _lib(home) as lib:
        lib.save("ARCHIVE", name="dash-created-skill", description="A skill made on the dashboard",
                 body="## When to Use\n\nAlways.\n\n## Solution\n\nDo it.\n", by="person")
    fix, derive = _save(home, "propose",
                        {"action": "FIX", "target_skill_name": "dash-created-skill", "lesson": "a lesson"},
                        {"action": "DERIVE", "target_skill_name": "dash-created-skill", "name": "dash-child",
                         "description": "A child of the dashboard skill"})
    assert not fix.is_error and not derive.is_error
    p = sk("delete", "dash-created-skill", "--yes", home=home)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    said = " ".join(p.stdout.split())
    assert "draft dash-child (a DERIVE of dash-created-skill) can still be approved" in said
    assert ("draft dash-created-skill (a FIX of dash-created-skill) can no longer be approved: reject it with "
            "`skillshelf review reject dash-created-skill") in said
    p = sk("review", "approve", "dash-created-skill", home=home)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "no longer exists" in p.stderr and "skillshelf review reject dash-created-skill" in p.stderr, p.stderr
    p = sk("review", "approve", "dash-child", home=home)
    assert p.returncode == 0, p.stderr
    assert "approved as a new skill with no parent" in p.stdout
    assert sk("review", "reject", "dash-created-skill", "--reason", "deleted", home=home).returncode == 0
    with _lib(home) as lib:
        assert lib.get("dash-child").active and "Do it." in lib.get("dash-child").body
        assert lib.review.list() == []


# --- two agents' lessons for one skill under `propose` ------------------------------------------

def test_a_lesson_sent_while_a_draft_waits_joins_it_and_the_reviewer_sees_each_agents_part(tmp_path):
    home = _home(tmp_path)
    calls = [{"action": "FIX", "target_skill_name": "cors-fix-nextjs-api", "author": f"agent-{who}",
              "lesson": f"Lesson {i} from agent {who} about preflight caching.", "reason": f"run of {who}"}
             for i in range(3) for who in "ab"]
    results = _save(home, "propose", *calls)
    assert not any(r.is_error for r in results), [_text(r) for r in results]
    assert "lesson added to the draft for cors-fix-nextjs-api already waiting for review (6 changes" \
           in _text(results[-1])
    # a change beyond a lesson is refused, saying how to send what was learned
    (body,) = _save(home, "propose", {"action": "FIX", "target_skill_name": "cors-fix-nextjs-api",
                                      "body": "## Solution\n\nSet the headers everywhere.\n", "author": "agent-c"})
    assert body.is_error and "send what you learned as a FIX with only a `lesson`" in _text(body)
    p = sk("review", "show", "cors-fix-nextjs-api", home=home)
    assert p.returncode == 0, p.stderr
    assert "proposed" in p.stdout and "by agent-a)" in p.stdout
    assert "by agent-b: Lesson 2 from agent b about preflight caching. (run of b)" in p.stdout
    for i in range(3):
        for who in "ab":
            assert f"+- v2: Lesson {i} from agent {who} about preflight caching." in p.stdout
    assert sk("review", "approve", "cors-fix-nextjs-api", home=home).returncode == 0
    p = sk("history", "cors-fix-nextjs-api", home=home)
    assert "[approved] by agent-a, agent-b: run of a (approved by cli)" in p.stdout, p.stdout
    text = (home / "skills" / "cors-fix-nextjs-api" / "SKILL.md").read_text()
    assert text.count("about preflight caching.") == 6


def test_a_merge_without_a_body_too_long_to_keep_whole_says_to_send_a_condensed_body(tmp_path):
    home = _home(tmp_path)
    lib = Library(home, embedder=FakeEmbedder(), auto_sync=False, write_policy="open", max_body_bytes=3000)
    lib.sync()
    try:
        with pytest.raises(ValidationError, match="send a body that condenses what the sources say"):
            lib.save("MERGE", name="both", source_skill_names=SOURCES)
    finally:
        lib.close()
