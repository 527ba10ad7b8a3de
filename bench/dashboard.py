"""Dashboard speed: server-side render time of the pages on the 5.3k-skill corpus.

    python bench/dashboard.py --corpus ../shared/corpus [--home .bench-home-dashboard] [--rounds 30]
                              [--scale 100000]

Each request goes through the whole app in process (FastAPI's TestClient); the time is the
server's own, from the Server-Timing header the app sets (routing, the security checks, the
Library calls, template rendering), without the test client's transport, the network and
the browser. The home is the corpus indexed
once, plus a simulated usage log (``--usage`` searches over 60 days, built from the
development requests and their paraphrases with the real search's hits, about 40 % of them
with a reported outcome), two drafts and a workspace skill with versions: the overview and
the curation lists then work on a log of realistic size, not an empty one.

Pages (p50 over ``--rounds`` requests each, after one warm-up request):
  overview      GET /
  table         GET /skills with a different sort / offset / filter each round
  skill         GET /skill/<id> of a different skill each round (Markdown rendered anew)
  search        GET /skills?q=<a development request> (a different one each round)
  curate        GET /curate, and a page deep into the kill candidates (?kill_offset=)
Also timed once: the first table page (it builds the browse snapshot from every skill row; a
server builds it at start), the first table page after the index changed (rebuilt on the
request up to 20,000 skills, in the background above), a snapshot build on its own, the overview just after the usage log grew (served from the
kept lists while they are recomputed in the background) and that statistics pass itself; and
the hybrid search alone for the search page's requests (what the page adds is the rest). ``--scale N`` also times the table, overview and search pages on a copy of the
library replicated to N skills (bench/speed.py's scale-build).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

GAP_REQUESTS = [
    "set up firmware updates for my espresso machine over bluetooth",
    "translate our COBOL payroll batch jobs to a mainframe-free scheduler",
    "tune the PID loop of a 3D printer hot end",
    "write a knitting pattern generator for raglan sweaters",
    "calibrate a telescope mount with plate solving",
]
NOTES_OK = ["worked as written", "worked after adding the missing header", "saved a lot of time",
            "worked; the second step was not needed"]
NOTES_BAD = ["the command it suggests no longer exists", "did not apply to our setup",
             "the config key was renamed", "half worked, the test step broke"]


def requests_of(corpus: Path) -> list[str]:
    out = []
    for f in ("requests-dev.jsonl", "requests-dev-paraphrases.jsonl"):
        p = corpus / f
        if p.exists():
            out += [json.loads(line)["query"] for line in p.read_text().splitlines() if line.strip()]
    return out


def open_library(home: Path, corpus: Path, **kw):
    from skillshelf import Library

    return Library(home=home, roots=[corpus / "skills"], auto_sync=False, **kw)


def seed(lib, corpus: Path, n: int, days: int = 60, seed_value: int = 7) -> dict:
    """A simulated usage log, a workspace skill with three versions and two drafts (once)."""
    from skillshelf.usage import log as usagemod

    db = lib.store.db
    if db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]:
        return {"seeded": False}
    rng = random.Random(seed_value)
    reqs = requests_of(corpus) + GAP_REQUESTS
    cache = {q: lib.search(q, limit=5, log=False) for q in reqs}
    # a few skills keep failing: the rewrite list has something to show
    bad = {h.hits[0].id for h in list(cache.values())[:12] if h.hits}
    today = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    made = outcomes = 0
    for i in range(n):
        # usage grows over the period: later days get more searches
        age = int(days * (1 - rng.random() ** 0.6))
        at = today - dt.timedelta(days=age, seconds=rng.randrange(86_400))
        q = rng.choice(reqs)
        res = cache[q]
        qid = usagemod.log_query(lib.store, text=q, mode="find", filters={}, client=rng.choice(["claude-code", "cursor"]),
                                 confident=res.confident, degraded=False, hits=res.hits, latency_ms=res.latency_ms,
                                 hash_text=False, at=at.isoformat())
        made += 1
        if res.hits and rng.random() < 0.42:
            h = res.hits[0] if rng.random() < 0.8 else rng.choice(res.hits)
            worked = rng.random() < (0.25 if h.id in bad else 0.78)
            note = rng.choice(NOTES_OK if worked else NOTES_BAD) if rng.random() < 0.5 else ""
            usagemod.log_outcome(lib.store, skill_id=h.id, name=h.name, worked=worked, note=note, query_id=qid,
                                 client="claude-code", at=(at + dt.timedelta(minutes=5)).isoformat())
            outcomes += 1
    base = dict(description="Preview environments per pull request on Fly.io: create, seed and tear down",
                skill_type="WORKFLOW", tags="deploy, preview, fly", repo_name="shop")
    lib.save("ARCHIVE", name="deploy-preview-envs", by="person", reason="from the March incident notes",
             body="## When to Use\n\nA pull request needs its own environment.\n\n## Solution\n\n"
                  "```bash\nfly apps create shop-pr-$PR\nfly deploy --app shop-pr-$PR\n```\n", **base)
    lib.save("FIX", target_skill_name="deploy-preview-envs", by="person", reason="seed the database",
             body="## Solution\n\n```bash\nfly apps create shop-pr-$PR\nfly deploy --app shop-pr-$PR\n"
                  "fly ssh console --app shop-pr-$PR -C 'bin/seed'\n```\n",
             lesson="seed before the smoke test, or it fails on an empty catalog")
    lib.save("FIX", target_skill_name="deploy-preview-envs", by="person", reason="tear down on close",
             body="## Teardown\n\nA workflow on `pull_request: closed` runs `fly apps destroy shop-pr-$PR --yes`.\n")
    agent = type(lib)(home=lib.config.home, roots=[str(r) for r in lib.config.roots], write_policy="propose",
                      auto_sync=False, embedder=lib._embedder_state()[0], client="claude-code")
    try:
        agent.save("FIX", target_skill_name="deploy-preview-envs", author="claude-code",
                   reason="the destroy step needs the org flag", lesson="pass --org when the token has several orgs",
                   body="## Teardown\n\nA workflow on `pull_request: closed` runs "
                        "`fly apps destroy shop-pr-$PR --org shop --yes`.\n")
        agent.save("ARCHIVE", name="rotate-fly-secrets", author="cursor", skill_type="TROUBLESHOOTING",
                   description="Rotate Fly.io secrets without downtime: stage, deploy, verify, then unset the old ones",
                   tags="fly, secrets", reason="learned while fixing a leaked key",
                   body="## Solution\n\n1. `fly secrets set --stage NEW=…`\n2. `fly deploy`\n3. `fly secrets unset OLD`\n")
    finally:
        agent.close()
    return {"seeded": True, "queries": made, "outcomes": outcomes}


def _p(times: list[float]) -> dict:
    ms = sorted(t * 1000 for t in times)
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 1), "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 1),
            "max_ms": round(ms[-1], 1)}


def measure(lib, corpus: Path, rounds: int, *, skill_pages: bool = True) -> dict:
    from fastapi.testclient import TestClient

    from skillshelf.web import create_app

    client = TestClient(create_app(lib, port=7788), base_url="http://127.0.0.1:7788")
    rng = random.Random(3)

    def timed(url: str) -> float:
        """The server's own time for the page (its Server-Timing header: routing, security
        checks, Library calls, rendering), without the test client's transport."""
        r = client.get(url)
        if r.status_code != 200:
            raise SystemExit(f"{url}: HTTP {r.status_code}: {r.text[:300]}")
        return float(r.headers["server-timing"].split("dur=")[1]) / 1000

    out: dict = {"skills": lib.count()}
    # the first table page builds the browse snapshot (a server builds it at start instead)
    out["first_table_page_ms"] = round(timed("/skills") * 1000, 1)
    # the first table page after a change of the index: the snapshot is rebuilt on the request
    # up to catalog.SNAPSHOT_SYNC_MAX skills, in the background above (the old one answers)
    lib.store.set_meta("generation", f"{lib.store.get_meta('generation', '0')}+bench")
    out["table_after_index_change_ms"] = round(timed("/skills") * 1000, 1)
    catalog = lib._catalog          # the catalog service the library composes (its snapshot, timed alone)
    while catalog._catalog_building:
        time.sleep(0.05)
    lib.store.set_meta("generation", f"{lib.store.get_meta('generation', '0')}+bench")
    t = time.perf_counter()
    catalog._build_catalog()
    out["snapshot_build_ms"] = round((time.perf_counter() - t) * 1000, 1)
    timed("/")
    out["overview"] = _p([timed("/") for _ in range(rounds)])
    # the overview after the usage log moved: the kept lists are shown and the statistics
    # recomputed in the background; the pass itself is timed on its own
    lib.search("a new request in the usage log", limit=3)
    out["overview_after_new_usage_ms"] = round(timed("/") * 1000, 1)
    t = time.perf_counter()
    lib.stats()
    out["statistics_pass_ms"] = round((time.perf_counter() - t) * 1000, 1)
    time.sleep(1.0)   # let the background refresh finish before timing more pages
    total = lib.browse(limit=1).total
    sorts = ["name", "type", "root", "version", "status", "modified", "shown", "success"]
    table = []
    for i in range(rounds):
        sort = sorts[i % len(sorts)]
        off = rng.randrange(0, max(total - 50, 1))
        extra = rng.choice(["", "&status=active", "&expired=no", "&desc=1"])
        table.append(timed(f"/skills?sort={sort}&offset={off}{extra}"))
    out["table"] = _p(table)
    # Curate: every kill candidate is paged through (a page of pages.KILL_PAGE), with the
    # deprecated skills listed below; a page deep into the list costs what the first does
    from skillshelf.web.pages import KILL_PAGE

    timed("/curate")
    out["curate"] = _p([timed("/curate") for _ in range(rounds)])
    kill_total = lib.curation(top=1)["kill_total"]
    deep = [(kill_total - 1) // KILL_PAGE * KILL_PAGE, max(kill_total // 2 // KILL_PAGE * KILL_PAGE, 0)]
    out["curate_deep_page"] = _p([timed(f"/curate?kill_offset={deep[i % 2]}") for i in range(rounds)])
    out["kill_candidates"] = kill_total
    if skill_pages:
        ids = [r[0] for r in lib.store.db.execute("SELECT id FROM skills ORDER BY random() LIMIT ?", (rounds + 1,))]
        timed("/skill/" + quote(ids[0], safe="/:"))
        out["skill"] = _p([timed("/skill/" + quote(i, safe="/:")) for i in ids[1:]])
    reqs = requests_of(corpus)
    rng.shuffle(reqs)
    timed("/skills?q=" + quote(reqs[0]))
    out["search"] = _p([timed("/skills?q=" + quote(q)) for q in reqs[1:rounds + 1]])
    # the hybrid search alone, for the same requests and page size: the rest is the page's
    lat = []
    for q in reqs[1:rounds + 1]:
        t = time.perf_counter()
        lib.search(q, limit=20, log=False)
        lat.append(time.perf_counter() - t)
    out["search_library_only"] = _p(lat)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/corpus", type=Path)
    ap.add_argument("--home", default=".bench-home-dashboard", type=Path)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--usage", type=int, default=3000, help="simulated searches in the usage log")
    ap.add_argument("--scale", type=int, default=0, help="also measure on a copy replicated to this many skills")
    a = ap.parse_args()
    corpus = a.corpus.resolve()
    lib = open_library(a.home, corpus)
    t = time.perf_counter()
    rep = lib.sync()
    synced = time.perf_counter() - t
    info = {"home": str(a.home), "sync_s": round(synced, 1), "added": rep.added}
    info.update(seed(lib, corpus, a.usage))
    print(json.dumps(info), file=sys.stderr)
    lib.warm(sync=False)
    res = {"corpus": measure(lib, corpus, a.rounds)}
    res["corpus"]["usage_log"] = {"queries": lib.store.db.execute("SELECT COUNT(*) FROM queries").fetchone()[0],
                                  "outcomes": lib.store.db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]}
    print(json.dumps(res["corpus"]), file=sys.stderr)
    lib.close()
    if a.scale:
        sys.path.insert(0, str(Path(__file__).parent))
        from speed import part_scale_build  # noqa: E402  (bench/speed.py builds the replicated copy)

        big = a.home.parent / (a.home.name + f"-{a.scale}")
        if not (big / "skillshelf.db").exists():
            print(json.dumps(part_scale_build(corpus, a.home, big, a.scale)), file=sys.stderr)
        from skillshelf import Library

        blib = Library(home=big, auto_sync=False, roots=[corpus / "skills"])
        blib.warm(sync=False)
        res["scaled"] = measure(blib, corpus, max(10, a.rounds // 2), skill_pages=False)
        blib.close()
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
