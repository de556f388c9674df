"""scripts/reports/echo.py on the first three concepts of the echo set (every kind of session),
through the real ExtractFunction and ConsolidateFunction handlers."""

from __future__ import annotations

import pytest

from scripts.reports import echo as echo_report


@pytest.fixture(scope="module")
def runs(moto_endpoint) -> dict:
    measured = echo_report.measure(concepts=3, endpoint=moto_endpoint)
    return {(run["type"], run["shown"]): run for run in measured}

@pytest.mark.parametrize("type_", ["fact", "objection"])
def test_the_echo_sessions_leave_every_concepts_confidence_where_it_was(runs, type_):
    run = runs[(type_, True)]
    assert [(r["first"], r["after_echo"]) for r in run["concepts"]] == [(0.6, 0.6)] * 3
    assert run["kinds"]["echo"] == {"sessions": 6, "sightings": 6, "echo_flagged": 6, "sources_added": 0,
                                    "occurrences_added": 0}


def test_without_the_shown_record_the_same_sessions_raise_it_as_before(runs):
    run = runs[("fact", False)]
    assert [r["after_echo"] for r in run["concepts"]] == [0.8] * 3
    assert run["kinds"]["echo"]["sources_added"] == 6 and run["kinds"]["echo"]["echo_flagged"] == 0


def test_the_independent_sessions_raise_it_as_the_formula_says(runs):
    # As objections a customer's words are evidence: the seed and both independent sessions count.
    objection = runs[("objection", True)]
    assert [r["after_independent"] for r in objection["concepts"]] == [0.8] * 3
    assert objection["summary"]["as_formula_after_independent"] == 3
    for kind in ("customer", "staff_quoted", "assistant_unshown"):
        counted = objection["kinds"][kind]
        assert counted["sources_added"] == counted["sessions"] > 0 and counted["echo_flagged"] == 0
    # As store claims the gates refuse a customer's or staff's words; the assistant's still count.
    fact = runs[("fact", True)]
    assert fact["kinds"]["customer"]["sightings"] == fact["kinds"]["staff_quoted"]["sightings"] == 0
    assert fact["kinds"]["assistant_unshown"]["sources_added"] == fact["kinds"]["assistant_unshown"]["sessions"]
    assert fact["summary"]["as_formula_after_independent"] == 3
