"""Extraction: one completed turn in, gated and redacted sightings out — the turn archived, the model
asked (shown the known concepts the turn is about), its answer gated, the survivors stamped and sent
to the CandidatesQueue with their evidence link (never the quote), echoes flagged; backfill replays
archived turns through the same code. No answer fails the turn; an answer the gates drop whole is
asked again up to ANSWER_ATTEMPTS, then counted TurnAnswerDropped.
docs/contract.md, "The turn-complete message" and "The gates"."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

from knowledge.errors import DailyCapReached
from knowledge.format.concept import Concept, first_sighting
from knowledge.format.sighting import EvidenceRef, Sighting
from knowledge.format.turn import Turn
from knowledge.learning.gates import SCHEMA, Candidate, GateReport, gate
from knowledge.learning.known import KnownConcepts
from knowledge.learning.prompt import extraction_prompt
from knowledge.learning.traffic_words import Teacher
from knowledge.learning.usage import ModelQuota, record_model_call
from knowledge.learning.validity import read_validity
from knowledge.store.archive import TurnArchive
from knowledge.store.config_cache import ConfigCache
from knowledge.store.ledgers import ExtractionLedger
from knowledge.store.queues import CandidateSink
from shared.errors import InvalidConcept, KnowledgeError, ModelAnswerUnusable, ModelConfigError
from shared.model import ANSWER_ATTEMPTS, ModelCache, answer_attempts_left, metered
from shared.telemetry import Counters

# ------------------------------------------------------------------ the work


@dataclass
class TurnOutcome:
    status: str  # processed | no_config | extract_off | already_extracted
    archived: bool = False
    sightings: list[Sighting] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    redacted: Counter = field(default_factory=Counter)

    def log_fields(self) -> dict[str, Any]:
        """Counts, and the names of the concepts sent (each passed the name gate; a refused candidate is
        counted by its reason only): safe to log."""
        return {"status": self.status, "archived": self.archived, "sent": len(self.sightings),
                "concepts": [s.name for s in self.sightings], "rejected": dict(self.rejected),
                "redacted": dict(self.redacted)}


def stamp(candidate: Candidate, turn: Turn) -> Concept:
    """A candidate as a first sighting: everything but name/description/type/body is the engine's,
    its validity the dates its evidence states, read against the turn's local date."""
    at = candidate.evidence_at
    validity = read_validity(turn.messages[at.message].content[at.start:at.end], turn.local_date)
    return first_sighting(name=candidate.name, description=candidate.description, type=candidate.type,
                          body=candidate.body, session_id=turn.session_id, moment=turn.completed_at,
                          valid_from=validity.valid_from, valid_until=validity.valid_until)


def evidence_ref(candidate: Candidate, turn: Turn) -> EvidenceRef:
    """Where the candidate's quote is in the archived turn (its key needs completed_at, unrounded)."""
    at = candidate.evidence_at
    return EvidenceRef(completed_at=turn.completed_at, message=at.message, start=at.start, end=at.end)


class SessionRecorder(Protocol):
    """Told of every archived turn of an agent that distils (Facts keeps its session state)."""

    def record(self, turn: Turn) -> Any: ...

    def index(self, turn: Turn) -> None: ...


