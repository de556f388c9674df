"""A sighting of a tenant's shared concept, for an agent that recalls it: it waits beside it in the
agent's own waiting pairs (knowledge.store.waiting, `shared: true`) for a human, never creating the
agent's own concept (it would shadow the shared one) nor writing into the shared one (shared knowledge
serves only what a human approved). Replay safe as any sighting. docs/contract.md, "Consolidation"."""

from __future__ import annotations

from typing import Optional

from knowledge.format.concept import Concept, utc_now
from knowledge.format.evidence import EvidenceLink
from knowledge.format.sighting import Sighting
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from knowledge.store.ledgers import SightingLedger
from knowledge.store.waiting import SIGHTING, WaitingPair

NOT_JUDGED = "not_judged"  # why a claim beside a shared concept waits: no judge decides for a human's scope


def beside_shared(store: ConceptStore, ledger: SightingLedger, sighting: Sighting, new: Concept) -> Optional[tuple[str, str]]:
    """(outcome, type) once the claim waits beside the shared concept of its name (`replayed` when it
    already did); None when the tenant has no shared concept of that name."""
    tenant = sighting.tenant
    shared = store.find(tenant, SHARED, new.name)
    if shared is None:
        return None
    concept = shared.concept  # an unreadable one is never overwritten: InvalidConcept fails the record
    if ledger.begin(sighting, shared.version_id).state == "applied":
        return "replayed", concept.type
    store.waiting().put(tenant, sighting.agent, WaitingPair(
        concept=new.name, kind=SIGHTING, why=NOT_JUDGED, since=utc_now().strftime("%Y-%m-%d"),
        description=new.description, body=new.body, session_id=sighting.session_id, turn_id=sighting.turn_id,
        shared=True, evidence=link.encode() if (link := EvidenceLink.of(sighting, naming_agent=True)) else None))
    ledger.applied(sighting)
    return "waiting", concept.type
