"""The team store's foundation against a real PostgreSQL: schema, transactions, the change
stream, and the errors a person sees when the database is away or on another schema."""

from __future__ import annotations

import threading
import time

import pytest

from skillshelf.errors import StoreError


def test_schema_is_created_once_and_recorded(pg_url):
    from skillshelf.store.postgres import PgStore
    from skillshelf.store.pg_migrations import MIGRATIONS

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
