"""The studio page in the browser: its list's rows, opening a concept, typing in the editor, and a
page signed in after a test's data is in place."""

from __future__ import annotations

from contextlib import contextmanager

from helpers.paths import ARTIFACTS

T, A = "default", "store-support"


def rows(page):
    return page.locator("#concepts tbody tr").evaluate_all("rows => rows.map(r => r.dataset.name)")


def open_concept(page, name):
    page.get_by_role("button", name=name, exact=True).click()
    page.wait_for_selector(".cm-content")


def click_line(page, text_in_line, within=""):
    """Click the editor's line holding `text_in_line`, once the editor has settled where it is
    scrolled to: CodeMirror measures the lines it scrolls to and may move them, so a click aimed
    before that lands on the line above."""
    line = page.locator(f"{within} .cm-line".strip(), has_text=text_in_line).first
    line.scroll_into_view_if_needed()
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    line.click()


def type_at_end_of_line(page, text_in_line, typed):
    click_line(page, text_in_line)
    page.keyboard.press("End")
    page.keyboard.type(typed)


@contextmanager
def signed_in(browser, studio, request, path=f"/studio/knowledge?agent={A}", ready="#concepts tbody tr"):
    """A page signed in after the test's data is in place (the `page` fixture signs in before)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    page.goto(studio.url + path)
    page.click("#signin-link")
    page.wait_for_selector(ready)
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        context.close()
    assert errors == [], errors
