"""The studio's list at volume in a real headless Chromium: compact rows of one line each, 20 on a
1280×900 screen after a bulk load (every row new, with long names and badges), and, at 390 px, nothing
scrolling sideways and no serious axe-core violation; rows acted on in one action (marked reviewed,
deleted and undone, moved to shared knowledge after saying the model calls it queues); a far page of a
long list reached in one step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.aws import drain, new_queue
from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.concepts import make_concept
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, rows, signed_in

from knowledge.store.keys import SHARED

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
LONG = "politica-de-troca-e-devolucao-de-produtos-da-loja-fisica"  # 57 of the 64 a name holds


def bulk_load(store, count=30):
    """A bulk import as the engine writes it: every row new to the operator, names long enough to wrap."""
    for number in range(count):
        store.create(T, A, make_concept(f"{LONG}-{number:02d}", description="Trocas e devoluções de produtos "
                                        "comprados na loja física seguem a política do site, em até 30 dias."),
                     actor="engine")


def visible_rows(page):
    return page.evaluate("() => [...document.querySelectorAll('#concepts tbody tr')]"
                         ".filter(r => { const b = r.getBoundingClientRect(); return b.top >= 0 && b.bottom <= innerHeight; }).length")


def row_heights(page):
    return page.locator("#concepts tbody tr").evaluate_all("rows => rows.map(r => r.getBoundingClientRect().height)")


def test_compact_rows_are_one_line_and_twenty_fit_on_1280_by_900(browser, studio, store, request):
    bulk_load(store)
    with signed_in(browser, studio, request) as page:
        expect(page.locator("#concepts tbody tr .mark-reviewed").first).to_be_visible()
        roomy = max(row_heights(page))
        page.get_by_label("Compact rows (one line each)").check()
        heights = row_heights(page)
        line = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#concepts td')).lineHeight)"
                             " || 24")
        assert max(heights) < 2 * line < roomy  # one line each, where the roomy rows took several
        page.locator("#concepts").scroll_into_view_if_needed()
        page.evaluate("() => document.querySelector('#concepts thead').scrollIntoView()")
        assert visible_rows(page) >= 20
        page.reload()  # the density is remembered in this browser
        page.wait_for_selector("#concepts tbody tr")
        expect(page.get_by_label("Compact rows (one line each)")).to_be_checked()
        assert max(row_heights(page)) < 2 * line


def test_compact_rows_at_390_px_scroll_nothing_sideways_and_pass_axe(browser, studio, store, request):
    bulk_load(store, 12)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(f"{studio.url}/studio/knowledge?agent={A}")
        page.click("#signin-link")
        page.wait_for_selector("#concepts tbody tr")
        page.get_by_label("Compact rows (one line each)").check()
        expect(page.locator("#list-view")).to_have_class("compact")
        assert page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
        assert page.evaluate("() => { const box = document.querySelector('.table-scroll');"
                             " return box.scrollWidth - box.clientWidth; }") <= 0
        assert axe_violations(page) == []
    finally:
        context.close()


def test_twenty_rows_marked_reviewed_in_one_action_each_leave_the_queue(browser, studio, store, request):
    bulk_load(store)
    with signed_in(browser, studio, request) as page:
        page.get_by_label("Compact rows (one line each)").check()
        new_before = int(page.inner_text("#new-count"))
        names = page.locator("#concepts tbody tr").evaluate_all("rows => rows.slice(0, 20).map(r => r.dataset.name)")
        for name in names:
            page.get_by_role("checkbox", name=f"Select {name}", exact=True).check()
        expect(page.locator("#bulk-count")).to_have_text("20 selected")
        page.get_by_role("button", name="Mark reviewed", exact=True).click()
        expect(page.locator("#status")).to_have_text(f"20 marked reviewed. {new_before - 20} new left.")
        expect(page.locator("#new-count")).to_have_text(str(new_before - 20))
        expect(page.locator("#bulk-bar")).to_be_hidden()
        for name in names:
            expect(page.locator(f"#concepts tbody tr[data-name='{name}'] .triage")).to_have_count(0)
        expect(page.locator("#concepts tbody tr .triage")).to_have_count(new_before - 20)


def test_a_bulk_delete_asks_first_and_is_undone_in_one_action(browser, studio, store, request):
    bulk_load(store, 5)
    with signed_in(browser, studio, request) as page:
        names = [f"{LONG}-{n:02d}" for n in range(3)]
        for name in names:
            page.get_by_role("checkbox", name=f"Select {name}", exact=True).check()
        asked = []
        page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
        page.get_by_role("button", name="Delete…").click()
        expect(page.locator("#status")).to_have_text("3 deleted. Undo brings them back.")
        assert asked and asked[0].startswith("Delete 3 concepts?")
        assert not {n for n in names if store.find(T, A, n) is not None}
        page.get_by_role("button", name="Undo the delete").click()
        expect(page.locator("#status")).to_have_text("3 brought back.")
        assert all(store.find(T, A, n) is not None for n in names)
        expect(page.locator("#bulk-undo")).to_be_hidden()


@pytest.fixture
def words_queue(monkeypatch, sqs):
    """The studio's queue and the utility model it names, set before its handler starts (its cold start
    reads them): what enters shared knowledge is queued there for the model's words."""
    url = new_queue(sqs)
    monkeypatch.setenv("POLICY_REVIEW_QUEUE_URL", url)
    monkeypatch.setenv("UTILITY_MODEL", "openai:words")
    return url


