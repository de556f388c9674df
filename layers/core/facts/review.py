"""Approve, reject, dismiss: the operator's decisions (the API the studio calls).

An approval is the only path from a proposal to the customer's memory cell. It writes by
compare-and-swap, conditional on the target FACT's revision recorded at distill time (another
fact's change does not matter); if that fact moved, the proposal turns stale with both values
kept, and the operator's value stays; the same value already in the cell (another agent's
approval, an operator's edit) counts as applied. Every decision is stored before its event is
published.

A decision is a conditional write, and S3 may apply one and lose its answer: the SDK's retry then
gets 412 although nobody else was there. So a 412 is followed by a read: the record holding
exactly this write is this call's decision, finished here (latch, event) and answered 200; the
same decision by the same operator (a second click that got there first) is answered as done,
with its event left to the call that wrote it; anything else was someone else (409).
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Optional

from shared.errors import Conflict
from shared.events import Events
from shared.telemetry import Counters

from . import events as fact_events
from .cells import CAS_ATTEMPTS, MemoryCells
from .errors import Busy, InvalidRequest, NotPending, ProposalChanged
from .fact import distilled_origin, utc_now
from .keys import FactKeys, same_value
from .proposals import (
    OPERATOR,
    REASON_MAX,
    CurrentFact,
    Proposal,
    ProposalRef,
    ProposalStore,
    StoredProposal,
    ref_of,
)


def check_operator(operator: object) -> str:
    if not isinstance(operator, str) or not OPERATOR.fullmatch(operator):
        raise InvalidRequest("operator: ASCII letters, digits and ._@+:- (at most 128)")
    return operator


class Review:
    def __init__(self, proposals: ProposalStore, cells: MemoryCells, keys: FactKeys, events: Optional[Events],
                 counters: Optional[Counters] = None, clock: Callable[[], datetime] = utc_now):
        self._proposals, self._cells, self._keys, self._events = proposals, cells, keys, events
        self.counters = counters or Counters()
        self._clock = clock

    def approve(self, ref: ProposalRef, operator: str) -> Proposal:
        """Approved (the fact is in the cell) or stale (the fact moved; nothing written)."""
        check_operator(operator)
        stored = self._proposals.get(ref)
        proposal = stored.proposal
        if proposal.status == "approved":
            return proposal
        if proposal.status not in ("pending", "approving"):
            raise NotPending(f"the proposal is {proposal.status}")
        if proposal.status == "pending":
            stored, _ = self._decide(stored, proposal.model_copy(update={"status": "approving",
                                                                         "resolved_by": operator}),
                                     also=("approved",))
            if stored.proposal.status == "approved":  # this operator's other click finished it
                return stored.proposal
        for _ in range(CAS_ATTEMPTS):
            cell = self._cells.read(ref.tenant, ref.customer_id)
            fact = cell.cell.facts.get(proposal.name)
            # Already there: an earlier approval of this very proposal that died before recording
            # itself, another agent's approval of the same fact, or an operator who typed it.
            if fact is not None and same_value(fact.value, proposal.value):
                break
            if (fact.revision if fact else None) != proposal.base_revision:
                return self._stale(stored, fact)
            try:
                self._cells.swap(cell, cell.cell.with_fact(proposal.name, proposal.value,
                                                           distilled_origin(proposal.session_id), self._clock()))
                break
            except Conflict:
                continue
        else:
            raise Busy("the memory cell kept changing; approve again")
        done, ours = self._decide(stored, stored.proposal.model_copy(update={
            "status": "approved", "resolved_at": self._clock(), "resolved_by": operator}))
        if ours:
            self._announce(fact_events.APPROVED, done.proposal)
            self.counters.count("FactApproved")
        return done.proposal

    def reject(self, ref: ProposalRef, operator: str, reason: Optional[str] = None) -> Proposal:
        if reason is not None and (not isinstance(reason, str) or len(reason) > REASON_MAX):
            raise InvalidRequest(f"reason: text of at most {REASON_MAX} characters")
        return self._latch(ref, operator, "rejected", ("pending",), reason or None)

    def dismiss(self, ref: ProposalRef, operator: str) -> Proposal:
        """Never proposed again; also how a stale proposal is resolved."""
        return self._latch(ref, operator, "dismissed", ("pending", "stale"), None)

    # ------------------------------------------------------------ internals
    def _latch(self, ref: ProposalRef, operator: str, status: str, from_states: tuple[str, ...],
               reason: Optional[str]) -> Proposal:
        check_operator(operator)
        stored = self._proposals.get(ref)
        proposal = stored.proposal
        ours = False
        if proposal.status == status:
            done = proposal  # a retried click: make sure the latch is there, as below
        elif proposal.status in from_states:
            written, ours = self._decide(stored, proposal.model_copy(update={
                "status": status, "resolved_at": self._clock(), "resolved_by": operator, "reason": reason}))
            done = written.proposal
        else:
            raise NotPending(f"the proposal is {proposal.status}")
        self._cells.latch(ref.tenant, ref.customer_id,
                          self._keys.tuple_id(ref.tenant, ref.customer_id, proposal.name, proposal.value))
        if ours:
            kind = fact_events.REJECTED if status == "rejected" else fact_events.DISMISSED
            self._announce(kind, done)
            self.counters.count("FactRejected" if status == "rejected" else "FactDismissed")
        return done

    def _stale(self, stored: StoredProposal, fact) -> Proposal:
        current = CurrentFact(value=fact.value, origin=fact.origin, revision=fact.revision) if fact else None
        done, ours = self._decide(stored, stored.proposal.model_copy(update={
            "status": "stale", "current": current, "current_deleted": fact is None,
            "resolved_at": self._clock(), "resolved_by": None}))
        if ours:
            self._announce(fact_events.STALE, done.proposal)
            self.counters.count("FactStale")
        return done.proposal

    def _decide(self, stored: StoredProposal, proposal: Proposal,
                also: tuple[str, ...] = ()) -> tuple[StoredProposal, bool]:
        """Write `proposal` over `stored`: (the record now, True when it is this call's write).

        After a 412 the record is read again. Exactly `proposal`: S3 applied this write and lost
        the answer, so it is ours. The same operator's decision (`proposal`'s status or one of
        `also`): a click of theirs that got there first, done but not ours to announce. Anything
        else: someone else decided (ProposalChanged, 409)."""
        try:
            return self._proposals.swap(stored, proposal), True
        except Conflict:
            pass
        now = self._proposals.get(ref_of(proposal))
        if now.proposal == proposal:
            return now, True
        if (proposal.resolved_by is not None and now.proposal.resolved_by == proposal.resolved_by
                and now.proposal.status in (proposal.status, *also)):
            return now, False
        raise ProposalChanged("the proposal was resolved by someone else; reload it")

    def _announce(self, kind: str, proposal: Proposal) -> None:
        fact_events.publish(self._events, self.counters, kind, fact_events.detail(
            proposal.tenant, proposal.agent, self._keys.pseudonym(proposal.tenant, proposal.customer_id),
            proposal.name))
