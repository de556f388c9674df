"""A sighting of a tenant's shared concept, for an agent that recalls it: kept beside it, for a human.

Extraction never writes the shared scope on its own (an operator copies or moves a concept there):
a claim it makes about a shared concept's name would otherwise create the agent's own concept of
that name, which shadows the shared one for that agent. Instead the claim joins the shared
concept's `## Related claims` (claims.keep_beside, uncounted: no occurrence, confidence or date
of the operator's text moves) as a compare-and-swap on the ETag read, reason `kept_beside`, with
the sighting's id in the version's metadata. The same claim already kept there writes nothing.

Replay safe as any sighting: the ledger marker is written pending (naming the shared concept's
version) first, applied after; a pending marker whose sighting a shared version already carries
is a replay.
"""

from __future__ import annotations

from typing import Optional

from knowledge.format.concept import Concept, utc_now
from knowledge.format.evidence import EvidenceLink
from knowledge.format.sighting import Sighting
from knowledge.learning import claims
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from knowledge.store.ledgers import SightingLedger
from shared.errors import Conflict, KnowledgeError

ENGINE = "engine"


class SharedConceptContended(KnowledgeError):
    """The shared concept kept changing, or was deleted meanwhile; the queue redelivers the sighting."""

    code = "consolidation_contended"


def beside_shared(store: ConceptStore, ledger: SightingLedger, sighting: Sighting, new: Concept, me: str,
                  max_attempts: int) -> Optional[tuple[str, str]]:
    """(outcome, type) once the claim is beside the shared concept of its name (`replayed` when it
    already was); None when the tenant has no shared concept of that name."""
    tenant = sighting.tenant
    shared = store.find(tenant, SHARED, new.name)
    if shared is None:
        return None
    _ = shared.concept  # an unreadable one is never overwritten: InvalidConcept fails the record
    entry = ledger.begin(sighting, shared.version_id)
    if entry.state == "applied" or me in shared.sightings or (
            entry.state == "pending" and store.written_since(tenant, SHARED, new.name, entry.base, me) is not None):
        ledger.applied(sighting)
        return "replayed", shared.concept.type
    for _attempt in range(max_attempts):
        existing = shared.concept
        updated = claims.keep_beside(existing, new, sighting.session_id, utc_now(), counted=False)
        if updated == existing:  # the same claim waits there already
            break
        try:
            store.replace(tenant, SHARED, updated, if_match=shared.etag, actor=ENGINE, reason="kept_beside",
                          sightings=(me,), evidence=EvidenceLink.of(sighting, naming_agent=True))
            break
        except Conflict as lost:
            if lost.current is None:
                raise SharedConceptContended(f"shared concept {new.name!r} was deleted meanwhile") from None
            shared = lost.current
            if me in shared.sightings:
                break  # our own write, whose answer was lost
    else:
        raise SharedConceptContended(f"shared concept {new.name!r} kept changing during {max_attempts} attempts")
    ledger.applied(sighting)
    return "kept_beside", shared.concept.type
