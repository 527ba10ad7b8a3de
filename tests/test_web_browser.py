"""The dashboard in a real browser: Debian's chromium driven by Playwright against a real
server on a free 127.0.0.1 port. One walk through what a person does (browse, search, open a
skill, create, edit, deprecate, approve a draft, roll back), a hostile SKILL.md that must not
run anything, and the CSRF rule from inside the page. Screenshots of every step go to a
temporary folder (or to $SKILLSHELF_SCREENSHOTS)."""

from __future__ import annotations

import time

import pytest
from conftest import dashboard_server, needs_chromium

pytest.importorskip("fastapi", reason="the web extra is not installed (pip install 'skillshelf[web]')")
pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
from playwright.sync_api import expect

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from test_web import make_lib

    lib = make_lib(tmp_path_factory.mktemp("browser"))
    with dashboard_server(lib) as base:
        yield base, lib
    lib.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = ctx.new_page()
    pg.dialogs = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.set_default_timeout(10_000)
    yield pg
    ctx.close()


def flash(pg) -> str:
    return pg.locator(".flash").inner_text()


def test_a_person_curates_the_library(server, page, shots):
    base, lib = server
    pg = page
    step = iter(range(1, 100))

    def shot(name: str) -> None:
        pg.screenshot(path=str(shots / f"{next(step):02d}-{name}.png"), full_page=True)

    # overview
    pg.goto(base + "/")
    assert pg.locator("h1").inner_text() == "Overview"
    assert pg.locator(".tile", has_text="drafts waiting").locator(".tnum").inner_text() == "1"
    shot("overview")

    # browse
    pg.click("nav >> text=Skills")
    pg.wait_for_url(base + "/skills")
    assert pg.locator("#results").get_by_text("5 skills").count() == 1
    assert pg.locator("table.skills tbody tr").count() == 5
    shot("browse")

    # search: "/" focuses the search box, results update as one types (htmx)
    pg.locator("body").press("/")
    assert pg.evaluate("document.activeElement.id") == "tq"
    pg.keyboard.type("conventional commit messages")
    pg.locator("#results q", has_text="conventional commit messages").wait_for()
    first = pg.locator("table.skills tbody tr").first
    assert first.locator("a.name").inner_text() == "commit-style"
    assert "q=conventional" in pg.url
    shot("search")

    # open a skill (read-only root: no edit or delete)
    first.locator("a.name").click()
    pg.wait_for_url("**/skill/**")
    expect(pg.locator("h1")).to_have_text("commit-style")
    assert pg.locator("summary", has_text="Delete").count() == 0
    assert pg.locator(".badge.ro").count() == 1
    shot("skill")

    # create, with the live check
    pg.click("text=New skill")
    pg.fill("input[name=name]", "Flaky_Test")
    pg.fill("textarea[name=description]", "Triage flaky tests: rerun, isolate, quarantine")
    pg.wait_for_selector("#check .checkbad")
    assert "name" in pg.locator("#check").inner_text().lower()
    pg.fill("input[name=name]", "flaky-test-triage")
    pg.fill("textarea[name=body]", "## When to Use\n\nA test fails now and then.\n\n## Solution\n\nRerun it alone.\n")
    pg.wait_for_selector("#check .checkok")
    shot("create")
    pg.click("button:has-text('Create skill')")
    pg.wait_for_url("**/skill/workspace:flaky-test-triage")
    assert flash(pg).startswith("created flaky-test-triage") and "ARCHIVE" not in flash(pg)
    shot("created")

    # edit: a new version
    pg.click("a.btn:has-text('Edit')")
    body = pg.locator("textarea[name=body]")
    body.fill(body.input_value() + "\n\n## Steps\n\nRun it with `-p no:randomly` first.\n")
    pg.fill("input[name=reason]", "order-dependent tests")
    pg.wait_for_selector("#check .checkok")
    pg.keyboard.press("Control+s")                                  # the editor's shortcut
    pg.wait_for_url("**/skill/workspace:flaky-test-triage")
    assert flash(pg).startswith("saved flaky-test-triage as version 2")
    assert "no:randomly" in pg.locator("article.md").inner_text()
    shot("edited")

    # deprecate with a reason
    pg.click("summary:has-text('Deprecate')")
    pg.fill("details[open] input[name=reason]", "folded into the CI handbook")
    pg.click("details[open] button:has-text('Deprecate')")
    expect(pg.locator(".flash")).to_contain_text("is deprecated: folded into the CI handbook")
    assert pg.locator(".skillhead .badge.warn", has_text="deprecated").count() == 1
    shot("deprecated")

    # and undo it: Restore stands where Deprecate was
    assert pg.locator("summary:has-text('Deprecate')").count() == 0
    pg.click("button:has-text('Restore')")
    expect(pg.locator(".flash")).to_contain_text("flaky-test-triage is active again")
    assert pg.locator(".skillhead .badge.ok", has_text="active").count() == 1
    assert pg.locator("summary:has-text('Deprecate')").count() == 1
    shot("restored")

    # approve a draft, with the change in view
    pg.click("nav >> text=Review")
    pg.click("a.name:has-text('deploy-previews')")
    assert pg.locator("table.sbs").count() == 1
    assert pg.locator("table.sbs td.r", has_text="tear the app down on close").count() >= 1
    shot("draft")
    pg.click("button:has-text('Approve and apply')")
    pg.wait_for_url("**/skill/workspace:deploy-previews")
    assert "approved" in flash(pg)
    assert "tear the app down on close" in pg.locator("article.md").inner_text()

    # roll back to v1 from the history tab
    pg.goto(base + "/skill/workspace:flaky-test-triage?tab=history")
    assert pg.locator("table.sbs").count() == 1                    # the last two versions side by side
    shot("history")
    pg.click("button:has-text('Roll back to v1')")
    expect(pg.locator(".flash")).to_contain_text("is now v5 (the text of v1)")         # v3 deprecated it, v4 restored it
    assert lib.get("flaky-test-triage").active and "no:randomly" not in lib.get("flaky-test-triage").body
    shot("rolled-back")
    assert pg.dialogs == []


