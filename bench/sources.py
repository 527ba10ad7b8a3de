"""Sources at corpus scale: add and update a large git repository, check the lock, restore.

    python bench/sources.py --corpus ../shared/corpus [--embedder none|minilm] [--changed 50]

A git repository is made from the corpus's skill folders (one commit), served as a bare
repository over ``file://``. Timed, each in a new temporary home:
- ``sources add`` of it: git (fetch + export of the tree), the lock (sha256 of every file),
  index (the sync, which audits what it indexes), the audit report;
- ``sources update`` after a commit that changes ``--changed`` skills: the plan (the drift check of
  the folder, fetch, the lock, the audit of the new text of the changed skills) and apply (the
  folder swapped in, the lock moved, the changed skills reindexed); then the same with the whole
  tree exported again, as an update of a folder that drifted does;
- ``lock --check`` of every file;
- ``sources restore`` of the lock into an empty home (fetch, verify every digest, index).
``--embedder none`` (the default) leaves the embedding out of the indexing; with ``minilm`` the
first index is dominated by it (bench/first_index.py)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from skillshelf import Library
from skillshelf.supply.skill_audit import audit_folder


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=bench@example.org", "-c", "user.name=bench", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def fmt(d: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f} s" for k, v in d.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="../shared/corpus", help="the corpus folder (holding skills/)")
    ap.add_argument("--embedder", default="none", help="none (lexical only) or minilm")
    ap.add_argument("--changed", type=int, default=50, help="skills changed by the update")
    a = ap.parse_args()
    src = Path(a.corpus)
    src = src / "skills" if (src / "skills").is_dir() else src
    tmp = Path(tempfile.mkdtemp(prefix="skillshelf-bench-sources-"))
    try:
        work, bare = tmp / "work", tmp / "upstream.git"
        t0 = time.perf_counter()
        shutil.copytree(src, work, symlinks=True)
        git(work, "init", "-q", "-b", "main")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", "corpus")
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
        skills = sorted(work.rglob("SKILL.md"))
        files = sum(1 for p in work.rglob("*") if p.is_file() and ".git" not in p.parts)
        print(f"repository: {len(skills)} SKILL.md files, {files} files in all "
              f"(made in {time.perf_counter() - t0:.1f} s)")

        lib = Library(home=tmp / "home", embedder=a.embedder, auto_sync=False)
        t0 = time.perf_counter()
        res = lib.sources.add(bare.as_uri(), label="corpus")
        print(f"sources add: {time.perf_counter() - t0:.2f} s wall, {res['skills']} skills locked "
              f"({fmt(res['seconds'])}; the index step is the sync, which audits what it indexes)")
        # the audit's share of that sync: the same audit of every skill, alone
        t0 = time.perf_counter()
        for md in sorted((tmp / "home" / "sources" / "corpus").rglob("SKILL.md")):
            audit_folder(md)
        print(f"  of which the audit of every skill's files, alone: {time.perf_counter() - t0:.2f} s")

        step = max(1, len(skills) // a.changed)
        for p in skills[::step][: a.changed]:
            with open(p, "a", encoding="utf-8") as f:
                f.write("\n\nA line added upstream.\n")
        git(work, "commit", "-q", "-am", "change some skills")
        git(work, "push", "-q", str(bare), "main")
        t0 = time.perf_counter()
        with lib.sources.planning(["corpus"]) as plans:
            plan = plans[0]
            t_plan = time.perf_counter() - t0
            lib.sources.apply(plan)
        print(f"sources update ({len(plan.changes)} skills changed): {time.perf_counter() - t0:.2f} s wall; "
              f"plan {t_plan:.2f} s, {fmt(plan.seconds)}")

        # the same update again, 50 other skills, with the whole tree exported (as before links)
        from skillshelf.supply import fetch as fetchmod

        for p in skills[1::step][: a.changed]:
            with open(p, "a", encoding="utf-8") as f:
                f.write("\n\nAnother line added upstream.\n")
        git(work, "commit", "-q", "-am", "change other skills")
        git(work, "push", "-q", str(bare), "main")
        linked = fetchmod.changed_paths
        fetchmod.changed_paths = lambda *args, **kw: None
        try:
            t0 = time.perf_counter()
            with lib.sources.planning(["corpus"]) as plans:
                plan = plans[0]
                t_plan = time.perf_counter() - t0
                lib.sources.apply(plan)
        finally:
            fetchmod.changed_paths = linked
        print(f"  the same with the whole tree exported again: {time.perf_counter() - t0:.2f} s wall; "
              f"plan {t_plan:.2f} s, {fmt(plan.seconds)}")

        t0 = time.perf_counter()
        drift = lib.sources.check()
        n = sum(len(s.files) for e in lib.sources.entries() for s in e.skills)
        print(f"lock --check: {time.perf_counter() - t0:.2f} s for {n} files ({len(drift)} drifted)")
        lock = tmp / "skillshelf.lock"
        shutil.copy(lib.sources.lock_path, lock)
        lib.close()

        lib2 = Library(home=tmp / "home2", embedder=a.embedder, auto_sync=False)
        t0 = time.perf_counter()
        got = lib2.sources.restore(lock)
        print(f"sources restore into an empty home: {time.perf_counter() - t0:.2f} s, "
              f"{got['files_verified']} files verified, {lib2.count()} skills indexed")
        lib2.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
