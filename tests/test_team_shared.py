"""The shared state behind its storage seam: the same tests run against the local SQLite
implementation and the team store's PostgreSQL one (usage log, usage reads, learning memory,
judge log, overlays), so a service above cannot tell which one it was given. Every public
method of each class is called here. The PostgreSQL runs skip, saying why, without its
binaries (the ``pg_url`` fixture)."""

from __future__ import annotations

import threading
import time
import uuid
from types import SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import StoreError
from skillshelf.store import Store, open_shared

T0 = "2026-11-01T09:00:00+00:00"
T1 = "2026-11-02T09:00:00+00:00"
T2 = "2026-11-03T09:00:00+00:00"
DAY2 = "2026-11-02"


class Backend:
    """One implementation of the shared state over a fresh store, and the means to look at
    that store as a second server or as a role that may not write."""

    def __init__(self, kind: str, tmp_path, url: str | None, local: Store | None = None):
        self.kind, self.url, self.tmp = kind, url, tmp_path
        self.local = local or Store(tmp_path / "index.db")
        self.shared = open_shared(SimpleNamespace(store=url or ""), self.local)
        self._opened: list = []

    @property
    def pg(self):
        return self.shared.team

    def other_server(self):
        """The same shared state as another server sees it (for SQLite: another process's
        connection to the same file; for PostgreSQL: another pool, with its own local index)."""
        if self.kind == "sqlite":
            st = Store(self.local.path)
        else:
            st = Store(self.tmp / f"other-{uuid.uuid4().hex[:6]}.db")
        sh = open_shared(SimpleNamespace(store=self.url or ""), st)
        self._opened.append((sh, st))
        return sh

    def sql(self, sql: str, params: tuple = ()) -> None:
        """A statement the methods cannot make (a damaged value, say), written as for SQLite."""
        if self.kind == "sqlite":
            with self.local.tx() as tx:
                tx.execute(sql, params)
        else:
            self.pg.execute(sql.replace("?", "%s"), params)

    def refusing(self):
        """The shared state as seen through a connection the store refuses writes on: a
        query-only SQLite connection; a PostgreSQL role granted SELECT only."""
        from skillshelf.store.pg_judge import PgJudgeLog
        from skillshelf.store.pg_learning import PgLearningMemory
        from skillshelf.store.pg_overlay import PgOverlays
        from skillshelf.store.pg_usage import PgUsageLog, PgUsageReads
        from skillshelf.store.postgres import PgStore

        if self.kind == "sqlite":
            st = Store(self.local.path)
            st.db.execute("PRAGMA query_only = ON")
            sh = open_shared(SimpleNamespace(store=""), st)
            self._opened.append((sh, st))
            return sh
        role = "ro_" + uuid.uuid4().hex[:8]
        self.pg.execute(f"CREATE ROLE {role} LOGIN")
        self.pg.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        parts = urlsplit(self.url)
        netloc = f"{role}@{parts.hostname}:{parts.port}"
        pg = PgStore(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), migrate=False)
        sh = SimpleNamespace(usage=PgUsageLog(pg), usage_reads=PgUsageReads(pg), learning=PgLearningMemory(pg),
                             judge=PgJudgeLog(pg), overlays=PgOverlays(pg, self.local), close=pg.close)
        self._opened.append((sh, None))
        return sh

    def close(self) -> None:
        for sh, st in self._opened:
            sh.close()
            if st is not None:
                st.close()
        self.shared.close()
        self.local.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path):
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    b = Backend(request.param, tmp_path, url)
    yield b
    b.close()


