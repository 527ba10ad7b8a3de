"""The team store's foundation against a real PostgreSQL: schema, transactions, the change
stream, and the errors a person sees when the database is away or on another schema."""

from __future__ import annotations

import threading
import time

import pytest

from skillshelf.errors import StoreError


def test_schema_is_created_once_and_recorded(pg_url):
    from skillshelf.store.pg_migrations import MIGRATIONS
    from skillshelf.store.postgres import PgStore

    st = PgStore(pg_url)
    try:
        assert st.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert st.migrate() == []            # nothing twice
        assert st.schema_version() == MIGRATIONS[-1][0]
        assert st.ping() > 0
    finally:
        st.close()
    st2 = PgStore(pg_url)                    # a second server on the same database
    st2.close()


def test_unreachable_store_names_the_url_without_password_and_the_fix():
    from skillshelf.store.postgres import PgStore

    with pytest.raises(StoreError) as e:
        PgStore("postgresql://me:secret@127.0.0.1:1/nothing", timeout=2)
    assert "127.0.0.1:1" in e.value.message and "secret" not in str(e.value)
    assert "PostgreSQL is running" in e.value.fix


def test_an_older_schema_names_the_upgrade_step(pg_url):
    from skillshelf.store.postgres import PgStore

    st = PgStore(pg_url)
    st.execute("DELETE FROM schema_migrations")
    st.close()
    with pytest.raises(StoreError) as e:
        PgStore(pg_url, migrate=False)
    assert "older schema" in e.value.message and "migrate-store --upgrade" in e.value.fix


def test_a_newer_schema_is_refused(pg_url):
    from skillshelf.store.postgres import PgStore

    st = PgStore(pg_url)
    st.execute("INSERT INTO schema_migrations (name) VALUES ('999_future')")
    st.close()
    with pytest.raises(StoreError) as e:
        PgStore(pg_url)
    assert "newer schema" in e.value.message


def test_a_change_committed_by_one_server_wakes_the_other(pg_url):
    from skillshelf.store.postgres import PgStore

    a, b = PgStore(pg_url), PgStore(pg_url)
    seen: list[float] = []
    woke = threading.Event()
    start = b.last_change()

    def on_change() -> None:
        if b.changes_after(start):
            seen.append(time.monotonic())
            woke.set()

    b.listen(on_change, poll=5.0)           # a long poll: only the notification can be this quick
    time.sleep(0.5)
    t0 = time.monotonic()
    with a.tx() as conn:
        a.record_change(conn, "skill", "cors-fix")
    assert woke.wait(3.0)
    assert seen[0] - t0 < 1.5
    assert [(k, key) for _, k, key in b.changes_after(start)] == [("skill", "cors-fix")]
    a.close()
    b.close()


def test_a_restarted_postgres_fails_one_request_clearly_then_serves_again(pg_cluster, pg_url):
    from skillshelf.store.postgres import PgStore

    if pg_cluster is None:
        pytest.skip("needs the throwaway cluster (SKILLSHELF_TEST_PG's server cannot be restarted here)")
    st = PgStore(pg_url, min_size=2)
    try:
        assert st.fetchone("SELECT 1") == (1,)
        pg_cluster.restart()
        errors = 0
        for _ in range(3):       # pooled connections the restart cut: the pool's check replaces them
            try:
                assert st.fetchone("SELECT 1") == (1,)
            except StoreError as exc:
                errors += 1
                assert "try again" in exc.fix
        assert st.fetchone("SELECT 1") == (1,)
        assert errors <= 2
    finally:
        st.close()


def test_the_socket_check_works_past_descriptor_1024():
    """``select`` refuses a descriptor of 1024 or more, which a busy server reaches: the pool's
    check would then fail every connection it lends."""
    import os
    import resource
    import socket

    from skillshelf.store.postgres import _readable

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= 1500:
        pytest.skip("the open-file limit is below 1500 here")
    a, b = socket.socketpair()
    try:
        os.dup2(a.fileno(), 1500)
        assert _readable(1500) is False
        b.sendall(b"x")
        assert _readable(1500) is True
        b.close()
        assert _readable(1500) is True          # an end of file is readable too
    finally:
        os.close(1500)
        a.close()