def test_hostile_skill_runs_nothing(server, page, shots):
    base, lib = server
    pg = page
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    sid = lib.get("hostile-skill").id
    pg.goto(f"{base}/skill/{sid}")
    pg.wait_for_selector("article.md")
    pg.screenshot(path=str(shots / "hostile.png"), full_page=True)
    assert pg.evaluate("window.__xss") is None
    assert pg.locator("article.md script, article.md img, article.md [onerror]").count() == 0
    assert pg.locator("article.md a[href^='javascript'], article.md a[href^='data']").count() == 0
    # the payloads are visible as text
    assert "<script>window.__xss = 1" in pg.locator("article.md").inner_text()
    # a link that lost its target does nothing when clicked
    pg.click("article.md >> text=click me")
    pg.wait_for_timeout(200)
    # the same text in the live check of the editor stays text too
    pg.goto(f"{base}/new")
    pg.fill("input[name=name]", "xss-probe")
    pg.fill("textarea[name=description]", '<img src=x onerror="window.__xss=9">')
    pg.fill("textarea[name=body]", "<script>window.__xss=10</script>\n")
    pg.locator("#check pre", has_text="window.__xss=10").wait_for(state="attached")
    assert 'onerror="window.__xss=9"' in pg.locator("#check pre").text_content()
    assert pg.evaluate("window.__xss") is None
    assert pg.dialogs == [] and errors == []


def test_csrf_refused_from_the_page(server, page):
    base, lib = server
    pg = page
    pg.goto(base + "/skills")
    status = pg.evaluate("""async () => (await fetch('/api/deprecate', {method: 'POST',
        headers: {'Content-Type': 'application/json'}, body: JSON.stringify({skill: 'cors-fix', reason: 'x'})})).status""")
    assert status == 403 and lib.get("cors-fix").active


# --- every screen ---------------------------------------------------------------------------

PHONE = {"width": 390, "height": 844}


def _wait_for_gaps(lib, n: int = 1) -> None:
    deadline = time.monotonic() + 10
    while len(lib.curation()["gaps"]) < n:          # the lists are recomputed in the background
        assert time.monotonic() < deadline, "the curation lists did not follow the usage log"
        time.sleep(0.05)


@pytest.fixture
def phone(browser):
    # not is_mobile: a mobile browser zooms out to fit a page that overflows, and the overflow
    # would no longer show in innerWidth
    ctx = browser.new_context(viewport=PHONE, has_touch=True)
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)
    yield pg
    ctx.close()


def _box(pg, selector: str) -> dict:
    box = pg.locator(selector).first.bounding_box()
    assert box, f"{selector} is not on the page"
    return box


