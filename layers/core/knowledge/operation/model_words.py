"""The model's words for concepts that are already there (docs/operating.md, "Model words"): a backfill of
an agent's concepts that have none (`knowledge words propose`, the studio's "Teach words" action), and
the daily pass that queues again the concepts whose words waited for the tenant's model budget
(WordsPendingFunction). Both only queue batched `words` jobs on PolicyReviewQueue; PolicyReviewFunction
asks the model (knowledge.learning.model_words), within the budget, and defers what it cannot ask today.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from knowledge.format.concept import Concept
from knowledge.learning.policy_review import PolicyReviewQueue, words_messages
from knowledge.learning.model_words import SIGNAL, calls_of
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from knowledge.store.pending_words import PendingWords
from shared.errors import InvalidConcept, KnowledgeError
from shared.names import check_slug

PASS_MAX = 5000  # concepts one scope's pending words are queued for in one daily pass (the rest: the next)


@dataclass
class Backfill:
    """What a words backfill asks (or, in a dry run, would ask): the concepts, grouped as the model calls."""

    calls: list[list[str]] = field(default_factory=list)
    taught: int = 0  # concepts that have model words already: not asked again
    unreadable: int = 0
    queued: int = 0  # concepts whose job the queue took (0 in a dry run)

    @property
    def concepts(self) -> int:
        return sum(len(c) for c in self.calls)

    def as_dict(self) -> dict[str, Any]:
        return {"concepts": self.concepts, "calls": len(self.calls), "taught_already": self.taught,
                "unreadable": self.unreadable, "queued": self.queued}


def plan_backfill(store: ConceptStore, tenant: str, agent: str) -> Backfill:
    """The agent's (or the shared scope's) concepts with no model word yet, grouped as their model calls
    (knowledge.learning.word_prompt.BATCH_MAX to a call); a concept whose words were removed is asked
    too, and its removed words are refused again by the gates."""
    plan = Backfill()
    wanted: list[Concept] = []
    for stored in store.load_all(tenant, agent):
        try:
            concept = stored.concept
        except InvalidConcept:
            plan.unreadable += 1
            continue
        if any(e.origin == SIGNAL for e in concept.learned_words):
            plan.taught += 1
        else:
            wanted.append(concept)
    plan.calls = [[c.name for c in call] for call in calls_of(sorted(wanted, key=lambda c: c.name))]
    return plan


def backfill(store: ConceptStore, queue: PolicyReviewQueue, tenant: str, agent: str, dry_run: bool = False) -> Backfill:
    """The backfill planned and, unless `dry_run`, queued: one words message per planned call."""
    plan = plan_backfill(store, tenant, agent)
    if dry_run or not plan.calls:
        return plan
    messages = [("WordProposalQueued", m) for call in plan.calls
                for m in words_messages(tenant, agent, call, mode="backfill")]
    plan.queued = plan.concepts - queue.send(messages)
    return plan


@dataclass
class PendingPass:
    """What one daily pass queued: scopes looked at, concepts queued again, scopes that failed."""

    scopes: int = 0
    queued: int = 0
    failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"scopes": self.scopes, "queued": self.queued, "failed": self.failed}


class PendingWordsPass:
    """WordsPendingFunction: every scope's waiting concepts queued again as `pending` words jobs. Records
    are deleted only by the job that teaches them, so a pass repeated, or one that failed midway, loses
    nothing; a job whose concept was taught meanwhile asks nothing (its record is gone)."""

    def __init__(self, store: ConceptStore, pending: PendingWords, queue: PolicyReviewQueue):
        self._store, self._pending, self._queue = store, pending, queue

    def run(self, tenant: Optional[str] = None) -> PendingPass:
        report = PendingPass()
        for tenant_ in [check_slug("tenant", tenant)] if tenant is not None else self._store.tenants():
            try:
                scopes = [*self._store.agents(tenant_), *([SHARED] if self._store.has_shared(tenant_) else [])]
            except KnowledgeError:
                report.failed += 1
                continue
            for scope in scopes:
                report.scopes += 1
                try:
                    names = self._pending.names(tenant_, scope, limit=PASS_MAX)
                    if names:
                        messages = [("WordProposalQueued", m) for m in words_messages(tenant_, scope, names,
                                                                                     mode="pending")]
                        report.queued += len(names) - self._queue.send(messages)
                except KnowledgeError:  # this scope's listing or queueing failed: the next pass retries it
                    report.failed += 1
        return report
