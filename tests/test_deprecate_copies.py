"""Deprecating a name means the skill: every copy of it leaves search, and a name with copies
is never silently one of them (issue 31, item 1). Checked with the console script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_skill
from test_cli_entry import sk

CHANGELOG = ("Write a changelog from git commits, grouping feat and fix commits by release and link each "
             "pull request")
CHANGELOG_BODY = "# Changelog automation\n\nRun git log between two tags and group the commits by type.\n"


@pytest.fixture
def two_collections(tmp_path: Path) -> dict:
    """A library over two read-only collections that both hold ``changelog-automation`` (the
    same text), and one that holds a spaced copy of its name."""
    home = tmp_path / "home"
    assert sk("init", home=home).returncode == 0
    a, b = tmp_path / "col-a", tmp_path / "col-b"
    write_skill(a, "skills/changelog-automation", description=CHANGELOG, body=CHANGELOG_BODY)
    write_skill(b, "changelog-automation", description=CHANGELOG, body=CHANGELOG_BODY)
    write_skill(b, "other/Changelog Automation", name="Changelog Automation", description=CHANGELOG,
                body=CHANGELOG_BODY)
    write_skill(a, "skills/release-notes", description="Draft release notes for a version from merged pull "
                                                       "requests", body="# Release notes\n\nList the PRs.\n")
    for root in (a, b):
        assert sk("roots", "add", str(root), home=home).returncode == 0
    assert sk("sync", home=home).returncode == 0
    return {"home": home}


def _search(home: Path, query: str) -> list[dict]:
    p = sk("search", query, "--json", "--no-log", home=home)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["hits"]


def _ids(home: Path) -> dict[str, dict]:
    p = sk("list", "--json", home=home)
    assert p.returncode == 0, p.stderr
    return {d["id"]: d for d in json.loads(p.stdout)}


# --- 1. deprecating a name means the skill: every copy ----------------------------------------

def test_deprecate_by_name_takes_every_copy_out_of_search(two_collections):
    home = two_collections["home"]
    hits = _search(home, "write a changelog from git commits")
    first = next(h for h in hits if h["name"].lower().replace(" ", "-") == "changelog-automation")
    assert first["copies"] == 3
    p = sk("deprecate", "changelog-automation", "--reason", "we use release-please now", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "3 copies" in p.stdout, p.stdout
    inactive = {i for i, d in _ids(home).items() if not d["active"]}
    assert len(inactive) == 3, inactive
    hits = _search(home, "write a changelog from git commits")
    assert all(h["name"].lower().replace(" ", "-") != "changelog-automation" for h in hits), hits
    assert not any(set(h.get("copy_ids") or []) & inactive for h in hits), hits
    # restore by name undoes it for every copy, and says how many
    p = sk("restore", "changelog-automation", home=home)
    assert p.returncode == 0, p.stderr
    assert "3 copies" in p.stdout, p.stdout
    assert all(d["active"] for d in _ids(home).values())


def test_deprecate_by_id_stays_exact(two_collections):
    home = two_collections["home"]
    target = next(i for i, d in _ids(home).items() if d["name"] == "changelog-automation")
    p = sk("deprecate", target, "--reason", "this copy is stale", home=home)
    assert p.returncode == 0, p.stderr
    assert [i for i, d in _ids(home).items() if not d["active"]] == [target]


def test_delete_and_extend_ttl_by_a_name_with_copies_refuse_and_list_the_ids(two_collections):
    home = two_collections["home"]
    ids = sorted(i for i, d in _ids(home).items() if "changelog" in d["name"].lower())
    for args in (("delete", "changelog-automation", "--yes"), ("extend-ttl", "changelog-automation", "30")):
        p = sk(*args, home=home)
        assert p.returncode == 1 and "Traceback" not in p.stderr, (args, p.stderr)
        assert all(i in p.stderr for i in ids), p.stderr
    assert all(d["expires_on"] is None for d in _ids(home).values())



def test_extend_ttl_by_name_pushes_every_copy_that_expires(tmp_path):
    home, a, b = tmp_path / "home", tmp_path / "col-a", tmp_path / "col-b"
    ttl = "metadata:\n  ttl-days: \"30\"\n  last-modified: \"2026-01-01\"\n"
    write_skill(a, "release-notes", description="Draft release notes from merged pull requests", extra=ttl)
    write_skill(b, "release-notes", description="Draft release notes from merged pull requests", extra=ttl)
    write_skill(b, "other/release-notes", name="Release Notes", description="Release notes, never expiring")
    assert sk("init", home=home).returncode == 0
    for root in (a, b):
        assert sk("roots", "add", str(root), home=home).returncode == 0
    p = sk("extend-ttl", "release-notes", "90", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "2 copies" in p.stdout, p.stdout
    exp = {d["id"]: d["expires_on"] for d in _ids(home).values() if "release" in d["name"].lower()}
    assert len({v for k, v in exp.items() if k.endswith(":release-notes")}) == 1     # both pushed alike
    assert all(v and v > "2026-06-01" for k, v in exp.items() if k.endswith(":release-notes")), exp
    assert exp[next(k for k in exp if "other" in k)] is None                          # never given one


def test_a_deprecated_copy_is_not_offered_as_another_place_to_read_a_hit(tmp_path):
    from conftest import write_skill

    from skillshelf import Library

    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        write_skill(root, "zebra-grooming", description="groom a zebra's mane and stripes")
    lib = Library(home=tmp_path / "h", roots=[a, b], embedder="none", auto_sync=False)
    lib.sync()
    hit = lib.search("groom a zebra mane", log=False).hits[0]
    assert hit.copies == 2 and len(hit.copy_ids) == 1
    other = hit.copy_ids[0]
    lib.deprecate(other, "an old mirror")
    assert not lib.get(other).active
    hit = lib.search("groom a zebra mane", log=False).hits[0]
    assert hit.id != other and other not in hit.copy_ids
