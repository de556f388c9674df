"""The studio's list at volume in a real headless Chromium: compact rows of one line each, 20 on a
1280×900 screen after a bulk load (every row new, with long names and badges), and, at 390 px, nothing
scrolling sideways and no serious axe-core violation."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.concepts import make_concept
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, signed_in

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
