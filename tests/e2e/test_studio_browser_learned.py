"""The studio page in a real headless Chromium: a concept's learned words are listed beside the
editor, and removing one there, then saving, records it as removed (never learned again)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept

from knowledge.format.learned import LearnedWord

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
NAME = "troca-em-30-dias"


def test_a_learned_word_removed_in_the_panel_and_saved_is_recorded_as_removed(page, store):
    current = store.get(T, A, NAME)
    words = (LearnedWord("destrocar", "loaded", 4, date(2026, 11, 20)),
             LearnedWord("devolver", "sighting", 3, date(2026, 11, 21)))
    store.replace(T, A, current.concept.replace(learned_words=words), if_match=current.etag,
                  actor="learning", reason="learned")
    open_concept(page, NAME)
    panel = page.locator("#learned-panel")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("destrocar")
    expect(panel).to_contain_text("4 sessions")
    page.get_by_role("button", name="Remove the learned word destrocar").click()
    expect(page.locator("#dirty")).to_be_visible()  # an edit for review, not saved yet
    assert '"destrocar"' not in page.inner_text(".cm-content")
    assert store.get(T, A, NAME).concept.removed_words == ()
    expect(panel).not_to_contain_text("destrocar")
    page.click("#save")
    page.wait_for_selector("#status:has-text('Saved.')")
    kept = store.get(T, A, NAME).concept
    assert [e.word for e in kept.learned_words] == ["devolver"] and kept.removed_words == ("destrocar",)
    assert 'removed_words: ["destrocar"]' in page.inner_text(".cm-content")


def test_ctrl_s_after_removing_a_learned_word_saves_it_though_focus_left_the_editor(page, store):
    current = store.get(T, A, NAME)
    words = (LearnedWord("destrocar", "loaded", 4, date(2026, 11, 20)),)
    store.replace(T, A, current.concept.replace(learned_words=words), if_match=current.etag,
                  actor="learning", reason="learned")
    open_concept(page, NAME)
    page.get_by_role("button", name="Remove the learned word destrocar").click()
    assert page.evaluate("document.activeElement.closest('.cm-editor') === null")  # the editor lost focus
    page.keyboard.press("Control+s")
    expect(page.locator("#status")).to_have_text("Saved.")
    expect(page.locator("#dirty")).to_be_hidden()
    assert store.get(T, A, NAME).concept.removed_words == ("destrocar",)


def test_ctrl_s_after_opening_history_with_an_unsaved_edit_saves_the_edit(page, store):
    open_concept(page, NAME)
    page.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("\nTambém na loja física.")
    page.click("#history")
    expect(page.locator("#history-panel")).to_be_visible()
    page.keyboard.press("Control+s")
    expect(page.locator("#status")).to_have_text("Saved.")
    assert store.get(T, A, NAME).concept.body.rstrip().endswith("Também na loja física.")
