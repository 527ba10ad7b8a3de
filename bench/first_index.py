"""Time one first index of a folder of skills into a new, temporary library.

    python bench/first_index.py --corpus ../shared/corpus [--embedder none|minilm]

``--embedder none`` leaves the embedding out, so what is timed is reading, parsing and the
lexical index with its batched commits (the embedding is the floor of a full first index;
bench/speed.py --part full times that)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from skillshelf import Library


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="../shared/corpus", help="the corpus folder (holding skills/) or a skills folder")
    ap.add_argument("--embedder", default="none", help="none (lexical only) or minilm")
    a = ap.parse_args()
    root = Path(a.corpus)
    root = root / "skills" if (root / "skills").is_dir() else root
    tmp = tempfile.mkdtemp(prefix="skillshelf-bench-")
    try:
        lib = Library(home=Path(tmp) / "home", roots=[root], embedder=a.embedder, auto_sync=False)
        t0 = time.perf_counter()
        rep = lib.sync()
        dt = time.perf_counter() - t0
        print(f"first index: {dt:.1f} s; added {rep.added}, invalid {len(rep.invalid)}, skills {lib.count()}, "
              f"embedded {rep.embedded}")
        lib.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
