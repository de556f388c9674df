"""A concept's learned words and removed words: optional frontmatter fields, strictly validated."""

from __future__ import annotations

import pytest

from knowledge.format.concept import parse
from knowledge.format.learned_words import LEARNED_MAX
from shared.errors import InvalidConcept

HEAD = """---
name: troca-de-tela
description: Troca de tela de celular em até 2 horas
type: procedure
provenance: observed
confidence: 0.6
sources: ["sess_1"]
occurrences: 1
created_at: 2026-09-01T00:00:00Z
updated_at: 2026-09-01T00:00:00Z
"""
BODY = "---\n\nTrocamos a tela do seu celular na loja.\n"


def entry(word: str, origin: str = "loaded", sessions: int = 3, at: str = "2026-11-20") -> str:
    return f'  - {{word: "{word}", origin: {origin}, sessions: {sessions}, at: {at}}}\n'


def doc(learned: list[str] = (), removed: str | None = None) -> str:
    text = HEAD
    if learned:
        text += "learned_words:\n" + "".join(learned)
    if removed is not None:
        text += f"removed_words: {removed}\n"
    return text + BODY


def test_a_document_with_learned_and_removed_words_reads_and_renders_back_byte_for_byte():
    text = doc([entry("telinha"), entry("trocar o visor", "sighting", 5), entry("tela quebrada", "model", 0)],
               '["smart"]')
    concept = parse(text)
    assert [w.word for w in concept.learned_words] == ["telinha", "trocar o visor", "tela quebrada"]
    assert [w.origin for w in concept.learned_words] == ["loaded", "sighting", "model"]
    assert concept.removed_words == ("smart",)
    assert concept.render() == text


def test_every_existing_concept_stays_valid_without_the_fields():
    concept = parse(doc())
    assert concept.learned_words == () and concept.removed_words == ()
    assert "learned_words" not in concept.render() and "removed_words" not in concept.render()


@pytest.mark.parametrize("learned, removed, fragment", [
    ([entry("cpf 12345")], None, "no digits"),
    ([entry("joao@x")], None, "no digits or signs"),
    ([entry("uma frase longa demais")], None, "at most 3 words"),
    ([entry("Telinha")], None, "lowercase"),
    ([entry("a" * 41)], None, "at most 40 characters"),
    ([entry("telinha", "guess")], None, "origin must be one of"),
    ([entry("telinha", sessions=-1)], None, "sessions must be"),
    ([entry("telinha", at="ontem")], None, "at must be a date"),
    ([entry("telinha"), entry("telinha")], None, "repeats"),
    ([entry("telinha")], '["telinha"]', "is also a learned word"),
    ([], '["9999-1234"]', "no digits"),
    ([], '"smart"', "must be a list"),
    (["  - telinha\n"], None, "must be {word"),
])
def test_a_bad_learned_or_removed_word_is_refused_naming_the_field(learned, removed, fragment):
    with pytest.raises(InvalidConcept) as caught:
        parse(doc(learned, removed))
    assert any(e.field in ("learned_words", "removed_words") and fragment in e.message
               for e in caught.value.errors), caught.value.errors


def test_a_concept_holds_a_bounded_number_of_learned_words():
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [entry("palavra" + letters[i] + letters[j]) for i in range(3) for j in range(10)][:LEARNED_MAX + 1]
    with pytest.raises(InvalidConcept) as caught:
        parse(doc(words))
    assert any(f"at most {LEARNED_MAX} words" in e.message for e in caught.value.errors)
    assert parse(doc(words[:LEARNED_MAX])).learned_words[-1].word == words[LEARNED_MAX - 1].split('"')[1]


def test_an_operators_word_reads_and_renders_back_beside_the_three_earlier_origins():
    text = doc([entry("telinha"), entry("visor", "sighting", 4), entry("tela quebrada", "model", 0),
                entry("tela trincada", "operator", 0, "2026-12-01")], '["smart"]')
    concept = parse(text)
    assert [(w.word, w.origin, w.sessions) for w in concept.learned_words][-1] == ("tela trincada", "operator", 0)
    assert concept.render() == text


def test_an_operators_word_says_no_session_taught_it():
    with pytest.raises(InvalidConcept) as caught:
        parse(doc([entry("tela trincada", "operator", 3)]))
    assert [e.message for e in caught.value.errors] == [
        "0: sessions must be 0 for an operator's word (no session taught it)"]

