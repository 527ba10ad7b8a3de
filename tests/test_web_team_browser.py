"""The team dashboard in a real browser: Debian's chromium driven by Playwright against a real
server on a team store (a throwaway PostgreSQL). A person opens a page, is sent to the login,
pastes a token, lands where they were going, sees only the buttons their role may use, and
signs out. Screenshots go to a temporary folder (or to $SKILLSHELF_SCREENSHOTS)."""

from __future__ import annotations

import pytest
from conftest import dashboard_server, needs_chromium

pytest.importorskip("fastapi", reason="the web extra is not installed (pip install 'skillshelf[web]')")
pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

pytestmark = needs_chromium


@pytest.fixture
def server(tmp_path, pg_url):
    from test_web_team import make_team_lib

    lib = make_team_lib(tmp_path, pg_url)
    with dashboard_server(lib) as base:
        yield base, lib
    lib.close()


def test_a_person_signs_in_with_a_token_through_the_form(server, browser, shots):
    base, lib = server
    reader = lib.add_token("rita", "reader")
    curator = lib.add_token("alice", "curator")
    sid = lib.get("deploy-previews").id
    ctx = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)

    # a page of the library sends a stranger to the login, and nothing of the library shows
    pg.goto(f"{base}/skill/{sid}")
    pg.wait_for_url(f"{base}/login?next=*")
    assert pg.locator("h1").inner_text() == "Sign in"
    assert pg.locator("nav[aria-label=main]").count() == 0
    assert "deploy-previews" not in pg.locator("body").inner_text()     # (only the address to go back to)
    pg.screenshot(path=str(shots / "01-login.png"), full_page=True)

    # a wrong token: the form again, saying so
    pg.fill("input[name=token]", "not-a-token")
    pg.click("button:has-text('Sign in')")
    assert "not a valid token" in pg.locator(".errorbox").inner_text()
    assert not [c for c in ctx.cookies() if c["name"] == "skillshelf_session"]

    # the reader's token: back where they were going, signed in
    pg.fill("input[name=token]", reader)
    pg.click("button:has-text('Sign in')")
    pg.wait_for_url(f"{base}/skill/{sid}")
    assert pg.locator("h1").inner_text() == "deploy-previews"
    assert "signed in as rita (reader)" in pg.locator(".flash").inner_text()
    assert "rita" in pg.locator(".whoami").inner_text()
    session = [c for c in ctx.cookies() if c["name"] == "skillshelf_session"]
    assert len(session) == 1 and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
    assert "skillshelf_session" not in pg.evaluate("document.cookie")       # no script reads it
    # a reader sees no button it cannot use
    actions = pg.locator(".actions")
    for label in ("Edit", "Derive", "Deprecate", "Extend TTL", "Delete"):
        assert actions.get_by_text(label, exact=True).count() == 0, label
    assert pg.locator("a.btn", has_text="New skill").count() == 0
    pg.screenshot(path=str(shots / "02-reader.png"), full_page=True)
    # the pages and their htmx parts load with the cookie
    pg.click("nav >> text=Skills")
    pg.wait_for_url(f"{base}/skills")
    pg.fill("#tq", "preview environments")
    pg.locator("#results q", has_text="preview environments").wait_for()
    assert pg.locator("table.skills tbody tr").first.locator("a.name").inner_text() == "deploy-previews"

    # signing out ends it: the next page is the login again
    pg.click(".whoami button:has-text('Sign out')")
    pg.wait_for_url(f"{base}/login")
    assert "signed out" in pg.locator(".flash").inner_text()
    assert not [c for c in ctx.cookies() if c["name"] == "skillshelf_session"]
    pg.goto(f"{base}/review")
    pg.wait_for_url(f"{base}/login?next=*")

    # a curator signs in on the same form and deprecates through the page
    pg.fill("input[name=token]", curator)
    pg.click("button:has-text('Sign in')")
    pg.wait_for_url(f"{base}/review")
    pg.goto(f"{base}/skill/{sid}")
    pg.click("summary:has-text('Deprecate')")
    pg.fill("details.pop[open] input[name=reason]", "superseded by the platform's previews")
    pg.click("details.pop[open] button:has-text('Deprecate')")
    assert "is deprecated" in pg.locator(".flash").inner_text()    # every skill says it the same way
    assert not lib.get("deploy-previews").active
    pg.screenshot(path=str(shots / "03-curator.png"), full_page=True)
    ctx.close()
