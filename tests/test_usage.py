import datetime as dt
import json
import random
import sqlite3

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.config import SearchConfig
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.usage.log import group_gaps

SKILLS = {
    "docker-build": "Multi-stage Docker builds with cached layers",
    "cors-fix": "Fix CORS errors in Next.js API routes",
    "flaky-tests": "Find and fix flaky pytest tests",
    "db-migrate": "Safe database migrations with Alembic",
    "dead-skill": "Render Gantt charts in COBOL reports",
}


@pytest.fixture
def month(tmp_path):
    """A deterministic month: docker-build works, flaky-tests keeps failing, dead-skill never
    surfaces, and two unmet needs are asked in several ways."""
    root = tmp_path / "r"
    for name, desc in SKILLS.items():
        write_skill(root, name, description=desc)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    rng = random.Random(7)
    start = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)
    from skillshelf.store.skill_refs import SkillRefs
    from skillshelf.store.usage import UsageLog
    from skillshelf.usage.log import Usage

    usage = Usage(UsageLog(lib.store), skills=SkillRefs(lib.store).all)
    gaps_a = ["terraform state lock stuck on s3 backend", "unlock terraform state on s3 backend",
              "terraform s3 backend state lock will not release"]
    gaps_b = ["write a haiku about kubernetes pods", "kubernetes pods haiku poem"]
    for day in range(30):
        at = (start + dt.timedelta(days=day)).isoformat(timespec="seconds")
        for name, worked in (("docker-build", True), ("flaky-tests", day % 5 == 0), ("cors-fix", True),
                             ("db-migrate", rng.random() < 0.8)):
            if day % 3 and name == "db-migrate":
                continue
            res = lib.searcher.search(SKILLS[name], limit=3)
            res.hits = [h for h in res.hits if h.name == name][:1] + [h for h in res.hits if h.name != name][:1]
            qid = usage.log_query(text=SKILLS[name], mode="find", filters={}, client="test", confident=True,
                                  degraded=False, hits=res.hits, latency_ms=3.0, hash_text=False, at=at)
            usage.log_outcome(skill_id=f"r:{name}", name=name, worked=worked, note=f"day {day}",
                              query_id=qid, client="test", at=at)
        if day % 4 == 0:
            for g in (gaps_a + gaps_b)[day % 5: day % 5 + 2]:
                usage.log_query(text=g, mode="find", filters={}, client="test", confident=False,
                                degraded=False, hits=[], latency_ms=3.0, hash_text=False, at=at)
    return lib


def test_kill_rewrite_and_gap_lists_are_known(month):
    st = month.stats()
    assert [x["name"] for x in st.never_surfaced] == ["dead-skill"]
    assert [u.name for u in st.low_success] == ["flaky-tests"]
    assert st.low_success[0].reports == 30 and st.low_success[0].worked == 6
    groups = [g.query for g in st.gaps]
    assert len(groups) == 2  # the same need asked several ways is one line
    assert any("terraform" in g for g in groups) and any("haiku" in g for g in groups)
    # 8 gap days × 2 requests, less 2 days whose slice holds one (day % 5 == 4);
    # served: 30 days × 3 skills + 10 db-migrate days
    assert sum(g.count for g in st.gaps) == 14
    assert st.finds == 114 and st.reports == 100
    assert st.report_rate == pytest.approx(100 / 114)
    top = st.most_used[0]
    assert top.reports == 30 and top.name in ("docker-build", "cors-fix", "flaky-tests")
    assert len(st.queries_per_day) == 30



def test_a_retired_skill_is_no_rewrite_candidate(month):
    """A skill deprecated (or merged into another) is not offered for a rewrite: it is off the shelf."""
    assert [u.name for u in month.stats().low_success] == ["flaky-tests"]
    month.deprecate("flaky-tests", reason="merged into pytest-triage")
    assert month.stats().low_success == []
    assert "flaky-tests" not in month.usage_report().split("## Rewrite list")[1].split("##")[0]

