"""The list's bulk "Move to shared": each selected concept moved into the tenant's shared scope as the
editor's Move does (knowledge.curation.sharing), each with its own outcome, the shared names read once,
and the model calls the move queues (words jobs grouped as knowledge.learning.model_words.calls_of
groups them) said before (a dry run, writing nothing) and after. docs/studio.md, `POST /concepts/bulk`."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from knowledge.errors import NameDeleted, NameTaken
from knowledge.format.concept import Concept, parse
from knowledge.learning.policy_review import PolicyReviewQueue, PolicySaved, words_messages
from knowledge.learning.model_words import calls_of
from knowledge.store.keys import SHARED
from shared import deadline
from shared.errors import DeadlineExceeded, InvalidConcept, NotFound, StoreUnavailable
from shared.httpapi import Operator

DONE = ("moved",)
REFUSED = (NameDeleted, NameTaken, NotFound, InvalidConcept)  # a row's outcome, not the request's failure
READY = "ready"
WORKERS = 16  # rows at once: a move makes about ten S3 requests, so 500 rows are some 5,000 (boto3 pools 32)
ROW_SECONDS = 3.0  # a row is begun only with this much of the request's time left (the API's 29 s)
QUEUE_SECONDS = 2.0  # kept from the rows for queueing the words of those done


class BulkShare:
    """Over the editor's sharing (sharing.Sharing) and the studio's queue (None: nothing is queued)."""

    def __init__(self, sharing: Any, queue: Optional[PolicyReviewQueue], utility_model: Optional[str],
                 workers: int = WORKERS):
        self._sharing, self._queue, self._model, self._workers = sharing, queue, utility_model, max(1, workers)

    def act(self, op: Operator, tenant: str, agent: str, names: list[str], dry_run: bool) -> dict[str, Any]:
        one = self._ready if dry_run else self._move
        shared = self._sharing.names(tenant)  # two listings, not one per row
        left = deadline.remaining()
        rows_by = None if left is None else time.monotonic() + max(0.0, left - QUEUE_SECONDS)
        with deadline.until(rows_by), ThreadPoolExecutor(max_workers=min(self._workers, len(names))) as pool:
            done = list(pool.map(deadline.carry(lambda name: in_time(one, op, tenant, agent, name, shared)), names))
        rows = [{"name": name, "outcome": outcome} for name, (outcome, _) in zip(names, done)]
        entering = [concept for outcome, concept in done if concept is not None]
        calls = calls_of(entering)
        out = {"rows": rows, "dry_run": dry_run, "policies": sum(1 for c in entering if c.provenance == "policy"),
               "model_calls": len(calls) if self._queue is not None and self._queue.words and self._model else 0,
               "words_not_queued": 0}
        if not dry_run and entering:
            out["words_not_queued"] = self._send(tenant, entering, calls)
        return out

    def _ready(self, op: Operator, tenant: str, agent: str, name: str, shared: Any) -> tuple[str, Optional[Concept]]:
        try:
            return READY, self._sharing.ready(op, tenant, agent, name, shared)
        except REFUSED as exc:
            return refusal(exc), None

    def _move(self, op: Operator, tenant: str, agent: str, name: str, shared: Any) -> tuple[str, Optional[Concept]]:
        try:
            copy = self._sharing.share(op, tenant, agent, name, move=True, names=shared)
        except REFUSED as exc:
            return refusal(exc), None
        return ("moved" if copy["moved"] else "changed_meanwhile"), parse(copy["markdown"])

    def _send(self, tenant: str, entering: list[Concept], calls: list[list[Concept]]) -> int:
        """The words jobs (one message per model call) and the policies' reviews; how many concepts'
        words the queue refused (their words are asked by "Teach words" later)."""
        if self._queue is None:
            return 0
        words = [("WordProposalQueued", m) for call in calls
                 for m in words_messages(tenant, SHARED, [c.name for c in call])] if self._queue.words else []
        reviews = [("PolicyReviewQueued", PolicySaved(tenant=tenant, agent=SHARED, name=c.name))
                   for c in entering if c.provenance == "policy"]
        try:
            lost = self._queue.send(words)
            self._queue.send(reviews)  # a review the queue refuses is counted (PolicyReviewNotQueued)
        finally:
            self._queue.counters.flush(service="knowledge-studio")
        return lost


def in_time(one: Any, *args: Any) -> tuple[str, Optional[Concept]]:
    """One row, begun only while the request has time for it: the rows done are answered, never lost
    to a request that fails (503) after doing them because time ran out or S3 stayed busy."""
    left = deadline.remaining()
    if left is not None and left < ROW_SECONDS:
        return "not_done", None
    try:
        return one(*args)
    except (DeadlineExceeded, StoreUnavailable):
        return "not_done", None


def refusal(exc: Exception) -> str:
    """A row's outcome for what refused it (one of REFUSED)."""
    for kind, outcome in ((NameDeleted, "name_deleted"), (NameTaken, "name_taken"), (NotFound, "gone")):
        if isinstance(exc, kind):
            return outcome
    return "invalid"
