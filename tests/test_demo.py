"""`skillshelf demo`: the whole agent loop on the sample skills, as a subprocess of the real
console script, with the bundled model: each step printed with its MCP tool, arguments and
result; a temporary library unless --home is given; never the user's own library. The time
is checked loosely here (a slow test machine must not fail it); the benchmark figure is in
the README."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("skillshelf")
if not SCRIPT.exists():
    SCRIPT = Path(shutil.which("skillshelf") or SCRIPT)


def run(*args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    e["COLUMNS"] = "200"
    e.update(env or {})
    t0 = time.perf_counter()
    p = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=e, timeout=180)
    return p, time.perf_counter() - t0


def test_demo_runs_the_whole_loop_in_a_temporary_library(tmp_path):
    real = tmp_path / "my-real-library"
    p, seconds = run("demo", env={"SKILLSHELF_HOME": str(real), "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    out = p.stdout
    steps = ['→ search_skills {"query": "my fetch to the Next.js API fails with a CORS error"',
             "1. cors-fix-nextjs-api [likely]", "query_id=1",
             '→ get_skill {"name": "cors-fix-nextjs-api", "section": "Solution"}', "## Solution",
             '→ report_outcome {"skill": "cors-fix-nextjs-api", "worked": true', '"query_id": 1}',
             "recorded: cors-fix-nextjs-api worked",
             '→ save_skill {"action": "FIX", "target_skill_name": "cors-fix-nextjs-api"', "draft saved for review",
             "$ skillshelf review approve cors-fix-nextjs-api", "FIX cors-fix-nextjs-api: version 2",
             "→ skill_stats {}", "1 queries, 1 reports (report rate 100%)"]
    at = 0
    for s in steps:   # each step present, in order
        i = out.find(s, at)
        assert i >= 0, (s, out)
        at = i
    assert [int(n) for n in re.findall(r"^\[(\d)/6\]", out, re.M)] == [1, 2, 3, 4, 5, 6]
    # a temporary library, said and then removed; the user's library untouched
    home = re.search(r"demo library: (\S+) \(temporary", out).group(1)
    assert not Path(home).exists() and not real.exists()
    assert seconds < 90, seconds   # loose: the README carries the measured figure


def test_demo_with_home_keeps_its_library(tmp_path):
    home = tmp_path / "demo-home"
    p, _ = run("--home", str(home), "demo")
    assert p.returncode == 0, p.stderr
    assert f"demo library: {home}" in p.stdout
    text = (home / "skills" / "cors-fix-nextjs-api" / "SKILL.md").read_text()
    assert 'version: "2"' in text or "version: '2'" in text
    assert "Exclude OPTIONS from auth middleware" in text
