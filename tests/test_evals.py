"""Trigger evals (the Agent Skills guide's ``evals/eval_queries.json``) run through the search agents use:
the console script's ``eval`` and ``validate``, learned evals from reported outcomes, and a FIX judged on
its skill's evals before it lands (shown to the agent, the reviewer and the dashboard; refused by setting)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.catalog.eval_files import parse_queries, read_evals
from skillshelf.embeddings.fake import FakeEmbedder

SCRIPT = Path(sys.executable).with_name("skillshelf")
if not SCRIPT.exists():  # an environment whose scripts live elsewhere
    SCRIPT = Path(shutil.which("skillshelf") or SCRIPT)

SKILLS = {
    "cors-fix": ("Fix CORS errors in Next.js API routes and preflight OPTIONS requests",
                 "## Solution\n\nAdd Access-Control-Allow-Origin headers to the API route response.\n"),
    "nextjs-api-routes": ("Write Next.js API routes with typed request handlers", "## Steps\n\nExport a handler.\n"),
    "fetch-retries": ("Retry failed fetch calls in the browser with backoff", "## Steps\n\nWrap fetch.\n"),
    "cache-headers": ("Set HTTP cache headers on static assets and responses", "## Steps\n\nCache-Control.\n"),
    "release-checklist": ("A release checklist to run before deploys", "## Steps\n\nTag, build, ship.\n"),
    "docker-build": ("Multi-stage Docker builds with cached layers", "## Steps\n\nCopy the lock file first.\n"),
    "pytest-fixtures": ("Write pytest fixtures and parametrized tests in Python", "## Steps\n\nconftest.py.\n"),
    "commit-style": ("Conventional commit messages for changelogs", "## Format\n\nfeat: fix: docs:\n"),
    "sql-migrations": ("Write reversible SQL schema migrations", "## Steps\n\nUp and down.\n"),
    "k8s-deploy": ("Deploy a service to Kubernetes with a rolling update", "## Steps\n\nkubectl apply.\n"),
}
POSITIVES = ["the browser blocks my fetch: No Access-Control-Allow-Origin header is present",
             "preflight OPTIONS request fails on my Next.js API route",
             "allow cross-origin requests from the frontend to my API routes",
             "Access-Control-Allow-Origin missing from the API route response"]
NEGATIVES = ["write pytest tests for my SQL schema migrations",
             "deploy my Docker image to Kubernetes with a rolling update"]
NEAR_MISS = "set cache headers on static assets"      # comes up for cors-fix (its body says 'headers')
EGGS = "Cook soft boiled eggs for breakfast"


def evals(pos=POSITIVES, neg=NEGATIVES) -> list[dict]:
    return [{"query": q, "should_trigger": True} for q in pos] + [{"query": q, "should_trigger": False} for q in neg]


def make_home(h: Path, config: str = "") -> Path:
    ws = h / "skills"
    for name, (desc, body) in SKILLS.items():
        write_skill(ws, name, description=desc, body=body)
    (ws / "cors-fix" / "evals").mkdir()
    (ws / "cors-fix" / "evals" / "eval_queries.json").write_text(json.dumps(evals(), indent=2), encoding="utf-8")
    if config:
        (h / "config.toml").write_text(config, encoding="utf-8")
    return ws


def sk(home: Path, *args: str, embedder: str = "fake", timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    env.update(SKILLSHELF_EMBEDDER=embedder, COLUMNS="200")
    p = subprocess.run([str(SCRIPT), "--home", str(home), *args], capture_output=True, text=True, env=env,
                       timeout=timeout)
    assert "Traceback" not in p.stderr, p.stderr
    return p


# --- the file format --------------------------------------------------------------------------

def test_an_eval_file_is_read_item_by_item_and_each_problem_names_its_line():
    text = ('[\n  {"query": "fix my cors error", "should_trigger": true},\n'
            '  {"query": "x", "should_trigger": "yes"},\n'
            '  "just words",\n'
            '  {"query": "  bake   bread ", "should_trigger": false}\n]\n')
    qs, problems = parse_queries(text)
    assert [(q.query, q.should_trigger) for q in qs] == [("fix my cors error", True), ("bake bread", False)]
    assert [(p.line, p.rule) for p in problems] == [(3, "evals.malformed"), (4, "evals.malformed")]
    assert "should_trigger" in problems[0].message and "eval_queries.json" in problems[0].message
    qs, problems = parse_queries('[\n {"query": "a", "should_trigger": true}\n {"query": "b"}]')
    assert len(qs) == 1 and problems[0].line == 3 and "',' or ']'" in problems[0].message
    qs, problems = parse_queries('{"query": "a"}')
    assert qs == [] and problems[0].line == 1 and "JSON list" in problems[0].message
    qs, problems = parse_queries('[\n\n {"query": "a", "should_trigger": tru}]')
    assert qs == [] and problems[0].line == 3 and "not valid JSON" in problems[0].message


def test_the_guides_split_is_kept_and_a_file_outside_the_skill_is_refused(tmp_path):
    folder = tmp_path / "s"
    (folder / "evals").mkdir(parents=True)
    (folder / "evals" / "train_queries.json").write_text(json.dumps(evals(POSITIVES[:3], NEGATIVES[:1])))
    (folder / "evals" / "validation_queries.json").write_text(json.dumps(evals(POSITIVES[3:], NEGATIVES[1:])))
    es = read_evals(folder)
    assert es.findings == [] and len(es.queries) == 6
    assert {q.split for q in es.queries} == {"train", "validation"}
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps(evals()))
    (folder / "evals" / "eval_queries.json").symlink_to(outside)
    es = read_evals(folder)
    assert [f.rule for f in es.findings] == ["evals.outside"] and len(es.queries) == 6
    (folder / "evals" / "eval_queries.json").unlink()
    (folder / "evals" / "eval_queries.json").write_text("[" + '{"query": "q", "should_trigger": true},' * 60_000)
    assert [f.rule for f in read_evals(folder).findings] == ["file.too-large"]


def test_validate_names_the_line_of_a_malformed_eval_file(tmp_path):
    ws = make_home(tmp_path / "h")
    (ws / "cors-fix" / "evals" / "eval_queries.json").write_text(
        '[\n  {"query": "cors", "should_trigger": true},\n  {"query": "x", "should_trigger": 1}\n]\n')
    p = sk(tmp_path / "h", "validate", str(ws / "cors-fix"))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "evals.malformed:3: evals/eval_queries.json" in p.stdout and "should_trigger" in p.stdout
    p = sk(tmp_path / "h", "eval", "cors-fix", "--json")     # the same file makes its eval fail, never crash
    assert p.returncode == 1
    [res] = json.loads(p.stdout)
    assert not res["passed"] and res["findings"][0]["line"] == 3 and res["positives"] == 1


def test_an_eval_file_nested_thousands_deep_is_a_finding_not_a_traceback(tmp_path):
    ws = make_home(tmp_path / "h")
    (ws / "cors-fix" / "evals" / "eval_queries.json").write_text(
        '[\n  {"query": "cors", "should_trigger": true},\n  ' + "[" * 5000 + "]" * 5000 + "\n]\n")
    p = sk(tmp_path / "h", "eval", "cors-fix", "--json")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    [res] = json.loads(p.stdout)
    assert not res["passed"] and "nested too deeply" in res["findings"][0]["message"] and res["positives"] == 1


# --- skillshelf eval ----------------------------------------------------------------------------

def test_eval_reports_recall_false_triggers_and_misses_and_exits_by_the_floors(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h)
    p = sk(h, "eval", "cors-fix", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    [res] = json.loads(p.stdout)
    assert (res["name"], res["source"], res["recall"], res["false_rate"], res["misses"]) == \
        ("cors-fix", "authored", 1.0, 0.0, [])
    assert (res["positives"], res["negatives"], res["k"]) == (4, 2, 5)
    # the searches were not logged: evals are not usage
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        assert lib.stats().queries == 0

    # a near miss that brings the skill up: a false trigger, 1 of 3 is over the 20 % floor
    (ws / "cors-fix" / "evals" / "eval_queries.json").write_text(json.dumps(evals(neg=NEGATIVES + [NEAR_MISS])))
    p = sk(h, "eval", "cors-fix", "--json")
    assert p.returncode == 1
    [res] = json.loads(p.stdout)
    assert res["false_rate"] == pytest.approx(1 / 3, abs=1e-3) and not res["passed"]
    assert [m["query"] for m in res["false_triggers"]] == [NEAR_MISS]
    assert res["false_triggers"][0]["first"][0] == "cache-headers"     # what came before it
    text = sk(h, "eval", "cors-fix")
    assert text.returncode == 1 and "FAIL  cors-fix (authored): recall@5 4/4 (100%), false triggers 1/3" in text.stdout
    (h / "config.toml").write_text("[eval]\nmax_false = 0.5\n")      # the floor is a setting
    assert sk(h, "eval", "cors-fix").returncode == 0

    # k = 1: the requests that name another skill's words first are misses, each with what came first
    p = sk(h, "eval", "cors-fix", "--k", "1", "--json")
    [res] = json.loads(p.stdout)
    assert res["k"] == 1 and all(m["first"] and "cors-fix" not in m["first"] for m in res["misses"])
    assert res["recall"] == (4 - len(res["misses"])) / 4
    assert sk(h, "eval", "cors-fix", "--k", "0").returncode == 2
    p = sk(h, "eval")
    assert p.returncode == 2 and "--all" in p.stderr
    p = sk(h, "eval", "no-such-skill")
    assert p.returncode == 1 and p.stderr.startswith("error:")
    (h / "config.toml").write_text('[eval]\nmin_recall = 2\n')
    p = sk(h, "eval", "cors-fix")
    assert p.returncode == 1 and "min_recall 2" in p.stderr and "config.toml" in p.stderr


def test_learned_evals_come_from_worked_reports_and_are_never_mixed_with_authored_ones(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
        for q, skill, worked in [("multi-stage docker image that caches layers", "docker-build", True),
                                 ("docker build is slow, cache the dependency layer", "docker-build", True),
                                 ("a docker question that did not work out", "docker-build", False),
                                 ("cors on my api route", "cors-fix", True)]:
            qid = lib.search(q, client="agent-a").query_id
            lib.report_outcome(skill, worked, query_id=qid, client="agent-a")
    p = sk(h, "eval", "docker-build", "cors-fix", "commit-style", "--json")
    by = {r["name"]: r for r in json.loads(p.stdout)}
    assert by["docker-build"]["source"] == "learned" and by["docker-build"]["positives"] == 2
    assert by["docker-build"]["negatives"] == 0 and by["docker-build"]["false_rate"] is None
    # cors-fix keeps an eval file: its own six queries, the worked request is not among them
    assert by["cors-fix"]["source"] == "authored" and by["cors-fix"]["positives"] + by["cors-fix"]["negatives"] == 6
    assert by["commit-style"]["source"] == "none" and by["commit-style"]["passed"]
    p = sk(h, "eval", "--all", "--json")
    names = {r["name"]: r["source"] for r in json.loads(p.stdout)}
    assert names == {"cors-fix": "authored", "docker-build": "learned"}     # skills without evals left out
    text = sk(h, "eval", "--all").stdout
    assert "8 skills have no evals" in text and "docker-build (learned)" in text


def test_eval_with_the_bundled_model(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    p = sk(h, "eval", "cors-fix", "--json", embedder="minilm", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    [res] = json.loads(p.stdout)
    assert res["recall"] == 1.0 and res["false_rate"] == 0.0
    p = sk(h, "eval", "cors-fix", "--k", "1", embedder="minilm", timeout=300)
    assert "recall@1" in p.stdout


# --- a change judged before it lands -------------------------------------------------------------

def after(text: str) -> int:
    """The should-trigger queries that still find the skill, from 'findability: 4/4 → N/4'."""
    m = re.search(r"findability: 4/4 → (\d)/4", text)
    assert m, text
    return int(m.group(1))


def _save(h: Path, args: dict):
    from mcp import Client

    from skillshelf.mcp.server import build_server

    async def main():
        async with Client(build_server(lambda: Library(h, embedder=FakeEmbedder(), auto_sync=False))) as c:
            return await c.call_tool("save_skill", args)
    return anyio.run(main)


EGGS_FIX = {"action": "FIX", "target_skill_name": "cors-fix", "description": EGGS,
            "body": "## Solution\n\nBoil them for six minutes.\n", "reason": "rewrite"}


def test_a_fix_that_makes_a_skill_unfindable_is_shown_to_the_agent_or_refused_by_setting(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h, 'write_policy = "open"\n[evolution]\nfindability = "block"\n')
    before = (ws / "cors-fix" / "SKILL.md").read_text()
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
    res = _save(h, EGGS_FIX)
    assert res.is_error
    msg = res.content[0].text
    assert 'FIX of cors-fix refused by evolution.findability = "block": findability: 4/4 →' in msg, msg
    assert "now finds" in msg                       # what comes first instead
    assert (ws / "cors-fix" / "SKILL.md").read_text() == before     # nothing written
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        # and the trial never touched the real index
        assert lib.get("cors-fix").description == SKILLS["cors-fix"][0]
        assert lib.search(POSITIVES[1], log=False).hits[0].name == "cors-fix"
        # a change that keeps it findable goes through under the same setting, with its figures
        ok = lib.save("FIX", target_skill_name="cors-fix", lesson="Vercel needs the headers in next.config.js too",
                      by="person")
        assert ok.findability["line"] == "findability: 4/4 → 4/4" and "findability: 4/4 → 4/4" in ok.message
    (h / "config.toml").write_text('write_policy = "open"\n')     # the default: warn
    res = _save(h, EGGS_FIX)
    assert not res.is_error
    text = res.content[0].text
    assert "FIX cors-fix: version" in text and after(text) < 4 * 0.8, text
    assert EGGS in (ws / "cors-fix" / "SKILL.md").read_text()


def test_a_skill_with_learned_evals_is_judged_too_and_one_lost_query_is_let_through(tmp_path):
    h = tmp_path / "h"
    # (outcomes not learned from here: the trial's ranking would otherwise keep the reported requests' skill up)
    make_home(h, 'write_policy = "open"\n[evolution]\nfindability = "block"\n[search]\nlearn_from_outcomes = false\n')
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
        for q in ("a multi-stage image that reuses cached layers",
                  "copy the lock file first so the layers stay cached"):
            lib.report_outcome("docker-build", True, query_id=lib.search(q).query_id)
        res = lib.save("FIX", target_skill_name="docker-build", description=EGGS, body="# Eggs\n\nBoil them.\n",
                       replace_body=True, by="person")
        f = res.findability
        assert (f["source"], f["line"], f["dropped"], f["warning"]) == ("learned", "findability: 2/2 → 1/2", 1, None)
        assert [m["query"] for m in f["lost"]] == ["copy the lock file first so the layers stay cached"]
        assert EGGS in lib.get("docker-build").description      # a drop of one query is not more than one


def test_a_draft_shows_the_reviewer_what_the_change_does_to_its_evals(tmp_path):
    h = tmp_path / "h"
    make_home(h, 'write_policy = "propose"\n')
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
    res = _save(h, EGGS_FIX)
    assert not res.is_error and "draft saved for review" in res.content[0].text
    found = after(res.content[0].text)
    assert found < 4 * 0.8
    p = sk(h, "review", "show", "cors-fix")
    assert p.returncode == 0, p.stderr
    assert f"findability: 4/4 → {found}/4 on its authored evals" in p.stdout and "\n  lost: '" in p.stdout

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from skillshelf.web import create_app

    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib, \
            TestClient(create_app(lib, port=7788), base_url="http://127.0.0.1:7788") as c:
        page = c.get("/review/cors-fix").text
    assert f"findability: 4/4 → {found}/4 on its authored evals" in page and "lost: “" in page


def test_init_writes_a_starting_eval_file_from_the_usage_log_and_never_overwrites_one(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h)
    ro = tmp_path / "ro"
    write_skill(ro, "vendored-skill", description="A skill from a collection skillshelf does not write to")
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
        for q, skill in [("a multi-stage image that reuses cached layers", "docker-build"),
                         ("deploy my Docker image to Kubernetes with a rolling update", "k8s-deploy")]:
            res = lib.search(q, client="agent-a")
            assert "docker-build" in [x.name for x in res.hits]     # shown for both
            lib.report_outcome(skill, True, query_id=res.query_id, client="agent-a")
    p = sk(h, "eval", "docker-build", "--init")
    assert p.returncode == 0, p.stderr
    assert "1 requests it served, 1 near misses" in p.stdout
    written = json.loads((ws / "docker-build" / "evals" / "eval_queries.json").read_text())
    assert written == [{"query": "a multi-stage image that reuses cached layers", "should_trigger": True},
                       {"query": "deploy my Docker image to Kubernetes with a rolling update",
                        "should_trigger": False}]
    [res] = json.loads(sk(h, "eval", "docker-build", "--json").stdout)
    assert res["source"] == "authored" and (res["positives"], res["negatives"]) == (1, 1)
    p = sk(h, "eval", "docker-build", "--init")      # the owner's file is theirs now
    assert p.returncode == 1 and "already keeps" in p.stderr
    write_skill(ws, "brand-new", description="A skill no request has met yet")
    p = sk(h, "eval", "brand-new", "--init")          # nothing in the log about it
    assert p.returncode == 1 and "should_trigger" in p.stderr
    p = sk(h, "--root", str(ro), "eval", "vendored-skill", "--init")
    assert p.returncode == 1 and "does not write to" in p.stderr
    assert not (ro / "vendored-skill" / "evals").exists()
    assert sk(h, "eval", "--all", "--init").returncode == 2


def test_a_derive_is_judged_on_its_parents_evals_with_the_child_beside_it(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
        seen = []
        real = lib.evals._trial.open

        def spying():      # what the trial index holds once the child is in it
            cm = real()
            t = cm.__enter__()
            add = t.add
            t.add = lambda name, text: (add(name, text), seen.append([x.name for x in t.search(POSITIVES[1], 10)]))
            return type("CM", (), {"__enter__": lambda s: t, "__exit__": lambda s, *a: cm.__exit__(*a)})()

        lib.evals._trial.open = spying
        res = lib.save("DERIVE", target_skill_name="cors-fix", name="cors-fix-vercel",
                       description="Fix CORS errors in Next.js API routes deployed on Vercel", by="person")
        assert res.findability["line"].startswith("findability: 4/4 → ") and res.findability["skill"] == "cors-fix"
        assert "cors-fix-vercel" in seen[0] and "cors-fix" in seen[0]     # the child searched beside its parent
        assert "findability: 4/4 → " in res.message


def test_eval_all_names_each_of_two_skills_of_one_name_by_its_id(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    other = tmp_path / "team-skills"
    write_skill(other, "cors-fix", description="CORS fixes for Express servers behind a proxy",
                body="## Steps\n\nUse the cors middleware.\n")
    (other / "cors-fix" / "evals").mkdir()
    (other / "cors-fix" / "evals" / "eval_queries.json").write_text(json.dumps(evals()), encoding="utf-8")
    assert sk(h, "roots", "add", str(other)).returncode == 0
    p = sk(h, "eval", "--all")
    lines = [ln for ln in p.stdout.splitlines() if "cors-fix (authored)" in ln or "cors-fix [" in ln]
    assert len(lines) == 2, p.stdout
    ids = sorted(re.search(r"cors-fix \[([^\]]+)\] \(authored\)", ln).group(1) for ln in lines)
    assert ids == ["team-skills:cors-fix", "workspace:cors-fix"]


def test_a_skill_without_evals_is_not_counted_as_passed_and_a_gate_on_it_fails(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    p = sk(h, "eval", "commit-style")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "commit-style: no evals" in p.stdout and "0 passed, 0 failed, 1 without evals" in p.stdout, p.stdout
    assert "nothing was evaluated" in p.stderr and "eval_queries.json" in p.stderr, p.stderr
    p = sk(h, "eval", "cors-fix", "commit-style")
    assert re.search(r"\b\d passed, \d failed, 1 without evals", p.stdout), p.stdout
    assert "nothing was evaluated" not in p.stderr