def test_every_page_fits_a_phone(server, phone, shots):
    """At 390 px no page scrolls sideways, the header's controls are all on screen (the
    search box wide enough to type in), and Curate's tables and fields stay in their cards."""
    base, lib = server
    pg = phone
    for q in ("rotate the signing keys of a release pipeline every quarter", "tune postgres autovacuum"):
        lib.search(q, limit=3)
    _wait_for_gaps(lib)
    ws, ro = lib.get("deploy-previews").id, lib.get("cors-fix").id
    urls = ["/", "/skills", "/skills?q=conventional+commit+messages", f"/skill/{ro}", f"/skill/{ws}?tab=history",
            f"/skill/{ws}?tab=usage", f"/skill/{ws}?tab=source", "/review", "/curate", "/new", f"/edit/{ws}",
            f"/new?request={'rotate the signing keys of a release pipeline every quarter'.replace(' ', '+')}",
            f"/file/{lib.get('hostile-skill').id}?path=references/notes.md"]
    for url in urls:
        pg.goto(base + url)
        name = url.strip("/").split("?")[0].replace("/", "_").replace(":", "_") or "overview"
        pg.screenshot(path=str(shots / f"phone-{name}.png"), full_page=True)
        width, inner = pg.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert inner == PHONE["width"] and width <= inner, f"{url} is {width} px wide on a {inner} px screen"
        for control in ("a.brand", *(f"header nav a[href='{h}']" for h in ("/", "/skills", "/review", "/curate",
                                                                           "/held", "/sources")),
                        "a.btn:has-text('New skill')", "#gq"):
            box = _box(pg, control)
            assert pg.locator(control).first.is_visible() and box["x"] >= 0 and box["x"] + box["width"] <= inner, \
                (url, control, box)
        assert _box(pg, "#gq")["width"] >= 250, "the search box shrank to its hint"
    # Curate: every table and the reason field inside its card
    pg.goto(base + "/curate")
    for panel in pg.locator("section.panel").all():
        p = panel.bounding_box()
        assert p["x"] >= 0 and p["x"] + p["width"] <= PHONE["width"]
        for inner_el in panel.locator(".scrollx, input[name=reason], .bulkbar .btn").all():
            b = inner_el.bounding_box()
            assert b["x"] >= p["x"] and b["x"] + b["width"] <= p["x"] + p["width"] + 0.5, (inner_el, b, p)
    # a popover opened on a phone stays on the screen
    pg.goto(f"{base}/skill/{ro}")
    pg.click("summary:has-text('Extend TTL')")
    form = _box(pg, "details[open] .popform")
    assert form["x"] >= 0 and form["x"] + form["width"] <= PHONE["width"]
    assert pg.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    pg.screenshot(path=str(shots / "phone-popover.png"))


def test_curate_ticks_every_skill_on_a_page(server, page, shots):
    base, lib = server
    pg = page
    for i in range(3):                              # skills no search has listed yet
        lib.save("ARCHIVE", name=f"unseen-{i}", description=f"An unseen skill {i}", body="## Solution\n\nx\n",
                 by="person")
    pg.goto(base + "/curate")
    kill = pg.locator("#kill")
    boxes = kill.locator("input[name=skill]")
    n = boxes.count()
    assert n >= 2
    all_box = kill.locator("input.tickall")
    assert all_box.is_visible()
    all_box.check()
    assert [boxes.nth(i).is_checked() for i in range(n)] == [True] * n
    assert kill.locator("button .ticked").inner_text() == f"({n})"
    boxes.nth(0).uncheck()
    assert pg.evaluate("document.querySelector('#kill input.tickall').indeterminate")
    assert kill.locator("button .ticked").inner_text() == f"({n - 1})"
    pg.screenshot(path=str(shots / "curate-ticked.png"), full_page=True)
    all_box.click()                                 # from "some": every box again
    assert all(boxes.nth(i).is_checked() for i in range(n))
    all_box.uncheck()
    assert not any(boxes.nth(i).is_checked() for i in range(n))
    assert kill.locator("button .ticked").inner_text() == ""


def test_a_diff_shows_where_lines_were_left_out(server, page, shots):
    base, lib = server
    pg = page
    pg.goto(f"{base}/skill/{lib.get('deploy-previews').id}?tab=history&a=1&b=2")
    row = pg.locator("table.sbs tr.elided").first
    assert row.is_visible() and "unchanged line" in row.inner_text()
    table, box = _box(pg, "table.sbs"), row.bounding_box()
    assert box["x"] >= table["x"] and box["width"] > table["width"] * 0.9 and box["height"] >= 10
    pg.screenshot(path=str(shots / "diff-elided.png"), full_page=True)


def test_the_overview_gives_a_gap_the_room_of_its_row(server, page, shots):
    base, lib = server
    pg = page
    lib.search("tune postgres autovacuum", limit=3)
    _wait_for_gaps(lib)
    pg.goto(base + "/")
    cell = pg.locator("td.gapq", has_text="tune postgres autovacuum").first
    row = cell.locator("xpath=..").bounding_box()
    box = cell.bounding_box()
    assert box["width"] >= row["width"] * 0.4, (box, row)
    assert pg.evaluate("c => c.scrollWidth <= c.clientWidth", cell.element_handle()), "a short request was cut"
    pg.screenshot(path=str(shots / "overview-gaps.png"), full_page=True)


def test_curate_restores_ticked_skills(server, page, shots):
    base, lib = server
    pg = page
    names = ["docker-build", "commit-style"]
    for n in names:
        lib.deprecate(n, "tidying up")
    pg.goto(base + "/curate#inactive")
    gone = pg.locator("#inactive")
    for n in names:
        assert gone.locator("tr", has_text=n).locator("input[name=skill]").count() == 1
    gone.locator("input.tickall").check()
    assert gone.locator("button .ticked").inner_text() == f"({gone.locator('input[name=skill]').count()})"
    pg.screenshot(path=str(shots / "curate-restore.png"), full_page=True)
    gone.locator("button:has-text('Restore ticked')").click()
    pg.wait_for_selector(".flash")
    assert flash(pg).startswith("restored") and all(lib.get(n).active for n in names)
    assert pg.url.endswith("/curate#inactive")
