"""The studio's learned words page in a real headless Chromium: the words recall learned across the
agent's concepts, newest first with where each came from, filtered by origin and concept; words
selected across two concepts removed at once, gone from the page and kept in each concept's
removed_words, and the model's proposal gate then refusing one of them for that concept."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T

from knowledge.format.learned_words import LearnedWord

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
REEMBOLSO, TROCA = "prazo-reembolso-pix", "troca-em-30-dias"


def teach(store, name, *entries):
    current = store.get(T, A, name)
    words = tuple(LearnedWord(w, o, s, date.fromisoformat(d)) for w, o, s, d in entries)
    store.replace(T, A, current.concept.replace(learned_words=words), if_match=current.etag,
                  actor="learning", reason="learned")


def shown(page):
    return page.locator("#words tbody tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.concept, r.dataset.word])")


def test_words_selected_across_two_concepts_are_removed_at_once_and_never_proposed_again(page, store):
    from knowledge.learning.model_words import gate_words

    teach(store, REEMBOLSO, ("devolucao grana", "loaded", 3, "2026-11-20"), ("estorno", "model", 0, "2026-11-22"))
    teach(store, TROCA, ("destroca", "sighting", 5, "2026-11-21"), ("trocar tamanho", "model", 0, "2026-11-19"))
    page.click("#show-words")
    expect(page.locator("#words-summary")).to_have_text("4 learned words in 2 concepts, newest first.")
    assert shown(page) == [[REEMBOLSO, "estorno"], [TROCA, "destroca"], [REEMBOLSO, "devolucao grana"],
                           [TROCA, "trocar tamanho"]]
    assert axe_violations(page) == []
    row = page.locator("#words tbody tr", has_text="destroca")
    expect(row).to_contain_text("the store's traffic taught it")
    expect(row).to_contain_text("2026-11-21")
    page.select_option("#words-origin", "model")
    expect(page.locator("#words-summary")).to_have_text("2 learned words in 2 concepts, newest first.")
    assert shown(page) == [[REEMBOLSO, "estorno"], [TROCA, "trocar tamanho"]]
    page.fill("#words-concept", TROCA)
    expect(page.locator("#words tbody tr")).to_have_count(1)
    page.fill("#words-concept", "")
    page.select_option("#words-origin", "")
    expect(page.locator("#words tbody tr")).to_have_count(4)

    page.get_by_role("checkbox", name=f"Select estorno of {REEMBOLSO}").check()
    page.get_by_role("checkbox", name=f"Select destroca of {TROCA}").check()
    page.get_by_role("checkbox", name=f"Select trocar tamanho of {TROCA}").check()
    expect(page.locator("#words-remove")).to_have_text("Remove 3 selected")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#words-remove")
    expect(page.locator("#status")).to_have_text(
        "Removed 3 words from 2 concepts: they will not be learned again for them.")
    assert shown(page) == [[REEMBOLSO, "devolucao grana"]]
    reembolso, troca = store.get(T, A, REEMBOLSO).concept, store.get(T, A, TROCA).concept
    assert reembolso.removed_words == ("estorno",) and set(troca.removed_words) == {"destroca", "trocar tamanho"}
    assert troca.learned_words == () and [e.word for e in reembolso.learned_words] == ["devolucao grana"]
    kept, refused = gate_words(["estorno", "reembolso rapido"], reembolso)  # the model proposing it again
    assert "estorno" not in kept and refused["removed"] == 1


def test_a_concept_changed_since_the_page_read_it_is_reported_and_left_alone(page, store):
    teach(store, TROCA, ("destroca", "sighting", 5, "2026-11-21"))
    teach(store, REEMBOLSO, ("estorno", "model", 0, "2026-11-22"))
    page.click("#show-words")
    expect(page.locator("#words tbody tr")).to_have_count(2)
    page.get_by_role("checkbox", name=f"Select destroca of {TROCA}").check()
    page.get_by_role("checkbox", name=f"Select estorno of {REEMBOLSO}").check()
    teach(store, TROCA, ("destroca", "sighting", 6, "2026-11-21"))  # the traffic writes it meanwhile
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#words-remove")
    expect(page.locator("#words-problems")).to_contain_text(f"{TROCA} was changed since this page read it")
    expect(page.locator("#status")).to_have_text(
        "Removed 1 word from 1 concept: they will not be learned again for them.")
    assert shown(page) == [[TROCA, "destroca"]]
    assert store.get(T, A, TROCA).concept.removed_words == ()


def test_an_operators_word_is_shown_as_theirs_and_found_by_its_origin(page, store):
    teach(store, TROCA, ("destroca", "sighting", 5, "2026-11-21"), ("trocar tamanho", "operator", 0, "2026-11-23"))
    teach(store, REEMBOLSO, ("estorno", "model", 0, "2026-11-22"))
    page.click("#show-words")
    expect(page.locator("#words tbody tr")).to_have_count(3)
    row = page.locator("#words tbody tr", has_text="trocar tamanho")
    expect(row).to_contain_text("an operator added it")
    assert row.locator("td").nth(4).inner_text() == ""  # no session taught it
    page.select_option("#words-origin", "operator")
    expect(page.locator("#words-summary")).to_have_text("1 learned word in 1 concept, newest first.")
    assert shown(page) == [[TROCA, "trocar tamanho"]]
    assert axe_violations(page) == []
