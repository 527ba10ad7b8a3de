"""Learning from outcomes: similar requests move, others do not; bounded, decaying, capped per
client, explainable, switchable and undoable."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
from conftest import write_skill
from typer.testing import CliRunner

from skillshelf import Library
from skillshelf.cli import app
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.store.learning import LearningMemory
from skillshelf.usage import learning

SKILLS = {
    "web/cors-fix": "Fix CORS errors in Next.js API routes and preflight OPTIONS requests",
    "ops/docker-build": "Multi-stage Docker builds with cached layers for small images",
    "ops/docker-compose": "Run several Docker containers together with docker compose files",
    "ops/k8s-deploy": "Deploy containers to a Kubernetes cluster with manifests and rollouts",
    "git/commit-style": "Conventional commit messages for changelogs and releases",
    "git/rebase-help": "Rebase a git branch interactively and resolve conflicts",
    "py/pytest-fixtures": "Write pytest fixtures and parametrized tests in Python",
    "py/mypy-types": "Add Python type hints and fix mypy errors",
    "db/sql-index": "Speed up slow SQL queries with the right indexes",
    "db/migrations": "Write safe database schema migrations with rollbacks",
    "docs/readme": "Write a clear README with install and usage sections",
    "sec/secrets-scan": "Find leaked secrets and API keys in a repository",
}


def learned(hit) -> str | None:
    """What outcomes did to a hit, as its ``why`` says (after the ranker's signals), or None."""
    parts = [p for p in (hit.why or "").split("; ") if "similar request" in p]
    return "; ".join(parts) or None


@pytest.fixture
def lib(tmp_path):
    root = tmp_path / "root"
    for rel, desc in SKILLS.items():
        write_skill(root, rel, description=desc, body=f"## Solution\n\n{desc}.\n")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    no_recency = dataclasses.replace(lib.config.search, recency_window=0)
    lib.config = dataclasses.replace(lib.config, search=no_recency)
    lib.searcher.s = no_recency
    lib.sync()
    yield lib
    lib.close()


def names(res) -> list[str]:
    return [h.name for h in res.hits]


def report(lib, query: str, skill: str, worked: bool, client: str, times: int = 1) -> None:
    for _ in range(times):
        res = lib.search(query, client=client)
        lib.report_outcome(skill, worked, query_id=res.query_id, client=client)


def test_worked_reports_promote_for_a_similar_request_and_explain_why(lib):
    q = "docker images are huge, make the build smaller with layers"
    before = names(lib.search(q, log=False))
    target = before[1]
    for c in ("agent-a", "agent-b", "agent-c"):
        report(lib, q, target, True, c)
    res = lib.search("make the docker build smaller, images are huge with layers", log=False)
    assert names(res)[0] == target
    hit = next(h for h in res.hits if h.name == target)
    assert hit.why and learned(hit).startswith("worked for 3 similar requests")
    assert all(learned(h) is None for h in res.hits if h.name != target)


def test_outcomes_move_a_hit_by_places_whatever_the_rankers_scale_of_scores(lib):
    """A ranker whose scores are far apart (here the shipped one with every weight x8: the
    same order, probabilities near 0 and 1) must not stop agreed reports from lifting a skill
    the places they may: a shift of the relative score could not pass such a gap."""
    import dataclasses

    q = "docker images are huge, make the build smaller with layers"
    steep = lib.searcher.ranker
    steep = dataclasses.replace(steep, weights=steep.weights * 8, intercept=steep.intercept * 8)
    lib.searcher.ranker = steep
    q2 = "make the docker build smaller, images are huge with layers"
    hits = lib.search(q2, log=False).hits
    # the third hit, related in meaning (one unrelated, cosine <= 0, never passes a related one:
    # diversity), far below the first two in this model's scores
    target = hits[2].name
    assert hits[2].score > 0
    for c in ("agent-a", "agent-b", "agent-c"):
        report(lib, q, target, True, c)
    after = names(lib.search(q2, log=False))
    assert after[0] == target, ([h.name for h in hits], after)


def test_failed_reports_demote(lib):
    q = "docker images are huge, make the build smaller with layers"
    top = names(lib.search(q, log=False))[0]
    for c in ("a", "b", "c"):
        report(lib, q, top, False, c)
    res = lib.search(q, log=False)
    assert names(res)[0] != top
    assert "failed for 3 similar requests" in next(h.why for h in res.hits if h.name == top)


def test_unrelated_requests_do_not_move(lib):
    q_other = "write pytest fixtures for python tests"
    before = lib.search(q_other, log=False)
    report(lib, "docker images are huge, make the build smaller", "readme", True, "a", times=5)
    after = lib.search(q_other, log=False)
    assert names(after) == names(before)
    assert [h.score for h in after.hits] == [h.score for h in before.hits]
    assert all(learned(h) is None for h in after.hits)


def test_switch_off_gives_the_plain_order(lib):
    q = "docker images are huge, make the build smaller with layers"
    plain = names(lib.search(q, log=False))
    for c in ("a", "b", "c"):
        report(lib, q, plain[3], True, c)
    assert names(lib.search(q, log=False)) != plain
    off = dataclasses.replace(lib.searcher.s, learn_from_outcomes=False)
    lib.searcher.s = off
    res = lib.search(q, log=False)
    assert names(res) == plain and all(learned(h) is None for h in res.hits)


def test_poisoning_from_one_client_stays_out_of_an_unrelated_top_3(lib):
    # 20 false "worked" reports from one client for an irrelevant skill
    report(lib, "find leaked api keys in the repository", "readme", True, "mallory", times=20)
    for q in ("rebase my git branch and resolve conflicts", "deploy containers to kubernetes",
              "fix CORS preflight errors in next.js"):
        assert "readme" not in names(lib.search(q, log=False))[:3]


def test_one_client_is_capped(lib):
    q = "find leaked api keys in the repository"
    report(lib, q, "readme", True, "mallory", times=20)
    emb, _ = lib._embedder_state()
    ev = lib.searcher.learner.evidence(emb.embed(q), emb.model_id, lib.searcher.s)
    rid = lib.store.db.execute("SELECT rowid FROM skills WHERE name='readme'").fetchone()[0]
    s = lib.searcher.s
    cap = s.learning_weight * np.tanh(s.learning_client_cap / 2)
    assert ev[rid].worked == 20 and ev[rid].shift == pytest.approx(cap)
    # many clients saying the same thing count for more, still below learning_weight_agreed
    for c in ("a", "b", "c", "d"):
        report(lib, q, "readme", True, c, times=2)
    ev = lib.searcher.learner.evidence(emb.embed(q), emb.model_id, s)
    assert ev[rid].promoters == 5 and ev[rid].demoters == 0
    assert cap < ev[rid].shift < s.learning_weight_agreed


def test_clients_that_agree_weigh_more_than_one_client_can(lib):
    """One client's reports, however many, stay below learning_weight; a second client
    saying the same thing raises the weight towards learning_weight_agreed; a client that
    disagrees lowers the net, and the remaining agreement still counts."""
    q = "find leaked api keys in the repository"
    emb, _ = lib._embedder_state()
    s = lib.searcher.s
    rid = lib.store.db.execute("SELECT rowid FROM skills WHERE name='readme'").fetchone()[0]

    def shift():
        return lib.searcher.learner.evidence(emb.embed(q), emb.model_id, s)[rid]

    report(lib, q, "readme", True, "a", times=5)
    alone = shift().shift
    assert 0 < alone < s.learning_weight
    report(lib, q, "readme", True, "b")
    two = shift()
    assert two.shift > s.learning_weight and two.promoters == 2
    assert two.shift == pytest.approx(s.learning_weight_agreed * np.tanh((s.learning_client_cap + 1) / 2))
    report(lib, q, "readme", False, "c")
    mixed = shift()
    assert mixed.demoters == 1 and mixed.shift == pytest.approx(s.learning_weight_agreed
                                                                 * np.tanh(s.learning_client_cap / 2))
    # demotion works the same way: one client's "failed" is a hint, two clients' a verdict
    lib.forget_learning(everything=True)
    report(lib, q, "readme", False, "a")
    one_failed = shift().shift
    report(lib, q, "readme", False, "b")
    assert -s.learning_weight < one_failed < 0 and shift().shift < -s.learning_weight


def test_reports_decay_with_time(lib):
    emb, _ = lib._embedder_state()
    q = emb.embed("speed up slow sql queries")
    rid = lib.store.db.execute("SELECT rowid, id FROM skills WHERE name='sql-index'").fetchone()
    s = lib.searcher.s
    learning.learn_into(LearningMemory(lib.store), outcome_id=1, skill_id=rid[1], name="sql-index", worked=True,
                        client="a", query_id=1, request="x", model_id=emb.model_id, vector=q,
                        at="2026-01-01T00:00:00+00:00")
    fresh = lib.searcher.learner.evidence(q, emb.model_id, s, at="2026-01-01T00:00:00+00:00")[rid[0]].shift
    later = lib.searcher.learner.evidence(q, emb.model_id, s, at="2026-04-01T00:00:00+00:00")[rid[0]].shift
    assert later == pytest.approx(s.learning_weight * np.tanh(0.5 * (0.5 ** (90 / s.learning_half_life_days))),
                                  rel=1e-6)
    assert 0 < later < fresh


def test_forget_undoes_learning_and_keeps_the_log(lib):
    q = "docker images are huge, make the build smaller with layers"
    plain = names(lib.search(q, log=False))
    for c in ("a", "b", "c"):
        report(lib, q, plain[3], True, c)
    assert names(lib.search(q, log=False)) != plain
    assert lib.learned(plain[3])["worked"] == 3
    assert lib.forget_learning(skill=plain[3], client="b") == 1
    assert lib.forget_learning(skill=plain[3]) == 2
    assert names(lib.search(q, log=False)) == plain
    assert lib.store.db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] == 3
    with pytest.raises(Exception):
        lib.forget_learning()