def test_report_markdown_and_json(month):
    md = month.usage_report(since="2026-11-15")
    assert "## Rewrite list" in md and "flaky-tests" in md and "## Kill list" in md and "dead-skill" in md
    assert "## Gaps" in md and "failed: day" in md
    data = json.loads(month.usage_report(fmt="json"))
    assert data["low_success"][0]["name"] == "flaky-tests"
    since = month.stats(since="2026-11-20")
    assert since.queries < month.stats().queries


def test_a_gap_asked_twice_the_same_way_has_no_empty_also(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    for _ in range(2):
        lib.search("zx quux frobnicate the widget", limit=1)
    md = lib.usage_report()
    assert "- zx quux frobnicate the widget ×2\n" in md and "also: \n" not in md and "also:" not in md


def test_search_and_report_write_rows(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    res = lib.search("cors errors", client="agent-x")
    q = lib.store.db.execute("SELECT * FROM queries").fetchone()
    assert q["text"] == "cors errors" and q["client"] == "agent-x" and q["latency_ms"] > 0
    recs = lib.store.db.execute("SELECT rank, skill_id FROM recommendations WHERE query_id=?", (res.query_id,)).fetchall()
    assert [tuple(r) for r in recs][0] == (1, "r:cors-fix")
    out = lib.report_outcome("cors-fix", True, note="fixed", query_id=res.query_id)
    assert out["reports"] == 1 and out["success_rate"] == 1.0
    with pytest.raises(Exception):
        lib.report_outcome("cors-fix", True, query_id="abc")


def test_no_code_path_updates_or_deletes_usage_rows(tmp_path):
    """Static check over the source plus the triggers: usage tables only get INSERTs."""
    import pathlib
    import re

    src = pathlib.Path(__file__).resolve().parents[1] / "src" / "skillshelf"
    bad = []
    for p in src.rglob("*.py"):
        text = p.read_text()
        for m in re.finditer(r"(UPDATE|DELETE FROM)\s+(queries|recommendations|outcomes)\b", text):
            bad.append((p.relative_to(src).as_posix(), m.group(0)))
    # the one sanctioned deletion: the confirmed retention command, in the usage log's stores
    assert all(name in ("store/usage.py", "store/pg_usage.py") for name, _ in bad), bad
    lib = Library(home=tmp_path / "h", embedder="none", auto_sync=False)
    db = lib.store.db
    db.execute("INSERT INTO queries (at, text, text_hash, mode, confident, n_hits, latency_ms)"
               " VALUES ('2026-01-01', 'q', 'h', 'find', 0, 0, 1)")
    db.execute("INSERT INTO recommendations (query_id, at, skill_id, name, rank, score)"
               " VALUES (1, '2026-01-01', 's', 's', 1, 1.0)")
    db.execute("INSERT INTO outcomes (at, skill_id, name, worked) VALUES ('2026-01-01', 's', 's', 0)")
    for sql in ("UPDATE queries SET text='x'", "DELETE FROM queries", "UPDATE outcomes SET worked=1",
                "DELETE FROM recommendations"):
        with pytest.raises(sqlite3.DatabaseError):
            lib.store.db.execute(sql)
    db.execute("INSERT INTO judge_log (at, mode, backend, model, status, latency_ms, candidates)"
               " VALUES ('2026-01-01', 'rerank', 'ollama', 'm', 'ok', 1.0, 5)")
    with pytest.raises(sqlite3.DatabaseError):
        lib.store.db.execute("DELETE FROM judge_log")
    assert lib.prune_usage("2026-06-01") == 4  # explicit, confirmed retention still works (judge log too)
    assert db.execute("SELECT COUNT(*) FROM judge_log").fetchone()[0] == 0


def test_hash_queries_setting(tmp_path):
    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False, hash_queries=True)
    lib.sync()
    lib.search("secret project falcon cors")
    row = lib.store.db.execute("SELECT text, text_hash FROM queries").fetchone()
    assert row["text"] is None and len(row["text_hash"]) == 64


def test_group_gaps_is_deterministic():
    rows = [("reset a forgotten postgres password", "1"), ("postgres password reset forgotten", "2"),
            ("bake sourdough bread", "3")]
    g = group_gaps(rows)
    assert [(x.count, x.query) for x in g] == [(2, "reset a forgotten postgres password"), (1, "bake sourdough bread")]


def test_searching_an_empty_library_is_not_a_gap(tmp_path):
    lib = Library(home=tmp_path / "h", embedder=FakeEmbedder(), auto_sync=False)
    res = lib.search("rotate a leaked AWS key")
    st = lib.stats()
    assert st.queries == 1 and st.gaps == []          # nothing could match: not a gap
    assert res.hits == [] and not res.confident and "no skills" in (res.degraded or "")


def test_a_request_a_skill_was_reported_to_work_for_is_not_a_gap(tmp_path):
    """A weak match that an agent then reported working answered the request: listing it among
    the requests that match nothing would send the owner to write a skill that exists."""
    root = tmp_path / "r"
    for name, desc in SKILLS.items():
        write_skill(root, name, description=desc)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    answered = lib.search("zx quux frobnicate the widget", limit=1)
    failed = lib.search("zx quux defrobnicate the gadget", limit=1)
    assert not answered.confident and not failed.confident
    assert len(lib.stats().gaps) == 2
    lib.report_outcome(answered.hits[0].name, True, query_id=answered.query_id)
    lib.report_outcome(failed.hits[0].name, False, query_id=failed.query_id)
    assert [g.query for g in lib.stats().gaps] == ["zx quux defrobnicate the gadget"]


def test_the_kill_list_leaves_out_copies_of_a_shown_skill_and_skills_agents_reported_on(tmp_path):
    """A search shows one skill of a name for all its copies, and a skill reported on was used:
    neither never surfaced. The kill list offers bulk deprecation: a wrong entry costs a skill."""
    root, mirror = tmp_path / "r", tmp_path / "mirror"
    for name, desc in SKILLS.items():
        write_skill(root, name, description=desc)
    write_skill(mirror, "cors-fix", description=SKILLS["cors-fix"])        # a copy in another root
    write_skill(mirror, "cobol-gantt", description=SKILLS["dead-skill"] + " (a mirror)")
    lib = Library(home=tmp_path / "h", roots=[root, mirror], embedder=FakeEmbedder(), auto_sync=False,
                  search=SearchConfig(recency_window=0))
    lib.sync()
    res = lib.search(SKILLS["cors-fix"], limit=1)
    assert [h.name for h in res.hits] == ["cors-fix"] and res.hits[0].copies == 2
    lib.report_outcome("flaky-tests", True)                 # used without a logged search
    never = {x["name"] for x in lib.stats().never_surfaced}
    assert "cors-fix" not in never and "flaky-tests" not in never
    assert {"dead-skill", "cobol-gantt", "docker-build", "db-migrate"} <= never


def test_most_used_ranks_by_reported_uses_not_times_shown(tmp_path):
    root = tmp_path / "r"
    for name, desc in SKILLS.items():
        write_skill(root, name, description=desc)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False,
                  search=SearchConfig(recency_window=0))
    lib.sync()
    for _ in range(5):
        lib.search(SKILLS["dead-skill"], limit=1)              # shown five times, never used
    res = lib.search(SKILLS["cors-fix"], limit=1)
    lib.report_outcome("cors-fix", True, query_id=res.query_id)
    lib.report_outcome("cors-fix", True)
    lib.report_outcome("flaky-tests", False)
    lib.report_outcome("db-migrate", True)
    st = lib.stats()
    assert [u.name for u in st.most_used] == ["cors-fix", "db-migrate", "flaky-tests"]
    shown = {u.name: u.times_shown for u in st.per_skill}
    assert shown["dead-skill"] == 5 and shown["cors-fix"] == 1 and shown["flaky-tests"] == 0
    d = st.as_dict()["per_skill"][0]
    assert "times_shown" in d and "recommended" not in d


