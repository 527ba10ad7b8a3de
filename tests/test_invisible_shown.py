"""What got a skill held is shown: invisible characters (zero-width, bidi, tag) are written as
``<U+200B>`` in ``trust``, ``show`` and on the dashboard's Held page (issue 31, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_skill
from test_cli_entry import sk

ZW = "\u200b"
NOTES = "## Steps\n\nRun the tests.\nTag the release.\n"


def _held_by_zero_width(tmp_path: Path) -> tuple[Path, Path]:
    """A pinned collection whose skill then changed by zero-width spaces only."""
    home, vendor = tmp_path / "home", tmp_path / "vendor"
    md = write_skill(vendor, "release-notes", description="Notes on the release checklist", body=NOTES)
    assert sk("init", home=home).returncode == 0
    assert sk("roots", "add", str(vendor), home=home).returncode == 0
    assert sk("sync", home=home).returncode == 0
    assert sk("pin", "vendor", home=home).returncode == 0
    from conftest import write_later

    write_later(md, md.read_text().replace("Tag the release.", f"Tag{ZW * 20} the{ZW} release."))
    assert sk("sync", home=home).returncode == 0
    return home, md


def test_visible_shows_every_invisible_character_and_keeps_the_rest():
    from skillshelf.text import visible

    assert visible(f"a{ZW}b\u202ec\U000E0041\u2066 \u00ad") == "a<U+200B>b<U+202E>c<U+E0041><U+2066> <U+00AD>"
    plain = "Ordinary text, tabs\tand line breaks\nstay; so do é, 中文 and ❤️.\r\nok\n"
    assert visible(plain) == plain
    assert visible("a\rb\x1b[31m") == "a<U+000D>b<U+001B>[31m"


def test_trust_shows_the_zero_width_characters_that_got_a_skill_held(tmp_path):
    home, _ = _held_by_zero_width(tmp_path)
    p = sk("trust", "release-notes", home=home)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    plus = next(x for x in p.stdout.splitlines() if x.startswith("+Tag"))
    assert plus == "+Tag" + "<U+200B>" * 20 + " the<U+200B> release.", p.stdout
    assert ZW not in p.stdout
    # ``show`` says it too
    p = sk("show", "release-notes", home=home)
    assert p.returncode == 0, p.stderr
    assert "Tag<U+200B>" in p.stdout and ZW not in p.stdout


def test_the_held_page_shows_the_zero_width_characters(tmp_path):
    pytest.importorskip("fastapi", reason="the web extra is not installed")
    from conftest import dashboard_server, write_later
    from fastapi.testclient import TestClient

    from skillshelf import Library
    from skillshelf.embeddings.fake import FakeEmbedder
    from skillshelf.web import create_app

    vendor = tmp_path / "vendor"
    md = write_skill(vendor, "release-notes", description="Notes on the release checklist", body=NOTES)
    lib = Library(home=tmp_path / "home", roots=[vendor], embedder=FakeEmbedder(), auto_sync=False)
    try:
        lib.sync()
        lib.supply.pin("vendor")
        write_later(md, md.read_text().replace("Tag the release.", f"Tag{ZW * 3} the release."))
        lib.sync()
        lib.supply.after_sync([(r.id, r.path) for r in lib.list()])
        assert list(lib.supply.held()) == ["vendor:release-notes"]
        with TestClient(create_app(lib, port=7788), base_url="http://127.0.0.1:7788") as c:
            html = c.get("/held").text
        assert "Tag&lt;U+200B&gt;&lt;U+200B&gt;&lt;U+200B&gt; the release." in html, html
        assert ZW not in html
        chromium = Path("/usr/bin/chromium")
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            return
        if not chromium.exists():
            return
        with dashboard_server(lib) as base, sync_playwright() as p:
            b = p.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
            pg = b.new_page()
            pg.goto(f"{base}/held")
            table = pg.inner_text("table.sbs")
            b.close()
        assert "Tag<U+200B><U+200B><U+200B> the release." in table and ZW not in table
    finally:
        lib.close()


def test_a_drafts_page_shows_the_zero_width_characters_it_would_add(tmp_path):
    pytest.importorskip("fastapi", reason="the web extra is not installed")
    from fastapi.testclient import TestClient

    from skillshelf import Library
    from skillshelf.embeddings.fake import FakeEmbedder
    from skillshelf.web import create_app

    lib = Library.init(tmp_path / "home", write_policy="propose", embedder=FakeEmbedder(), auto_sync=False)
    try:
        lib.sync()
        assert lib.save("FIX", target_skill_name="docker-multi-stage-build", by="agent",
                        lesson=f"Pin the base{ZW} image by digest").status == "draft"
        with TestClient(create_app(lib, port=7788), base_url="http://127.0.0.1:7788") as c:
            html = c.get("/review/docker-multi-stage-build").text
        assert "Pin the base&lt;U+200B&gt; image by digest" in html, html
        assert ZW not in html
    finally:
        lib.close()
