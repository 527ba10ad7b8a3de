"""A team computes once: the first index of a server joining a team, against the first
server's. Two servers (each a ``Library`` with its own home) on one throwaway PostgreSQL
database (``tests/pgcluster.py``; ``SKILLSHELF_TEST_PG`` to use a server of one's own), the
same read-only root (the first N skills of the corpus, copied to a temporary folder) and the
bundled MiniLM model. The first server embeds every text and keeps the vectors in the team
store; the second takes them from there. Each server's time is its opening plus its first
``sync`` (files, lexical index, vectors), the model loaded inside it, as a new server does.

    python bench/team_embeddings.py --corpus ../shared/corpus --skills 800

The last line is a JSON object: ``first_s``, ``second_s``, ``ratio`` (goal: at most 0.25),
the texts each embedded and the second took from the team store."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def subset(corpus: Path, n: int, into: Path) -> int:
    """Copy the first ``n`` SKILL.md files of the corpus (sorted paths) into ``into``."""
    files = sorted((corpus / "skills").rglob("SKILL.md"))[:n]
    for f in files:
        dest = into / f.parent.relative_to(corpus / "skills") / "SKILL.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
    return len(files)


def server(home: Path, root: Path, url: str) -> dict:
    from skillshelf import Library

    t0 = time.perf_counter()
    lib = Library(home=home, roots=[root], store=url, auto_sync=False, write_policy="open")
    try:
        rep = lib.sync()
        took = time.perf_counter() - t0
        st = lib.embedder_status()
        taken = lib.indexer.shared.taken if lib.indexer.shared is not None else 0
        return {"seconds": round(took, 2), "skills": st["skills"], "vectors": st["vectors"],
                "body_vectors": st.get("body_vectors", 0), "embedded": rep.embedded, "taken_from_team": taken}
    finally:
        lib.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--skills", type=int, default=800)
    args = ap.parse_args()

    import pgcluster

    with tempfile.TemporaryDirectory(prefix="skillshelf-team-embeddings-") as tmp, \
            pgcluster.database("the team embeddings benchmark") as url:
        root = Path(tmp) / "root"
        n = subset(args.corpus, args.skills, root)
        first = server(Path(tmp) / "a", root, url)
        print(f"first server:  {first}", file=sys.stderr)
        second = server(Path(tmp) / "b", root, url)
        print(f"second server: {second}", file=sys.stderr)
        print(json.dumps({"skills": n, "first_s": first["seconds"], "second_s": second["seconds"],
                          "ratio": round(second["seconds"] / first["seconds"], 3),
                          "first_embedded": first["embedded"], "second_embedded": second["embedded"],
                          "second_taken_from_team": second["taken_from_team"],
                          "second_vectors": [second["vectors"], second["body_vectors"]]}))


if __name__ == "__main__":
    main()
