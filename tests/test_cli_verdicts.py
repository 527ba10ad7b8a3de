"""One verdict everywhere, and exit codes that mean one thing: a malformed eval file is named with
its line and reason by ``eval``, ``validate``, ``doctor`` and the dashboard's Curate; a run of
evals that evaluated nothing fails, named or ``--all``; a malformed option is a usage error
(exit 2); forgetting an unknown client names the clients there are; a person's search at the
CLI is not an agent's request (not logged, like the dashboard's), so stats stay about agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CHROMIUM, chromium, dashboard_server, write_skill
from test_evals import make_home, sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

BROKEN = '[\n  {"query": "cors", "should_trigger": true},,\n]\n'     # line 2: a second comma


def test_a_malformed_eval_file_has_one_verdict_and_reason_in_eval_validate_doctor_and_curate(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h)
    (ws / "cors-fix" / "evals" / "eval_queries.json").write_text(BROKEN, encoding="utf-8")
    reason = "evals/eval_queries.json: not valid JSON: Expecting value"
    p = sk(h, "validate", str(ws / "cors-fix"))
    assert p.returncode == 1 and f"evals.malformed:2: {reason}" in p.stdout, p.stdout
    p = sk(h, "eval", "--all")
    assert p.returncode == 1 and "FAIL  cors-fix" in p.stdout and f"error: {reason} (line 2)" in p.stdout, p.stdout
    p = sk(h, "doctor")
    line = next(ln for ln in p.stdout.splitlines() if "eval files" in ln)
    assert line.startswith("warn") and "1 skill with a malformed eval file" in line, line
    assert f"{ws / 'cors-fix' / 'evals' / 'eval_queries.json'}:2: not valid JSON: Expecting value" in line, line
    check = {c["name"]: c for c in json.loads(sk(h, "doctor", "--json").stdout)["checks"]}["eval files"]
    assert check["status"] == "warn"
    # Curate's "Failing evals" row, in a browser, says why: not only the counts the broken file left
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}")
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib, dashboard_server(lib) as url, \
            chromium() as browser:
        pg = browser.new_page()
        pg.goto(f"{url}/curate#evals")
        row = pg.locator("#evals table tr", has_text="cors-fix")
        assert row.count() == 1
        text = row.inner_text()
        assert "malformed eval file" in text and "not valid JSON: Expecting value (line 2)" in text, text
        assert "of the entries read" in row.locator("td.num").first.inner_text()   # not a pass of the whole file
        pg.close()


def test_doctor_says_none_malformed_when_the_eval_files_are_fine(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    checks = {c["name"]: c for c in json.loads(sk(h, "doctor", "--json").stdout)["checks"]}
    assert checks["eval files"] == {"name": "eval files", "status": "ok", "detail": "none malformed"}


def test_eval_all_that_evaluated_nothing_fails_like_eval_of_a_named_skill_without_evals(tmp_path):
    h = tmp_path / "h"
    ws = make_home(h)
    (ws / "cors-fix" / "evals" / "eval_queries.json").unlink()
    p = sk(h, "eval", "--all", "--json")
    assert p.returncode == 1 and json.loads(p.stdout) == []
    assert "nothing was evaluated: none of the 10 skills has evals" in p.stderr, p.stderr
    p = sk(h, "eval", "--all")
    assert p.returncode == 1 and "10 skills have no evals" in p.stdout
    p = sk(h, "eval", "commit-style")
    assert p.returncode == 1 and "nothing was evaluated: no named skill has evals" in p.stderr


def test_serve_with_an_unknown_write_policy_is_a_usage_error(tmp_path):
    make_home(tmp_path / "h")
    p = sk(tmp_path / "h", "serve", "--write-policy", "yolo")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "'yolo' is not one of read-only, propose, open" in p.stderr and "--write-policy" in p.stderr, p.stderr


def test_forgetting_an_unknown_client_names_the_clients_there_are(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    with Library(h, embedder=FakeEmbedder()) as lib:
        lib.sync()
        for client in ("claude-code", "cursor"):
            qid = lib.search("preflight OPTIONS request fails on my Next.js API route", client=client).query_id
            lib.report_outcome("cors-fix", True, query_id=qid, client=client)
    p = sk(h, "usage", "forget", "--client", "nobody")
    assert p.returncode == 1 and p.stdout == "", p.stdout
    assert "no client 'nobody' has reported outcomes learned from" in p.stderr
    assert "claude-code, cursor" in p.stderr, p.stderr
    p = sk(h, "usage", "forget", "--client", "cursor")
    assert p.returncode == 0 and "forgot 1 learned report" in p.stdout


def test_a_persons_search_at_the_cli_leaves_the_agents_report_rate_alone(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    write_skill(h / "skills", "eggs", description="Cook soft boiled eggs for breakfast")
    with Library(h, embedder=FakeEmbedder()) as lib:
        lib.sync()
        for i in range(5):
            qid = lib.search(f"preflight OPTIONS request fails on my API route {i}", client="agent").query_id
            if i < 3:
                lib.report_outcome("cors-fix", True, query_id=qid, client="agent")
    before = json.loads(sk(h, "stats", "--json").stdout)
    assert (before["queries"], before["report_rate"]) == (5, 0.6)
    for q in ("docker layers", "quantum tea ceremony"):       # the second is a gap if it were an agent's
        p = sk(h, "search", q, "--json")
        assert p.returncode == 0 and json.loads(p.stdout)["query_id"] is None
    after = json.loads(sk(h, "stats", "--json").stdout)
    assert (after["queries"], after["finds"], after["report_rate"], after["gaps"]) == \
        (5, before["finds"], 0.6, before["gaps"])
    # a script or an agent driving the CLI logs its search, and reports on it with the query_id
    qid = json.loads(sk(h, "search", "Access-Control-Allow-Origin missing", "--log", "--json").stdout)["query_id"]
    assert isinstance(qid, int)
    assert sk(h, "report-outcome", "cors-fix", "--worked", "--query-id", str(qid)).returncode == 0
    last = json.loads(sk(h, "stats", "--json").stdout)
    assert (last["queries"], last["reports"]) == (6, 4)
