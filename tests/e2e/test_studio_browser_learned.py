"""The studio page in a real headless Chromium: a concept's learned words are listed beside the
editor, and removing one there, then saving, records it as removed (never learned again); an operator
adds a word customers use there, told in plain words what cannot be one, and saving keeps it as theirs
(a word they had removed leaves removed_words)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept

from knowledge.format.learned_words import LearnedWord

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


def test_an_operator_adds_a_word_in_the_panel_and_saving_keeps_it_as_theirs(page, store):
    current = store.get(T, A, NAME)
    store.replace(T, A, current.concept.replace(learned_words=(LearnedWord("destrocar", "loaded", 4,
                                                                           date(2026, 11, 20)),),
                                                removed_words=("trocar tamanho", "smart")),
                  if_match=current.etag, actor="learning", reason="learned")
    open_concept(page, NAME)
    panel = page.locator("#learned-panel")
    field = page.get_by_label("Add a word customers use for it")
    problem = page.locator("#learned-problem")
    for typed, said in (("troca 30 dias", "Use letters only"), ("Destrocar", "“destrocar” is already a learned word"),
                        ("uma frase longa demais", "at most 3 words")):
        field.fill(typed)
        page.get_by_role("button", name="Add word").click()
        expect(problem).to_contain_text(said)
        expect(field).to_have_attribute("aria-invalid", "true")
    assert axe_violations(page) == []  # with a problem shown, too
    expect(page.locator("#dirty")).to_be_hidden()  # nothing was added

    field.fill("Trocar  Tamanho")  # typed as an operator types: the stored word is lowercase, single-spaced
    field.press("Enter")
    expect(problem).to_be_hidden()
    expect(panel).to_contain_text("trocar tamanho — added by an operator")
    expect(page.locator("#dirty")).to_be_visible()  # an edit for review, not saved yet
    expect(page.locator("#status")).to_contain_text("took it out of the removed words")
    text = page.inner_text(".cm-content")
    assert 'origin: operator, sessions: 0' in text and 'removed_words: ["smart"]' in text
    assert axe_violations(page) == []
    page.click("#save")
    page.wait_for_selector("#status:has-text('Saved.')")
    kept = store.get(T, A, NAME).concept
    assert [(e.word, e.origin, e.sessions) for e in kept.learned_words] == [("destrocar", "loaded", 4),
                                                                            ("trocar tamanho", "operator", 0)]
    assert kept.removed_words == ("smart",)


def test_an_operator_adds_the_first_word_of_a_concept_that_has_none(page, store):
    open_concept(page, NAME)
    expect(page.locator("#learned-panel")).to_contain_text("No learned words yet.")
    page.get_by_label("Add a word customers use for it").fill("destroca")
    page.get_by_role("button", name="Add word").click()
    page.click("#save")
    page.wait_for_selector("#status:has-text('Saved.')")
    assert [(e.word, e.origin) for e in store.get(T, A, NAME).concept.learned_words] == [("destroca", "operator")]


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
