"""``migrate-store`` copies every skill the local library holds back from agents, with its origin
(a real PostgreSQL, the console script, an agent over a real MCP client): a skill imported held,
in no pinned root, is held on every server of the team until a person trusts it there, by its
content key and name as at home; a second run copies nothing twice."""

from __future__ import annotations

from pathlib import Path

from test_held_restore import SECRET, agent_reads, ok, sk, skill, status
from test_migrate_store import rows
from test_team_lock_holds import team_held, team_ok, team_reads


def _counts(stdout: str, kind: str) -> tuple[int, int]:
    for line in stdout.splitlines():
        parts = line.rsplit(None, 2)
        if len(parts) == 3 and parts[0].strip() == kind:
            return int(parts[1]), int(parts[2])
    raise AssertionError(f"no {kind} line in:\n{stdout}")


def test_an_imported_hold_outside_the_pinned_roots_reaches_the_team(tmp_path: Path, pg_url):
    exporter, here, server = tmp_path / "exporter", tmp_path / "here", tmp_path / "server"
    coll = tmp_path / "coll"
    skill(coll, "alpha", "Step one: list the widgets.")
    skill(coll, "beta", "Run the gizmo deploy.")
    ok(exporter, "sources", "add", str(coll), "--name", "mkt", "--pin")
    skill(exporter / "sources" / "mkt", "alpha", f"Step one: list the widgets.\n\n{SECRET}")
    ok(exporter, "sync")
    ok(exporter, "export", "--all", "--include-held", "--to", str(tmp_path / "held.zip"))
    assert "held here too" in ok(here, "import", str(tmp_path / "held.zip"))
    st = status(here)
    assert st["held"] == 1 and st["pinned"] == []           # held by the import, in no pinned root
    assert agent_reads(here, "alpha")[0]

    r = sk(here, "migrate-store", "--to", pg_url)
    assert r.returncode == 0, r.stdout + r.stderr
    # a server of the team holds it, as the local library did, until a person trusts it there
    assert team_held(server, pg_url) == 1
    refused, text = team_reads(server, pg_url, "alpha")
    assert refused and "EXFILTRATE" not in text and "skillshelf trust alpha" in text
    assert not team_reads(server, pg_url, "beta")[0]
    # with its origin, counted, and copied once
    ((sid, reason, key, name),) = rows(pg_url, "SELECT skill_id, reason, content_key, name FROM pin_held")
    assert (sid, reason, name) == ("workspace:alpha", "imported", "alpha") and len(key) == 64
    assert _counts(r.stdout, "held skills") == (1, 0)
    assert _counts(ok(here, "migrate-store", "--to", pg_url), "held skills") == (0, 1)
    assert "released" in team_ok(server, pg_url, "trust", "alpha", "--yes")
    assert not team_reads(here, pg_url, "alpha")[0]
