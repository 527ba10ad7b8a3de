"""Outcomes kept per version: each report carries the skill's version; ``show`` prints each version's
success with a Wilson interval; ``stats`` and ``report`` list a current version that does worse than the one
before it (with enough reports) and the rollback command. The SQLite store and its PostgreSQL twin answer the
same reads."""

from __future__ import annotations

import json

from test_evals import make_home, sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.store import Store
from skillshelf.store.evidence import Evidence
from skillshelf.store.usage import UsageLog

ROLLBACK = "skillshelf rollback cors-fix 1"


def _report(lib: Library, n: int, worked: bool) -> None:
    for i in range(n):
        qid = lib.search(f"cors preflight on my api route number {i}", client="agent").query_id
        lib.report_outcome("cors-fix", worked, query_id=qid, client="agent")


def test_a_version_that_does_worse_is_reported_with_the_rollback_command(tmp_path):
    h = tmp_path / "h"
    make_home(h)
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
        _report(lib, 4, True)
        lib.save("FIX", target_skill_name="cors-fix", lesson="set the headers in next.config.js", by="person")
        assert lib.get("cors-fix").version == 2
        _report(lib, 4, False)
    # four reports each: not enough to call v2 worse (eval.min_reports = 5)
    st = json.loads(sk(h, "stats", "--json").stdout)
    assert st["worse_versions"] == []
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.report_outcome("cors-fix", False)           # v2: 0 of 5
        _report_v1 = lib.store.db.execute("SELECT version, COUNT(*) FROM outcomes GROUP BY version").fetchall()
        assert [tuple(r) for r in _report_v1] == [(1, 4), (2, 5)]
    st = json.loads(sk(h, "stats", "--json").stdout)
    assert st["worse_versions"] == []                   # v1 has 4 reports: still not enough
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        per = lib.evals.versions("cors-fix")
        assert [(v["version"], v["worked"], v["reports"]) for v in per["versions"]] == [(1, 4, 4), (2, 0, 5)]
    (h / "config.toml").write_text("[eval]\nmin_reports = 4\n")
    st = json.loads(sk(h, "stats", "--json").stdout)
    [w] = st["worse_versions"]
    assert (w["name"], w["version"], w["previous"], w["rollback"]) == ("cors-fix", 2, 1, ROLLBACK)
    assert (w["rate"], w["reports"], w["previous_rate"], w["previous_reports"]) == (0.0, 5, 1.0, 4)
    text = sk(h, "stats").stdout
    assert f"worse version: v2 of cors-fix worked 0% of 5 reports, against 100% of 4 for v1: `{ROLLBACK}`" in text
    rep = sk(h, "report").stdout
    assert "## Worse versions (roll back)" in rep and ROLLBACK in rep
    assert json.loads(sk(h, "report", "--format", "json").stdout)["worse_versions"] == [w]
    show = sk(h, "show", "cors-fix").stdout
    assert "outcomes v1 4/4 worked (100%, 51–100%); v2 0/5 worked (0%, 0–43%)" in show, show
    assert ROLLBACK in show
    d = json.loads(sk(h, "show", "cors-fix", "--json").stdout)
    assert d["outcomes"]["worse"]["rollback"] == ROLLBACK and d["outcomes"]["current"] == 2
    hist = sk(h, "history", "cors-fix").stdout
    assert "outcomes: v1 4/4 worked (100%, 51–100%); v2 0/5 worked (0%, 0–43%)" in hist and ROLLBACK in hist
    assert json.loads(sk(h, "history", "cors-fix", "--json").stdout)["outcomes"]["worse"] == w

    # the rollback: a new version (v3) with v1's text, and nothing worse to report until it has reports
    p = sk(h, "rollback", "cors-fix", "1")
    assert p.returncode == 0, p.stderr
    assert json.loads(sk(h, "stats", "--json").stdout)["worse_versions"] == []
    show = sk(h, "show", "cors-fix").stdout
    assert "version 3" in show and "\nworse " not in show and ROLLBACK not in show


def test_a_version_as_good_as_before_is_not_listed(tmp_path):
    h = tmp_path / "h"
    make_home(h, "[eval]\nmin_reports = 3\n")
    with Library(h, embedder=FakeEmbedder(), auto_sync=False) as lib:
        lib.sync()
        _report(lib, 4, True)
        lib.save("FIX", target_skill_name="cors-fix", lesson="set the headers in next.config.js", by="person")
        _report(lib, 3, True)
        lib.report_outcome("cors-fix", False)           # 3 of 4: the intervals overlap
        assert lib.evals.worse_versions() == []
        assert lib.evals.versions("cors-fix")["worse"] is None


def _fill(log) -> None:
    qa = log.log_query(at="2026-01-01T00:00:00", text="cors on my api", text_hash="a", mode="find", filters={},
                       client="x", confident=True, degraded=False, n_hits=1, latency_ms=1.0,
                       recommended=[("w:cors-fix", "cors-fix", 1.0)])
    qb = log.log_query(at="2026-01-02T00:00:00", text="preflight fails", text_hash="b", mode="find", filters={},
                       client="x", confident=True, degraded=False, n_hits=1, latency_ms=1.0,
                       recommended=[("w:cors-fix", "cors-fix", 1.0)])
    for qid, worked, version in [(qa, True, 1), (qb, True, 1), (qb, False, 2), (None, False, 2), (qa, True, None)]:
        log.log_outcome(at="2026-01-03T00:00:00", skill_id="w:cors-fix", name="cors-fix", worked=worked, note="",
                        query_id=qid, client="x", version=version)
    log.log_outcome(at="2026-01-03T00:00:00", skill_id="w:other", name="other", worked=True, note="",
                    query_id=qa, client="x", version=3)


def test_the_sqlite_store_and_its_postgresql_twin_answer_the_same(tmp_path, pg_url):
    from skillshelf.store.pg_evidence import PgEvidence
    from skillshelf.store.pg_usage import PgUsageLog
    from skillshelf.store.postgres import PgStore

    local = Store(tmp_path / "s.db")
    _fill(UsageLog(local))
    pg = PgStore(pg_url)
    try:
        pg.migrate()
        _fill(PgUsageLog(pg))
        for ev in (Evidence(local), PgEvidence(pg)):
            assert ev.worked_requests(["w:cors-fix"]) == ["cors on my api", "preflight fails"]
            assert ev.worked_requests([]) == [] and ev.worked_names() == {"cors-fix", "other"}
            # shown for "cors on my api" (qa), which worked for another skill: a near miss of cors-fix's
            assert ev.near_misses(["w:cors-fix"]) == ["cors on my api"] and ev.near_misses(["w:other"]) == []
            assert ev.version_outcomes(["w:cors-fix"]) == [("w:cors-fix", 1, 2, 2), ("w:cors-fix", 2, 0, 2)]
            assert ev.version_outcomes(None) == [("w:cors-fix", 1, 2, 2), ("w:cors-fix", 2, 0, 2), ("w:other", 3, 1, 1)]
    finally:
        pg.close()
        local.close()
