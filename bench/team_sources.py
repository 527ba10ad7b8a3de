"""Sources in a team store at corpus scale: how long until the other servers serve what a curator added or updated.

    python bench/team_sources.py --corpus ../shared/corpus [--changed 50]

A git repository is made from the corpus's skill folders, served over ``file://``, and two
servers (A and B) open one throwaway PostgreSQL database (``tests/pgcluster.py``;
``SKILLSHELF_TEST_PG`` for a server of one's own), lexical only (``embedder none``). Timed:
- ``sources add`` on A (fetch, lock, index, audit), and from its end until B serves a skill of
  the source (B learns of it from the change stream, fetches the commit itself, checks every
  file against the team's lock, indexes it);
- ``sources update`` on A after a commit that changes ``--changed`` skills, and from its end until
  B serves the new text of one of them;
- a third server started afterwards: its start (catching up: fetching and indexing the source).
Ends with one line of JSON."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=bench@example.org", "-c", "user.name=bench", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def until(pred, timeout: float = 900.0) -> float:
    t0 = time.perf_counter()
    while not pred():
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"gave up after {timeout:.0f} s")
        time.sleep(0.25)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="../shared/corpus", help="the corpus folder (holding skills/)")
    ap.add_argument("--changed", type=int, default=50, help="skills changed by the update")
    a = ap.parse_args()
    import pgcluster

    from skillshelf import Library

    src = Path(a.corpus)
    src = src / "skills" if (src / "skills").is_dir() else src
    tmp = Path(tempfile.mkdtemp(prefix="skillshelf-bench-team-sources-"))
    out: dict[str, float | int] = {}
    libs: list[Library] = []
    try:
        with pgcluster.database("bench/team_sources.py") as url:
            work, bare = tmp / "work", tmp / "upstream.git"
            shutil.copytree(src, work, symlinks=True)
            git(work, "init", "-q", "-b", "main")
            git(work, "add", "-A")
            git(work, "commit", "-q", "-m", "corpus")
            subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
            skills = sorted(work.rglob("SKILL.md"))
            out["skills"] = len(skills)

            def server(name: str) -> Library:
                lib = Library(home=tmp / name, store=url, embedder="none", auto_sync=False, write_policy="open")
                libs.append(lib)
                return lib

            a_lib, b_lib = server("a"), server("b")
            probe = skills[len(skills) // 2].parent.relative_to(work).as_posix()

            def serves(lib: Library, text: str | None = None) -> bool:
                try:
                    rec = next(r for r in lib.list(root="corpus") if Path(r.path).parent.as_posix().endswith(probe))
                except StopIteration:
                    return False
                return text is None or text in Path(rec.path).read_text(encoding="utf-8")

            t0 = time.perf_counter()
            res = a_lib.sources.add(bare.as_uri(), label="corpus")
            out["add_on_a_s"] = round(time.perf_counter() - t0, 2)
            out["locked_skills"] = res["skills"]
            print(f"add on A: {out['add_on_a_s']} s", file=sys.stderr)
            out["b_serves_after_add_s"] = round(until(lambda: serves(b_lib)), 2)
            print(f"B serves it {out['b_serves_after_add_s']} s later", file=sys.stderr)

            step = max(1, len(skills) // a.changed)
            changed = skills[::step][: a.changed]
            if skills[len(skills) // 2] not in changed:
                changed[-1] = skills[len(skills) // 2]
            for p in changed:
                with open(p, "a", encoding="utf-8") as f:
                    f.write("\n\nA line added upstream.\n")
            git(work, "commit", "-q", "-am", "change some skills")
            git(work, "push", "-q", str(bare), "main")
            t0 = time.perf_counter()
            with a_lib.sources.planning(["corpus"]) as plans:
                a_lib.sources.apply(plans[0])
            out["update_on_a_s"] = round(time.perf_counter() - t0, 2)
            out["b_serves_after_update_s"] = round(until(lambda: serves(b_lib, "A line added upstream.")), 2)

            t0 = time.perf_counter()
            c_lib = server("c")
            out["c_start_with_catch_up_s"] = round(time.perf_counter() - t0, 2)
            assert serves(c_lib, "A line added upstream."), "C did not catch up at start"
            for lib in libs:
                lib.close()
            libs.clear()
    finally:
        for lib in libs:
            lib.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
