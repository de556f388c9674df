"""The learning loop's queues as shared.consumer runs them: what each message is, the keys its log
lines carry, and the job it is. A turn is extracted, a sighting consolidated, a saved concept's
policy reviewed or its words proposed (the message's `job`); a tenant's daily cap holds a turn until
the next UTC day. Log fields are counts and outcomes, never a message's or a concept's words.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Optional

from knowledge.errors import DailyCapReached
from knowledge.format.events import SAVE_SETTLED, detail
from knowledge.format.sighting import Sighting, parse_sighting
from knowledge.format.turn import Turn, parse_turn
from knowledge.store.queues import Redelivery, seconds_to_next_utc_day
from shared.consumer import Job
from shared.errors import EventPublishError, KnowledgeError
from shared.events import Events

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.learning.consolidate import Consolidator
    from knowledge.learning.extract import Extractor
    from knowledge.learning.policy_review import PolicyReviewer, PolicyReviewQueue, PolicySaved
    from knowledge.learning.model_words import WordProposer
    from knowledge.store.saves import SaveRecords

TURN_KEYS = ("tenant", "agent", "session_id", "turn_id")


def until_the_cap_resets(error: KnowledgeError) -> Optional[int]:
    """A tenant's daily cap resets at 00:00 UTC: a turn it deferred waits until then, not the back-off."""
    return seconds_to_next_utc_day() if isinstance(error, DailyCapReached) else None


class TurnJobs:
    """The TurnCompleteQueue: each turn extracted (ExtractFunction)."""

    what, rejected = "turn", "TurnRejected"

    def __init__(self, extractor: "Extractor", redelivery: Optional[Redelivery]):
        self.extractor, self.redelivery = extractor, redelivery
        self.counters = (extractor.counters,)

    def parse(self, body: str) -> Turn:
        return parse_turn(body)

    def keys(self, turn: Turn) -> dict[str, str]:
        return {key: getattr(turn, key) for key in TURN_KEYS}

    def job(self, turn: Turn, delivery: int) -> Job:
        # The receive count bounds how often an unusable answer is asked again (shared.model.ANSWER_ATTEMPTS).
        return Job("turn", lambda: self.extractor.process(turn, delivery=delivery).log_fields(), done="turn processed",
                   failed="TurnFailed", counters=self.extractor.counters, says_why=True, wait=until_the_cap_resets)


class SightingJobs:
    """The CandidatesQueue: each sighting consolidated into its concept (ConsolidateFunction)."""

    what, rejected = "sighting", "SightingRejected"

    def __init__(self, consolidator: "Consolidator", redelivery: Optional[Redelivery],
                 saves: Optional["SaveRecords"] = None, events: Optional[Events] = None,
                 words: Optional["PolicyReviewQueue"] = None):
        """`saves`, `events`: where a saved insight's outcome is written and announced (save_status);
        `words`: where a concept the sighting created is queued for the model's words (None: it is not)."""
        self.consolidator, self.redelivery = consolidator, redelivery
        self.saves, self.events, self.words = saves, events, words
        self.counters = (consolidator.counters,) + ((words.counters,) if words is not None else ())

    def parse(self, body: str) -> Sighting:
        return parse_sighting(body)

    def keys(self, sighting: Sighting) -> dict[str, str]:
        return {key: getattr(sighting, key) for key in TURN_KEYS}

    def job(self, sighting: Sighting, delivery: int) -> Job:
        def consolidate() -> dict[str, Any]:
            # The receive count bounds how often an answer that is no verdict is asked again (ANSWER_ATTEMPTS).
            outcome = self.consolidator.apply(sighting, delivery=delivery)
            if sighting.save_id is not None:
                self.settle(sighting, outcome.kind)
            if outcome.kind == "created":
                self.teach(sighting)
            # The name passed the name gate where the sighting was made (extraction, a save): safe to log.
            return {"concept": sighting.name, "outcome": outcome.kind, "attempts": outcome.attempts,
                    "verdict": outcome.verdict}

        return Job("sighting", consolidate, done="sighting consolidated", failed="ConsolidationFailed",
                   counters=self.consolidator.counters)


    def teach(self, sighting: Sighting) -> None:
        """A concept extraction created enters: its words job queued, where the agent is taught by a model.
        The concept is written already: a refused send is counted, never retried."""
        if self.words is None:
            return
        try:
            if not self.consolidator.taught_by_model(sighting.tenant, sighting.agent):
                return  # no model, or `learn_from` without it: nothing to ask, no job queued
            self.words.words_for(sighting.tenant, sighting.agent, [sighting.name], mode="created")
        except KnowledgeError:
            self.words.counters.count("PolicyReviewNotQueued")

    def settle(self, sighting: Sighting, kind: str) -> None:
        """A saved insight's outcome, into its record and onto the bus. The concept is written already:
        a failure here is counted (SaveSettleFailed), never a reason to apply the sighting again."""
        if self.saves is None or sighting.save_id is None:
            return
        at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            record = self.saves.settle(sighting.tenant, sighting.agent, sighting.save_id, kind, at)
        except KnowledgeError:
            self.consolidator.counters.count("SaveSettleFailed")
            return
        if record is None or self.events is None or record.settled_at != at:
            return  # expired or purged, or settled before: announced then
        try:
            self.events.publish(SAVE_SETTLED, {**detail(sighting.tenant, sighting.agent, record.name, record.type,
                                                        outcome=kind, session_id=sighting.session_id),
                                               "save_id": sighting.save_id, "turn_id": sighting.turn_id})
        except EventPublishError:
            self.consolidator.counters.count("EventPublishFailed")


class PolicyReviewJobs:
    """The PolicyReviewQueue (PolicyReviewFunction): a saved policy's review, or a saved concept's words
    proposed by the model (`job` words). A message the studio never sends is left to the queue's redrive."""

    what, rejected = "policy review", "PolicyReviewRejected"
    redelivery = None

    def __init__(self, reviewer: "PolicyReviewer", proposer: "WordProposer"):
        self.reviewer, self.proposer = reviewer, proposer
        self.counters = (reviewer.counters, proposer.counters)

    def parse(self, body: str) -> "PolicySaved":
        from knowledge.learning.policy_review import parse_policy_saved

        return parse_policy_saved(body)

    def keys(self, saved: "PolicySaved") -> dict[str, str]:
        return {"tenant": saved.tenant, "agent": saved.agent, "name": saved.name}

    def job(self, saved: "PolicySaved", delivery: int) -> Job:
        if saved.job == "words":
            def words() -> dict[str, Any]:
                outcomes = self.proposer.propose_many(saved.tenant, saved.agent, saved.concepts, delivery=delivery,
                                                      mode=saved.mode)
                return {"concepts": len(saved.concepts), "mode": saved.mode, "outcomes": dict(outcomes)}

            return Job("word proposal", words, done="word proposal done", failed="WordProposalFailed",
                       counters=self.proposer.counters)

        def review() -> dict[str, Any]:
            done = self.reviewer.review(saved, delivery=delivery)
            return {"outcomes": dict(done.outcomes), "skipped": done.skipped}

        return Job("policy review", review, done="policy review done", failed="PolicyReviewFailed",
                   counters=self.reviewer.counters)
