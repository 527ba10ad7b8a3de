"""A short run of the robustness benches (bench/robustness/): concurrent writers through MCP
stdio servers and the CLI, and the quick selection of adversarial inputs through the CLI,
MCP and HTTP. The full runs and their figures: bench/robustness/*.py --help."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "robustness"
sys.path.insert(0, str(BENCH))

import adversarial  # noqa: E402
import concurrency  # noqa: E402


@pytest.fixture(scope="module")
def conc():
    """3 MCP stdio servers (half by name, half by id) and the CLI writing for 8 s."""
    res = concurrency.run(servers=3, seconds=8, seed=11, call_timeout=30, quiet=True)
    yield res


def _why(res) -> str:
    return concurrency.summary(res)


def test_concurrency_ran(conc):
    assert conc.started == 3
    acked = [o for o in conc.ops if o.status == "ok" and o.kind != "SEARCH"]
    assert len(acked) >= 20, _why(conc)
    assert {o.by for o in acked} == {"name", "id"}


def test_concurrency_loses_no_acknowledged_change(conc):
    assert conc.lost == 0, _why(conc)


def test_concurrency_reports_failed_only_what_did_not_happen(conc):
    assert conc.failed_but_written == 0, _why(conc)


def test_concurrency_versions_unique_and_contiguous(conc):
    c = conc.checks
    assert c["acknowledged_versions_duplicated"] == 0, _why(conc)
    assert c["fix_version_holds_other_text"] == 0, _why(conc)
    assert c["history_gaps"] == 0 and c["file_not_newest_history"] == 0, _why(conc)
    assert c["changelog_duplicate_versions"] == 0, _why(conc)


def test_concurrency_files_parse_and_index_agrees(conc):
    c = conc.checks
    assert c["unparsable_files"] == 0, _why(conc)
    assert c["doctor_ok"] and c["index_matches_files"] and c["index_version_mismatch"] == 0, _why(conc)


def test_concurrency_no_tracebacks(conc):
    assert conc.tracebacks == 0, _why(conc)


@pytest.fixture(scope="module")
def adv():
    """The quick selection: about 60 hostile steps over every category but the disk ones."""
    return adversarial.run(quick=True, seed=11, quiet=True)


def _adv_why(res) -> str:
    return adversarial.summary(res, details=40)


def test_adversarial_ran(adv):
    assert adv.count("cases") >= 50, _adv_why(adv)
    assert {"cli", "mcp", "http"} <= set(adv.by_channel())


def test_adversarial_no_tracebacks(adv):
    assert adv.count("tracebacks") == 0, _adv_why(adv)


def test_adversarial_no_hangs(adv):
    assert adv.count("hangs") == 0, _adv_why(adv)


def test_adversarial_no_writes_outside_the_home(adv):
    assert adv.count("outside") == 0, _adv_why(adv)


def test_adversarial_no_data_lost(adv):
    assert adv.count("lost") == 0, _adv_why(adv)


def test_adversarial_clear_outcomes(adv):
    """Hostile writes refused with a short message, bad files reported while the rest is
    indexed, reads working."""
    assert adv.count("wrong") == 0, _adv_why(adv)
