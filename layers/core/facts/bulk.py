"""Several proposals decided in one action (the Facts page's "Approve/Reject/Dismiss selected"): each
through the same decision as a single click (facts.review), each with its own outcome, all under one
batch id; every id looked up before anything is decided; customers side by side, one customer's
proposals one after another (they share a cell). docs/facts.md, "The Facts API"."""

from __future__ import annotations

import contextvars
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, TypeVar

from shared.errors import InvalidRequest, KnowledgeError

from .errors import ProposalNotFound, ProposalWentStale
from .fact import REASON_MAX, iso, utc_now
from .proposals import ProposalRef

if TYPE_CHECKING:  # the studio calls in; importing it here would be a cycle
    from .studio import FactsStudio, Operator

ACTIONS = ("approve", "reject", "dismiss")
BULK_MAX = 50  # the most proposals one action decides: what a page shows, each on screen
WORKERS = 8  # customers decided side by side (S3 requests, not CPU)
_DONE = {"approve": "approved", "reject": "rejected", "dismiss": "dismissed"}
In, Out = TypeVar("In"), TypeVar("Out")


def _side_by_side(pool: ThreadPoolExecutor, work: Callable[[In], Out], items: Iterable[In]) -> list[Out]:
    """`work` over `items` on the pool, each in a copy of this thread's context: the request's
    deadline (shared.deadline, a context variable) bounds the workers' S3 calls too."""
    jobs = [(contextvars.copy_context(), item) for item in items]
    return list(pool.map(lambda job: job[0].run(work, job[1]), jobs))


def check_items(action: object, items: object) -> list[tuple[str, str]]:
    if action not in ACTIONS:
        raise InvalidRequest(f"action: one of {', '.join(ACTIONS)}")
    if not isinstance(items, list) or not items:
        raise InvalidRequest("items: at least one proposal, as {customer_id, id}")
    if len(items) > BULK_MAX:
        raise InvalidRequest(f"items: at most {BULK_MAX} proposals in one action ({len(items)} were sent): decide "
                             "them in several")
    pairs = [(str(customer), str(pid)) for customer, pid in items]
    if len(set(pairs)) != len(pairs):
        raise InvalidRequest("items: a proposal is named twice")
    return pairs


def decide_many(studio: "FactsStudio", op: "Operator", tenant: str, agent: str, action: str,
                items: list[tuple[str, str]], reason: Optional[str] = None) -> dict[str, Any]:
    """{batch, action, by, at, outcomes: [{customer_id, id, name, ok, outcome, message, proposal}], counts}:
    outcomes in the order asked; `outcome` is the proposal's status after (approved, rejected,
    dismissed) or the error code that stopped it (fact_moved: it went stale; conflict; not_pending…)."""
    pairs = check_items(action, items)
    if reason is not None and (not isinstance(reason, str) or len(reason) > REASON_MAX):
        raise InvalidRequest(f"reason: text of at most {REASON_MAX} characters")
    refs = [studio.refs(tenant, agent, customer, pid) for customer, pid in pairs]
    # One listing says which exist (not a read per id): nothing is decided if one does not.
    stored = studio.stored_keys(tenant, agent)
    missing = [index for index, ref in enumerate(refs) if ref.key not in stored]
    if missing:
        raise ProposalNotFound(f"items[{missing[0]}]: no such proposal ({len(missing)} of {len(refs)} unknown): "
                               "nothing was decided; reload the list")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        batch = uuid.uuid4().hex
        by_customer: dict[str, list[int]] = {}
        for index, ref in enumerate(refs):
            by_customer.setdefault(ref.customer_id, []).append(index)
        outcomes: list[dict[str, Any]] = [{} for _ in refs]

        def one_customer(indexes: list[int]) -> None:
            for index in indexes:
                outcomes[index] = _decide(studio, op, action, refs[index], reason, batch)
        _side_by_side(pool, one_customer, list(by_customer.values()))
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome["outcome"]] = counts.get(outcome["outcome"], 0) + 1
    return {"batch": batch, "action": action, "by": op.id, "at": iso(utc_now()), "outcomes": outcomes,
            "counts": counts}


def _decide(studio: "FactsStudio", op: "Operator", action: str, ref: ProposalRef, reason: Optional[str],
            batch: str) -> dict[str, Any]:
    # The name as the list read it; a decision's answer says it again (None: one refused before any read here).
    out = {"customer_id": ref.customer_id, "id": ref.id, "name": studio.held_name(ref)}
    try:
        if action == "approve":
            view = studio.approve(op, ref, batch)
        elif action == "reject":
            view = studio.reject(op, ref, reason, batch)
        else:
            view = studio.dismiss(op, ref, batch)
    except ProposalWentStale as exc:
        return {**out, "name": exc.proposal["name"], "ok": False, "outcome": exc.code, "message": str(exc),
                "proposal": exc.proposal}
    except KnowledgeError as exc:  # this one's race or state; the others go on
        return {**out, "ok": False, "outcome": exc.code, "message": str(exc), "proposal": None}
    return {**out, "name": view["name"], "ok": view["status"] == _DONE[action], "outcome": view["status"],
            "message": None, "proposal": view}
