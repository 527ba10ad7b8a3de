"""A team store that is not there, as a person meets it: a database without skillshelf's
schema (a typo in its name) is refused by every command but ``migrate-store``, in one line
naming the database and the fix, and nothing in the home moves; a store URL with ``@`` or
``#`` written into its password is refused with the percent-encoding to use, and never
shown in part; ``doctor`` with PostgreSQL down runs the checks that need no store and fails
the store's; doctor names what a team server moved aside; the MCP server's look for changes
says a store that went away in one line, and once more when it is back."""

from __future__ import annotations

import logging
import socket
import threading

import pytest
from teamlib import BODY, team_library
from test_cli_entry import one_line, sk


def other_database(pg_cluster) -> str:
    import pgcluster

    return pgcluster.new_database_from_env() if pg_cluster is None else pg_cluster.new_database()


def tables(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]


def files(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_database_without_the_schema_is_refused_by_a_read_and_the_home_stays(tmp_path, pg_url, pg_cluster):
    home = tmp_path / "member"
    lib = team_library(home, pg_url)
    try:
        lib.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    finally:
        lib.close()
    before = files(home / "team")
    typo = other_database(pg_cluster)
    for command in (["search", "cors"], ["list"], ["tokens", "list"], ["serve"]):
        p = sk("--store", typo, *command, home=home, env={"SKILLSHELF_TOKEN": "t" * 32})   # serve asks for one
        line = one_line(p)
        assert p.returncode == 1, (command, p.stderr)
        assert "no skillshelf team store" in line and typo.rsplit("/", 1)[1] in line, line
        assert "migrate-store --upgrade" in line
        assert files(home / "team") == before, command        # nothing moved aside, nothing written
        assert tables(typo) == 0                              # and no schema made
    # the command that makes a team store makes it
    p = sk("--store", typo, "migrate-store", "--upgrade", home=tmp_path / "owner")
    assert p.returncode == 0, p.stderr
    assert tables(typo) > 0


def test_a_member_of_one_team_pointed_at_another_says_so_and_keeps_its_copy_aside(tmp_path, pg_url, pg_cluster):
    import pgcluster

    home = tmp_path / "member"
    lib = team_library(home, pg_url)
    try:
        lib.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    finally:
        lib.close()
    other = pgcluster.with_schema(other_database(pg_cluster))
    p = sk("--store", other, "list", home=home)
    assert p.returncode == 0, p.stderr
    said = [line for line in p.stderr.splitlines() if "team" in line]
    assert len(said) == 1 and "came from another team store" in said[0], p.stderr
    [kept] = (home / "team" / "set-aside").iterdir()
    assert kept.name.endswith("-another-store") and (kept / "workspace" / "cors-fix" / "SKILL.md").is_file()
    assert "cors-fix" not in p.stdout
    p = sk("--store", other, "doctor", home=home)
    assert "another-store/workspace" in p.stdout
    # back to its own team: the copy of that team is set aside in turn, said once; the same store again says nothing
    p = sk("--store", pg_url, "list", home=home)
    assert "came from another team store" not in p.stderr         # the other team's copy held nothing
    assert "cors-fix" in p.stdout
    p = sk("--store", pg_url, "list", home=home)
    assert "another team store" not in p.stderr and "set-aside" not in p.stderr


def test_a_password_with_at_or_hash_is_refused_and_never_shown_in_part(tmp_path):
    url = f"postgresql://weird:p@ss#1@127.0.0.1:{dead_port()}/skillshelf"
    p = sk("--store", url, "search", "cors", home=tmp_path / "h")
    line = one_line(p)
    assert p.returncode == 1
    assert "percent-encode the password (@ is %40, # is %23" in line
    assert "ss#1" not in line and "p@ss" not in line and "weird:***@127.0.0.1" in line
    p = sk("--store", url, "config", home=tmp_path / "h")
    assert "ss#1" not in p.stdout + p.stderr and "p@ss" not in p.stdout + p.stderr
    assert "weird:***@127.0.0.1" in p.stdout



def test_a_password_with_slash_is_refused_and_one_with_a_question_mark_masked(tmp_path):
    url = f"postgresql://u:se/cret@127.0.0.1:{dead_port()}/skillshelf"
    for cmd in (["--store", url, "list"], ["--store", url, "doctor"]):
        p = sk(*cmd, home=tmp_path / "h")
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert "cret" not in p.stdout + p.stderr and "u:***@127.0.0.1" in p.stderr, p.stderr
        assert "percent-encode the password" in p.stderr and "/ is %2F" in p.stderr
    p = sk("config", home=tmp_path / "h", env={"SKILLSHELF_STORE": url})
    assert "cret" not in p.stdout + p.stderr and "u:***@127.0.0.1" in p.stdout, p.stdout
    url = f"postgresql://u:se?cret@127.0.0.1:{dead_port()}/skillshelf"     # libpq reads it: it is masked
    p = sk("--store", url, "list", home=tmp_path / "h")
    assert p.returncode == 1 and "cannot reach the team store at postgresql://u:***@127.0.0.1" in p.stderr, p.stderr
    assert "cret" not in p.stdout + p.stderr
    p = sk("config", home=tmp_path / "h", env={"SKILLSHELF_STORE": url})
    assert "cret" not in p.stdout + p.stderr and "u:***@127.0.0.1" in p.stdout, p.stdout

def test_redaction_masks_everything_before_the_last_at_of_the_authority():
    from skillshelf.net import redact_password

    assert redact_password("postgresql://weird:p@ss#1@db:5432/s") == "postgresql://weird:***@db:5432/s"
    assert redact_password("postgresql://u@x:pw@db/s") == "postgresql://***@db/s"
    assert redact_password("postgresql://app:pw@db/s?options=a@b") == "postgresql://app:***@db/s?options=a@b"
    assert redact_password("postgresql://app@db/s") == "postgresql://app@db/s"
    assert redact_password("postgresql://u:se/c?ret@db/s?sslmode=require") == "postgresql://u:***@db/s?sslmode=require"
    assert redact_password("postgresql://db/s?user=a@b") == "postgresql://db/s?user=a@b"


def test_doctor_with_postgresql_down_runs_what_needs_no_store_and_fails_the_store(tmp_path):
    url = f"postgresql://team:pw@127.0.0.1:{dead_port()}/skillshelf"
    p = sk("--store", url, "doctor", home=tmp_path / "h")
    assert p.returncode == 1
    assert "Traceback" not in p.stderr
    out = p.stdout
    assert " home: " in out and " config: " in out and " write policy: " in out
    store = [line for line in out.splitlines() if " store: " in line]
    assert len(store) == 1 and store[0].startswith("FAIL") and "cannot reach the team store" in store[0]
    assert "pw@" not in out


def test_doctor_names_what_a_team_server_moved_aside(tmp_path, pg_url):
    home = tmp_path / "member"
    team_library(home, pg_url).close()
    hand = home / "team" / "workspace" / "made-by-hand"
    hand.mkdir(parents=True)
    (hand / "SKILL.md").write_text("---\nname: made-by-hand\ndescription: x\n---\nbody\n", encoding="utf-8")
    p = sk("--store", pg_url, "doctor", home=home)
    assert "Traceback" not in p.stderr
    kept = [line for line in p.stdout.splitlines() if " set aside: " in line]
    assert len(kept) == 1 and "made-by-hand" in kept[0] and str(home / "team" / "set-aside") in kept[0], p.stdout
    assert (home / "team" / "set-aside").is_dir()


def test_the_look_for_changes_says_a_store_away_once_and_its_return_once(monkeypatch, caplog):
    from skillshelf.errors import StoreError
    from skillshelf.mcp import changes

    monkeypatch.setattr(changes, "POLL", 0.01)
    ch = changes.Changes(handle=None, bus=None)
    looks = {"n": 0}
    done = threading.Event()

    def look(uris):
        looks["n"] += 1
        if looks["n"] <= 5:
            raise StoreError("cannot reach the team store at postgresql://team:***@db/s (connection refused)",
                             fix="check that PostgreSQL is running there")
        if looks["n"] == 8:
            raise KeyError("a bug")
        if looks["n"] >= 12:
            done.set()

    monkeypatch.setattr(ch, "_watched", lambda: ({"skill://x"}, True))
    monkeypatch.setattr(ch, "_look", look)
    with caplog.at_level(logging.WARNING, logger="skillshelf.mcp"):
        t = threading.Thread(target=ch._run, daemon=True)
        t.start()
        assert done.wait(5)
        ch.close()
        t.join(2)
    said = [(r.getMessage(), r.exc_info is not None) for r in caplog.records if r.name == "skillshelf.mcp"]
    assert said[0] == (("looking for changes failed: cannot reach the team store at postgresql://team:***@db/s "
                        "(connection refused) (check that PostgreSQL is running there)"), False)
    assert said[1] == ("looking for changes works again", False)
    assert said[2] == ("looking for changes failed", True)          # not the library's error: its traceback
    assert said[3] == ("looking for changes works again", False)
    assert len(said) == 4


def test_opening_a_database_without_the_schema_is_refused_below_every_command(pg_empty_url):
    from skillshelf.errors import StoreError
    from skillshelf.store.postgres import PgStore

    with pytest.raises(StoreError) as e:
        PgStore(pg_empty_url)
    assert "no skillshelf team store" in e.value.message and "migrate-store --upgrade" in e.value.fix
    with pytest.raises(StoreError):
        PgStore(pg_empty_url, migrate=False)
    assert tables(pg_empty_url) == 0


def test_a_restored_copy_of_the_same_store_moves_nothing(tmp_path, pg_url, pg_cluster, capfd):
    import pgcluster
    import psycopg

    home = tmp_path / "member"
    lib = team_library(home, pg_url)
    try:
        lib.save("ARCHIVE", name="cors-fix", description="Fix CORS errors in API routes", body=BODY)
    finally:
        lib.close()
    restored = pgcluster.with_schema(other_database(pg_cluster))
    with psycopg.connect(pg_url) as src, psycopg.connect(restored, autocommit=True) as dst:
        [(sid,)] = src.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchall()
        dst.execute("INSERT INTO meta (key, value) VALUES ('store_id', %s)", (sid,))    # what pg_restore brings
    capfd.readouterr()
    team_library(home, restored).close()
    assert "another team store" not in capfd.readouterr().err
    assert not (home / "team" / "set-aside").exists() or not any(
        p.name.endswith("-another-store") for p in (home / "team" / "set-aside").iterdir())