class Extractor:
    def __init__(self, configs: ConfigCache, archive: Optional[TurnArchive], candidates: CandidateSink,
                 models: ModelCache, utility_model: Optional[str], counters: Optional[Counters] = None,
                 known: Optional[KnownConcepts] = None, extracted: Optional[ExtractionLedger] = None,
                 sessions: Optional[SessionRecorder] = None, quota: Optional[ModelQuota] = None,
                 teacher: Optional[Teacher] = None):
        """`known` (None: no list) finds the agent's concepts a turn is about for the prompt;
        `extracted` (None: none) remembers which live turns the model has already read;
        `sessions` (None: none) is told of each turn archived for an agent that distils;
        `quota` (None: no cap) says whether the tenant may spend one more model call today;
        `teacher` (None: nothing learned) learns the customers' words for concepts from the turn."""
        self._configs, self._archive, self._candidates = configs, archive, candidates
        self._extracted, self._sessions = extracted, sessions
        self._models, self._utility_model = models, utility_model
        self.counters = counters or Counters()
        self._known = known
        self.quota = quota
        self._teacher = teacher

    def process(self, turn: Turn, *, archive: bool = True, send: bool = True,
                delivery: int | None = None) -> TurnOutcome:
        """Extract one turn. Raises (so the queue retries) when the model or a send keeps failing.

        A live turn (`archive`) whose sightings were already sent is not read by the model again
        when the queue redelivers it; a backfill replay (archive=False) re-reads on purpose.
        `delivery` is the queue's receive count of this turn: before the ANSWER_ATTEMPTS-th, an
        answer the gates drop whole raises ModelAnswerUnusable (the queue asks again later);
        None (no queue) asks again here, up to ANSWER_ATTEMPTS times.
        """
        if delivery is not None and (isinstance(delivery, bool) or not isinstance(delivery, int) or delivery < 1):
            raise ValueError("delivery is a receive count: 1 or more")
        both = self._configs.both(turn.tenant, turn.agent)
        config = both.knowledge
        distils = both.distill is not None and both.distill.enabled and self._sessions is not None
        if config is None or not config.extract:
            outcome = TurnOutcome("no_config" if config is None else "extract_off")
            if archive and distils:  # Facts reads the session's turns even where nothing is learned
                outcome.archived = self._archive_for_facts(turn)
            self.counters.count("TurnSkipped", reason=outcome.status)
            return outcome
        once = archive and self._extracted is not None
        if once and self._extracted.done(turn):  # type: ignore[union-attr]
            self.counters.count("TurnSkipped", reason="already_extracted")
            return TurnOutcome("already_extracted")
        outcome = TurnOutcome("processed")
        if archive and distils:
            outcome.archived = self._archive_for_facts(turn)
        elif archive and self._archive is not None:
            outcome.archived = self._archive.put(turn)
            if self._sessions is not None:  # so forget_customer finds a tagged turn kept only for learning
                self._sessions.index(turn)
        ref = config.model or self._utility_model
        if not ref:
            raise ModelConfigError("no model: set the agent's shared.model or UTILITY_MODEL")
        known = self._known.about(turn, config) if self._known is not None else []
        system, user = extraction_prompt(turn, config.types, config.prompt, known, config.language)
        asks = 1 if delivery is not None else ANSWER_ATTEMPTS
        for _ in range(asks):
            report = self._ask(turn, ref, system, user, config)
            if report.answer_dropped is None:
                break
            if delivery is not None and answer_attempts_left(delivery):
                # The reason is the gate's name, never the answer.
                raise ModelAnswerUnusable(f"the model's answer was no JSON array of candidates "
                                          f"({report.answer_dropped}) on delivery {delivery} of {ANSWER_ATTEMPTS}")
        if report.answer_dropped is not None:
            self.counters.count("TurnAnswerDropped", reason=report.answer_dropped)
        outcome.rejected, outcome.redacted = report.rejected, report.redacted
        for candidate in report.candidates:
            try:
                outcome.sightings.append(Sighting.of(turn.tenant, turn.agent, turn.session_id, turn.turn_id,
                                                     stamp(candidate, turn), evidence_ref(candidate, turn),
                                                     echo=turn.echoes(candidate.name, candidate.evidence_at.message)))
            except InvalidConcept:
                outcome.rejected[SCHEMA] += 1
        if send and outcome.sightings:
            self._candidates.send(outcome.sightings)
        if once and send:
            self._extracted.mark(turn)  # type: ignore[union-attr]
        if send and self._teacher is not None and self._known is not None:
            self._learn_words(turn, outcome, config)
        self.counters.count("TurnProcessed")
        self.counters.count("CandidateAccepted", len(outcome.sightings))
        if turn.shown is None:  # the engine sent no record: nothing from this turn is checked for echoes
            self.counters.count("TurnUnguarded")
        self.counters.count("CandidateEchoed", sum(1 for s in outcome.sightings if s.echo))
        if report.other_language:
            self.counters.count("CandidateOtherLanguage", report.other_language)
        for reason, n in outcome.rejected.items():
            self.counters.count("CandidateRejected", n, reason=reason)
        for kind, n in outcome.redacted.items():
            self.counters.count("PiiRedacted", n, kind=kind)
        return outcome

    def _learn_words(self, turn: Turn, outcome: TurnOutcome, config: Any) -> None:
        """The customers' words the turn teaches (knowledge.learning.traffic_words); never fails the turn,
        whose sightings are sent: a fault is counted and the word waits for its next session."""
        try:
            index = self._known.index_of(turn.tenant, turn.agent)  # type: ignore[union-attr]
            self._teacher.learn(turn, [s.name for s in outcome.sightings], index, config)  # type: ignore[union-attr]
        except KnowledgeError as exc:
            self.counters.count("LearningFailed", reason=exc.code)

    def _ask(self, turn: Turn, ref: str, system: str, user: str, config: Any) -> GateReport:
        """One model call for the turn, gated (each call spends one of the tenant's daily calls)."""
        if self.quota is not None and not self.quota.take(turn.tenant):
            # Failed, not dropped: the queue brings the turn back, and a later day has calls left.
            self.counters.count("ExtractionDeferred", tenant=turn.tenant)
            raise DailyCapReached(f"tenant {turn.tenant!r} reached its daily model-call cap")
        with metered() as meter:
            answer = self._models.get(ref).complete(system, user)
        record_model_call(self.counters, turn.tenant, meter.usage, len(system) + len(user), len(answer))
        return gate(answer, turn.messages, config.types, config.published_contacts, config.language)

    def distils(self, tenant: str, agent: str) -> bool:
        """Whether the agent's `distill:` block is on (Facts keeps its sessions' state)."""
        distill = self._configs.both(tenant, agent).distill
        return distill is not None and distill.enabled

    def prompt_for(self, turn: Turn) -> Optional[tuple[str, str]]:
        """The (system, user) prompt `process` would send for this turn, or None when the agent does
        not learn; asks no model and spends no quota (backfill's estimate)."""
        config = self._configs.get(turn.tenant, turn.agent)
        if config is None or not config.extract:
            return None
        known = self._known.about(turn, config) if self._known is not None else []
        return extraction_prompt(turn, config.types, config.prompt, known, config.language)

    def _archive_for_facts(self, turn: Turn) -> bool:
        """Archive the turn and tell Facts (also on a redelivery: it puts back what a crash lost)."""
        archived = self._archive.put(turn) if self._archive is not None else False
        self._sessions.record(turn)  # type: ignore[union-attr]
        return archived
