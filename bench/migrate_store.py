"""How long `skillshelf migrate-store` takes to copy a local library into a team store.

A local library is generated in a temporary home: ``--skills`` workspace skills, each with
``--versions`` versions kept in its history and a changelog entry per version (the current
SKILL.md is the last version), every fifth with a references/ file; and a usage log written
straight into its SQLite store: ``--queries`` queries with ``--recs`` recommendations each,
``--outcomes`` outcomes (on logged queries), ``--learned`` learned reports (384-dim vectors)
and ``--judged`` judged searches. Read-only roots are not copied by migrate-store (each
server scans its own checkout), so none is generated.

The real console script then runs against a new database of a throwaway PostgreSQL cluster
(or ``SKILLSHELF_TEST_PG``'s server): a dry run, the copy, and the copy again (which must
copy nothing). Wall times include the interpreter's start; ``copy`` is the command's own
figure.

    python bench/migrate_store.py
    python bench/migrate_store.py --skills 500 --queries 50000 --outcomes 5000 --learned 2000
    SKILLSHELF_TEST_PG=postgresql://… python bench/migrate_store.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

WORDS = ("cache", "widget", "queue", "ledger", "router", "parser", "tensor", "bundle", "socket", "schema",
         "retry", "backoff", "cors", "docker", "pytest", "fixture", "migration", "index", "token", "deploy")
SCRIPT = Path(sys.executable).with_name("skillshelf")


def skill_text(name: str, version: int, rnd: random.Random) -> str:
    w = rnd.sample(WORDS, 4)
    body = "\n".join(f"- Step {i}: check the {rnd.choice(WORDS)} before the {rnd.choice(WORDS)}." for i in range(12))
    return (f"---\nname: {name}\ndescription: Keep the {w[0]} and {w[1]} of a {w[2]} service healthy ({version})\n"
            f"metadata:\n  version: '{version}'\n  tags: {w[2]}, {w[3]}\n---\n\n## When to Use\n\nWhen the {w[0]} "
            f"misbehaves.\n\n## Solution\n\n{body}\n\n## Lessons Learned\n\n- v{version}: learned something.\n")


def make_workspace(home: Path, n: int, versions: int, rnd: random.Random) -> None:
    for i in range(n):
        name = f"gen-skill-{i:04d}"
        hist = home / "history" / name
        hist.mkdir(parents=True)
        log = []
        for v in range(1, versions + 1):
            text = skill_text(name, v, rnd)
            (hist / f"v{v}.md").write_text(text, encoding="utf-8")
            log.append(json.dumps({"at": f"2026-01-{v:02d}T10:00:00+00:00", "action": "ARCHIVE" if v == 1 else "FIX",
                                   "name": name, "from_version": None if v == 1 else v - 1, "to_version": v,
                                   "trigger": "agent", "reason": "", "sources": [], "author": "bench"}))
        (hist / "changelog.jsonl").write_text("\n".join(log) + "\n", encoding="utf-8")
        folder = home / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(text, encoding="utf-8")
        if i % 5 == 0:
            (folder / "references").mkdir()
            (folder / "references" / "notes.md").write_text("# Notes\n\n" + "More detail.\n" * 200, encoding="utf-8")


def make_usage(db: Path, skills: int, queries: int, recs: int, outcomes: int, learned: int, judged: int,
               rnd: random.Random) -> None:
    import numpy as np

    con = sqlite3.connect(db)
    with con:
        q_rows, r_rows = [], []
        for qid in range(1, queries + 1):
            at = f"2026-{1 + qid * 11 // queries:02d}-{1 + qid % 28:02d}T{qid % 24:02d}:00:00+00:00"
            text = f"how do I fix the {rnd.choice(WORDS)} {rnd.choice(WORDS)} number {qid}"
            q_rows.append((qid, at, text, f"h{qid}", "find", "{}", f"agent-{qid % 7}", qid % 3 != 0, 0, recs,
                           round(rnd.uniform(5, 40), 2)))
            for rank in range(1, recs + 1):
                s = rnd.randrange(skills)
                r_rows.append((qid, at, f"workspace:gen-skill-{s:04d}", f"gen-skill-{s:04d}", rank,
                               round(1 / rank, 4)))
        con.executemany("INSERT INTO queries (id, at, text, text_hash, mode, filters, client, confident, degraded,"
                        " n_hits, latency_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)", q_rows)
        con.executemany("INSERT INTO recommendations (query_id, at, skill_id, name, rank, score)"
                        " VALUES (?,?,?,?,?,?)", r_rows)
        o_rows = []
        for oid in range(1, outcomes + 1):
            qid = rnd.randrange(1, queries + 1)
            s = rnd.randrange(skills)
            o_rows.append((oid, q_rows[qid - 1][1], f"workspace:gen-skill-{s:04d}", f"gen-skill-{s:04d}",
                           int(rnd.random() < 0.7), "", qid, f"agent-{qid % 7}"))
        con.executemany("INSERT INTO outcomes (id, at, skill_id, name, worked, note, query_id, client)"
                        " VALUES (?,?,?,?,?,?,?,?)", o_rows)
        vecs = np.random.default_rng(7).standard_normal((learned, 384)).astype("<f4")
        con.executemany("INSERT INTO learned (outcome_id, at, skill_id, name_key, worked, client, query_id, request,"
                        " model_id, vector) VALUES (?,?,?,?,?,?,?,?,?,?)",
                        [(o[0], o[1], o[2], o[3].replace("-", ""), o[4], o[7], o[6], q_rows[o[6] - 1][2],
                          "minilm-bench", vecs[i].tobytes()) for i, o in enumerate(o_rows[:learned])])
        con.executemany("INSERT INTO judge_log (at, query_id, mode, backend, model, status, latency_ms, candidates,"
                        " invented, pick, verdicts) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        [(q_rows[i][1], q_rows[i][0], "rerank", "ollama", "m", "ok", 350.0, 10, 0,
                          "gen-skill-0001", '[{"name": "gen-skill-0001", "score": 8}]') for i in range(judged)])
    con.close()


def run(home: Path, *args: str) -> tuple[float, dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    env["SKILLSHELF_EMBEDDER"] = "none"
    t0 = time.perf_counter()
    p = subprocess.run([str(SCRIPT), "--home", str(home), "migrate-store", *args, "--json"], capture_output=True,
                       text=True, env=env, timeout=3600)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"migrate-store failed ({p.returncode}): {p.stderr.strip()}")
    return wall, json.loads(p.stdout), " ".join(["skillshelf --home HOME migrate-store", *args[:1], "URL",
                                                   *args[2:]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skills", type=int, default=500)
    ap.add_argument("--versions", type=int, default=3)
    ap.add_argument("--queries", type=int, default=50_000)
    ap.add_argument("--recs", type=int, default=5)
    ap.add_argument("--outcomes", type=int, default=5_000)
    ap.add_argument("--learned", type=int, default=2_000)
    ap.add_argument("--judged", type=int, default=1_000)
    args = ap.parse_args()
    if args.learned > args.outcomes:
        sys.exit("--learned cannot exceed --outcomes (a learned report is an outcome's)")

    import pgcluster

    from skillshelf import Library

    reason = pgcluster.why_not()
    if reason:
        sys.exit(f"needs PostgreSQL: {reason}")
    cluster = None
    tmp = Path(tempfile.mkdtemp(prefix="skillshelf-migrate-bench-"))
    try:
        if os.environ.get("SKILLSHELF_TEST_PG"):
            url = pgcluster.new_database_from_env()
        else:
            cluster = pgcluster.Cluster().start()
            url = cluster.new_database()
        home = tmp / "home"
        rnd = random.Random(11)
        t0 = time.perf_counter()
        Library(home=home, embedder="none", auto_sync=False).close()      # the home and its schema
        make_workspace(home, args.skills, args.versions, rnd)
        make_usage(home / "skillshelf.db", args.skills, args.queries, args.recs, args.outcomes, args.learned,
                   args.judged, rnd)
        print(f"generated the local library in {time.perf_counter() - t0:.1f} s: {args.skills} skills x "
              f"{args.versions} versions, {args.queries} queries x {args.recs} recommendations, {args.outcomes} "
              f"outcomes, {args.learned} learned reports, {args.judged} judged searches")
        print(f"local store: {(home / 'skillshelf.db').stat().st_size / 1e6:.1f} MB")
        for label, extra in (("dry run", ("--dry-run",)), ("copy", ()), ("copy again", ())):
            wall, rep, cmd = run(home, "--to", url, *extra)
            copied = ", ".join(f"{k} {v}" for k, v in rep["copied"].items() if v)
            print(f"{label:10s}  wall {wall:6.2f} s  (command's own {rep['seconds']:.2f} s)  "
                  f"{'would copy' if rep['dry_run'] else 'copied'}: {copied or 'nothing'}")
            if label == "copy again" and any(rep["copied"].values()):
                sys.exit("the second copy copied something: it must copy nothing twice")
            if rep["left_out"]:
                sys.exit(f"left out: {rep['left_out'][:3]}")
        print(f"command: {cmd} (against a new database; PostgreSQL "
              f"{'SKILLSHELF_TEST_PG' if cluster is None else 'throwaway cluster, fsync off'})")
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
