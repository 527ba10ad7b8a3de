"""A throwaway PostgreSQL cluster for the team-store tests and benchmarks.

``SKILLSHELF_TEST_PG`` (a ``postgresql://`` URL of a database the tests may fill and empty)
is used when set. Otherwise Debian's PostgreSQL binaries (``initdb``, ``pg_ctl``) start a
cluster in a temporary folder on a free loopback port; as root, they run as the ``postgres``
user (initdb refuses root). Without the binaries ``why_not()`` says why and the tests skip."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for cand in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return cand
    return None


def why_not() -> str | None:
    """None when a cluster can be had, else the reason the PostgreSQL tests are skipped."""
    if os.environ.get("SKILLSHELF_TEST_PG"):
        return None
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg / psycopg-pool are not installed"
    if not (_bin("initdb") and _bin("pg_ctl")):
        return "PostgreSQL's initdb/pg_ctl are not installed (Debian: apt-get install postgresql)"
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root without runuser: initdb refuses root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="skillshelf-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        self.url_base = f"postgresql://{self.user or os.environ.get('USER') or 'postgres'}@127.0.0.1:{self.port}"

    def _run(self, *args: str) -> None:
        cmd = list(args)
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> "Cluster":
        if self.user:
            os.chmod(self.dir, 0o755)
            shutil.chown(self.dir, self.user)
        self._run(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", self.user or
                  os.environ.get("USER") or "postgres", "--no-sync", "-E", "UTF8")
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off -c max_connections=300"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-o", opts, "-w", "start")
        return self

    def restart(self) -> None:
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-m", "fast", "-w", "restart")

    def stop(self) -> None:
        try:
            self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except Exception:  # noqa: BLE001 -- already stopped
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def new_database(self, *, schema: bool = False) -> str:
        """A fresh, empty database: its URL. ``schema``: with skillshelf's schema (a team store)."""
        import psycopg

        name = "t" + uuid.uuid4().hex[:12]
        with psycopg.connect(f"{self.url_base}/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return with_schema(f"{self.url_base}/{name}") if schema else f"{self.url_base}/{name}"


def with_schema(url: str) -> str:
    """``url`` after skillshelf's schema is created there (what `migrate-store --upgrade` does):
    every other command refuses a database without it."""
    from skillshelf.store.postgres import PgStore

    PgStore(url, create=True, max_size=1).close()
    return url


def new_database_from_env() -> str:
    """A fresh schema-less database next to ``SKILLSHELF_TEST_PG``: its URL."""
    import psycopg

    base = os.environ["SKILLSHELF_TEST_PG"]
    name = "t" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return base.rsplit("/", 1)[0] + f"/{name}"


def wait_ready(url: str, timeout: float = 30.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@__import__("contextlib").contextmanager
def database(what: str = "this benchmark"):
    """A new team store (a database with skillshelf's schema) for a benchmark: on
    ``SKILLSHELF_TEST_PG``'s server, or in a throwaway cluster started here and removed
    afterwards. Yields its URL; exits with the reason when PostgreSQL cannot be had."""
    import sys

    if os.environ.get("SKILLSHELF_TEST_PG"):
        yield with_schema(new_database_from_env())
        return
    why = why_not()
    if why:
        sys.exit(f"{what} needs PostgreSQL: {why}")
    cluster = Cluster().start()
    try:
        yield cluster.new_database(schema=True)
    finally:
        cluster.stop()
