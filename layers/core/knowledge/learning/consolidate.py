"""Consolidation: each sighting written into the agent's concepts, never as a blind overwrite —
created, confirmed (the same claim), merged or kept beside (related), contradiction, waiting beside
a human's text or a shared concept (knowledge.store.waiting), or echoed. Every write is a
compare-and-swap, and a sighting is applied exactly once (its ledger marker, pending then applied).
docs/contract.md, "Consolidation" and "Faults, deadlines and redelivery"."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Optional

from knowledge.errors import ConsolidationGaveUp
from knowledge.format.concept import Concept, utc_now
from knowledge.format.events import CONFLICT, LEARNED, detail
from knowledge.format.evidence import EvidenceLink
from knowledge.format.sighting import Sighting
from knowledge.learning import claims
from knowledge.learning.beside_shared import beside_shared
from knowledge.learning.usage import record_model_call
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.config_cache import ConfigCache
from knowledge.store.ledgers import SightingLedger, sighting_id
from knowledge.store.waiting import SIGHTING, WaitingPair
from shared import deadline
from shared.errors import Conflict, ModelAnswerUnusable
from shared.events import Events
from shared.model import ModelCache, answer_attempts_left, metered
from shared.telemetry import Counters

ENGINE = "engine"
OUTCOMES = ("created", "confirmed", "merged", "kept_beside", "contradiction", "waiting")
MAX_ATTEMPTS = 8
# The versions a related or unjudged sighting reads for an operator's (the lifecycle keeps 20; this
# read is on the sighting path). Not policy_review.RETIRE_HISTORY_LOOKED: a retirement looks further back.
MERGE_HISTORY_LOOKED = 20


@dataclass(frozen=True)
class Outcome:
    kind: str  # created | confirmed | merged | kept_beside | contradiction | waiting | replayed | echoed
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

    def taught_by_model(self, tenant: str, agent: str) -> bool:
        """Whether a concept this agent creates is taught its words by the model (its `learn_from` holds
        `model` and it has a model, its own or the deployment's): else no words job is queued for it."""
        config = self._configs.get(tenant, agent)
        return config is not None and "model" in config.learn_from and bool(config.model or self._utility_model)

    def apply(self, sighting: Sighting, delivery: Optional[int] = None) -> Outcome:
        """`delivery`: the sighting's receive count; before the ANSWER_ATTEMPTS-th, an answer that is no
        verdict beside a human's text fails it so the queue asks again (None: no queue, it waits at once)."""
        new = sighting.parsed()
        if sighting.echo:  # never a source, an occurrence or confidence; never creates the concept
            return self._done(Outcome("echoed", new.name, new.type))
        tenant, agent, me = sighting.tenant, sighting.agent, sighting_id(sighting)
        current = self._store.find(tenant, agent, new.name)
        if current is not None:
            _ = current.concept  # an unreadable concept is never overwritten: InvalidConcept fails the record
        else:
            config = self._configs.get(tenant, agent)
            if config is not None and config.shared:
                kept = beside_shared(self._store, self._ledger, sighting, new)
                if kept is not None:
                    self.counters.count("SightingBesideShared", tenant=tenant, agent=agent)
                    return self._done(Outcome(kept[0], new.name, kept[1]))
        entry = self._ledger.begin(sighting, current.version_id if current else None)
        if entry.state == "applied":
            return self._done(Outcome("replayed", new.name, new.type))
        if current is not None and me in current.sightings:  # written, then stopped before the marker
            return self._finish(sighting, current.concept, "replayed", current.reason)
        if entry.state == "pending":
            # An earlier delivery began this sighting; did it write its version before it stopped?
            reason = self._store.written_since(tenant, agent, new.name, entry.base, me)
            if reason is not None:
                return self._finish(sighting, current.concept if current else new, "replayed", reason)
        verdicts: dict[str, claims.Verdict] = {}  # by recorded claim: a re-read need not ask again
        for attempt in range(1, self._max_attempts + 1):
            try:
                outcome, written = self._write(sighting, new, current, me, attempt, verdicts, delivery)
            except Conflict as lost:
                current = lost.current
                if current is not None and me in current.sightings:
                    # Our own write, whose answer was lost (the retry found it there).
                    kind = current.reason if current.reason in OUTCOMES else "confirmed"
                    return self._finish(sighting, current.concept, kind, kind)
                if current is not None:
                    _ = current.concept
                self.counters.count("ConsolidationRetry")
                deadline.check(0.0, "consolidation retry")
                self._sleep(min(1.0, 0.02 * 2 ** attempt) * random.random())
                continue
            self._publish(sighting, written, outcome.kind)
            self._ledger.applied(sighting)
            return self._done(outcome)
        raise ConsolidationGaveUp(f"concept {new.name!r} kept changing during {self._max_attempts} attempts")

    def _finish(self, sighting: Sighting, concept: Concept, kind: str, event_kind: Optional[str]) -> Outcome:
        """A sighting whose concept version is already written: its event (perhaps again: events
        are at least once) and its marker, then the outcome."""
        self._publish(sighting, concept, event_kind if event_kind in OUTCOMES else "confirmed")
        self._ledger.applied(sighting)
        return self._done(Outcome(kind, concept.name, concept.type))

    def _write(self, sighting: Sighting, new: Concept, current: Optional[StoredConcept], me: str, attempt: int,
               verdicts: dict[str, claims.Verdict], delivery: Optional[int]) -> tuple[Outcome, Concept]:
        tenant, agent = sighting.tenant, sighting.agent
        evidence = EvidenceLink.of(sighting)
        if current is None:
            self._store.create(tenant, agent, new, actor=ENGINE, reason="created", sightings=(me,), evidence=evidence)
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
            human = ((decision.related or decision.why in claims.UNJUDGED)
                     and self._human_body(tenant, agent, existing, current.actor))
            if decision.same:
                kind, updated = "confirmed", claims.confirm(existing, sighting.session_id, now)
            elif not decision.related and decision.why in claims.UNJUDGED and human and not existing.in_conflict:
                # Nobody judged it: nothing is written into a human's text; the pair waits beside it.
                if decision.why == "unusable" and delivery is not None and answer_attempts_left(delivery):
                    raise ModelAnswerUnusable(f"the judge's answer on {new.name!r} was no verdict (delivery {delivery})")
                self._store.waiting().put(tenant, agent, WaitingPair(
                    concept=existing.name, kind=SIGHTING, why=decision.why, since=now.strftime("%Y-%m-%d"),
                    description=new.description, body=new.body, session_id=sighting.session_id,
                    turn_id=sighting.turn_id, evidence=evidence.encode() if evidence else None))
                return Outcome("waiting", new.name, existing.type, attempt, verdict), existing
            elif not decision.related:
                kind, updated = "contradiction", claims.contradict(existing, new, sighting.session_id, now)
            elif existing.provenance == "policy" or existing.in_conflict:
                # A human's concept, or one a human must resolve, is never rewritten by a merge.
                kind, updated = "confirmed", claims.confirm(existing, sighting.session_id, now)
            elif human:
                # An operator wrote this body: the related claim waits beside it for them to fold in.
                kind, updated = "kept_beside", claims.keep_beside(existing, new, sighting.session_id, now)
            else:
                kind, updated = "merged", claims.merge(existing, decision.description, decision.body,
                                                        sighting.session_id, now)
        if kind in ("confirmed", "merged") and existing.provenance != "policy" and not existing.in_conflict \
                and (new.valid_from or new.valid_until):
            # The newest dated sighting says when the claim is true; a human's concept keeps its own dates.
            updated = updated.replace(valid_from=new.valid_from, valid_until=new.valid_until)
        self._store.replace(tenant, agent, updated, if_match=current.etag, actor=ENGINE, reason=kind,
                            sightings=(me,), evidence=evidence)
        return Outcome(kind, new.name, existing.type, attempt, verdict), updated

    def _human_body(self, tenant: str, agent: str, existing: Concept, actor: Optional[str]) -> bool:
        """A human's text: a policy, one an operator wrote last or kept sightings beside, or one an
        operator wrote in any of its last MERGE_HISTORY_LOOKED versions (the engine's confirmations since
        left the operator's body as it was). Read only where it decides: a related or unjudged claim."""
        if claims.human_text(existing, actor or ""):
            return True
        versions, _ = self._store.version_page(tenant, agent, existing.name, limit=MERGE_HISTORY_LOOKED, marker=None)
        return any((v.actor or "").startswith("operator:") for v in versions)

    def _judge(self, tenant: str, agent: str, existing: Concept, new: Concept) -> claims.Verdict:
        config = self._configs.get(tenant, agent)
        ref = (config.model if config else None) or self._utility_model
        if not ref:
            return claims.unusable("no_model")
        system, user = claims.judge_prompt(existing, new)
        # No answer (a timeout, a refusal, a bad or empty envelope: any ModelError) is an outage,
        # never a verdict: it fails the sighting and the queue brings it back. Only a complete
        # answer that is no verdict is judged, as unusable.
        with metered() as meter:
            answer = self._models.get(ref).complete(system, user)
        record_model_call(self.counters, tenant, meter.usage, len(system) + len(user), len(answer))
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
