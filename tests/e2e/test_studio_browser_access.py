"""The studio page in a real headless Chromium is accessible: no serious axe-core violation in any
view, every action by keyboard alone, and nothing scrolls sideways at 390 px."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ARTIFACTS, ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


# ------------------------------------------------------------------ accessible

def test_no_serious_accessibility_violation_in_any_view(page, store):
    store.delete(T, A, "objecao-frete-caro", actor="operator:bia")
    assert axe_violations(page) == []
    open_concept(page, "troca-em-30-dias")
    page.click("#history")
    page.locator("#versions tbody tr").first.get_by_role("button", name="Changes").click()
    page.wait_for_selector("#diff-panel:not([hidden])")
    assert axe_violations(page) == []
    page.click("#back-from-editor")
    page.click("#show-deleted")
    page.locator("#deleted tbody tr").first.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#deleted-preview:not([hidden])")
    assert axe_violations(page) == []


def focused(page):
    return page.evaluate("() => { const e = document.activeElement;"
                         " return e.id || e.dataset.name || e.dataset.sort || e.className || e.tagName; }")


def tab_to(page, wanted, key="Tab", limit=60):
    for _ in range(limit):
        if focused(page) == wanted:
            return
        page.keyboard.press(key)
    raise AssertionError(f"{wanted} never took the focus (last: {focused(page)})")


def test_keyboard_only_from_the_list_to_a_saved_edit_and_back(page, store):
    tab_to(page, "name")  # a sort button is a button: Enter sorts
    assert page.evaluate("() => document.activeElement.dataset.sort") == "name"
    page.keyboard.press("Enter")
    expect(page.locator("th", has=page.locator("button[data-sort=name]"))).to_have_attribute("aria-sort", "ascending")
    tab_to(page, "troca-em-30-dias")
    page.keyboard.press("Enter")
    expect(page.locator("#editor-title")).to_have_text("troca-em-30-dias")
    assert focused(page) == "cm-content cm-lineWrapping"  # the editor has the focus, named for a reader
    assert page.locator(".cm-content").get_attribute("aria-label") == "Concept markdown"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("End")
    page.keyboard.type(" Sem custo.")
    page.keyboard.press("Control+s")
    expect(page.locator("#status")).to_have_text("Saved.")
    assert store.get(T, A, "troca-em-30-dias").concept.description.endswith("Sem custo.")
    tab_to(page, "back-from-editor", key="Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#concepts button.link[data-name=troca-em-30-dias]")).to_be_focused()  # back where it left
    tab_to(page, "show-deleted", key="Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#deleted-view")).to_be_visible()
    assert focused(page) == "deleted-title"
    tab_to(page, "back-from-deleted")
    page.keyboard.press("Enter")
    expect(page.locator("#show-deleted")).to_be_focused()


def test_browser_back_returns_the_focus_to_the_concept_left(page):
    open_concept(page, "rastreio-pedido")
    page.go_back()
    page.wait_for_selector("#list-view:not([hidden])")
    expect(page.locator("#concepts button.link[data-name=rastreio-pedido]")).to_be_focused()


def test_at_390_px_nothing_scrolls_sideways(browser, studio, request):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{studio.url}/studio/knowledge?agent={A}")
    page.click("#signin-link")
    page.wait_for_selector("#concepts tbody tr")
    wide = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    try:
        assert page.evaluate(wide) <= 0
        assert page.evaluate("() => { const box = document.querySelector('.table-scroll');"
                             " return box.scrollWidth - box.clientWidth; }") <= 0  # every column in view
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-list.png"), full_page=True)
        page.get_by_role("button", name="troca-em-30-dias", exact=True).click()
        page.wait_for_selector(".cm-content")
        page.click("#history")
        page.locator("#versions tbody tr").first.get_by_role("button", name="Changes").click()
        page.wait_for_selector("#diff-panel:not([hidden])")
        assert page.evaluate(wide) <= 0
        assert axe_violations(page) == []
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-editor.png"), full_page=True)
    finally:
        context.close()
