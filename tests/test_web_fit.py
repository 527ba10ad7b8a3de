"""The dashboard at the widths people use, in Chromium: at 1280 px the search results table
fits its box with every column in view (no sideways scrollbar hiding Shown and Success, a
"why" that reads as a line, not a word per line); at a phone's 390 px the first hit is on
the first screen, not below the filter form; Curate comes in pages, not one 8,000 px list.
Screenshots go to a temporary folder (or $SKILLSHELF_SCREENSHOTS)."""

from __future__ import annotations

import pytest
from conftest import dashboard_server, needs_chromium, write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")

pytestmark = needs_chromium

QUERY = "write release notes from the git history"
TOPICS = ["release notes", "changelog", "git history", "commit messages", "semantic versioning", "tags",
          "pull request summaries", "conventional commits"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A library like a real one: long names and descriptions, types, tags, repos, copies of
    one name in two collections, usage (shown, outcomes), and some 250 skills no search listed
    (kill candidates)."""
    tmp = tmp_path_factory.mktemp("fit")
    roots = [tmp / "community-collection-of-agent-skills", tmp / "team-platform-engineering-skills"]
    for i in range(24):
        topic = TOPICS[i % len(TOPICS)]
        root = roots[i % 2]
        write_skill(root, f"skills/release/{topic.replace(' ', '-')}-helper-{i:02d}",
                    description=f"Write {topic} from the git history of a repository, group the commits, "
                                f"summarise each change for users, link the pull requests and mark breaking "
                                f"changes. Use when preparing a release or a tag (variant {i}).",
                    body=f"## When to Use\n\nBefore a release.\n\n## Steps\n\nRead the git history, write the "
                         f"{topic}.\n",
                    extra=f"metadata:\n  skill-type: {'WORKFLOW' if i % 3 else 'IMPLEMENTATION'}\n"
                          f"  tags: release, changelog, git, documentation, automation\n"
                          f"  repo: github.com/example-organisation/release-tooling-monorepo-{i % 4}\n")
    write_skill(roots[1], "skills/release/changelog-helper-copy", name="changelog-helper-01",
                description="Write changelog from the git history (the same skill in another collection).")
    for i in range(250):
        write_skill(roots[i % 2], f"skills/misc/unused-skill-number-{i:03d}",
                    description=f"An unrelated skill about subject {i} that no request has listed yet")
    lib = Library(home=tmp / "home", roots=roots, embedder=FakeEmbedder(), auto_sync=False)
    lib.sync()
    for _ in range(3):
        res = lib.search(QUERY, limit=10)
        for h in res.hits[:4]:
            lib.report_outcome(h.name, worked=True, note="wrote the notes", query_id=res.query_id)
        lib.report_outcome(res.hits[4].name, worked=False, note="missed the breaking changes", query_id=res.query_id)
    for i in range(30):                                  # requests nothing serves: gaps
        lib.search(f"zqx{i:02d} wub{i}ble fla{i}rn grom{i}met", limit=5)
    with dashboard_server(lib) as base:
        yield base, lib
    lib.close()


def _open(browser, width: int, height: int):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)
    return ctx, pg


def _table_fits(pg) -> dict:
    return pg.evaluate("""() => {
        const wrap = document.querySelector('#results .tablewrap');
        const table = wrap.querySelector('table');
        const box = wrap.getBoundingClientRect();
        const heads = [...table.querySelectorAll('thead th')].map(th => {
            const r = th.getBoundingClientRect();
            return {text: th.innerText.trim(), left: r.left, right: r.right, width: r.width};
        });
        return {scroll: wrap.scrollWidth, client: wrap.clientWidth, left: box.left, right: box.right, heads,
                viewport: window.innerWidth, page: document.documentElement.scrollWidth};
    }""")


@pytest.mark.parametrize("query", [QUERY, ""])
def test_at_1280_px_the_results_table_fits_with_every_column_in_view(server, browser, shots, query):
    base, _lib = server
    ctx, pg = _open(browser, 1280, 900)
    try:
        pg.goto(base + "/skills" + (f"?q={QUERY.replace(' ', '+')}" if query else ""))
        pg.wait_for_selector("table.skills tbody tr")
        pg.screenshot(path=str(shots / f"fit-1280{'-search' if query else '-browse'}.png"), full_page=True)
        m = _table_fits(pg)
        assert m["scroll"] <= m["client"], m                     # no scrollbar inside the card
        assert m["page"] <= m["viewport"], m                     # nor on the page
        names = [h["text"] for h in m["heads"]]
        for col in ("Shown", "Success", "Status"):
            assert any(n.startswith(col) for n in names), names
        for h in m["heads"]:                                     # every column wholly in the card
            assert m["left"] - 1 <= h["left"] and h["right"] <= m["right"] + 1, (h, m)
        if query:
            assert pg.locator("#results q", has_text=QUERY).count() == 1
            match = next(h for h in m["heads"] if h["text"] == "Match")
            assert match["width"] >= 160, m                      # a "why" reads as words, not a column of them
            whys = pg.locator("table.skills .why")
            assert whys.count() >= 5
            for i in range(whys.count()):
                box = whys.nth(i).bounding_box()
                line = float(pg.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)",
                                         whys.nth(i).element_handle()))
                assert box["height"] <= 3 * line + 1, (whys.nth(i).inner_text(), box, line)
            rows = pg.locator("table.skills tbody tr")
            heights = [rows.nth(i).bounding_box()["height"] for i in range(rows.count())]
            assert max(heights) <= 110, heights
    finally:
        ctx.close()


def test_at_390_px_the_first_hit_is_on_the_first_screen(server, browser, shots):
    base, _lib = server
    ctx, pg = _open(browser, 390, 844)
    try:
        pg.goto(base + "/skills?q=" + QUERY.replace(" ", "+"))
        pg.wait_for_selector("table.skills tbody tr")
        pg.screenshot(path=str(shots / "fit-390-search.png"))
        first = pg.locator("table.skills tbody tr").first.locator("a.name").bounding_box()
        assert first["y"] + first["height"] <= 844, first
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        # the filters are still there, one tap away
        pg.click("summary:has-text('Filters')")
        pg.locator("select[name=root]").wait_for(state="visible")
        pg.screenshot(path=str(shots / "fit-390-filters.png"))
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        ctx.close()


def test_curate_comes_in_pages(server, browser, shots):
    base, lib = server
    ctx, pg = _open(browser, 1280, 900)
    try:
        pg.goto(base + "/curate")
        pg.wait_for_selector("#kill table")
        pg.screenshot(path=str(shots / "fit-curate.png"), full_page=True)
        height = pg.evaluate("document.documentElement.scrollHeight")
        kill_rows = pg.locator("#kill tbody tr, #kill table tr:has(td)").count()
        total = lib.curation(top=1_000_000)["kill_total"]
        assert total > 100
        assert kill_rows <= 50, kill_rows
        assert height <= 3500, height
        gaps = lib.curation(top=1_000_000)["gaps_total"]
        assert gaps > 25
        assert pg.locator("#gaps tbody tr, #gaps table tr:has(td)").count() == 25
        assert pg.locator("#gaps .pager .muted").first.inner_text() == f"1–25 of {gaps}"
        pg.locator("#kill a.btn:has-text('Next')").first.click()
        pg.wait_for_url("**kill_offset=*")
        assert pg.locator("#kill .pager .muted").first.inner_text().startswith(f"{kill_rows + 1}–")
        pg.goto(base + "/curate?gaps_offset=25")
        assert pg.locator("#gaps .pager .muted").first.inner_text() == f"26–{gaps} of {gaps}"
    finally:
        ctx.close()
