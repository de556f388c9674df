"""Consolidation's rules, without storage: same claim, confirm, merge, contradict, the verdict."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from conftest import make_concept
from knowledge.claims import confirm, contradict, merge, parse_verdict, primary_claim, same_claim

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
FRETE = make_concept("frete", description="Free shipping above R$199 in the Southeast.",
                     body="Orders above R$199 ship free to the South and Southeast regions.")


@pytest.mark.parametrize("description, body", [
    ("Free shipping above R$199 in the Southeast.", "Orders above R$199 ship free to the South and Southeast regions."),
    ("free shipping ABOVE r$199, in the southeast!", "orders above r$199 ship FREE to the south & southeast regions"),
    ("Shipping is free above R$199 in the Southeast.", "Orders over R$199 ship free to the Southeast and South regions."),
    ("Frete grátis", "Orders above R$199 ship free to the South and Southeast regions."),
])
def test_reworded_or_reconfirmed_is_the_same_claim(description, body):
    assert same_claim(FRETE, make_concept("frete", description=description, body=body))


@pytest.mark.parametrize("description, body", [
    ("Free shipping above R$299 in the Southeast.", "Orders above R$299 ship free to the South and Southeast regions."),
    ("Free shipping above R$199 in the Southeast.", "Orders above R$199 ship free to the South and Southeast regions "
                                                    "within 7 days."),
    ("Express delivery costs extra in the North.", "The North region pays R$199 for express delivery."),
])
def test_different_numbers_or_words_are_not_the_same_claim(description, body):
    assert not same_claim(FRETE, make_concept("frete", description=description, body=body))


def test_returns_in_7_days_is_not_returns_in_30_days():
    a = make_concept("trocas", description="Returns within 30 days.", body="Returns are accepted within 30 days.")
    b = make_concept("trocas", description="Returns within 7 days.", body="Returns are accepted within 7 days.")
    assert not same_claim(a, b)


def test_confirm_counts_a_distinct_source_and_leaves_the_body_alone():
    once = confirm(FRETE, "sess_2", NOW)
    assert (once.occurrences, once.sources, once.confidence) == (2, ("sess_1", "sess_2"), 0.7)
    assert once.body == FRETE.body and once.description == FRETE.description and once.updated_at == NOW
    again = confirm(once, "sess_2", NOW)  # the same session again: one more occurrence, no new source
    assert (again.occurrences, again.sources, again.confidence) == (3, ("sess_1", "sess_2"), 0.7)


def test_confidence_never_passes_095():
    concept = FRETE
    for index in range(2, 12):
        concept = confirm(concept, f"sess_{index}", NOW)
    assert concept.confidence == 0.95 and len(concept.sources) == 11


def test_a_policy_concept_keeps_its_confidence_and_a_conflict_stays_at_04():
    policy = FRETE.replace(provenance="policy", confidence=0.9)
    assert confirm(policy, "sess_2", NOW).confidence == 0.9
    conflicted = contradict(FRETE, FRETE.replace(description="Other."), "sess_2", NOW)
    assert confirm(conflicted, "sess_3", NOW).confidence == 0.4


def test_merge_takes_the_merged_text_and_counts_like_a_confirmation():
    merged = merge(FRETE, "Free shipping above R$199 in the South and Southeast.", "Merged body.", "sess_2", NOW)
    assert (merged.description, merged.body, merged.occurrences, merged.confidence) == (
        "Free shipping above R$199 in the South and Southeast.", "Merged body.", 2, 0.7)


def test_contradict_appends_under_one_heading_and_drops_confidence():
    other = make_concept("frete", description="Free shipping above R$299.", body="Orders above R$299 ship free.\n# Heading")
    once = contradict(FRETE, other, "sess_9", NOW)
    assert once.in_conflict and once.confidence == 0.4 and once.occurrences == 2
    assert once.body == (FRETE.body + "\n\n## Contradiction\n\nSession sess_9 (2026-11-29): Free shipping above R$299."
                         "\n\n> Orders above R$299 ship free.\n> # Heading")
    assert primary_claim(once.body) == FRETE.body
    twice = contradict(once, other.replace(description="Free shipping above R$399."), "sess_10", NOW)
    assert twice.body.count("## Contradiction") == 1 and twice.body.endswith("> # Heading")
    assert "sess_10 (2026-11-29): Free shipping above R$399." in twice.body


def test_contradict_keeps_the_body_within_its_limit():
    huge = FRETE.replace(body="x" * 16000)
    result = contradict(huge, make_concept("frete", description="Other claim.", body="y" * 3000), "sess_9", NOW)
    assert len(result.body.encode()) <= 16 * 1024 and "Other claim." in result.body


@pytest.mark.parametrize("answer, related, why", [
    ('{"verdict": "related", "description": "Merged.", "body": "Merged body."}', True, "related"),
    ('```json\n{"verdict": "related", "description": "Merged.", "body": "Merged body."}\n```', True, "related"),
    ('{"verdict": "contradicting"}', False, "contradicting"),
    ("they are related", False, "unusable"),
    ('{"verdict": "maybe"}', False, "unusable"),
    ('{"verdict": "related", "description": "Merged."}', False, "unusable"),
    ('{"verdict": "related", "description": "two\\nlines", "body": "b"}', False, "unusable"),
    ('{"verdict": "related", "description": "d", "body": "b", "provenance": "policy"}', False, "unusable"),
    ('{"verdict": "related", "description": "d", "body": "b\\n\\n## Contradiction\\n\\nx"}', False, "unusable"),
    ('[{"verdict": "related"}]', False, "unusable"),
])
def test_the_verdict_is_parsed_strictly_and_anything_unusable_is_contradicting(answer, related, why):
    verdict = parse_verdict(answer)
    assert (verdict.related, verdict.why) == (related, why)


def test_a_merged_text_is_redacted():
    verdict = parse_verdict('{"verdict": "related", "description": "Ask ana@example.com.", "body": "Call (11) 98765-4321."}')
    assert (verdict.description, verdict.body) == ("Ask [email].", "Call [phone].")
