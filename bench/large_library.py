"""A large library on disk: N SKILL.md files really written as one root, indexed, then served.

    python bench/large_library.py --corpus ../shared/corpus --count 100000 [--embed]

The root is made from the corpus: copy k of every SKILL.md goes under ``c<k>/`` in its own
folder (the same relative path), so names repeat as they do across real collections. Files
are written once (a marker file records how many); later runs reuse them. Each part runs in
its own process, so CPU and RSS are that process's:

- ``index``: a first index of the root into an empty home (``sync``), lexical only unless
  ``--embed`` (the model embeds every text: ~200 texts/s here, so hours at 100k). Wall time,
  skills per second and peak RSS.
- ``serve``: the library opened as a long-running server opens it (``indexer.start()``: the
  search state, a rescan, then the file-system watcher). CPU of starting; CPU while idle
  over 30 s; then three edits of a SKILL.md (a line with a new word added to its body,
  the file replaced atomically as an editor saves): the time until a search finds the word, and the
  process's CPU from the edit until then (the 50 ms polling searches included: an upper
  bound). Peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(corpus: Path, root: Path, count: int) -> dict:
    marker = root / ".generated"
    if marker.exists() and marker.read_text().strip() == str(count):
        return {"files": count, "written_s": 0.0, "reused": True}
    shutil.rmtree(root, ignore_errors=True)
    skills = corpus / "skills"
    files = sorted(skills.rglob("SKILL.md"))
    t = time.perf_counter()
    for i in range(count):
        src = files[i % len(files)]
        dest = root / f"c{i // len(files):02d}" / src.parent.relative_to(skills) / "SKILL.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    marker.write_text(str(count))
    return {"files": count, "written_s": round(time.perf_counter() - t, 1), "reused": False}


def part_index(root: Path, home: Path, embed: bool) -> dict:
    from skillshelf import Library

    shutil.rmtree(home, ignore_errors=True)
    c0, t = cpu(), time.perf_counter()
    lib = Library(home=home, roots=[root], auto_sync=False, embedder=None if embed else "none")
    rep = lib.sync(embed=embed)
    wall = time.perf_counter() - t
    return {"skills": lib.count(), "added": rep.added, "invalid": len(rep.invalid), "embedded": rep.embedded,
            "first_index_s": round(wall, 1), "skills_per_s": round(rep.added / wall, 1),
            "cpu_s": round(cpu() - c0, 1), "rss_mb": round(rss_mb())}


def _settled(lib, quiet: float = 2.0, limit: float = 900.0) -> float:
    """Wait until the background indexing has been idle for ``quiet`` seconds."""
    t0 = time.perf_counter()
    calm = None
    while time.perf_counter() - t0 < limit:
        busy = lib.indexer.status()["phase"] is not None or lib.indexer.status()["state"] == "indexing"
        if busy:
            calm = None
        elif calm is None:
            calm = time.perf_counter()
        elif time.perf_counter() - calm >= quiet:
            return time.perf_counter() - t0
        time.sleep(0.1)
    raise SystemExit("the background indexing did not settle")


def part_serve(root: Path, home: Path, embed: bool, idle_s: float) -> dict:
    from skillshelf import Library

    c0, t = cpu(), time.perf_counter()
    lib = Library(home=home, roots=[root], embedder=None if embed else "none")
    lib.indexer.start()
    time.sleep(1.0)
    _settled(lib)
    start = {"start_s": round(time.perf_counter() - t, 1), "start_cpu_s": round(cpu() - c0, 1)}
    c1 = cpu()
    time.sleep(idle_s)
    idle = cpu() - c1
    files = sorted((root / "c00").rglob("SKILL.md"))
    edits = []
    for n in range(3):
        f = files[(n + 1) * len(files) // 4 + 13]
        word = "zq" + uuid.uuid4().hex[:10].replace("0", "x").translate(str.maketrans("123456789", "ghijklmno"))
        new = f.read_text(encoding="utf-8", errors="replace") + f"\n{word}\n"   # a line added to the body
        tmp = f.with_name(".SKILL.md.tmp")
        tmp.write_text(new, encoding="utf-8")
        c2, t2 = cpu(), time.perf_counter()
        os.replace(tmp, f)
        seen = None
        while time.perf_counter() - t2 < 30:
            if lib.searcher.lexical(word, 5):
                seen = time.perf_counter() - t2
                break
            time.sleep(0.05)
        edits.append({"seen_s": None if seen is None else round(seen, 2), "cpu_s": round(cpu() - c2, 3)})
        time.sleep(2.0)
    lib.close()
    return {"skills": lib.count(), **start, "idle_cpu_s_per_30s": round(idle * 30 / idle_s, 2),
            "edits": edits, "rss_mb": round(rss_mb())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--root", default=".bench-home-large/root", type=Path)
    ap.add_argument("--home", default=".bench-home-large/home", type=Path)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--embed", action="store_true", help="embed every text in the first index (slow)")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU measured")
    ap.add_argument("--skip-index", action="store_true", help="reuse the home a previous run indexed")
    ap.add_argument("--part", help=argparse.SUPPRESS)
    args = ap.parse_args()
    corpus, root, home = args.corpus.resolve(), args.root.resolve(), args.home.resolve()
    if args.part:
        out = part_index(root, home, args.embed) if args.part == "index" else part_serve(root, home, args.embed,
                                                                                         args.idle)
        print(json.dumps(out))
        return
    results = {"generate": generate(corpus, root, args.count)}
    print("generate", results["generate"], flush=True)
    for part in (["serve"] if args.skip_index else ["index", "serve"]):
        cmd = [sys.executable, __file__, "--corpus", str(corpus), "--root", str(root), "--home", str(home),
               "--count", str(args.count), "--idle", str(args.idle), "--part", part] + (["--embed"] if args.embed else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            raise SystemExit(f"part {part} failed")
        results[part] = json.loads(out.stdout.strip().splitlines()[-1])
        print(part, results[part], flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
