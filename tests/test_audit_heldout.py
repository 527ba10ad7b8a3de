"""The audit on skills its rules were not written against (tests/fixtures/audit/).

``tuning/`` is the set the rules were developed on. ``heldout-v1`` to ``-v22`` were each measured
once against the rules of their day, by the rules' writer not having read them, and then used to
improve the rules: they are seen now. ``heldout/`` (the twenty-third) is the newest: written after the
rules' last change by someone who read neither the rules nor the fixtures, measured once, and
not used to tune them (while no such set exists, its tests are skipped).
The goal (issue 35): at least 90 % of the hostile skills medium or above, 75 % high, and no
benign look-alike high. The seen sets must keep meeting it; the newest set is held to what it
measured (a rule that regresses fails here), and its goal is an expected failure that turns into
a failure when it starts passing, so the numbers get updated. The sets are audited as the library
audits them by default: the rules and the learned model of intent over the bundled MiniLM model.
See BENCHMARKS.md, "The audit on skills it has never seen"."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.supply.file_audit import risk, severity_at_least
from skillshelf.supply.intent_model import SentenceModel
from skillshelf.supply.skill_audit import audit_folder

FIXTURES = Path(__file__).parent / "fixtures" / "audit"
SEEN = ("tuning", "heldout-v1", "heldout-v2", "heldout-v3", "heldout-v4", "heldout-v5", "heldout-v6", "heldout-v7",
        "heldout-v8", "heldout-v9", "heldout-v10", "heldout-v11", "heldout-v12", "heldout-v13", "heldout-v14",
        "heldout-v15", "heldout-v16", "heldout-v17", "heldout-v18", "heldout-v19", "heldout-v20", "heldout-v21",
        "heldout-v22")
NEWEST = FIXTURES / "heldout"
# what heldout/ measured with the rules it was written after (BENCHMARKS.md), set when the set is added
NEWEST_FLOOR = {"medium": 47, "high": 44}     # the twenty-third set, 52 hostile: 90.4 % and 84.6 % (60a1936)
NEWEST_BENIGN_HIGH: set[str] = set()
NEWEST_MEETS_GOAL = True     # measured once: its goal test is an expected failure only while it does not
# a seen set that does not meet the goal yet is held to what it measured when it was fresh (the fifteenth, measured
# once with the rules of 26a4cc1 at 87.3 % / 80.0 % and no benign high, meets it since the tenth round; the sixteenth,
# measured once with the rules of 908666e at 81.5 % / 77.8 % and no benign high, meets it since the eleventh;
# the seventeenth, measured once with the rules of f90c157 at 94.5 % / 87.3 % and one benign high, since the twelfth;
# the eighteenth, measured once with the rules of 1e4938e at 83.0 % / 77.4 % and one benign high, since the thirteenth;
# the nineteenth, measured once with the rules of 52b1e40 at 89.1 % / 87.3 % and no benign high, since the fourteenth;
# the twentieth, measured once with the rules of c3cb229 at 88.2 % / 82.4 % and no benign high, since the fifteenth;
# the twenty-first, measured once with the rules of 612c5e3 at 87.8 % / 85.7 % and no benign high, since the sixteenth;
# the twenty-second, measured once with the rules of 7143cf5 at 81.1 % / 79.2 % and one benign high, since the seventeenth)
SEEN_FLOORS: dict[str, tuple[dict[str, int], set[str]]] = {}
no_newest_set = pytest.mark.skipif(not NEWEST.is_dir(),
                                   reason="the next held-out set is written after these rules")


@pytest.fixture(scope="module")
def model() -> SentenceModel:
    from skillshelf.embeddings.minilm import MiniLMEmbedder

    emb = MiniLMEmbedder()
    return SentenceModel(lambda: (emb, None))


def risks(folder: Path, model: SentenceModel) -> dict[str, dict[str, str]]:
    return {part: {d.name: risk(audit_folder(d / "SKILL.md", sentences=model)[0])
                   for d in sorted((folder / part).iterdir())} for part in ("hostile", "benign")}


@pytest.mark.parametrize("name", SEEN)
def test_the_seen_sets_meet_the_goal(name, model):
    r = risks(FIXTURES / name, model)
    hostile, benign = r["hostile"], r["benign"]
    assert len(hostile) >= 27 and len(benign) >= 10
    medium = [k for k, v in hostile.items() if severity_at_least(v, "medium")]
    high = [k for k, v in hostile.items() if v == "high"]
    assert len(medium) >= 0.9 * len(hostile), sorted(set(hostile) - set(medium))
    assert len(high) >= 0.75 * len(hostile), sorted(set(hostile) - set(high))
    assert not [k for k, v in benign.items() if v == "high"]


@pytest.mark.parametrize("name", sorted(SEEN_FLOORS))
def test_a_seen_set_short_of_the_goal_keeps_what_it_measured(name, model):
    floor, benign_high = SEEN_FLOORS[name]
    r = risks(FIXTURES / name, model)
    hostile, benign = r["hostile"], r["benign"]
    assert sum(severity_at_least(v, "medium") for v in hostile.values()) >= floor["medium"]
    assert sum(v == "high" for v in hostile.values()) >= floor["high"]
    assert {k for k, v in benign.items() if v == "high"} <= benign_high


@no_newest_set
def test_the_newest_held_out_set_keeps_what_it_measured(model):
    r = risks(NEWEST, model)
    hostile, benign = r["hostile"], r["benign"]
    assert len(hostile) >= 30 and len(benign) >= 15
    assert sum(severity_at_least(v, "medium") for v in hostile.values()) >= NEWEST_FLOOR["medium"]
    assert sum(v == "high" for v in hostile.values()) >= NEWEST_FLOOR["high"]
    assert {k for k, v in benign.items() if v == "high"} <= NEWEST_BENIGN_HIGH


@no_newest_set
@pytest.mark.xfail(not NEWEST_MEETS_GOAL, strict=True, reason="not met on a set the rules have not seen (BENCHMARKS.md)")
def test_the_newest_held_out_set_meets_the_goal(model):
    r = risks(NEWEST, model)
    hostile, benign = r["hostile"], r["benign"]
    assert sum(severity_at_least(v, "medium") for v in hostile.values()) >= 0.9 * len(hostile)
    assert sum(v == "high" for v in hostile.values()) >= 0.75 * len(hostile)
    assert not [k for k, v in benign.items() if v == "high"]


def test_pytest_never_loads_a_fixtures_conftest(pytestconfig):
    """The sets hold hostile skills, some with a ``conftest.py`` of their own (one runs a decoded
    payload in ``pytest_configure``): a run over ``tests/`` must never collect them."""
    assert "fixtures" in pytestconfig.getini("norecursedirs")
    assert [p for p in FIXTURES.rglob("conftest.py")], "the sets hold a conftest.py: this guard has something to do"
    loaded = [getattr(m, "__file__", "") or "" for m in pytestconfig.pluginmanager.get_plugins()]
    assert not [f for f in loaded if str(FIXTURES) in f]
