"""Arguments on the real console script: a malformed one is a usage error (exit 2, one line
naming the option and the help), a name that starts with '-' is reached with `--`, and
`restore` undoes a deprecation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_skill
from test_cli_entry import one_line, sk


@pytest.fixture
def lib_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    assert sk("init", home=home).returncode == 0
    return home


MALFORMED = [
    (["search", "cors", "-n", "0"], "'--limit' / '-n'", "0 is out of range"),
    (["search", "cors", "--limit", "101"], "'--limit' / '-n'", "use 1 to 100"),
    (["search", "cors", "-n", "-3"], "'--limit' / '-n'", "-3 is out of range"),
    (["search", "cors", "--mode", "bogus"], "'--mode'", "find, brainstorm"),
    (["search", "cors", "--repo-scope", "everywhere"], "'--repo-scope'", "all, current"),
    (["search", "cors", "--judge-mode", "loud"], "'--judge-mode'", "rerank, filter, both"),
    (["search", "cors", "--type", "bogus"], "'--type'", "WORKFLOW"),
    (["list", "--limit", "0"], "'--limit'", "use 1 or more"),
    (["list", "--type", "bogus"], "'--type'", "IMPLEMENTATION"),
    (["report", "--format", "html"], "'--format'", "md, json"),
    (["pick", "-n", "0"], "'-n' / '--limit'", "use 1 to 50"),
]


def test_a_malformed_argument_exits_2_with_one_line_naming_it(lib_home):
    for args, option, words in MALFORMED:
        p = sk(*args, home=lib_home)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        line = one_line(p)
        assert line.startswith(f"error: Invalid value for {option}: "), (args, line)
        assert words in line and line.endswith(f"see `skillshelf {args[0]} --help`"), (args, line)
        assert p.stdout == "", args


def test_well_formed_values_still_work(lib_home, tmp_path):
    """The checks refuse only what is malformed: the bounds themselves, any case of a type,
    and a type that only this library's files use."""
    root = tmp_path / "coll"
    write_skill(root, "incident-runbook", description="What to do when the pager goes off",
                extra="metadata:\n  skill-type: PLAYBOOK\n")
    assert sk("roots", "add", str(root), home=lib_home).returncode == 0
    for args in (["search", "cors", "-n", "1", "--json"], ["search", "cors", "-n", "100", "--mode", "brainstorm",
                                                          "--json"],
                 ["list", "--limit", "1", "--json"], ["list", "--type", "workflow", "--json"],
                 ["report", "--format", "json"]):
        p = sk(*args, home=lib_home)
        assert p.returncode == 0, (args, p.stderr)
        json.loads(p.stdout)
    p = sk("list", "--type", "PLAYBOOK", "--json", home=lib_home)
    assert [s["name"] for s in json.loads(p.stdout)] == ["incident-runbook"]


def test_a_name_that_starts_with_a_hyphen_is_reached_after_double_dash(tmp_path):
    root = tmp_path / "coll"
    write_skill(root, "-21risk-automation", description="Automates risk reviews on the 21risk platform")
    home = tmp_path / "home"
    g = ["--root", str(root)]
    assert sk(*g, "init", "--no-samples", home=home).returncode == 0
    p = sk(*g, "show", "-21risk-automation", home=home)
    assert p.returncode == 2
    line = one_line(p)
    assert line.startswith("error: No such option: -2")
    assert "`skillshelf show -- -21risk-automation`" in line
    # what the message says works
    p = sk(*g, "show", "--", "-21risk-automation", home=home)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("-21risk-automation") and "Automates risk reviews" in p.stdout
    p = sk(*g, "history", "--json", "--", "-21risk-automation", home=home)
    assert p.returncode == 0 and json.loads(p.stdout)["name"] == "-21risk-automation"
    # a mistyped option is not taken for a name
    p = sk(*g, "show", "--sektion", "x", home=home)
    assert p.returncode == 2
    line = one_line(p)
    assert line.startswith("error: No such option: --sektion") and line.endswith("— see `skillshelf show --help`")
    assert "--section" in line and "`--`" not in line


def test_restore_undoes_a_deprecation(lib_home):
    name = "docker-multi-stage-build"
    p = sk("deprecate", name, "--reason", "superseded", home=lib_home)
    assert p.returncode == 0, p.stderr
    assert "status   deprecated: superseded" in sk("show", name, home=lib_home).stdout
    hits = json.loads(sk("search", "multi-stage docker build", "--json", home=lib_home).stdout)["hits"]
    assert name not in [h["name"] for h in hits]
    p = sk("restore", name, "--reason", "still the one we use", home=lib_home)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "" and name in p.stdout
    changelog = json.loads(sk("history", name, "--json", home=lib_home).stdout)["changelog"]
    assert changelog[-1]["reason"] == "still the one we use"
    assert "\nstatus " not in sk("show", name, home=lib_home).stdout
    hits = json.loads(sk("search", "multi-stage docker build", "--json", home=lib_home).stdout)["hits"]
    assert hits and hits[0]["name"] == name
    # a skill that is not deprecated, a name that is not there: one line, exit 1
    p = sk("restore", name, home=lib_home)
    assert p.returncode == 1 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = sk("restore", "no-such-skill", home=lib_home)
    assert p.returncode == 1 and one_line(p).startswith("error: no skill named 'no-such-skill'")


def test_restore_of_a_read_only_root_clears_the_deprecation_kept_in_the_library(tmp_path):
    root = tmp_path / "coll"
    skill_md = write_skill(root, "zebra-care", description="Care for zebras in a small zoo")
    before = skill_md.read_bytes()
    home = tmp_path / "home"
    g = ["--root", str(root)]
    assert sk(*g, "init", "--no-samples", home=home).returncode == 0
    assert sk(*g, "deprecate", "zebra-care", "--reason", "we closed the zoo", home=home).returncode == 0
    assert "deprecated by you" in sk(*g, "show", "zebra-care", home=home).stdout
    p = sk(*g, "restore", "zebra-care", home=home)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "deprecated" not in sk(*g, "show", "zebra-care", home=home).stdout
    hits = json.loads(sk(*g, "search", "zebras", "--json", home=home).stdout)["hits"]
    assert [h["name"] for h in hits] == ["zebra-care"]
    assert skill_md.read_bytes() == before
