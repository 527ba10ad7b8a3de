"""A change judged on the evals of the skills it comes from, before it lands: the setting
``evolution.findability`` (warn | block), a MERGE judged on each source's evals, and the MCP
``save_skill`` result's structured ``findability`` field."""

from __future__ import annotations

import anyio
from test_evals import POSITIVES, make_home, sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

# a FIX that empties what the skill says: a placeholder description, the solution gone
EMPTY_FIX = {"action": "FIX", "target_skill_name": "cors-fix", "description": "Notes.",
             "body": "## Solution\n\nSee the docs.\n", "reason": "tidy"}
BLOCK = '[evolution]\nfindability = "block"\n'


def call(h, tool: str, args: dict):
    from mcp import Client

    from skillshelf.mcp.server import build_server

    async def main():
        async with Client(build_server(lambda: Library(h, embedder=FakeEmbedder(), auto_sync=False))) as c:
            return await c.call_tool(tool, args)
    return anyio.run(main)


def synced(h) -> None:
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()


def test_the_setting_is_evolution_findability_and_a_bad_value_or_the_old_name_is_a_clear_error(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    p = sk(h, "config")
    assert p.returncode == 0 and "evolution.findability" in p.stdout and "eval.guard" not in p.stdout
    (h / "config.toml").write_text('[evolution]\nfindability = "refuse"\n')
    p = sk(h, "config")
    assert p.returncode == 1 and "unknown evolution.findability 'refuse'" in p.stderr and "config.toml" in p.stderr
    assert '"block"' in p.stderr
    (h / "config.toml").write_text('[eval]\nguard = "refuse"\n')      # the name it had before
    p = sk(h, "eval", "cors-fix")
    assert p.returncode == 1 and "eval.guard is now evolution.findability" in p.stderr
    (h / "config.toml").write_text('[evolution]\nfindability = "block"\n')
    p = sk(h, "config")
    assert p.returncode == 0 and "block" in next(line for line in p.stdout.splitlines()
                                                   if "evolution.findability" in line)


def test_a_fix_that_empties_a_description_is_a_warning_with_structured_findability_or_refused(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h, 'write_policy = "open"\n')
    before = (ws / "cors-fix" / "SKILL.md").read_text()
    synced(h)
    (h / "config.toml").write_text('write_policy = "open"\n' + BLOCK)
    res = call(h, "save_skill", EMPTY_FIX)
    assert res.is_error
    msg = res.content[0].text
    assert 'FIX of cors-fix refused by evolution.findability = "block": findability: 4/4 →' in msg, msg
    assert "should-trigger queries lost" in msg and "now finds" in msg
    assert (ws / "cors-fix" / "SKILL.md").read_text() == before      # nothing written

    (h / "config.toml").write_text('write_policy = "open"\n')       # the default: warn
    res = call(h, "save_skill", EMPTY_FIX)
    assert not res.is_error
    f = res.structured_content["findability"]
    assert f["before"]["found"] == f["before"]["of"] == 4 and f["after"]["of"] == 4
    assert f["after"]["found"] <= 2 and f["dropped"] == 4 - f["after"]["found"]
    assert f["line"] == f"findability: 4/4 → {f['after']['found']}/4" and f["setting"] == "warn"
    assert len(f["lost"]) == f["dropped"] and {m["query"] for m in f["lost"]} <= set(POSITIVES)
    assert all(m["first"] and "cors-fix" not in m["first"] for m in f["lost"])     # what came first instead
    assert f["warning"].startswith(f"warning: {f['line']} on cors-fix's authored evals")
    assert f["warning"] in res.content[0].text and res.structured_content["message"].endswith(f["warning"])
    assert "Notes." in (ws / "cors-fix" / "SKILL.md").read_text()

    # a change that keeps it findable: the field is there, no warning
    res = call(h, "save_skill", {"action": "FIX", "target_skill_name": "cors-fix", "reason": "restore",
                                 "description": "Fix CORS errors in Next.js API routes and preflight OPTIONS requests",
                                 "body": "## Solution\n\nAdd Access-Control-Allow-Origin headers to the API route "
                                         "response.\n"})
    f = res.structured_content["findability"]
    assert not res.is_error and f["after"]["found"] > f["before"]["found"] and f["warning"] is None
    # a skill without evals: the field is null
    res = call(h, "save_skill", {"action": "FIX", "target_skill_name": "docker-build", "lesson": "pin the base"})
    assert not res.is_error and res.structured_content["findability"] is None


def test_a_merge_is_judged_on_each_sources_evals_against_the_merged_text(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h, 'write_policy = "open"\n' + BLOCK)
    synced(h)
    bad = {"action": "MERGE", "source_skill_names": "cors-fix, nextjs-api-routes", "name": "kitchen-notes",
           "description": "Cook soft boiled eggs for breakfast", "body": "## Steps\n\nBoil them.\n",
           "reason": "merge"}
    res = call(h, "save_skill", bad)
    assert res.is_error
    assert 'MERGE of kitchen-notes refused by evolution.findability = "block"' in res.content[0].text
    assert "on its sources' authored evals" in res.content[0].text
    assert not (ws / "kitchen-notes").exists()
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        assert lib.get("cors-fix").active and lib.get("nextjs-api-routes").active

    # a merge whose text keeps the sources' words: the merged skill is found for cors-fix's requests
    good = {"action": "MERGE", "source_skill_names": "cors-fix, nextjs-api-routes", "name": "nextjs-api",
            "description": "Write Next.js API routes and fix their CORS errors and preflight OPTIONS requests",
            "body": "## Solution\n\nAdd Access-Control-Allow-Origin headers to the API route response.\n",
            "reason": "merge"}
    res = call(h, "save_skill", good)
    assert not res.is_error, res.content[0].text
    f = res.structured_content["findability"]
    assert f["action"] == "MERGE" and f["skill"] == "nextjs-api" and f["line"] == "findability: 4/4 → 4/4"
    assert [s["skill"] for s in f["sources"]] == ["cors-fix"]     # the one source that keeps evals
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        assert not lib.get("cors-fix").active            # merged: the trial judged the merged skill in its place
        assert lib.search(POSITIVES[1], log=False).hits[0].name == "nextjs-api"


def test_a_draft_that_loses_queries_is_refused_at_approval_once_the_setting_blocks(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h, 'write_policy = "propose"\n')
    synced(h)
    res = call(h, "save_skill", EMPTY_FIX)
    assert not res.is_error and "draft saved for review" in res.content[0].text
    f = res.structured_content["findability"]
    assert f["warning"] and f["warning"] in res.content[0].text
    p = sk(h, "review", "show", "cors-fix")
    assert f"{f['line']} on its authored evals" in p.stdout and \
        f"  {f['dropped']} should-trigger queries lost: under evolution.findability" in p.stdout
    (h / "config.toml").write_text('write_policy = "propose"\n' + BLOCK)
    p = sk(h, "review", "approve", "cors-fix")
    assert p.returncode == 1 and p.stderr.startswith("error:"), p.stderr
    assert 'refused by evolution.findability = "block"' in p.stderr and 'findability = "warn"' in p.stderr
    assert "Notes." not in (ws / "cors-fix" / "SKILL.md").read_text()


def test_a_change_that_loses_two_queries_is_blocked_even_when_it_gains_two_others():
    """The rule counts the should-trigger queries a change loses, not the net: two requests that
    stop finding the skill are two people who lose it, whatever else it gains."""
    from types import SimpleNamespace

    import pytest

    from skillshelf.errors import PolicyError
    from skillshelf.usage.evals import Evals, Miss, SkillEval

    def ev(missed):
        return SkillEval("s", "id", "authored", 5, positives=4, found=2,
                         misses=[Miss(q, "", ["other"]) for q in missed])

    def verdict(policy):
        e = Evals(None, search=lambda *a: [], resolve=lambda n: None, every=lambda: [], copies=lambda n: [],
                  authored=lambda r: None, settings=lambda: None, policy=lambda: policy)
        rec = SimpleNamespace(name="s")
        return e._verdict("FIX", "s", [(rec, "authored", ev(["q3", "q4"]), ev(["q1", "q2"]))], 5)

    with pytest.raises(PolicyError, match="2 should-trigger queries lost"):
        verdict("block")
    w = verdict("warn")
    assert w["line"] == "findability: 2/4 → 2/4" and w["dropped"] == 2 and "2 should-trigger" in w["warning"]


def test_running_every_skills_evals_is_a_curators_below_the_adapters(tmp_path):
    """The service refuses a reader's or an agent's caller itself: a route or tool added later
    that forgets to check cannot start a run of every skill's evals for them."""
    import pytest

    from skillshelf.access import Caller
    from skillshelf.errors import ForbiddenError

    h = make_home(tmp_path / "h")
    with Library(home=h.parent, embedder=FakeEmbedder()) as lib:
        for role in ("reader", "agent"):
            with pytest.raises(ForbiddenError, match="needs the curator role"):
                lib.evals.run(everything=True, caller=Caller("t", role))
        assert lib.evals.run(everything=True, caller=Caller("c", "curator")).results
        assert lib.evals.run(["cors-fix"], caller=Caller("t", "reader")).results     # one skill: a read
