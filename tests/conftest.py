from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

# pytest-xdist's workers are given COLUMNS=80 / LINES=24; a plain run has neither, and the CLI
# sizes its tables by COLUMNS (a pipe gets whole names and ids). Tests that want a width set it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

from skillshelf import Library  # noqa: E402
from skillshelf.embeddings.fake import FakeEmbedder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SKILLSHELF_CORPUS", REPO.parent / "shared" / "corpus"))


def write_skill(root: Path, rel: str, name: str | None = None, description: str = "does a thing",
                body: str = "# Title\n\nBody text.\n", extra: str = "") -> Path:
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    name = name if name is not None else Path(rel).name
    text = f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}"
    p = folder / "SKILL.md"
    p.write_text(text, encoding="utf-8")
    return p


def write_later(p: Path, text: str) -> None:
    """Write ``text`` to ``p`` with a modification time clearly later than before (a coarse
    clock cannot hide the change from a sync)."""
    before = p.stat().st_mtime_ns if p.exists() else 0
    p.write_text(text, encoding="utf-8")
    t = max(before, p.stat().st_mtime_ns) + 2_000_000_000
    os.utime(p, ns=(t, t))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def fake_lib(tmp_path: Path):
    """A library over a small root, with the deterministic fake embedder."""
    root = tmp_path / "root"
    write_skill(root, "web/cors-fix", description="Fix CORS errors in Next.js API routes and preflight OPTIONS",
                body="## Solution\n\nAdd Access-Control-Allow-Origin headers.\n")
    write_skill(root, "ops/docker-build", description="Multi-stage Docker builds with cached layers",
                body="## Solution\n\nCopy the lock file first.\n", extra="metadata:\n  skill-type: IMPLEMENTATION\n  tags: docker, ci\n")
    write_skill(root, "git/commit-style", description="Conventional commit messages for changelogs",
                body="## Format\n\nfeat: fix: docs:\n", extra="metadata:\n  skill-type: WORKFLOW\n  repo: shop\n")
    write_skill(root, "py/pytest-fixtures", description="Write pytest fixtures and parametrized tests in Python",
                body="## Solution\n\nUse conftest.py.\n")
    lib = Library(home=tmp_path / "home", roots=[root], embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    yield lib
    lib.close()


def corpus_available() -> bool:
    return (CORPUS / "skills").is_dir()


@pytest.fixture(scope="session")
def pg_cluster():
    """A throwaway PostgreSQL cluster for the session (or SKILLSHELF_TEST_PG's server)."""
    import pgcluster

    reason = pgcluster.why_not()
    if reason:
        pytest.skip(f"team-store tests need PostgreSQL: {reason}")
    if os.environ.get("SKILLSHELF_TEST_PG"):
        yield None
        return
    cluster = pgcluster.Cluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_empty_url(pg_cluster) -> str:
    """The URL of a new, empty database for one test (no schema: only migrate-store makes one)."""
    import pgcluster

    return pgcluster.new_database_from_env() if pg_cluster is None else pg_cluster.new_database()


@pytest.fixture
def pg_url(pg_empty_url) -> str:
    """The URL of a new team store for one test: a database with skillshelf's schema, nothing else."""
    from skillshelf.store.postgres import PgStore

    PgStore(pg_empty_url, create=True, max_size=1).close()
    return pg_empty_url


@contextlib.contextmanager
def dashboard_server(lib):
    """The dashboard of ``lib`` served by uvicorn on a free loopback port in a thread, for
    the browser tests: yields its base URL; stops it afterwards (the library stays open)."""
    import socket
    import threading
    import time

    import uvicorn

    from skillshelf.web import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(lib, port=port), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(5)


# --- the dashboard in a real browser: Debian's chromium driven by Playwright (no browser download) ---
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason=f"no chromium at {CHROMIUM} (apt-get install chromium)")


@contextlib.contextmanager
def chromium():
    """A headless chromium, closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def screenshots(tmp_path_factory, name: str = "screenshots") -> Path:
    """Where a browser test's screenshots go: $SKILLSHELF_SCREENSHOTS, else a temporary folder."""
    where = os.environ.get("SKILLSHELF_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp(name)
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser():
    """A headless chromium for a browser test module (``chromium``)."""
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    """The folder a browser test module's screenshots go to (``screenshots``)."""
    return screenshots(tmp_path_factory)