@pytest.fixture(params=["sqlite", "postgres"])
def indexed(request, tmp_path):
    """A backend whose local store is a synced library's index (two skills of a read-only root)."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    root = tmp_path / "root"
    write_skill(root, "cors-fix", description="Fix CORS errors in API routes")
    write_skill(root, "old-one", description="Something old", extra="metadata:\n  status: inactive\n")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    b = Backend(request.param, tmp_path, url, local=lib.store)
    b.lib = lib
    yield b
    b.shared.close()
    for sh, st in b._opened:
        sh.close()
        if st is not None:
            st.close()
    lib.close()


def log(usage, text_hash="h", *, at=T0, recs=(("s:a", "a", 0.9),), text="a request", client="c1", mode="find",
        confident=True, degraded=False):
    return usage.log_query(at=at, text=text, text_hash=text_hash, mode=mode, filters={"tags": ["x"]},
                           client=client, confident=confident, degraded=degraded, n_hits=len(recs),
                           latency_ms=2.5, recommended=list(recs))


# --- the usage log ----------------------------------------------------------------------
def test_log_query_returns_the_id_query_reads_back(backend):
    u = backend.shared.usage
    q1 = log(u, text="cors errors")
    q2 = u.log_query(at=T1, text=None, text_hash="h2", mode="browse", filters={}, client=None, confident=False,
                     degraded=True, n_hits=0, latency_ms=1.0, recommended=[])
    assert isinstance(q1, int) and q2 > q1 >= 1
    assert u.query(q1) == {"id": q1, "at": T0, "text": "cors errors", "mode": "find", "client": "c1",
                           "confident": True, "degraded": False}
    assert u.query(q2) == {"id": q2, "at": T1, "text": None, "mode": "browse", "client": None,
                           "confident": False, "degraded": True}
    for missing in (0, -1, q2 + 100, 2**63, 10**30):
        assert u.query(missing) is None


def test_log_outcome_returns_its_id(backend):
    u = backend.shared.usage
    o1 = u.log_outcome(at=T0, skill_id="s:a", name="a", worked=True, note="", query_id=None, client=None)
    o2 = u.log_outcome(at=T1, skill_id=None, name="b", worked=False, note="broke", query_id=7, client="c")
    assert isinstance(o1, int) and o2 > o1 >= 1
    assert u.outcomes_since("0000") == [
        {"id": o1, "at": T0, "skill_id": "s:a", "name": "a", "worked": True, "note": "", "query_id": None,
         "client": None},
        {"id": o2, "at": T1, "skill_id": None, "name": "b", "worked": False, "note": "broke", "query_id": 7,
         "client": "c"}]
    assert [o["id"] for o in u.outcomes_since(T1)] == [o2]


def test_recent_counts_looks_at_the_last_queries_without_the_repeats(backend):
    u = backend.shared.usage
    assert u.recent_counts(10) == {}
    log(u, "h1", recs=[("s:a", "a", 0.9), ("s:b", "b", 0.5)])
    log(u, "h2", recs=[("s:a", "a", 0.9)])
    log(u, "h3", recs=[("s:c", "c", 0.9), ("s:a", "a", 0.4)])
    log(u, "h2", recs=[("s:b", "b", 0.9)])
    assert u.recent_counts(0) == {}
    assert u.recent_counts(10) == {"s:a": 3, "s:b": 2, "s:c": 1}
    assert u.recent_counts(2) == {"s:c": 1, "s:a": 1, "s:b": 1}
    assert u.recent_counts(2, skip_hash="h2") == {"s:c": 1, "s:a": 2, "s:b": 1}   # the window skips repeats too
    assert u.recent_counts(1, skip_hash="h3") == {"s:b": 1}


def test_recent_requests_reads_the_last_queries_with_what_each_recommended(backend):
    """One read for the paraphrase check: the last queries (text repeats left out), newest
    first, each with its text (None when hashed) and its recommendations in rank order."""
    u = backend.shared.usage
    assert u.recent_requests(10) == []
    a = log(u, "h1", text="first", recs=[("s:b", "b", 0.9), ("s:a", "a", 0.5)])
    b = log(u, "h2", text=None, recs=[])
    c = log(u, "h3", text="third", recs=[("s:c", "c", 0.9), ("s:a", "a", 0.8), ("s:b", "b", 0.1)])
    d = log(u, "h2", text="fourth", recs=[("s:a", "a", 0.9)])
    assert u.recent_requests(0) == []
    assert u.recent_requests(10) == [{"id": d, "text": "fourth", "skills": ["s:a"]},
                                     {"id": c, "text": "third", "skills": ["s:c", "s:a", "s:b"]},
                                     {"id": b, "text": None, "skills": []},
                                     {"id": a, "text": "first", "skills": ["s:b", "s:a"]}]
    assert [r["id"] for r in u.recent_requests(2)] == [d, c]
    assert [r["id"] for r in u.recent_requests(2, skip_hash="h2")] == [c, a]


def test_worked_latest_follows_the_latest_outcome(backend):
    u = backend.shared.usage
    assert u.worked_latest([]) == set()
    for sid, worked in (("s:a", False), ("s:a", True), ("s:b", True), ("s:b", False), ("s:c", True)):
        u.log_outcome(at=T0, skill_id=sid, name=sid[2:], worked=worked, note="", query_id=None, client=None)
    assert u.worked_latest(["s:a", "s:b", "s:c", "s:none"]) == {"s:a", "s:c"}
    assert u.worked_latest(["s:b"]) == set()


def test_queries_since_and_shown_since(backend):
    u = backend.shared.usage
    q1 = log(u, "h1", at=T0, recs=[("s:b", "old-name", 0.9)], confident=False)
    q2 = log(u, "h2", at=T1, recs=[("s:b", "b", 0.9), ("s:a", "a", 0.5)], mode="search", degraded=True)
    q3 = log(u, "h3", at=T2, recs=[("s:B", "B", 0.9)])
    assert [q["id"] for q in u.queries_since("0000")] == [q1, q2, q3]
    assert u.queries_since(DAY2) == [
        {"id": q2, "at": T1, "text": "a request", "mode": "search", "confident": True, "degraded": True},
        {"id": q3, "at": T2, "text": "a request", "mode": "find", "confident": True, "degraded": False}]
    # the name of the latest recommendation, skills in code point order
    assert u.shown_since("0000") == [("s:B", "B", 1), ("s:a", "a", 1), ("s:b", "b", 2)]
    assert u.shown_since(T2) == [("s:B", "B", 1)]
    assert u.shown_since("9999") == []


def test_ever_recommended_and_skill_usage(backend):
    u = backend.shared.usage
    assert u.ever_recommended() == set()
    qid = log(u, recs=[("s:a", "a", 0.9), ("s:b", "b", 0.8)])
    log(u, recs=[("s:a", "a", 0.9)])
    u.log_outcome(at=T0, skill_id="s:a", name="a", worked=True, note="fine", query_id=qid, client="c")
    u.log_outcome(at=T1, skill_id=None, name="a", worked=False, note="", query_id=None, client="c")
    u.log_outcome(at=T2, skill_id=None, name="other", worked=True, note="", query_id=None, client="c")
    assert u.ever_recommended() == {"s:a", "s:b"}
    assert u.skill_usage("s:a", "a") == (2, [(True, "fine", T0), (False, "", T1)])
    assert u.skill_usage("s:z", "z") == (0, [])


def test_prune_deletes_what_is_older_and_keeps_the_rest(backend):
    u, j = backend.shared.usage, backend.shared.judge
    old = log(u, "h1", at=T0, recs=[("s:a", "a", 0.9), ("s:b", "b", 0.5)])
    u.log_outcome(at=T0, skill_id="s:a", name="a", worked=True, note="", query_id=old, client=None)
    j.add(at=T0, query_id=old, mode="auto", backend="b", model="m", status="ok", latency_ms=1.0, candidates=2,
          invented=0, pick=None, verdicts=[])
    new = log(u, "h2", at=T2, recs=[("s:a", "a", 0.9)])
    u.log_outcome(at=T2, skill_id="s:a", name="a", worked=False, note="", query_id=new, client=None)
    # 2 recommendations + 1 outcome + 1 judge row + 1 query
    assert u.prune(DAY2) == 5
    assert [q["id"] for q in u.queries_since("0000")] == [new]
    assert u.skill_usage("s:a", "a") == (1, [(False, "", T2)])
    assert j.since("0000") == []
    assert u.prune(DAY2) == 0
    assert log(u, "h3", at=T2) > new          # the log goes on


def test_text_the_local_store_keeps_is_kept(backend):
    u = backend.shared.usage
    text = "cors \x00 errors ünïcödé 🚀 'quoted' \"double\" ; DROP TABLE queries; --"
    qid = log(u, text=text, client="agent\x00x")
    got = u.query(qid)
    # a NUL is kept by SQLite and becomes U+FFFD in PostgreSQL (a text column refuses it);
    # everything else is kept as it was
    assert got["text"] in (text, text.replace("\x00", "\ufffd"))
    assert got["client"] in ("agent\x00x", "agent\ufffdx")
    oid = u.log_outcome(at=T0, skill_id="s:a", name="a", worked=True, note="note \x00", query_id=qid, client=None)
    assert u.outcomes_since("0000")[0]["id"] == oid


# --- the dashboard's reads of the usage log ---------------------------------------------
def test_usage_reads_counts_and_totals(backend):
    u, r = backend.shared.usage, backend.shared.usage_reads
    assert r.counts([]) == ({}, {})
    assert r.marks() == (None, None, None)
    q = log(u, recs=[("s:a", "a", 0.9), ("s:b", "b", 0.5)])
    log(u, recs=[("s:a", "a", 0.9)])
    o1 = u.log_outcome(at=T0, skill_id="s:a", name="a", worked=True, note="", query_id=q, client=None)
    u.log_outcome(at=T1, skill_id="s:a", name="a", worked=False, note="", query_id=None, client=None)
    u.log_outcome(at=T1, skill_id=None, name="x", worked=True, note="", query_id=None, client=None)
    assert r.counts(["s:a", "s:b", "s:z"]) == ({"s:a": 2, "s:b": 1}, {"s:a": (2, 1)})
    assert sorted(r.times_shown()) == [("s:a", 2), ("s:b", 1)]
    assert r.reports() == [("s:a", 2, 1)]
    marks = r.marks()
    assert len(marks) == 3 and all(isinstance(m, int) for m in marks) and marks[1] == o1 + 2
    log(u)
    assert r.marks() != marks


def test_usage_reads_per_day_series(backend):
    u, r = backend.shared.usage, backend.shared.usage_reads
    q1 = log(u, "h1", at=T0, mode="find", confident=True)
    log(u, "h2", at=T0, mode="find", confident=False)                    # a gap
    log(u, "h3", at=T0, mode="find", confident=False, degraded=True)     # lexical-only: not a gap
    q4 = log(u, "h4", at=T1, mode="find", confident=False)
    log(u, "h5", at=T1, mode="search")
    for qid, at, worked in ((q1, T0, True), (q1, T0, False), (q4, T1, True), (None, T2, True)):
        u.log_outcome(at=at, skill_id="s:a", name="a", worked=worked, note="", query_id=qid, client=None)
    assert sorted(r.queries_per_day("0000")) == [("2026-11-01", 3, 3, 1), ("2026-11-02", 2, 1, 1)]
    assert sorted(r.queries_per_day(DAY2)) == [("2026-11-02", 2, 1, 1)]
    assert sorted(r.reported_finds_per_day("0000")) == [("2026-11-01", 1), ("2026-11-02", 1)]
    assert sorted(r.outcomes_per_day("0000")) == [("2026-11-01", 2, 1), ("2026-11-02", 1, 1),
                                                  ("2026-11-03", 1, 1)]
    assert sorted(r.outcomes_per_day("9999")) == []


def test_usage_reads_of_one_skill(backend):
    u, r = backend.shared.usage, backend.shared.usage_reads
    q1 = log(u, "h1", at=T0, text="first", recs=[("s:a", "a", 0.75), ("s:b", "b", 0.5)])
    q2 = log(u, "h2", at=T1, text="second", recs=[("s:b", "b", 0.9), ("s:a", "a", 0.25)], client="c2",
             confident=False)
    assert r.surfaced("s:a", 10) == [
        {"at": T1, "rank": 2, "score": 0.25, "qid": q2, "text": "second", "mode": "find", "client": "c2",
         "confident": 0},
        {"at": T0, "rank": 1, "score": 0.75, "qid": q1, "text": "first", "mode": "find", "client": "c1",
         "confident": 1}]
    assert [s["qid"] for s in r.surfaced("s:a", 1)] == [q2]
    o1 = u.log_outcome(at=T0, skill_id=None, name="a", worked=True, note="before it had an id", query_id=None,
                       client="c")
    o2 = u.log_outcome(at=T1, skill_id="s:a", name="a", worked=False, note="", query_id=q2, client=None)
    u.log_outcome(at=T1, skill_id="s:b", name="a", worked=True, note="", query_id=None, client=None)
    assert r.outcomes("s:a", "a", 10) == [
        {"id": o2, "at": T1, "worked": 0, "note": "", "client": None, "query_id": q2},
        {"id": o1, "at": T0, "worked": 1, "note": "before it had an id", "client": "c", "query_id": None}]
    assert [o["id"] for o in r.outcomes("s:a", "a", 1)] == [o2]
    assert sorted(r.outcome_days("s:a", "a")) == [("2026-11-01", 1), ("2026-11-02", 0)]


# --- learning memory --------------------------------------------------------------------
def vec(*xs: float) -> bytes:
    v = np.asarray(xs, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


def learn(mem, name_key="cors-fix", *, worked=True, client="c1", at=T0, model="m1", request="a request", oid=1):
    return mem.add(outcome_id=oid, at=at, skill_id=f"s:{name_key}", name_key=name_key, worked=worked, client=client,
                   query_id=oid, request=request, model_id=model, vector=vec(1.0, 0.5, 0.0))


def test_learning_memory_add_and_reads(backend):
    m = backend.shared.learning
    assert m.state() == ("0", "0")
    r1 = learn(m, at=T0, client="c1")
    r2 = learn(m, "docker", worked=False, client=None, at=T1, request=None)
    r3 = learn(m, at=T2, model="m2")
    assert r3 > r2 > r1 >= 1
    assert m.state() == ("3", "0")
    got = m.reports_after("m1", 0)
    assert [g["id"] for g in got] == [r1, r2]
    assert got[1] == {"id": r2, "vector": vec(1.0, 0.5, 0.0), "worked": False, "at": T1, "client": "",
                      "request": None, "name_key": "docker"}
    assert np.frombuffer(got[0]["vector"], "<f4").shape == (3,)
    assert [g["id"] for g in m.reports_after("m1", r1)] == [r2]
    assert m.reports_after("m2", r3) == []
    assert m.for_skill("cors-fix") == [{"worked": True, "client": "c1", "request": "a request", "at": T0},
                                       {"worked": True, "client": "c1", "request": "a request", "at": T2}]
    assert m.for_skill("none") == []
    assert m.since(T1) == [
        {"name_key": "docker", "skill_id": "s:docker", "worked": False, "client": "", "request": None},
        {"name_key": "cors-fix", "skill_id": "s:cors-fix", "worked": True, "client": "c1", "request": "a request"}]


def test_learning_memory_forget(backend):
    m = backend.shared.learning
    learn(m, "a", client="c1", at=T0)
    learn(m, "a", client=None, at=T1)
    learn(m, "b", client="c2", at=T1)
    learn(m, "b", client="c1", at=T2)
    gen = m.state()
    assert m.forget(name_key="nothing") == 0
    assert m.state() == gen                              # nothing deleted: nothing to reload
    assert m.forget(client="") == 1                      # "" matches reports without a client
    assert m.state() == (str(int(gen[0]) + 1), "1")      # a deletion: the cache re-reads all
    assert m.forget(name_key="b", before=T2) == 1
    assert [r["client"] for r in m.for_skill("b")] == ["c1"]
    assert m.forget(before=T1) == 1
    assert m.forget() == 1
    assert m.since("0000") == [] and m.state()[1] == "4"


def test_a_report_another_server_adds_changes_the_state_here(backend):
    here, there = backend.shared.learning, backend.other_server().learning
    before = here.state()
    rid = learn(there)
    assert here.state() != before
    assert [r["id"] for r in here.reports_after("m1", 0)] == [rid]
    there.forget(name_key="cors-fix")
    assert here.state()[1] != before[1]


def test_reports_become_visible_in_id_order_while_servers_add_them(backend):
    """The learner appends the reports above the last id it read: an id that became visible
    after a higher one would be skipped for good. Several servers add at once while this one
    keeps reading: it must see every report."""
    servers = [backend.shared.learning, backend.other_server().learning]
    reader = backend.shared.learning
    per_thread, threads = 15, 4
    seen: list[int] = []
    done = threading.Event()
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            for k in range(per_thread):
                learn(servers[i % 2], f"skill-{i}", oid=i * 1000 + k)
        except BaseException as exc:   # noqa: BLE001 -- reported below
            errors.append(exc)

    def read() -> None:
        last = 0
        while True:
            finished = done.is_set()
            rows = reader.reports_after("m1", last)
            if rows:
                seen.extend(r["id"] for r in rows)
                last = rows[-1]["id"]
            if finished:
                return

    r = threading.Thread(target=read)
    r.start()
    ws = [threading.Thread(target=add, args=(i,)) for i in range(threads)]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    done.set()
    r.join()
    assert not errors
    assert len(seen) == len(set(seen)) == per_thread * threads


# --- the judge log ----------------------------------------------------------------------
def test_judge_log_add_and_since(backend):
    j = backend.shared.judge
    verdicts = [{"name": "cors-fix", "verdict": "fits", "why": "naïve « quotes »"}]
    a = j.add(at=T0, query_id=3, mode="auto", backend="ollama", model="qwen", status="ok", latency_ms=812.5,
              candidates=5, invented=1, pick="cors-fix", verdicts=verdicts)
    b = j.add(at=T1, query_id=None, mode="always", backend="ollama", model="qwen", status="timeout",
              latency_ms=3000.0, candidates=4, invented=0, pick=None, verdicts=[])
    assert isinstance(a, int) and b > a
    assert j.since("0000") == [
        {"at": T0, "query_id": 3, "mode": "auto", "backend": "ollama", "model": "qwen", "status": "ok",
         "latency_ms": 812.5, "candidates": 5, "invented": 1, "pick": "cors-fix", "verdicts": verdicts},
        {"at": T1, "query_id": None, "mode": "always", "backend": "ollama", "model": "qwen", "status": "timeout",
         "latency_ms": 3000.0, "candidates": 4, "invented": 0, "pick": None, "verdicts": []}]
    assert [r["at"] for r in j.since(DAY2)] == [T1]


def test_judge_log_verdicts_that_cannot_be_read_are_empty(backend):
    for text in ("{not json", '{"a": 1}'):
        backend.sql("INSERT INTO judge_log (at, query_id, mode, backend, model, status, latency_ms, candidates,"
                    " invented, pick, verdicts) VALUES (?, NULL, 'auto', 'b', 'm', 'ok', 1.0, 1, 0, NULL, ?)",
                    (T0, text))
    assert [r["verdicts"] for r in backend.shared.judge.since("0000")] == [[], []]


# --- overlays ---------------------------------------------------------------------------
def index_row(store: Store, skill_id: str) -> tuple:
    row = store.db.execute("SELECT active, expires_on FROM skills WHERE id = ?", (skill_id,)).fetchone()
    return (row[0], row[1])


def test_overlay_update_get_and_the_index_row(indexed):
    ov, lib = indexed.shared.overlays, indexed.lib
    sid = lib.get("cors-fix").id
    assert ov.get(sid) is None
    gen = lib.store.get_meta("generation")
    got = ov.update(sid, {"status": "deprecated", "reason": "we use a proxy"}, at=T0)
    content_hash = lib.store.db.execute("SELECT content_hash FROM skills WHERE id = ?", (sid,)).fetchone()[0]
    want = {"skill_id": sid, "status": "deprecated", "reason": "we use a proxy", "expires_on": None,
            "content_hash": content_hash, "updated_at": T0}
    assert got == want and ov.get(sid) == want
    assert index_row(lib.store, sid) == (0, None)
    assert lib.store.get_meta("generation") != gen
    # one field changed, the others kept
    assert ov.update(sid, {"expires_on": "2027-01-01"}, at=T1) == {**want, "expires_on": "2027-01-01",
                                                                    "updated_at": T1}
    assert index_row(lib.store, sid) == (0, "2027-01-01")
    # restored: the file's own status decides again
    ov.update(sid, {"status": None, "reason": None}, at=T2)
    assert index_row(lib.store, sid)[0] == 1
    old = lib.get("old-one").id
    ov.update(old, {"status": None}, at=T2)
    assert index_row(lib.store, old)[0] == 0                 # inactive by its own file
    # a skill not in this index: kept, without a content hash
    assert ov.update("r:elsewhere", {"status": "deprecated"}, at=T0)["content_hash"] is None
    with pytest.raises(ValueError, match="not an overlay field: active"):
        ov.update(sid, {"active": 1}, at=T0)


def test_overlay_apply_to_index_inside_indexings_transaction(indexed):
    ov, lib = indexed.shared.overlays, indexed.lib
    sid = lib.get("cors-fix").id
    ov.update(sid, {"status": "deprecated", "expires_on": "2027-02-02"}, at=T0)
    with lib.store.tx() as tx:                  # a re-index puts the file's values back ...
        tx.execute("UPDATE skills SET active = 1, expires_on = NULL WHERE id = ?", (sid,))
        assert ov.get(sid, tx)["status"] == "deprecated"
        ov.apply_to_index(sid, tx)              # ... and applies the overlay in the same transaction
    assert index_row(lib.store, sid) == (0, "2027-02-02")
    with lib.store.tx() as tx:
        tx.execute("UPDATE skills SET active = 1 WHERE id = ?", (sid,))
    ov.apply_to_index(sid)                      # outside a transaction too
    assert index_row(lib.store, sid)[0] == 0
    ov.apply_to_index("r:no-overlay")           # nothing to apply: nothing happens


def test_the_library_shows_an_overlay_set_through_the_shared_state(indexed):
    ov, lib = indexed.shared.overlays, indexed.lib
    sid = lib.get("cors-fix").id
    ov.update(sid, {"status": "deprecated", "reason": "we use a proxy"}, at=T0)
    rec = lib.get("cors-fix")
    assert rec.active is False and rec.overlay["reason"] == "we use a proxy"
    lib.sync()                                  # a re-index keeps it applied
    assert lib.get("cors-fix").active is False


def test_an_overlay_set_on_another_server_is_read_here(indexed):
    sid = indexed.lib.get("cors-fix").id
    there = indexed.other_server()
    there.overlays.update(sid, {"status": "deprecated", "reason": "r"}, at=T0)
    assert indexed.shared.overlays.get(sid)["reason"] == "r"
    indexed.shared.overlays.update(sid, {"expires_on": "2027-03-03"}, at=T1)
    got = there.overlays.get(sid)
    assert (got["status"], got["reason"], got["expires_on"]) == ("deprecated", "r", "2027-03-03")


# --- refusals ---------------------------------------------------------------------------
def test_a_write_the_store_refuses_is_a_store_error_and_reads_go_on(backend):
    log(backend.shared.usage)
    learn(backend.shared.learning)
    ro = backend.refusing()
    writes = {
        "log_query": lambda: log(ro.usage),
        "log_outcome": lambda: ro.usage.log_outcome(at=T0, skill_id="s:a", name="a", worked=True, note="",
                                                    query_id=None, client=None),
        "prune": lambda: ro.usage.prune("9999"),
        "learning.add": lambda: learn(ro.learning),
        "learning.forget": lambda: ro.learning.forget(),
        "judge.add": lambda: ro.judge.add(at=T0, query_id=None, mode="auto", backend="b", model="m", status="ok",
                                          latency_ms=1.0, candidates=1, invented=0, pick=None, verdicts=[]),
    }
    for what, call in writes.items():
        with pytest.raises(StoreError) as e:
            call()
        assert e.value.fix, what
        if backend.kind == "postgres":
            assert e.value.write_failure == "no permission to write the database", what
    # nothing was half-written, and reads still answer
    assert ro.usage.recent_counts(10) == {"s:a": 1}
    assert len(ro.usage.queries_since("0000")) == 1
    assert ro.learning.state() == ("1", "0")
    assert len(backend.shared.learning.since("0000")) == 1


def test_an_overlay_the_store_refuses_changes_nothing(indexed):
    sid = indexed.lib.get("cors-fix").id
    ro = indexed.refusing()
    with pytest.raises(StoreError) as e:
        ro.overlays.update(sid, {"status": "deprecated"}, at=T0)
    assert e.value.fix
    assert indexed.shared.overlays.get(sid) is None
    assert index_row(indexed.lib.store, sid) == (1, None)
    assert indexed.lib.store.db.execute("SELECT COUNT(*) FROM overlay").fetchone()[0] == 0


# --- what only the team store does ------------------------------------------------------
def pg_only(backend) -> None:
    if backend.kind != "postgres":
        pytest.skip("the team store's own behaviour")


def test_open_shared_gives_the_team_store_for_a_postgresql_url(backend):
    from skillshelf.store.pg_usage import PgUsageLog

    if backend.kind == "sqlite":
        assert backend.shared.team is None
        return
    assert isinstance(backend.shared.usage, PgUsageLog)
    parts = {id(backend.shared.usage.pg), id(backend.shared.usage_reads.pg), id(backend.shared.learning.pg),
             id(backend.shared.judge.pg), id(backend.shared.overlays.pg)}
    assert parts == {id(backend.shared.team)}          # one pool for all of it
    backend.shared.close()
    assert backend.shared.team.pool.closed


def test_changes_of_overlays_and_learning_are_on_the_change_stream(indexed):
    pg_only(indexed)
    pg = indexed.pg
    start = pg.last_change()
    sid = indexed.lib.get("cors-fix").id
    indexed.shared.overlays.update(sid, {"status": "deprecated"}, at=T0)
    learn(indexed.shared.learning, "cors-fix")
    indexed.shared.learning.forget(client="nobody")          # nothing deleted: no change
    indexed.shared.learning.forget()
    assert [(k, key) for _, k, key in pg.changes_after(start)] == [
        ("overlay", sid), ("learning", "cors-fix"), ("learning", "*")]


def test_refresh_brings_another_servers_overlay_into_this_index(indexed):
    pg_only(indexed)
    lib = indexed.lib
    sid, old = lib.get("cors-fix").id, lib.get("old-one").id
    # another server, its own local index
    root2 = indexed.tmp / "home2"
    lib2 = Library(home=root2, roots=[indexed.tmp / "root"], embedder=FakeEmbedder(), auto_sync=False)
    lib2.sync()
    try:
        there = open_shared(SimpleNamespace(store=indexed.url), lib2.store)
        there.overlays.update(sid, {"status": "deprecated", "reason": "r"}, at=T0)
        there.close()
        assert index_row(lib.store, sid) == (1, None)            # not applied here yet
        gen = lib.store.get_meta("generation")
        assert indexed.shared.overlays.refresh([sid, old]) == [sid]
        assert index_row(lib.store, sid) == (0, None) and lib.get("cors-fix").overlay["reason"] == "r"
        assert lib.store.get_meta("generation") != gen
        assert indexed.shared.overlays.refresh() == []            # up to date: nothing changes
        # a server that starts later takes every overlay in before its first sync
        lib3 = Library(home=indexed.tmp / "home3", roots=[indexed.tmp / "root"], embedder=FakeEmbedder(),
                       auto_sync=False)
        try:
            third = open_shared(SimpleNamespace(store=indexed.url), lib3.store)
            assert lib3.store.db.execute("SELECT status FROM overlay WHERE skill_id = ?", (sid,)).fetchone()[0] \
                == "deprecated"
            lib3.sync()
            assert index_row(lib3.store, sid)[0] == 0
            third.close()
        finally:
            lib3.close()
    finally:
        lib2.close()


def test_a_connection_cut_during_a_request_is_one_clear_error_then_it_works(backend):
    pg_only(backend)
    import psycopg

    learning = backend.shared.learning
    learn(learning)
    pg = backend.pg
    holder = pg.pool.getconn()       # holds the counter's row lock: the next add waits on it
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT value FROM meta WHERE key = 'learned_generation' FOR UPDATE")
        errors: list[BaseException] = []

        def add() -> None:
            try:
                learn(learning, "cut")
            except BaseException as exc:   # noqa: BLE001 -- looked at below
                errors.append(exc)

        t = threading.Thread(target=add)
        t.start()
        deadline = time.monotonic() + 10
        pid = None
        with psycopg.connect(backend.url, autocommit=True) as admin:    # (a transaction's view is frozen)
            while pid is None and time.monotonic() < deadline:
                row = admin.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                    " AND query LIKE %s", ("%INSERT INTO meta%",)).fetchone()
                pid = row[0] if row else None
                time.sleep(0.05)
            assert pid is not None
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        t.join(10)
        holder.execute("ROLLBACK")
    finally:
        pg.pool.putconn(holder)
    assert len(errors) == 1 and isinstance(errors[0], StoreError)
    assert "failed during this request" in errors[0].message and "try again" in errors[0].fix
    assert [r["name_key"] for r in learning.since("0000")] == ["cors-fix"]     # nothing half-written
    learn(learning, "after")                                                   # and the next one works
    assert learning.state()[0] == "2"


def test_team_usage_rows_are_append_only_but_prune_works(pg_url):
    """As in the local store: an UPDATE or DELETE of a usage row is refused by the database
    itself; the retention command still deletes old rows."""
    import psycopg

    from skillshelf.store.pg_usage import PgUsageLog
    from skillshelf.store.postgres import PgStore

    pg = PgStore(pg_url)
    try:
        log = PgUsageLog(pg)
        log.log_query(at="2020-01-01T00:00:00+00:00", text="old", text_hash="h", mode="find", filters={},
                      client=None, confident=False, degraded=False, n_hits=0, latency_ms=1.0, recommended=[])
        for sql in ("UPDATE queries SET text = 'x'", "DELETE FROM queries"):
            with pytest.raises(psycopg.Error, match="append-only"):
                with psycopg.connect(pg_url, autocommit=True) as conn:
                    conn.execute(sql)
        assert log.prune("2021-01-01") == 1
    finally:
        pg.close()
