"""Server processes on one team store: concurrent writers in several processes, and a server
killed in the middle of its writes. Each process is a library with its own home, built as the
facade builds team mode (``teamlib``)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from teamlib import BODY, close, team_library

TESTS = Path(__file__).resolve().parent

WORKER = textwrap.dedent("""
    import json, sys, threading
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    from teamlib import close, team_library

    lib = team_library(Path({home!r}), {url!r})
    out = threading.Lock()

    def work(tag):
        for i in range({count}):
            lesson = f"lesson {{tag}} number {{i}}"
            try:
                res = lib.save("FIX", target_skill_name="hot-skill", lesson=lesson, author=tag)
            except Exception as exc:
                with out:
                    print(json.dumps({{"error": f"{{type(exc).__name__}}: {{exc}}"}}), flush=True)
                continue
            with out:       # acknowledged: printed at once, so a killed server's count is right
                print(json.dumps({{"lesson": lesson, "version": res.version}}), flush=True)

    threads = [threading.Thread(target=work, args=(f"{{sys.argv[1]}}-{{n}}",)) for n in range({threads})]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    close(lib)
""")


def spawn(tmp_path: Path, name: str, url: str, *, count: int, threads: int) -> subprocess.Popen:
    script = tmp_path / f"worker-{name}.py"
    script.write_text(WORKER.format(tests=str(TESTS), home=str(tmp_path / name), url=url, count=count,
                                    threads=threads))
    return subprocess.Popen([sys.executable, str(script), name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "SKILLSHELF_EMBEDDER": "none"})


def results(out: str) -> tuple[list[dict], list[str]]:
    acked, errors = [], []
    for line in out.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue                                    # a line torn by kill -9
        if "error" in data:
            errors.append(data["error"])
        elif "lesson" in data:
            acked.append(data)
    return acked, errors


def rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def consistent(url: str) -> tuple[int, str]:
    """The store is whole: the skill's row is its latest version, versions run 1..N with none
    twice, and every version after the first has its changelog entry. Returns (N, the text)."""
    (version, text), = rows(url, "SELECT version, text FROM skills WHERE name = 'hot-skill'")
    text = bytes(text)
    kept = [v for (v,) in rows(url, "SELECT version FROM history WHERE name = 'hot-skill' ORDER BY version")]
    assert kept == list(range(1, version + 1)), "versions are not contiguous"
    assert bytes(rows(url, "SELECT text FROM history WHERE name = 'hot-skill' AND version = %s",
                      (version,))[0][0]) == text
    entries = [json.loads(e) for (e,) in rows(url, "SELECT entry FROM changelog WHERE name = 'hot-skill' ORDER BY id")]
    assert [e["to_version"] for e in entries] == kept, " ".join(f"{e['action']}:{e['from_version']}>{e['to_version']}" for e in entries)
    return version, text.decode()


def seed(tmp_path: Path, url: str) -> None:
    lib = team_library(tmp_path / "seed", url, follow=False)
    try:
        lib.save("ARCHIVE", name="hot-skill", description="A skill every agent improves at once", body=BODY)
    finally:
        close(lib)


def test_writers_in_two_server_processes_lose_nothing_and_give_no_version_twice(tmp_path, pg_url):
    seed(tmp_path, pg_url)
    procs = [spawn(tmp_path, name, pg_url, count=8, threads=3) for name in ("a", "b")]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    acked, errors = [], []
    for out, _ in outs:
        got, bad = results(out)
        acked += got
        errors += bad
    assert not errors, errors[:3]
    assert len(acked) == 2 * 3 * 8
    versions = [a["version"] for a in acked]
    assert len(set(versions)) == len(versions), "a version number was given twice"
    n, text = consistent(pg_url)
    assert n == 1 + len(acked)
    assert [a["lesson"] for a in acked if a["lesson"] not in text] == []


def test_a_server_killed_mid_write_leaves_no_half_written_skill(tmp_path, pg_url):
    seed(tmp_path, pg_url)
    victim = spawn(tmp_path, "a", pg_url, count=200, threads=3)
    other = spawn(tmp_path, "b", pg_url, count=6, threads=2)
    # let the victim get going, then kill it without warning in the middle of its writes
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and rows(pg_url, "SELECT max(version) FROM history")[0][0] < 12:
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    out_a, _ = victim.communicate(timeout=60)
    out_b, err_b = other.communicate(timeout=600)
    assert other.returncode == 0, err_b[-3000:]
    acked_a, _ = results(out_a)
    acked_b, errors_b = results(out_b)
    assert not errors_b, errors_b[:3]       # the victim's locks went with its connections
    assert acked_a and len(acked_b) == 12
    n, text = consistent(pg_url)
    # every acknowledged change is there; a change committed just before the kill may be
    # there without its acknowledgement, never the other way round
    acked = acked_a + acked_b
    assert [a["lesson"] for a in acked if a["lesson"] not in text] == []
    assert len(acked) <= n - 1
    # the killed server comes back on its own home: its copy is the store's again, whatever
    # the kill left (a temporary file, an older SKILL.md)
    lib = team_library(tmp_path / "a", pg_url)
    try:
        md = lib.config.workspace / "hot-skill" / "SKILL.md"
        assert hashlib.sha256(md.read_bytes()).hexdigest() == hashlib.sha256(text.encode()).hexdigest()
        assert lib.get("hot-skill").version == n
        assert lib.save("FIX", target_skill_name="hot-skill", lesson="after the restart").version == n + 1
    finally:
        close(lib)
