"""vocabulary.yaml's format: what it reads, and each rule it refuses by, naming the line, the
reading and the rule, never echoing long content."""

from __future__ import annotations

import pytest
from helpers.paths import DEMO

from knowledge.format import vocabulary as v
from knowledge.format.vocabulary import InvalidVocabulary, parse_vocabulary, render_vocabulary, starter_text
from knowledge.recall.lexicon import Lexicon


def refusal(text) -> InvalidVocabulary:
    with pytest.raises(InvalidVocabulary) as caught:
        parse_vocabulary(text)
    return caught.value


def test_a_reading_lists_what_customers_write_and_what_the_store_writes():
    parsed = parse_vocabulary("readings:\n  - customers: [não chegou, cadê meu pedido]\n    store: atraso\n"
                              "  - customers: quando o dinheiro volta\n    store: reembolso estorno\n")
    assert parsed.pairs() == ((("não chegou", "cadê meu pedido"), "atraso"),
                              (("quando o dinheiro volta",), "reembolso estorno"))
    assert parse_vocabulary(render_vocabulary(parsed)) == parsed


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "readings:\n", "readings: []\n"])
def test_an_empty_file_has_no_readings(text):
    assert parse_vocabulary(text).readings == ()


@pytest.mark.parametrize("text, line, rule", [
    ("readings:\n  - customers: [a]\n    store: b\nextra: 1\n", 4, "'extra': unknown key"),
    ("- a\n- b\n", 1, "must be a mapping with the key `readings`"),
    ("readings: atraso\n", 1, "`readings` must be a list"),
    ("readings:\n  - atraso\n", 2, "(reading 1): a reading must be a mapping"),
    ("readings:\n  - customers: [a]\n    store: b\n  - customers: [c]\n    stor: d\n", 4,
     "(reading 2): 'stor': unknown key"),
    ("readings:\n  - customers: [a]\n", 2, "(reading 1): `store` is missing"),
    ("readings:\n  - store: atraso\n", 2, "(reading 1): `customers` is missing"),
    ("readings:\n  - customers: []\n    store: b\n", 2, "`customers` must be a phrase or a list of phrases"),
    ("readings:\n  - customers: [12]\n    store: b\n", 2, "each phrase must be text"),
    ("readings:\n  - customers: ['!!!']\n    store: b\n", 2, "a phrase must hold a word"),
    ("readings:\n  - customers: [um dois tres quatro cinco seis sete oito nove]\n    store: b\n", 2,
     f"at most {v.PHRASE_WORDS_MAX} words"),
    ("readings:\n  - customers: [a]\n    store: b\n\n  - customers: [x, A]\n    store: c\n", 5,
     "(reading 2): `customers`: 'A' is read already by reading 1"),
    ("readings:\n  - customers: [a]\n    store: [b]\n", 2, "`store` must be text"),
    ("readings:\n  - customers: [a]\n    store: ' ... '\n", 2, f"`store` must be 1 to {v.STORE_WORDS_MAX} words"),
    ("readings:\n  - customers: [a]\n    store: &x b\n", 3, "anchors"),
    ("readings:\n  - customers: [a\n", 3, "invalid YAML"),
])
def test_each_rule_is_refused_at_its_line(text, line, rule):
    refused = refusal(text)
    assert refused.line == line
    assert f"line {line}" in str(refused) and rule in str(refused)


def test_a_long_phrase_is_refused_without_echoing_it():
    phrase = "x" * 500
    refused = refusal(f"readings:\n  - customers: [{phrase}]\n    store: b\n")
    assert f"at most {v.PHRASE_CHARS_MAX} characters" in str(refused) and phrase not in str(refused)
    assert len(str(refused)) < 200


def test_the_file_and_its_counts_are_bounded():
    assert "at most" in str(refusal("# " + "x" * v.VOCABULARY_MAX_BYTES + "\n"))
    many = "readings:\n" + "".join(f"  - customers: [w{i}]\n    store: s\n" for i in range(v.READINGS_MAX + 1))
    assert f"at most {v.READINGS_MAX} readings" in str(refusal(many))
    phrases = ", ".join(f"p{i}" for i in range(v.PHRASES_PER_READING + 1))
    assert f"at most {v.PHRASES_PER_READING} phrases" in str(refusal(f"readings:\n  - customers: [{phrases}]\n"
                                                                       "    store: s\n"))
    assert "not UTF-8" in str(refusal(b"readings:\n  - customers: [\xff]\n    store: s\n"))


@pytest.mark.parametrize("path", [DEMO / "vocabulary.yaml", None])
def test_the_shipped_files_are_valid_and_the_starter_names_no_kind_of_store(path):
    text = path.read_text(encoding="utf-8") if path else starter_text("varejo-br")
    parsed = parse_vocabulary(text)
    assert len(parsed.readings) >= 40
    Lexicon(parsed.pairs())  # builds
    if path is None:
        words = " ".join(" ".join(r.customers) + " " + r.store for r in parsed.readings).lower()
        for furniture in ("montagem", "montar", "sob medida", "lavagem", "showroom", "embrulho", "móve", "sofá"):
            assert furniture not in words


def test_an_unknown_starter_is_refused_by_name():
    assert "known: varejo-br" in str(pytest.raises(InvalidVocabulary, starter_text, "moveis").value)