def test_report_without_query_id_is_not_learned(lib):
    out = lib.report_outcome("readme", True)
    assert out["learned"] is False
    assert lib.store.db.execute("SELECT COUNT(*) FROM learned").fetchone()[0] == 0


def test_hashed_queries_learn_from_the_kept_vector(tmp_path):
    root = tmp_path / "r"
    for rel, desc in list(SKILLS.items())[:4]:
        write_skill(root, rel, description=desc)
    lib = Library(home=tmp_path / "h", roots=[root], embedder=FakeEmbedder(), auto_sync=False, hash_queries=True)
    lib.sync()
    res = lib.search("docker compose for several containers")
    assert lib.report_outcome("docker-compose", True, query_id=res.query_id)["learned"] is True
    row = lib.store.db.execute("SELECT request FROM learned").fetchone()
    assert row[0] is None   # the text is not kept when queries are hashed
    lib.close()


def test_report_and_cli_show_what_learning_changed(lib, tmp_path, monkeypatch):
    q = "speed up slow sql queries"
    report(lib, q, "sql-index", True, "a", times=2)
    report(lib, q, "migrations", False, "a")
    md = lib.usage_report()
    assert "## What learning changed" in md
    assert "**sql-index** promoted — worked 2, failed 0" in md and "for: speed up slow sql queries" in md
    assert "**migrations** demoted" in md
    data = json.loads(lib.usage_report(fmt="json"))
    assert data["learning"][0]["name"] == "sql-index"

    runner = CliRunner()
    home = lib.config.home
    root = str(lib.config.roots[0])
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    r = runner.invoke(app, ["--home", str(home), "--root", root, "show", "sql-index"])
    assert r.exit_code == 0, r.output
    assert "learned  worked for 2 requests, failed for 0 (1 client)" in r.output
    r = runner.invoke(app, ["--home", str(home), "--root", root, "usage", "forget", "sql-index"])
    assert r.exit_code == 0, r.output
    assert "forgot 2 learned reports" in r.output
    r = runner.invoke(app, ["--home", str(home), "--root", root, "usage", "forget"])
    assert r.exit_code != 0
    r = runner.invoke(app, ["--home", str(home), "--root", root, "usage", "forget", "--all"])
    assert r.exit_code == 0 and "forgot 1 learned report" in r.output


