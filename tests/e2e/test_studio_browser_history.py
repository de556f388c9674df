"""A concept's history in a real headless Chromium, counted in the page's API requests: History asks once
however often it is clicked while its page is on the way (and says it is loading), a diff's two versions
come in one request, and a version read once is never asked for again."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept, signed_in

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
NAME = "troca-em-30-dias"


def confirmed(store, times):
    for _ in range(times):
        current = store.get(T, A, NAME)
        store.replace(T, A, current.concept.replace(occurrences=current.concept.occurrences + 1),
                      if_match=current.etag, actor="engine", reason="confirmed")


def history_requests(page):
    """The page's requests under the concept's history, as paths after `/versions`, from now on."""
    asked = []
    page.on("request", lambda r: asked.append(r.url.split(f"/concepts/{NAME}/versions", 1)[1])
            if f"/concepts/{NAME}/versions" in r.url else None)
    return asked


def test_history_asks_once_while_loading_and_each_diff_is_one_request_at_most(browser, studio, store, request):
    confirmed(store, 3)
    with signed_in(browser, studio, request) as page:
        open_concept(page, NAME)
        held = []  # the first page's request, answered when the test says
        page.route(f"**/concepts/{NAME}/versions?*", lambda route: held.append(route))
        asked = history_requests(page)
        page.click("#history")
        page.wait_for_function("() => document.querySelector('#status').textContent === 'Loading the history…'")
        page.click("#history")  # impatient: the first page is still on its way
        page.wait_for_timeout(300)
        assert len(held) == 1
        held[0].continue_()
        rows = page.locator("#versions tbody tr")
        expect(rows).to_have_count(4)
        expect(page.locator("#status")).to_have_text("")
        assert asked == ["?limit=50"]

        asked.clear()
        rows.nth(0).get_by_role("button", name="Changes").click()  # the newest against the one before: one request
        expect(page.locator("#diff-label")).to_contain_text("against the one before")
        expect(page.locator("#diff-same")).to_be_hidden()
        assert len(asked) == 1 and "/against/" in asked[0]
        rows.nth(1).get_by_role("button", name="Changes").click()  # its own text was read with the first diff
        expect(page.locator("#diff-label")).to_contain_text(rows.nth(1).locator("td").first.inner_text())
        assert len(asked) == 2 and "/against/" not in asked[1]
        rows.nth(0).get_by_role("button", name="Changes").click()  # both read: nothing asked
        rows.nth(0).get_by_role("button", name="View").click()
        expect(page.locator("#version-preview")).to_contain_text(f"name: {NAME}")
        rows.nth(3).get_by_role("button", name="Against current").click()  # the current one was read: one more
        expect(page.locator("#diff-label")).to_contain_text("The current version, of")
        assert asked[2:] == [f"/{rows.nth(3).get_attribute('data-version-id')}"]
        expect(page.locator("#diff .cm-changedLine")).to_have_count(1)  # occurrences 1 -> 4
