"""Consolidation: each sighting written into the agent's concepts, never as a blind overwrite.

New name -> created. Known name -> same claim (no model) confirms; otherwise one model call
decides related (merged) or contradicting (appended under `## Contradiction`, confidence
0.4, a human resolves it); no model or an unusable answer means contradicting. Every write
is a compare-and-swap on the ETag that was read; a lost race is re-read and re-decided.

Replay safety: a sighting (tenant, agent, name, session, turn) is applied once. A marker in
SESSIONS_BUCKET records it after the write, and the write itself carries the sighting's id
in the version's metadata, so a crash between the two is recognised on redelivery too.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Optional

from . import claims
from .adapters import ConfigCache, SightingLedger, sighting_id
from .concept import Concept, utc_now
from .errors import Conflict, KnowledgeError
from .events import CONFLICT, LEARNED, Events, detail
from .model import ModelCache, ModelError
from .sighting import Sighting
from .store import ConceptStore, StoredConcept
from .telemetry import Counters

ENGINE = "engine"
MAX_ATTEMPTS = 8


class ConsolidationGaveUp(KnowledgeError):
    """Still losing the race after every attempt; the queue will redeliver the sighting."""

    code = "consolidation_contended"


@dataclass(frozen=True)
class Outcome:
    kind: str  # created | confirmed | merged | contradiction | replayed
    name: str
    type: str
    attempts: int = 1
    verdict: str = ""


class Consolidator:
    def __init__(self, store: ConceptStore, ledger: SightingLedger, events: Events, configs: ConfigCache,
                 models: ModelCache, utility_model: Optional[str], counters: Optional[Counters] = None,
                 max_attempts: int = MAX_ATTEMPTS, sleep: Callable[[float], None] = time.sleep):
        self._store, self._ledger, self._events = store, ledger, events
        self._configs, self._models, self._utility_model = configs, models, utility_model
        self.counters = counters or Counters()
        self._max_attempts, self._sleep = max_attempts, sleep

    def apply(self, sighting: Sighting) -> Outcome:
        new = sighting.parsed()
        if self._ledger.seen(sighting):
            return self._done(Outcome("replayed", new.name, new.type))
        me = sighting_id(sighting)
        verdicts: dict[str, claims.Verdict] = {}  # by recorded claim: a re-read need not ask again
        for attempt in range(1, self._max_attempts + 1):
            current = self._store.find(sighting.tenant, sighting.agent, new.name)
            if current is not None and me in current.sightings:
                # Written before a crash that kept the marker (and maybe the event) from happening.
                self._publish(sighting, current.concept, current.reason or "confirmed")
                self._ledger.record(sighting)
                return self._done(Outcome("replayed", new.name, new.type, attempt))
            try:
                outcome, written = self._write(sighting, new, current, me, attempt, verdicts)
            except Conflict:
                self.counters.count("ConsolidationRetry")
                self._sleep(min(1.0, 0.02 * 2 ** attempt) * random.random())
                continue
            self._publish(sighting, written, outcome.kind)
            self._ledger.record(sighting)
            return self._done(outcome)
        raise ConsolidationGaveUp(f"concept {new.name!r} kept changing during {self._max_attempts} attempts")

    def _write(self, sighting: Sighting, new: Concept, current: Optional[StoredConcept], me: str, attempt: int,
               verdicts: dict[str, claims.Verdict]) -> tuple[Outcome, Concept]:
        tenant, agent = sighting.tenant, sighting.agent
        if current is None:
            self._store.create(tenant, agent, new, actor=ENGINE, reason="created", sightings=(me,))
            return Outcome("created", new.name, new.type, attempt), new
        existing = current.concept
        now = utc_now()
        verdict = ""
        if claims.same_claim(existing, new):
            kind, updated = "confirmed", claims.confirm(existing, sighting.session_id, now)
        else:
            key = claims.primary_claim(existing.body)
            if key not in verdicts:
                verdicts[key] = self._judge(tenant, agent, existing, new)
            decision = verdicts[key]
            verdict = decision.why
            if not decision.related:
                kind, updated = "contradiction", claims.contradict(existing, new, sighting.session_id, now)
            elif existing.provenance == "policy" or existing.in_conflict:
                # A human's concept, or one a human must resolve, is never rewritten by a merge.
                kind, updated = "confirmed", claims.confirm(existing, sighting.session_id, now)
            else:
                kind, updated = "merged", claims.merge(existing, decision.description, decision.body,
                                                        sighting.session_id, now)
        sightings = tuple(s for s in current.sightings if s != me) + (me,)
        self._store.replace(tenant, agent, updated, if_match=current.etag, actor=ENGINE, reason=kind,
                            sightings=sightings)
        return Outcome(kind, new.name, existing.type, attempt, verdict), updated

    def _judge(self, tenant: str, agent: str, existing: Concept, new: Concept) -> claims.Verdict:
        config = self._configs.get(tenant, agent)
        ref = (config.model if config else None) or self._utility_model
        if not ref:
            return claims.unusable("no_model")
        system, user = claims.judge_prompt(existing, new)
        try:
            answer = self._models.get(ref).complete(system, user)
        except ModelError as exc:
            return claims.unusable("model_unavailable" if exc.code == "model_unavailable" else "model_error")
        return claims.parse_verdict(answer)

    def _publish(self, sighting: Sighting, concept: Concept, kind: str) -> None:
        detail_type = CONFLICT if kind == "contradiction" else LEARNED
        self._events.publish(detail_type, detail(sighting.tenant, sighting.agent, concept.name, concept.type,
                                                 outcome=kind))

    def _done(self, outcome: Outcome) -> Outcome:
        self.counters.count("SightingConsolidated", outcome=outcome.kind)
        if outcome.verdict:
            self.counters.count("ConsolidationVerdict", verdict=outcome.verdict)
        return outcome
