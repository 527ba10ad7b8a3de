"""What a new user met on the dashboard's New skill and Review pages, in a real browser: an
untouched template, a taken name, a draft whose skill was deleted."""

from __future__ import annotations

import pytest
from conftest import dashboard_server, needs_chromium

pytest.importorskip("fastapi", reason="the web extra is not installed (pip install 'skillshelf[web]')")
pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

pytestmark = needs_chromium


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)
    yield pg
    ctx.close()


def _new(pg, base: str, name: str, description: str, body: str | None = None) -> None:
    pg.goto(base + "/new")
    pg.fill("input[name=name]", name)
    pg.fill("textarea[name=description]", description)
    if body is not None:
        pg.fill("textarea[name=body]", body)
    pg.click("button[type=submit]")
    pg.wait_for_load_state()


def test_new_skill_refuses_the_untouched_template_and_a_taken_name_in_the_pages_words(tmp_path, page):
    lib = Library.init(tmp_path / "h", embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    with dashboard_server(lib) as base:
        _new(page, base, "my-first-skill", "Something I learned about deploys")    # the template as it came
        box = page.locator(".errorbox").inner_text()
        assert "When to Use, Solution are empty" in box, box
        assert not (tmp_path / "h" / "skills" / "my-first-skill").exists()
        # the form comes back as sent: the person fills it in and it saves
        page.fill("textarea[name=body]", "## When to Use\n\nBefore a deploy.\n\n## Solution\n\nRun the checks.\n")
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert (tmp_path / "h" / "skills" / "my-first-skill" / "SKILL.md").exists()

        _new(page, base, "cors-fix-nextjs-api", "Another CORS note", "## Solution\n\nSet the headers.\n")
        box = page.locator(".errorbox").inner_text()
        assert "exists already" in box and "use Edit to improve it or Derive to branch from it" in box, box
        assert "FIX" not in box and "DERIVE" not in box
    lib.close()


def test_a_draft_whose_skill_was_deleted_offers_reject_only_and_a_derive_is_approved_as_a_new_skill(tmp_path, page):
    home = tmp_path / "h"
    Library.init(home, embedder=FakeEmbedder(), auto_sync=False).close()
    lib = Library(home, embedder=FakeEmbedder(), auto_sync=False, write_policy="propose")
    lib.sync()
    lib.save("ARCHIVE", name="dash-created-skill", description="A skill made on the dashboard",
             body="## When to Use\n\nAlways.\n\n## Solution\n\nDo it.\n", by="person")
    lib.save("FIX", target_skill_name="dash-created-skill", lesson="a lesson", author="agent-a")
    lib.save("DERIVE", target_skill_name="dash-created-skill", name="dash-child", description="A child of it",
             author="agent-b")
    lib.delete("dash-created-skill")
    with dashboard_server(lib) as base:
        page.goto(base + "/review/dash-created-skill")
        head = page.locator(".pagehead").inner_text()
        assert "dash-created-skill no longer exists" in head
        assert "The skill it changes is gone" in head and "A new skill" not in head, head
        assert page.locator("button", has_text="Approve and apply").count() == 0
        assert page.locator("summary", has_text="Reject").count() == 1
        page.goto(base + "/review/dash-child")
        assert "writes it as a new skill with no parent" in page.locator(".pagehead").inner_text()
        page.click("button:has-text('Approve and apply')")
        page.wait_for_load_state()
        assert "approved as a new skill with no parent" in page.locator(".flash").inner_text()
    assert lib.get("dash-child").active and "Do it." in lib.get("dash-child").body
    lib.close()
