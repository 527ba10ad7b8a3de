"""A near-duplicate left out as redundant is named by the hit that stands for it: after
failed reports push a skill below its twin (same text, another name), diversity leaves it out
of the list, and the twin's ``why`` (``skillshelf search --why``) and ``stands_for`` say so, as
the skill's eval does (``stood_in`` of its miss)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

TEXT = "Fix flaky pytest runs under xdist caused by shared temp files and test ordering"
TOPICS = ("docker build cache", "cors preflight nextjs", "sql index slow query", "git rebase conflicts",
          "react hook state", "kubernetes helm rollout", "python type hints mypy", "pytest fixtures parametrize",
          "readme install usage", "secrets scan api keys", "css grid layout", "terraform aws vpc",
          "commit message style", "schema migrations rollback", "pytest coverage report", "pytest markers skip")
QUERY = "my pytest suite is flaky under xdist parallel runs"


def test_a_twin_left_out_after_failed_reports_is_named_by_the_hit_that_stands_for_it(tmp_path):
    root, home = tmp_path / "root", tmp_path / "home"
    for name in ("flaky-xdist-a", "flaky-xdist-b"):
        write_skill(root, name, description=TEXT, body=f"## Fix\n\n{TEXT}.\n")
    for t in TOPICS:
        write_skill(root, t.replace(" ", "-"), description=f"How to handle {t} in a project",
                    body=f"## Steps\n\n{t} tests runs.\n")
    (root / "flaky-xdist-a" / "evals").mkdir()
    (root / "flaky-xdist-a" / "evals" / "eval_queries.json").write_text(
        json.dumps([{"query": QUERY, "should_trigger": True}]), encoding="utf-8")
    lib = Library(home=home, roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    first = lib.search(QUERY, log=False, limit=10).hits
    assert [h.name for h in first[:2]] == ["flaky-xdist-a", "flaky-xdist-b"], [h.name for h in first]
    for _ in range(2):
        r = lib.search(QUERY, client="a")
        lib.report_outcome("flaky-xdist-a", False, query_id=r.query_id, client="a")
    res = lib.search(QUERY, log=False, limit=10)
    assert "flaky-xdist-a" not in [h.name for h in res.hits]
    twin = next(h for h in res.hits if h.name == "flaky-xdist-b")
    assert twin.stands_for == [next(h.id for h in first if h.name == "flaky-xdist-a")]
    lib.close()

    env = {**os.environ, "SKILLSHELF_EMBEDDER": "fake", "COLUMNS": "250"}
    p = subprocess.run([str(Path(sys.executable).parent / "skillshelf"), "--home", str(home), "--root", str(root),
                        "search", QUERY, "--why", "-n", "10"], env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    line = next(x for x in p.stdout.splitlines() if "flaky-xdist-b:" in x)
    assert "stands for its near-duplicate flaky-xdist-a (left out as redundant)" in " ".join(p.stdout.split()), \
        (line, p.stdout)

    e = subprocess.run([str(Path(sys.executable).parent / "skillshelf"), "--home", str(home), "--root", str(root),
                        "eval", "flaky-xdist-a", "--json"], env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    assert "Traceback" not in e.stderr, e.stderr
    misses = json.loads(e.stdout)[0]["misses"]
    assert [(m["rank"], m["stood_in"]) for m in misses] == [(None, "flaky-xdist-b")], misses
    e = subprocess.run([str(Path(sys.executable).parent / "skillshelf"), "--home", str(home), "--root", str(root),
                        "eval", "flaky-xdist-a"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "missed (its near-duplicate flaky-xdist-b listed in its place)" in e.stdout, e.stdout
