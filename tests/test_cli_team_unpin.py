"""`skillshelf unpin` on a team store (a real PostgreSQL): the pin is the whole team's, so the
command says so and asks first (or takes --yes); a local library's unpin does not ask."""

from __future__ import annotations

from conftest import write_skill
from test_cli_entry import one_line, sk

from skillshelf import Library


def test_unpin_on_a_team_store_says_it_is_the_whole_teams_and_asks(tmp_path, pg_url):
    coll = tmp_path / "teamroot"
    write_skill(coll, "deploy", description="Deploy the web app to the staging server", body="## Steps\n\nTag it.\n")
    home = tmp_path / "home"
    assert sk("--store", pg_url, "roots", "add", str(coll), home=home).returncode == 0
    assert sk("--store", pg_url, "sync", home=home).returncode == 0
    p = sk("--store", pg_url, "pin", "teamroot", home=home)
    assert p.returncode == 0, p.stdout + p.stderr

    # no terminal to ask on: nothing is unpinned, and the line says why and what to pass
    p = sk("--store", pg_url, "unpin", "teamroot", home=home)
    line = one_line(p)
    assert p.returncode == 1 and "not unpinned" in line and "--yes" in line and "whole team" in line
    assert "pinned for the whole team" in p.stdout
    with Library(home=home, store=pg_url, auto_sync=False) as lib:
        assert [r["root"] for r in lib.supply.pinned_roots()] == ["teamroot"]

    p = sk("--store", pg_url, "unpin", "teamroot", "--yes", home=home)
    assert p.returncode == 0 and p.stdout.splitlines()[-1] == "unpinned teamroot for the whole team", p.stdout
    with Library(home=home, store=pg_url, auto_sync=False) as lib:
        assert lib.supply.pinned_roots() == []
