"""Approve, reject, dismiss, undo: the operator's decisions (the API the studio calls). An approval is the
only path from a proposal to the customer's memory cell, by compare-and-swap on that fact's revision
recorded at distill time; every decision is stored before its event is published, and a 412 is read
back to tell this call's own write (S3 applied it and lost the answer) from someone else's (409).
docs/facts.md, "Facts: distilled customer memory, human-gated"."""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Optional

from shared.errors import Conflict, InvalidRequest
from shared.events import Events
from shared.telemetry import Counters

from . import events as fact_events
from .cells import CAS_ATTEMPTS, MemoryCells
from .errors import Busy, CannotUndo, Gone, NotPending, ProposalChanged, ProposalNotFound
from .fact import Removal, distilled_origin, utc_now
from .keyed_hashes import FactKeys, same_value
from .proposals import (
    OPERATOR,
    REASON_MAX,
    CurrentFact,
    Proposal,
    ProposalRef,
    ProposalStore,
    UNDOS_KEPT,
    StoredProposal,
    Undo,
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

    def approve(self, ref: ProposalRef, operator: str, batch: Optional[str] = None) -> Proposal:
        """Approved (the fact is in the cell) or stale (the fact moved; nothing written). The fact
        it replaced and the revision it wrote are kept on the proposal, so the approval can be undone."""
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
        previous, applied = None, None
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
                written = self._cells.swap(cell, cell.cell.with_fact(
                    proposal.name, proposal.value, distilled_origin(proposal.session_id), self._clock()))
            except Conflict:
                continue
            previous = _current(fact)
            applied = written.cell.facts[proposal.name].revision
            break
        else:
            raise Busy("the memory cell kept changing; approve again")
        done, ours = self._decide(stored, stored.proposal.model_copy(update={
            "status": "approved", "resolved_at": self._clock(), "resolved_by": operator, "batch": batch,
            "previous": previous, "applied_revision": applied}))
        if ours:
            self._announce(fact_events.APPROVED, done.proposal)
            self.counters.count("FactApproved")
        return done.proposal

    def reject(self, ref: ProposalRef, operator: str, reason: Optional[str] = None,
               batch: Optional[str] = None) -> Proposal:
        if reason is not None and (not isinstance(reason, str) or len(reason) > REASON_MAX):
            raise InvalidRequest(f"reason: text of at most {REASON_MAX} characters")
        return self._latch(ref, operator, "rejected", ("pending",), reason or None, batch)

    def dismiss(self, ref: ProposalRef, operator: str, batch: Optional[str] = None) -> Proposal:
        """Never proposed again; also how a stale proposal is resolved."""
        return self._latch(ref, operator, "dismissed", ("pending", "stale"), None, batch)

    # ------------------------------------------------------------ undo
    def undo_approval(self, ref: ProposalRef, operator: str) -> Proposal:
        """The approval's fact taken back out of the cell by compare-and-swap on the revision it
        wrote: the fact it replaced is back (or the fact is gone when there was none), and the
        proposal is pending again, the undo recorded. CannotUndo when the fact moved since (an
        operator's edit or the engine's write stays); Gone when the proposal no longer exists."""
        check_operator(operator)
        stored = self._existing(ref)
        proposal = stored.proposal
        if proposal.status != "approved":
            raise NotPending(f"only an approval can be undone; the proposal is {proposal.status}")
        if proposal.applied_revision is None:
            # Nothing of this approval is in the cell to take back: the value was there already (an
            # operator's or another agent's), or it was approved before approvals kept what they wrote.
            raise CannotUndo("this approval wrote nothing that can be taken back (the value was already in the "
                             "customer's memory, or it was approved before undo existed): change the fact in the "
                             "customer's memory instead")
        base = self._take_back(ref, proposal, operator)
        return self._reopened(stored, operator, "undo_approval", base, fact_events.UNDONE, "FactApprovalUndone")

    def reopen(self, ref: ProposalRef, operator: str) -> Proposal:
        """A rejected or dismissed proposal pending again, its latch lifted, the reopen recorded;
        Gone when the proposal no longer exists."""
        check_operator(operator)
        stored = self._existing(ref)
        proposal = stored.proposal
        if proposal.status not in ("rejected", "dismissed"):
            raise NotPending(f"only a rejected or dismissed proposal can be reopened; this one is {proposal.status}")
        # The record first: a crash before the latch is lifted leaves a pending proposal under a latch,
        # which a decision overwrites; the other order could let the tuple be proposed while decided.
        done = self._reopened(stored, operator, "reopen", proposal.base_revision, fact_events.REOPENED,
                              "FactReopened")
        self._cells.unlatch(ref.tenant, ref.customer_id,
                            self._keys.tuple_ids(ref.tenant, ref.customer_id, proposal.name, proposal.value))
        return done

    def _existing(self, ref: ProposalRef) -> StoredProposal:
        try:
            return self._proposals.get(ref)
        except ProposalNotFound:
            raise Gone("this proposal no longer exists (its customer was forgotten, or it aged out): there is "
                       "nothing to undo") from None

    def _take_back(self, ref: ProposalRef, proposal: Proposal, operator: str) -> Optional[int]:
        """The cell without the approval's write; the fact's revision then (None: removed)."""
        for _ in range(CAS_ATTEMPTS):
            cell = self._cells.read(ref.tenant, ref.customer_id)
            fact = cell.cell.facts.get(proposal.name)
            if fact is None or fact.revision != proposal.applied_revision:
                raise CannotUndo("this fact changed in the customer's memory since it was approved (an operator "
                                 "or the agent wrote it): it keeps its value, and the approval stays",
                                 None if fact is None else {"name": proposal.name, **fact.as_json()})
            before = proposal.previous
            now = self._clock()
            changed = (cell.cell.with_fact(proposal.name, before.value, before.origin, now) if before is not None
                       else cell.cell.without(proposal.name, Removal(proposal.name, operator, now, fact.revision,
                                                                     "approval undone")))
            try:
                written = self._cells.swap(cell, changed)
            except Conflict:
                continue
            kept = written.cell.facts.get(proposal.name)
            return kept.revision if kept else None
        raise Busy("the memory cell kept changing; undo again")

    def _reopened(self, stored: StoredProposal, operator: str, action: str, base: Optional[int], event: str,
                  metric: str) -> Proposal:
        undo = Undo(action=action, by=operator, at=self._clock())
        done, ours = self._decide(stored, stored.proposal.model_copy(update={
            "status": "pending", "base_revision": base, "resolved_at": None, "resolved_by": None, "reason": None,
            "previous": None, "applied_revision": None, "batch": None, "current": None, "current_deleted": False,
            "undos": ((undo,) + stored.proposal.undos)[:UNDOS_KEPT]}))
        if ours:
            self._announce(event, done.proposal)
            self.counters.count(metric)
        return done.proposal

    # ------------------------------------------------------------ internals
    def _latch(self, ref: ProposalRef, operator: str, status: str, from_states: tuple[str, ...],
               reason: Optional[str], batch: Optional[str] = None) -> Proposal:
        check_operator(operator)
        stored = self._proposals.get(ref)
        proposal = stored.proposal
        ours = False
        if proposal.status == status:
            done = proposal  # a retried click: make sure the latch is there, as below
        elif proposal.status in from_states:
            written, ours = self._decide(stored, proposal.model_copy(update={
                "status": status, "resolved_at": self._clock(), "resolved_by": operator, "reason": reason,
                "batch": batch}))
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


def _current(fact) -> Optional[CurrentFact]:
    return None if fact is None else CurrentFact(value=fact.value, origin=fact.origin, revision=fact.revision)