def _read_only_library(tmp_path, monkeypatch):
    """A library whose database opens read-only (a read-only mount, a full disk)."""
    from skillshelf.store import Store

    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    lib.close()

    def no_writes(self):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(Store, "migrate", no_writes)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    assert lib.store.read_only
    return lib


def test_an_outcome_the_database_refuses_is_the_librarys_store_error(tmp_path, monkeypatch):
    from skillshelf.errors import StoreError, write_failure

    lib = _read_only_library(tmp_path, monkeypatch)
    with pytest.raises(StoreError) as caught:
        lib.report_outcome("cors-fix", True, note="fixed")
    err = caught.value
    assert "cannot be written" in err.message and "read-only" in err.message
    assert str(tmp_path / "h") in err.fix and "searching and reading still work" in err.fix
    assert write_failure(err) is not None      # the SQLite error stays its cause


def test_a_full_disk_refusing_an_outcome_is_the_librarys_store_error(tmp_path, monkeypatch):
    from skillshelf.errors import StoreError
    from skillshelf.store import Store

    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    res = lib.search("cors errors")
    real_tx = Store.tx

    def full(self):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Store, "tx", full)
    with pytest.raises(StoreError, match="disk is full"):
        lib.report_outcome("cors-fix", True, query_id=res.query_id)
    monkeypatch.setattr(Store, "tx", real_tx)
    assert lib.report_outcome("cors-fix", True, query_id=res.query_id)["reports"] == 1