def test_outcomes_of_similar_requests_decide_confidence(lib):
    q = "speed up slow sql queries"
    res = lib.search(q, log=False)
    top3 = [h.name for h in res.hits[:3]]
    for name in top3:
        for c in ("a", "b"):
            report(lib, q, name, False, c)
    assert lib.search(q, log=False).confident is False
    lib.forget_learning(everything=True)
    for c in ("a", "b"):
        report(lib, q, top3[0], True, c)
    assert lib.search(q, log=False).confident is True


def test_the_memory_reads_new_reports_and_rereads_after_forget(lib):
    q = "speed up slow sql queries"
    emb, _ = lib._embedder_state()
    rid = lib.store.db.execute("SELECT rowid FROM skills WHERE name='sql-index'").fetchone()[0]
    s = lib.searcher.s
    for n in (1, 2, 3):
        report(lib, q, "sql-index", True, f"c{n}")
        assert lib.searcher.learner.evidence(emb.embed(q), emb.model_id, s)[rid].worked == n
    lib.forget_learning(client="c2")
    assert lib.searcher.learner.evidence(emb.embed(q), emb.model_id, s)[rid].worked == 2
    report(lib, q, "sql-index", False, "c4")
    ev = lib.searcher.learner.evidence(emb.embed(q), emb.model_id, s)[rid]
    assert (ev.worked, ev.failed) == (2, 1)


