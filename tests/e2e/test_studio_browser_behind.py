"""The studio page in a real headless Chromium: writes made behind an open list are said above it within a
few seconds ("N changes since you opened it — show"), long before the list's own refresh; "show" brings
the new rows; the tab's own bulk action is not counted as behind it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.concepts import make_concept
from helpers.paths import ARTIFACTS, ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, rows

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
WRITES = 40


@pytest.fixture
def page(browser, studio, request):
    """A signed-in list whose own refresh comes every 10 minutes (config.json), so that only the cue,
    at its default pace, can tell of the writes behind it."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def slow_refresh(route):
        answer = route.fetch()
        route.fulfill(response=answer, body=json.dumps({**answer.json(), "refreshSeconds": 600}))

    context.route("**/config.json", slow_refresh)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{studio.url}/studio/knowledge?agent={A}")
    page.click("#signin-link")
    page.wait_for_selector("#concepts tbody tr")
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        context.close()
    assert errors == [], errors


def looks(page, count):
    """Wait for the page's next `count` looks behind the list to be answered."""
    for _ in range(count):
        with page.expect_response(lambda answer: "/changes?" in answer.url, timeout=10_000):
            pass


def test_writes_behind_an_open_list_are_said_within_seconds_and_show_brings_them(page, store):
    cue = page.locator("#behind-cue")
    # The operator's own bulk action in this tab is not behind the list.
    for name in ("troca-em-30-dias", "prazo-reembolso-pix"):
        page.get_by_label(f"Select {name}", exact=True).check()
    page.select_option("#bulk-type", "procedure")
    page.click("#bulk-retype")
    expect(page.locator("#status")).to_contain_text("2 changed to procedure")
    looks(page, 2)
    expect(cue).to_be_hidden()

    for i in range(WRITES):
        store.create(T, A, make_concept(f"frete-regiao-{i:02d}", description=f"Frete da região {i}."), actor="engine")
    written = time.monotonic()
    expect(cue).to_have_text(f"{WRITES} changes since you opened it — show", timeout=15_000)
    said_after = time.monotonic() - written
    print(f"\n{WRITES} writes behind the list said after {said_after:.1f} s")
    assert said_after < 10  # a look every 3 s, each answered from a journal read at most 2 s old (refresh: 30 s)
    assert len(rows(page)) == 7  # the rows are still as listed: the cue says what is behind them
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})

    page.get_by_role("button", name="show", exact=True).click()
    expect(cue).to_be_hidden()
    expect(page.locator("#concepts tbody tr")).to_have_count(7 + WRITES, timeout=20_000)
    assert set(rows(page)[:WRITES]) == {f"frete-regiao-{i:02d}" for i in range(WRITES)}  # last written first
    expect(page.locator("#concepts tbody tr").first.locator("button.link")).to_be_focused()
    looks(page, 1)
    expect(cue).to_be_hidden()  # nothing behind the rows shown now


def test_show_on_a_later_page_of_the_newest_first_list_goes_to_the_first_page_where_the_writes_are(page, store):
    cue = page.locator("#behind-cue")
    for i in range(55):  # 62 concepts: two pages of the list
        store.create(T, A, make_concept(f"entrega-bairro-{i:02d}", description=f"Entrega no bairro {i}."), actor="engine")
    expect(cue).to_be_visible(timeout=15_000)
    page.get_by_role("button", name="show", exact=True).click()
    expect(page.locator("#page-rows")).to_have_text("Rows 1–50 of 62", timeout=20_000)
    page.click("#page-next")
    expect(page.locator("#page-rows")).to_have_text("Rows 51–62 of 62")

    for i in range(3):
        store.create(T, A, make_concept(f"retirada-loja-{i}", description=f"Retirada na loja {i}."), actor="engine")
    expect(cue).to_have_text("3 changes since you opened it — show", timeout=15_000)
    page.get_by_role("button", name="show", exact=True).click()
    # What was written is on the first page of the newest-first list: "show" took the operator there.
    expect(page.locator("#page-rows")).to_have_text("Rows 1–50 of 65", timeout=20_000)
    assert set(rows(page)[:3]) == {f"retirada-loja-{i}" for i in range(3)}
    expect(page.locator("#page-number")).to_have_value("1")
    assert "page=" not in page.evaluate("location.search")  # the URL names the first page (none)
    expect(page.locator("#concepts tbody tr").first.locator("button.link")).to_be_focused()