def test_a_bulk_move_to_shared_says_its_model_calls_first_then_each_rows_outcome(
        words_queue, browser, studio, store, sqs, request):
    bulk_load(store, 12)
    taken = f"{LONG}-03"
    store.create(T, SHARED, make_concept(taken, description="Outra politica de troca."), actor="operator:ana")
    names = [f"{LONG}-{n:02d}" for n in range(12)]
    with signed_in(browser, studio, request) as page:
        for name in names:
            page.get_by_role("checkbox", name=f"Select {name}", exact=True).check()
        page.get_by_role("button", name="Move to shared…").click()
        expect(page.locator("#move-text")).to_contain_text(
            "Moving 11 concepts to shared knowledge queues 2 model calls to teach their words (ten concepts to a call")
        expect(page.locator("#move-text")).to_contain_text("1 row cannot move: listed below. This agent does not "
                                                           "recall shared knowledge")
        expect(page.locator("#bulk-outcomes")).to_have_text(
            f"{taken}: shared knowledge has another concept of this name: open it there, or rename this one")
        assert drain(sqs, words_queue) == [] and store.find(T, SHARED, names[0]) is None  # said, nothing done
        assert axe_violations(page) == []
        page.get_by_role("button", name="Move 11 concepts").click()
        expect(page.locator("#status")).to_have_text("11 concepts moved to shared knowledge: 2 model calls queued "
                                                     "to teach their words. 1 left as it was: listed below.")
        expect(page.locator("#move-panel")).to_be_hidden()
        expect(page.locator("#concepts tbody tr")).to_have_count(7 + 1)  # the demo's seven and the one kept
        assert rows(page).count(taken) == 1
    moved = [n for n in names if n != taken]
    assert all(store.find(T, A, n) is None and store.find(T, SHARED, n) is not None for n in moved)
    jobs = [json.loads(m["Body"]) for m in drain(sqs, words_queue)]
    assert sorted(len(j.get("names", [1])) for j in jobs if j.get("job") == "words") == [1, 10]


def test_a_far_page_of_a_long_list_is_one_step_away_and_kept_in_the_url(browser, studio, store, request):
    for number in range(420):
        store.create(T, A, make_concept(f"pedido-{number:04d}", description=f"Pedido {number:04d}."), actor="engine")
    everything = sorted(c.name for c in store.list(T, A))
    assert len(everything) == 427
    with signed_in(browser, studio, request, path=f"/studio/knowledge?agent={A}&sort=name&order=asc") as page:
        expect(page.locator("#catching-up")).to_be_hidden(timeout=60_000)
        expect(page.locator("#pages")).to_be_visible()
        expect(page.locator("#page-count")).to_have_text("of 9")
        page.get_by_label("Page", exact=True).fill("8")
        page.get_by_label("Page", exact=True).press("Enter")
        expect(page.locator("#page-rows")).to_have_text("Rows 351–400 of 427")
        assert rows(page) == everything[350:400]
        expect(page.locator("#status")).to_have_text("Rows 351–400 of 427 concepts")
        assert "page=8" in page.url
        page.get_by_label("Select every row shown").check()  # what is selected is what is on screen
        expect(page.locator("#bulk-count")).to_have_text("50 selected")
        page.get_by_role("button", name="Next page").click()
        expect(page.locator("#page-rows")).to_have_text("Rows 401–427 of 427")
        assert rows(page) == everything[400:]
        expect(page.locator("#bulk-bar")).to_be_hidden()  # another page starts with nothing selected
        expect(page.get_by_role("button", name="Next page")).to_be_disabled()
        expect(page.get_by_label("Page", exact=True)).to_be_focused()  # not lost to the page's body
        page.reload()
        page.wait_for_selector("#concepts tbody tr")
        expect(page.locator("#page-rows")).to_have_text("Rows 401–427 of 427")
        page.go_back()
        expect(page.locator("#page-rows")).to_have_text("Rows 351–400 of 427")
        page.get_by_role("button", name="First page").click()
        expect(page.locator("#status")).to_have_text("50 of 427 concepts")
        assert rows(page) == everything[:50] and "page=" not in page.url


def test_the_page_controls_at_390_px_scroll_nothing_sideways_and_pass_axe(browser, studio, store):
    bulk_load(store, 60)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(f"{studio.url}/studio/knowledge?agent={A}&page=2")
        page.click("#signin-link")
        page.wait_for_selector("#concepts tbody tr")
        expect(page.locator("#page-rows")).to_have_text("Rows 51–67 of 67")
        page.get_by_label("Compact rows (one line each)").check()
        assert page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
        assert axe_violations(page) == []
    finally:
        context.close()
