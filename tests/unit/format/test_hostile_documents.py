"""Hostile concept documents: parse refuses each with the typed error (and nothing else). The
studio's answers and every reader beside them in S3: tests/integration/test_hostile_documents_served.py."""

from __future__ import annotations

import time

import pytest
from helpers.hostile import GOOD, HOSTILE, doc_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.format.concept import parse, render
from shared.errors import InvalidConcept

# A guard against pathological documents (an alias bomb or a backtracking pattern takes minutes or
# never ends), not a speed target: a parse takes milliseconds, and a loaded two-core machine must
# never fail it.
GUARD_SECONDS = 10.0

# ------------------------------------------------------------------ parse


@pytest.mark.parametrize("case", sorted(HOSTILE), ids=doc_id)
def test_parse_refuses_each_hostile_document_with_the_typed_error_quickly(case):
    started = time.perf_counter()
    with pytest.raises(InvalidConcept) as caught:
        parse(HOSTILE[case])
    elapsed = time.perf_counter() - started
    assert caught.value.errors and all(e.field and e.message for e in caught.value.errors)
    # The reason is shown to operators and in export reports: bounded, whatever the input.
    assert len(str(caught.value)) < 4000
    assert elapsed < GUARD_SECONDS, f"{case} took {elapsed:.2f}s"


def test_the_corpus_is_large_and_the_good_document_parses():
    assert len(HOSTILE) >= 71 and parse(GOOD).name == "horario-atendimento"


def test_an_alias_bomb_is_refused_before_it_is_expanded():
    with pytest.raises(InvalidConcept) as caught:
        parse(HOSTILE["billion-laughs"])
    assert [(e.field, e.message) for e in caught.value.errors] == [("frontmatter", "YAML anchors (&name) are not allowed")]


@pytest.mark.parametrize("case, field, fragment", [
    ("sources-nested-list", "sources", "must not be nested"),
    ("sources-map", "sources", "must be a list of session ids"),
    ("occurrences-5000-digits", "occurrences", "at most 32 characters"),
    ("merge-key", "frontmatter", "merge key << is not allowed"),
    ("duplicate-key", "frontmatter", "duplicate key 'type'"),
    ("tag-binary", "description", "YAML tags (!!binary) are not allowed"),
    ("float-1e400", "confidence", "between 0 and 1"),
    ("occurrences-beyond-max", "occurrences", "at most 1000000000000"),
    ("lone-surrogate-description", "frontmatter", "a lone surrogate: U+D800"),
    ("crlf-mixed-with-cr", "frontmatter", "lines must end with \\n: U+000D"),
    ("non-utf8-frontmatter", "document", "is not UTF-8"),
    ("key-is-a-list", "frontmatter", "a key must be text"),
    ("int-key", "frontmatter", "a key must be text"),
    ("too-many-sources", "sources", "at most 5000 items"),
    ("escaped-surrogate", "frontmatter", "invalid Unicode character escape code"),
    ("escaped-nul", "description", "control character U+0000"),
])
def test_each_refusal_names_the_field_and_why(case, field, fragment):
    with pytest.raises(InvalidConcept) as caught:
        parse(HOSTILE[case])
    assert any(e.field == field and fragment in e.message for e in caught.value.errors), caught.value.errors


# Arbitrary input: nothing escapes but InvalidConcept, and what parses re-renders canonically.
_yamlish = st.sampled_from(["---\n", "\n", ": ", "- ", "[", "]", "{", "}", "&a ", "*a", "!!", "<<", "? ",
                            "'", '"', "\\", "#", "|", ">", "%", "@", "`", "\t", "\r\n", "\ufeff", "\x00",
                            "\ud800", "9" * 40, ".nan", "~", "name", "sources", "1.0e+400", "0x1f", "1:2"])


def _check(document):
    try:
        concept = parse(document)
    except InvalidConcept:
        return
    text = render(concept)
    assert parse(text) == concept and render(parse(text)) == text


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_raise_only_the_typed_error(document):
    _check(document)
    _check(b"---\n" + document)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.one_of(_yamlish, st.text(max_size=8)), max_size=40).map("".join))
def test_arbitrary_text_raises_only_the_typed_error(document):
    _check(document)
    _check("---\n" + document)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.integers(0, len(GOOD)), st.integers(0, 12),
       st.lists(st.one_of(_yamlish, st.text(max_size=6)), max_size=6).map("".join))
def test_a_good_document_with_hostile_text_spliced_in_raises_only_the_typed_error(at, cut, insert):
    _check(GOOD[:at] + insert + GOOD[at + cut:])
