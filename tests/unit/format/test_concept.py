"""The concept format: exact parse and render, clear errors, and the helpers the product needs."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from helpers.concepts import make_concept
from helpers.paths import DEMO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.format.concept import (
    BODY_MAX_BYTES,
    DESCRIPTION_MAX,
    Concept,
    confidence_for_sources,
    in_conflict,
    links,
    parse,
    render,
)
from shared.errors import InvalidConcept

SPEC_EXAMPLE = """---
name: cep-sudeste-cd-campinas
description: CEPs 13xxx-13999 ship from the Campinas DC, 1-2 business days.
type: fact
provenance: observed
confidence: 0.6
sources: ["sess_8f3c"]
occurrences: 1
created_at: 2026-08-24T18:02:11Z
updated_at: 2026-08-24T18:02:11Z
---

Orders to CEP range 13000-13999 are fulfilled by the Campinas DC. Related: [[frete-gratis-acima-199]].
"""


def errors_of(text: str) -> dict[str, tuple[str, int | None]]:
    with pytest.raises(InvalidConcept) as caught:
        parse(text)
    return {e.field: (e.message, e.line) for e in caught.value.errors}


# ------------------------------------------------------------------ exact format


def test_the_spec_example_parses_and_renders_byte_for_byte():
    concept = parse(SPEC_EXAMPLE)
    assert concept.name == "cep-sudeste-cd-campinas"
    assert concept.sources == ("sess_8f3c",)
    assert concept.created_at == datetime(2026, 8, 24, 18, 2, 11, tzinfo=timezone.utc)
    assert render(concept) == SPEC_EXAMPLE
    assert parse(SPEC_EXAMPLE.encode("utf-8")) == concept


@pytest.mark.parametrize("path", sorted(DEMO.glob("*.md")), ids=lambda p: p.name)
def test_every_demo_concept_is_canonical(path):
    text = path.read_text(encoding="utf-8")
    assert render(parse(text)) == text


def test_render_puts_fields_in_the_documented_order():
    lines = render(make_concept()).splitlines()
    assert [line.split(":")[0] for line in lines[1:10]] == [
        "name", "description", "type", "provenance", "confidence",
        "sources", "occurrences", "created_at", "updated_at",
    ]
    assert lines[10] == "---" and lines[11] == ""


@pytest.mark.parametrize("description", ["yes", "null", "1e3", "No", "~", "true", "0.5", "2026-01-01",
                                         "a: b", "# not a comment", "ends with colon:", "'quoted'",
                                         '"double"', "- list", "[flow]", "{map}", "tab\there", "@at", "&anchor"])
def test_yaml_special_descriptions_survive_as_text(description):
    concept = make_concept(description=description)
    text = render(concept)
    assert parse(text).description == description
    assert render(parse(text)) == text


def test_a_non_canonical_document_is_normalised_on_render():
    messy = SPEC_EXAMPLE.replace("confidence: 0.6", "confidence: 0.60").replace("\n", "\r\n") + "\n\n"
    assert render(parse(messy)) == SPEC_EXAMPLE


# ------------------------------------------------------------------ properties

_session = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,20}", fullmatch=True)
_slug = st.from_regex(r"[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}", fullmatch=True)
_text_chars = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"),
                            blacklist_characters="\ufeff\ufffe\uffff")
_tricky = st.sampled_from(["yes", "null", "1e3", "---", "# x", "a: b", "\"q\"", "'q'", "\\", "é", "ação",
                           "💡", "[[link-a]]", ":", "- item", "{", "%", "@", "`", "|", ">", "!", "*", "&"])
_line = st.lists(st.one_of(_tricky, st.text(_text_chars, min_size=1, max_size=12)), min_size=1, max_size=8).map(" ".join)
_description = _line.map(str.strip).filter(lambda s: 0 < len(s) <= DESCRIPTION_MAX and s == s.strip())
_body = st.lists(st.one_of(_line, st.just("---"), st.just("## Contradiction"), st.just("")), min_size=1,
                 max_size=8).map("\n".join).map(lambda s: s.lstrip("\n").rstrip()).filter(bool)
_moment = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1)).map(
    lambda d: d.replace(microsecond=0, tzinfo=timezone.utc))


@st.composite
def concepts(draw):
    created = draw(_moment)
    updated = created + timedelta(seconds=draw(st.integers(0, 10**8)))
    if updated.year > 9999:
        updated = created
    return Concept(
        name=draw(_slug),
        description=draw(_description),
        type=draw(st.sampled_from(["fact", "entity", "procedure", "policy", "objection"])),
        provenance=draw(st.sampled_from(["observed", "policy"])),
        confidence=draw(st.floats(0, 1, allow_nan=False)),
        sources=tuple(dict.fromkeys(draw(st.lists(_session, max_size=5)))),
        occurrences=draw(st.integers(1, 10**6)),
        created_at=created,
        updated_at=updated,
        body=draw(_body),
        **_validity(draw),
    )


def _validity(draw) -> dict:
    """No dates, one of them, or both in order (each optional line rendered only when set)."""
    days = sorted(draw(st.lists(st.dates(min_value=date(2000, 1, 1), max_value=date(2199, 12, 31)),
                                max_size=2)))
    which = draw(st.sampled_from(["from", "until", "both"]))
    if not days:
        return {}
    if len(days) == 2 and which == "both":
        return {"valid_from": days[0], "valid_until": days[1]}
    return {"valid_from": days[0]} if which == "from" else {"valid_until": days[-1]}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(concepts())
def test_every_valid_concept_round_trips(concept):
    text = render(concept)
    assert parse(text) == concept
    assert render(parse(text)) == text
    assert parse(text.encode("utf-8")) == concept


# ------------------------------------------------------------------ errors


def test_errors_name_the_field_and_its_line():
    text = SPEC_EXAMPLE.replace("type: fact", "type: banana").replace("occurrences: 1", "occurrences: 0")
    found = errors_of(text)
    assert found["type"] == ("must be one of fact, entity, procedure, policy, objection", 4)
    assert found["occurrences"] == ("must be at least 1", 8)


def test_unknown_and_missing_keys_are_errors():
    text = SPEC_EXAMPLE.replace("provenance: observed\n", "").replace("type: fact", "type: fact\nowner: bob")
    found = errors_of(text)
    assert found["owner"][0] == "is not a concept field" and found["owner"][1] == 5
    assert found["provenance"][0] == "is missing"


def test_yaml_syntax_errors_carry_the_line():
    text = SPEC_EXAMPLE.replace('sources: ["sess_8f3c"]', 'sources: ["sess_8f3c"')
    message, line = errors_of(text)["frontmatter"]
    assert "invalid YAML" in message and line in (7, 8)


def test_duplicate_keys_are_an_error_not_a_silent_last_wins():
    text = SPEC_EXAMPLE.replace("type: fact", "type: fact\ntype: policy")
    message, line = errors_of(text)["frontmatter"]
    assert "duplicate key 'type'" in message and line == 5


@pytest.mark.parametrize("frontmatter", ["- a\n- b\n", "just text\n", "42\n"])
def test_a_frontmatter_that_is_not_a_mapping_is_an_error(frontmatter):
    assert "mapping" in errors_of(f"---\n{frontmatter}---\n\nbody\n")["frontmatter"][0]


def test_a_document_without_frontmatter_is_an_error():
    assert errors_of("# just markdown\n")["frontmatter"][1] == 1
    assert "closing" in errors_of("---\nname: a\n")["frontmatter"][0]


def test_python_object_tags_are_never_constructed():
    text = SPEC_EXAMPLE.replace("type: fact", "type: !!python/object/apply:os.system ['true']")
    assert errors_of(text)["type"] == ("YAML tags (!!python/object/apply:os.system) are not allowed", 4)


@pytest.mark.parametrize(
    "field, value, fragment",
    [
        ("name", "Frete-Gratis", "lowercase"),
        ("name", "a--b", "single hyphens"),
        ("name", "a" * 65, "at most 64"),
        ("name", "../etc", "lowercase"),
        ("description", "two\nlines", "single line"),
        ("description", "x" * (DESCRIPTION_MAX + 1), "at most 300"),
        ("description", "bell\x07", "control character"),
        ("description", "", "must not be empty"),
        ("provenance", "official", "observed, policy"),
        ("confidence", 1.5, "between 0 and 1"),
        ("confidence", float("nan"), "between 0 and 1"),
        ("confidence", True, "number"),
        ("sources", ("sess 1",), "not a session id"),
        ("sources", ("a", "a"), "must not repeat"),
        ("occurrences", 0, "at least 1"),
        ("body", "x" * (BODY_MAX_BYTES + 1), "at most 16384 bytes"),
        ("body", "", "must not be empty"),
        ("body", "\nleading blank line", "blank line"),
        ("created_at", datetime(2026, 1, 1), "UTC timestamp"),
    ],
)
def test_invalid_fields_are_rejected_with_their_name(field, value, fragment):
    with pytest.raises(InvalidConcept) as caught:
        make_concept(**{field: value})
    assert [e.field for e in caught.value.errors] == [field]
    assert fragment in caught.value.errors[0].message


def test_updated_before_created_is_an_error():
    with pytest.raises(InvalidConcept, match="updated_at.*earlier than created_at"):
        make_concept(updated_at=datetime(2020, 1, 1, tzinfo=timezone.utc))


def test_timestamps_must_be_utc_with_z():
    found = errors_of(SPEC_EXAMPLE.replace("created_at: 2026-08-24T18:02:11Z", "created_at: 2026-08-24 18:02"))
    assert "UTC timestamp" in found["created_at"][0] and found["created_at"][1] == 9


def test_not_utf8_is_an_error():
    with pytest.raises(InvalidConcept, match="not UTF-8"):
        parse(SPEC_EXAMPLE.encode("utf-8").replace(b"Orders", b"\xff\xfe"))


# ------------------------------------------------------------------ helpers


def test_links_are_distinct_valid_names_in_order():
    body = "See [[b-one]], [[a-two]], [[b-one]] again, [[ Not A Slug ]], [[../x]] and [[ c ]]."
    assert links(body) == ["b-one", "a-two", "c"]


def test_conflict_is_exactly_a_contradiction_heading():
    assert in_conflict("claim\n\n## Contradiction\n\nother claim")
    assert not in_conflict("we talked about ## Contradiction inline")
    assert not in_conflict("### Contradiction\nnot level two")
    assert make_concept(body="a\n\n## Contradiction  \nb").in_conflict


@pytest.mark.parametrize("sources, expected", [(1, 0.6), (2, 0.7), (3, 0.8), (4, 0.9), (5, 0.95), (50, 0.95)])
def test_confidence_climbs_with_distinct_sources_and_never_reaches_certainty(sources, expected):
    assert confidence_for_sources(sources) == expected


def test_retired_by_names_the_policy_reads_back_and_refuses_anything_else_clearly():
    from knowledge.format.concept import out_of_recall, parse, render
    from shared.errors import InvalidConcept

    retired = make_concept("troca-em-7-dias", retired_by="prazo-de-troca")
    text = render(retired)
    assert text.split("---")[1].rstrip().endswith("retired_by: prazo-de-troca")  # the last field, only when set
    assert parse(text) == retired and "retired_by" not in render(retired.replace(retired_by=None))
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    assert out_of_recall(valid_from=None, valid_until=None, provenance="observed", updated_at=now, now=now,
                         retired_by="prazo-de-troca") == "retired"
    for bad, message in (("../x", "must name the policy concept that retired it"),
                         ("troca-em-7-dias", "must name another concept")):
        with pytest.raises(InvalidConcept, match=message) as caught:
            parse(text.replace("retired_by: prazo-de-troca", f"retired_by: {bad}"))
        assert caught.value.errors[0].field == "retired_by"