def test_an_embedder_failure_keeps_the_outcome_unlearned(lib, monkeypatch):
    from skillshelf.errors import EmbedderError

    res = lib.search("speed up slow sql queries")
    # the report comes from another process: it has not kept the request's vector, so it
    # must embed the request again, and its model fails
    other = Library(home=lib.config.home, roots=lib.config.roots, embedder=FakeEmbedder(), auto_sync=False)
    emb, _ = other._embedder_state()

    def boom(text):
        raise EmbedderError("model gone", fix="none")

    monkeypatch.setattr(emb, "embed", boom)
    out = other.report_outcome("sql-index", True, query_id=res.query_id)
    assert out["learned"] is False and out["reports"] == 1
    other.close()


def test_one_client_lifts_a_skill_at_most_three_places(lib):
    q = "docker images are huge, make the build smaller with layers"
    plain = names(lib.search(q, log=False))
    low = plain[8]
    report(lib, q, low, True, "mallory", times=20)
    res = lib.search(q, log=False)
    assert 8 - lib.searcher.s.learning_max_lift <= names(res).index(low) < 8
    said = learned(next(h for h in res.hits if h.name == low))
    # it says how far it moved: places among the related hits (diversity may then reorder a few)
    assert re.fullmatch(r"worked for 20 similar requests \(up [1-3] places?\)", said), said


def test_why_says_when_outcomes_could_not_move_a_hit(lib):
    """A first hit reported working has nowhere to go: its ``why`` says it kept its place,
    not that it was promoted; a demoted one says how far it fell."""
    q = "docker images are huge, make the build smaller with layers"
    plain = names(lib.search(q, log=False))
    report(lib, q, plain[0], True, "alice")
    report(lib, q, plain[1], False, "alice")
    res = lib.search(q, log=False)
    hit = {h.name: h for h in res.hits}
    assert learned(hit[plain[0]]) == "worked for 1 similar request (kept its place: already first)"
    assert re.fullmatch(r"failed for 1 similar request \(down [1-9] places?\)", learned(hit[plain[1]]) or ""), \
        learned(hit[plain[1]])


def test_usage_and_learning_services_are_built_from_their_parts(lib):
    """``Usage`` and ``Learning`` get what they need in their constructors (the logs, the
    embedder, a name resolver): neither imports the other, nor the library."""
    import inspect

    from skillshelf.store.skill_refs import SkillRefs
    from skillshelf.store.usage import UsageLog
    from skillshelf.usage import log as usage

    for module in (usage, learning):
        src = inspect.getsource(module)
        assert "import Library" not in src and "from .library" not in src
    assert "from .usage" not in inspect.getsource(learning) and "import usage" not in inspect.getsource(learning)
    refs = SkillRefs(lib.store)
    log = UsageLog(lib.store)
    svc = learning.Learning(LearningMemory(lib.store), query=log.query, embedder=lib._embedder_state,
                            resolve=lib.get, names=refs.names)
    use = usage.Usage(log, skills=refs.all, learned=svc.changes)
    q = "speed up slow sql queries"
    res = lib.search(q, log=False)
    qid = use.log_query(text=q, mode="find", filters={}, client="a", confident=True, degraded=False,
                        hits=res.hits, latency_ms=1.0, hash_text=False)
    sid = lib.get("sql-index").id
    oid = use.log_outcome(skill_id=sid, name="sql-index", worked=True, note="", query_id=qid, client="a")
    assert svc.learn_outcome(oid, sid, "sql-index", True, qid, "a") is True
    assert svc.learned("sql-index")["worked"] == 1
    st = use.stats()
    assert st.reports == 1 and st.learning[0]["name"] == "sql-index" and st.learning[0]["direction"] == "promoted"
    assert use.skill_usage(sid, "sql-index").worked == 1
    assert svc.forget(skill="sql-index") == 1 and use.stats().learning == []


def test_clients_that_agree_compound_one_client_does_not(tmp_path):
    """One client lifts a skill at most learning_max_lift places; three clients that agree lift
    it up to learning_max_lift x 9: a skill 12 places down among related hits reaches the top."""
    root = tmp_path / "root"
    for i in range(30):
        write_skill(root, f"d{i:02d}", description=f"docker build cache layers variant {i} with extra words {i}")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    q = "docker build cache layers"
    hits = lib.search(q, limit=30, log=False).hits
    assert all(h.score > 0 for h in hits[:14])      # all related in meaning: places count among them
    target = hits[12].name
    report(lib, q, target, True, "agent-a", times=5)
    alone = names(lib.search(q, limit=30, log=False))
    assert alone.index(target) >= 12 - lib.searcher.s.learning_max_lift
    for c in ("agent-b", "agent-c"):
        report(lib, q, target, True, c)
    assert names(lib.search(q, limit=30, log=False))[0] == target