def test_the_log_keeps_the_start_of_a_long_request_and_recognises_its_repeat(tmp_path):
    from skillshelf.usage.log import LOGGED_TEXT_CHARS, request_hash

    root = tmp_path / "r"
    write_skill(root, "cors-fix", description="Fix CORS errors")
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    long_request = "fix cors errors " + " ".join(f"line{i} of a pasted log" for i in range(200_000))
    assert len(long_request) > 4_000_000
    lib.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")   # what sync wrote is in the file before measuring
    size = lib.store.path.stat().st_size
    for _ in range(3):
        lib.search(long_request)
    rows = lib.store.db.execute("SELECT text, text_hash FROM queries").fetchall()
    assert len(rows) == 3
    text = rows[0]["text"]
    assert text.startswith(long_request[:LOGGED_TEXT_CHARS]) and len(text) < LOGGED_TEXT_CHARS + 80
    assert f"{len(long_request):,} characters" in text
    # the hash is of the whole request: a repeat is still a repeat, a request with the same start is not
    assert rows[0]["text_hash"] == request_hash(long_request) != request_hash(long_request[:LOGGED_TEXT_CHARS])
    lib.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert lib.store.path.stat().st_size - size < 200_000
    # a request of ordinary length is kept whole
    lib.search("cors errors in my api")
    assert lib.store.db.execute("SELECT text FROM queries ORDER BY id DESC").fetchone()[0] == "cors errors in my api"


def test_a_long_request_is_shown_by_its_start_in_stats_and_the_report(tmp_path):
    from test_evals import sk

    home = tmp_path / "h"
    root = tmp_path / "r"
    for name, desc in SKILLS.items():
        write_skill(root, name, description=desc)
    long = "zq " + "x" * 20_000
    assert sk(home, "roots", "add", str(root)).returncode == 0
    assert sk(home, "search", long, "--log").returncode == 0   # (a person's search is logged when asked)
    p = sk(home, "stats")
    assert p.returncode == 0 and max(len(line) for line in p.stdout.splitlines()) <= 200, p.stdout
    p = sk(home, "report")
    assert p.returncode == 0 and "zq x" in p.stdout and max(len(line) for line in p.stdout.splitlines()) <= 260
