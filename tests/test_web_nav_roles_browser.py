"""The dashboard's navigation shows only the pages the caller's role may open (Debian's chromium
driven by Playwright, a real server on a team store): a reader's and an agent's token get no
link to the Held page (curators only), a reader's no "New skill"; every link shown opens."""

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


def _links(pg) -> dict[str, str]:
    nav = pg.locator("nav[aria-label=main] a")
    shown = {nav.nth(i).inner_text().split()[0]: nav.nth(i).get_attribute("href") for i in range(nav.count())}
    new = pg.locator("header a.btn.primary:has-text('New skill')")
    if new.count():
        shown["New skill"] = new.get_attribute("href")
    return shown


def test_the_navigation_shows_only_what_the_role_may_open(server, browser, shots):
    base, lib = server
    expected = {"reader": {"Overview", "Skills", "Review", "Curate", "Sources"},
                "agent": {"Overview", "Skills", "Review", "Curate", "Sources", "New skill"},
                "curator": {"Overview", "Skills", "Review", "Curate", "Held", "Sources", "New skill"}}
    for role, want in expected.items():
        token = lib.add_token(f"{role}-nav", role)
        ctx = browser.new_context(viewport={"width": 1360, "height": 900})
        pg = ctx.new_page()
        pg.set_default_timeout(10_000)
        pg.goto(f"{base}/login")
        pg.fill("input[name=token]", token)
        pg.click("button:has-text('Sign in')")
        pg.wait_for_url(f"{base}/")
        shown = _links(pg)
        pg.screenshot(path=str(shots / f"nav-{role}.png"))
        assert set(shown) == want, (role, shown)
        for label, href in shown.items():           # every link shown opens for this role
            resp = pg.goto(f"{base}{href}")
            assert resp is not None and resp.status == 200, (role, label, resp and resp.status)
        resp = pg.goto(f"{base}/held")
        assert resp is not None and resp.status == (200 if role == "curator" else 403)
        ctx.close()