def test_a_connection_lent_again_soon_is_not_checked_with_a_round_trip(pg_url, monkeypatch):
    """psycopg's check sends an empty query each time the pool lends a connection: a round
    trip per statement (six per logged team search). A connection used moments ago is
    checked by its socket; one idle past FULL_CHECK_AFTER, or with bytes waiting, in full."""
    from psycopg_pool import ConnectionPool

    from skillshelf.store import postgres

    full = []
    real = ConnectionPool.check_connection
    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(lambda c: (full.append(1), real(c))))
    st = postgres.PgStore(pg_url, min_size=1, max_size=1)
    try:
        st.fetchone("SELECT 1")
        full.clear()
        for _ in range(10):
            assert st.fetchone("SELECT 1") == (1,)
        assert full == []
        monkeypatch.setattr(postgres, "FULL_CHECK_AFTER", 0.0)
        assert st.fetchone("SELECT 1") == (1,)
        assert full == [1]
        monkeypatch.setattr(postgres, "FULL_CHECK_AFTER", 3600.0)
        with st.tx() as conn:      # the server ends this backend: its goodbye waits on the socket
            pid = conn.info.backend_pid
        other = postgres.PgStore(pg_url, min_size=1, max_size=1, migrate=False)
        try:
            other.fetchone("SELECT pg_terminate_backend(%s)", (pid,))
        finally:
            other.close()
        time.sleep(0.3)
        full.clear()
        assert st.fetchone("SELECT 1") == (1,)     # the socket check saw it, the pool lent a new one
        assert full
    finally:
        st.close()


def test_a_library_on_a_team_store_has_tokens_roles_and_a_doctor_line(pg_url, tmp_path):
    from skillshelf import Library
    from skillshelf.errors import ForbiddenError

    lib = Library(home=tmp_path / "h", embedder="none", auto_sync=False, store=pg_url)
    try:
        assert lib.team
        token = lib.add_token("ci-agent", "agent")
        caller = lib.verify_token(token)
        assert caller.name == "ci-agent" and caller.role == "agent"
        assert lib.verify_token(token + "x") is None
        assert [t["name"] for t in lib.list_tokens()] == ["ci-agent"]
        assert token not in repr(lib.list_tokens())
        lib.authorize(caller, "report_outcome")
        with pytest.raises(ForbiddenError) as e:
            lib.authorize(caller, "approve", "approving a draft")
        assert "curator" in e.value.message and e.value.needed == "curator"
        store_line = [c for c in lib.doctor().checks if c.name == "store"][0]
        assert store_line.status == "ok" and "team" in store_line.detail and "ms" in store_line.detail
        lib.revoke_token("ci-agent")
        assert lib.verify_token(token) is None
    finally:
        lib.close()


def test_a_local_library_has_no_tokens(tmp_path):
    from skillshelf import Library
    from skillshelf.errors import ConfigError

    lib = Library(home=tmp_path / "h", embedder="none", auto_sync=False)
    try:
        assert not lib.team
        with pytest.raises(ConfigError) as e:
            lib.add_token("x", "reader")
        assert "--store" in e.value.fix
        lib.authorize(None, "delete")          # the owner of a local library may do anything
        assert [c for c in lib.doctor().checks if c.name == "store"][0].detail.startswith("local:")
    finally:
        lib.close()


def test_a_wrong_database_name_is_named_as_the_cause(pg_url):
    from skillshelf.store.postgres import PgStore

    wrong = pg_url.rsplit("/", 1)[0] + "/no_such_database_here"
    with pytest.raises(StoreError) as e:
        PgStore(wrong, timeout=2)
    assert "no_such_database_here" in e.value.message and "does not exist" in e.value.message
