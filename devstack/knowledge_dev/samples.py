"""A concept with every field filled, any of them overridden: for the tests and the benches alike."""

from __future__ import annotations

from datetime import datetime, timezone


def make_concept(name: str = "frete-gratis", **overrides):
    from knowledge.format.concept import Concept

    fields = dict(
        name=name,
        description="Free shipping above R$199.",
        type="fact",
        provenance="observed",
        confidence=0.6,
        sources=("sess_1",),
        occurrences=1,
        created_at=datetime(2026, 8, 24, 18, 2, 11, tzinfo=timezone.utc),
        updated_at=datetime(2026, 8, 24, 18, 2, 11, tzinfo=timezone.utc),
        body="Orders above R$199 ship free.",
    )
    fields.update(overrides)
    return Concept(**fields)
