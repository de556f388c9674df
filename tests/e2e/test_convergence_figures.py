"""Name convergence on the labelled sets (scripts/reports/convergence.py replays every labelled turn
through the real extractor and consolidator, for the demo agent and one padded to 500 concepts:
over a minute): the known concept a turn is about is named, the list stays bounded, and a replay
confirms known concepts instead of creating near duplicates. The prompt itself:
tests/unit/learning/test_convergence.py; through the extractor: tests/integration/test_convergence_extractor.py."""

from __future__ import annotations

import pytest

from scripts.reports import convergence as report  # the report measures; these tests hold it to its targets


# ------------------------------------------------------------------ the labelled sets


@pytest.fixture(scope="module")
def figures(moto_endpoint):
    return report.measure(moto_endpoint, padded=500)

@pytest.mark.parametrize("label", ["tuning", "held-out"])
@pytest.mark.parametrize("agent", ["with_list", "padded_with_list"], ids=["45-concepts", "500-concepts"])
def test_the_known_concept_a_turn_is_about_is_named_in_at_least_90_percent_of_requests(figures, label, agent):
    run = figures["sets"][label][agent]
    assert run["turns"] >= (30 if label == "tuning" else 15)
    assert run["share_named"] >= 0.9, run["missed"]


def test_at_most_30_names_are_listed_even_for_an_agent_of_500_concepts(figures):
    assert figures["concepts"] >= 40 and figures["padded_to"] == 500
    for runs in figures["sets"].values():
        assert 0 < runs["with_list"]["max_listed"] <= 30
        assert 0 < runs["padded_with_list"]["max_listed"] <= 30


@pytest.mark.parametrize("label", ["tuning", "held-out"])
def test_with_the_list_a_replay_confirms_known_concepts_instead_of_creating_near_duplicates(figures, label):
    runs = figures["sets"][label]
    turns = runs["without_list"]["turns"]
    assert runs["without_list"]["near_duplicates"] == turns  # every fresh name became a concept of its own
    for agent in ("with_list", "padded_with_list"):
        assert runs[agent]["near_duplicates"] <= 0.1 * turns
        assert runs[agent]["outcomes"].get("confirmed", 0) >= 0.9 * turns
