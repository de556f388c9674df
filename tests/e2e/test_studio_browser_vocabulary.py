"""The studio page in a real headless Chromium: an operator opens the agent's vocabulary, copies in
the retail starter, edits it, sees a refusal at its line, and saves what recall then reads."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
READING = "readings:\n  - customers: [alelo, sodexo]\n    store: vale-alimentação\n"


def test_an_operator_edits_the_vocabulary_and_sees_a_refusal_at_its_line(page, store):
    page.click("#show-vocabulary")
    expect(page.locator("#vocabulary-view")).to_be_visible()
    expect(page.locator("#vocabulary-state")).to_contain_text("has no vocabulary yet")
    page.click("#vocabulary-starter")
    expect(page.locator("#vocabulary-text")).to_have_value(re.compile(r"^# A starter vocabulary for Brazilian retail"))
    # A reading (it starts on line 2) whose `store` is misspelled.
    page.fill("#vocabulary-text", "readings:\n  - customers: [alelo]\n    stor: vale-alimentação\n")
    page.click("#vocabulary-save")
    error = page.locator("#vocabulary-errors li")
    expect(error).to_contain_text("line 2 (reading 1): 'stor': unknown key")
    assert error.get_attribute("data-line") == "2"
    expect(page.locator("#vocabulary-text")).to_have_attribute("aria-invalid", "true")
    selected = page.evaluate("""() => { const t = document.getElementById('vocabulary-text');
                                        return t.value.slice(t.selectionStart, t.selectionEnd); }""")
    assert selected == "  - customers: [alelo]"  # the reading's line, selected for the operator
    assert store.get_vocabulary(T, A) is None  # nothing saved
    page.fill("#vocabulary-text", READING)
    page.click("#vocabulary-save")
    expect(page.locator("#status")).to_contain_text("Vocabulary saved")
    expect(page.locator("#vocabulary-state")).to_contain_text("1 readings, 2 phrases, in force")
    expect(page.locator("#vocabulary-errors li")).to_have_count(0)
    assert store.get_vocabulary(T, A).text == READING
    page.click("#back-from-vocabulary")
    page.wait_for_selector("#list-view:not([hidden])")
