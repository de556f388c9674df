"""Facts events on the bus: which fact of which (pseudonymous) customer, never its value."""

from __future__ import annotations

from typing import Optional

from shared.errors import EventPublishError
from shared.events import Events
from shared.telemetry import Counters

PROPOSED, APPROVED, REJECTED = "fact_proposed", "fact_approved", "fact_rejected"
DISMISSED, STALE = "fact_dismissed", "fact_stale"
UNDONE, REOPENED = "fact_approval_undone", "fact_reopened"  # an operator's undo: the proposal pending again


def detail(tenant: str, agent: str, customer: str, name: str) -> dict[str, str]:
    """`customer` is the keyed pseudonym (FactKeys.pseudonym), never the engine's id."""
    return {"tenant": tenant, "agent": agent, "customer": customer, "name": name}


def publish(events: Optional[Events], counters: Counters, detail_type: str, body: dict[str, str]) -> None:
    """Best effort: the decision is already stored; a refused event is counted, not raised."""
    if events is None:
        return
    try:
        events.publish(detail_type, body)
    except EventPublishError:
        counters.count("EventPublishFailed", event=detail_type)
