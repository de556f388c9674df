"""The Facts page's operations: what a signed-in operator of a tenant may see and decide.

Every call names the operator (from the verified token) and checks the tenant before anything
is read. Decisions go through review.Review only (an approval is the one path from a proposal
to the memory cell); an operator's own edit of a fact is a compare-and-swap on that fact's
revision. Evidence is read from the archived transcript at request time and redacted: the
proposal keeps the link, never the words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional, Protocol

from knowledge.store.agents import agent_exists, unknown_agent
from knowledge.store.archive import TurnArchive
from shared import awscall, pii
from shared.errors import AccessDenied, InvalidCursor, InvalidName, InvalidRequest, KnowledgeError, NotFound
from shared.httpapi import page_offset
from shared.names import check_slug

from . import bulk, layout
from .cells import MemoryCells
from .errors import (
    FactChanged,
    FactMoved,
    InvalidFact,
    PersonalData,
    ProposalNotFound,
    ProposalWentStale,
    RecordUnreadable,
)
from .fact import (
    FACTS_MAX,
    NEVER_KEPT,
    PERSONAL_DATA_WORDS,
    Cell,
    Fact,
    iso,
    name_holds_personal_data,
    name_problem,
    personal_data_in,
)
from .proposals import EvidenceLink, Proposal, ProposalRef, ProposalStore, StoredProposal, parse_proposal
from .review import Review

STATES = ("pending", "stale", "recent")
# Which stored statuses each list of the page shows. `approving` is an approval that has not
# finished (approving again completes it), so it waits with the pending ones.
_SHOWN = {"pending": ("pending", "approving"), "stale": ("stale",),
          "recent": ("approved", "rejected", "dismissed", "expired")}
PAGE_MAX = 100
EXCERPT_MAX = 400  # characters of one message shown on a card


class Operator(Protocol):
    """The signed-in operator (shared.httpapi.Operator): its token subject and tenant check."""

    id: str

    def check(self, tenant: str) -> None: ...


def _stamp(moment: Optional[datetime]) -> Optional[str]:
    return iso(moment) if moment else None


def _fact(name: str, fact: Fact) -> dict[str, Any]:
    return {"name": name, **fact.as_json()}


def _cell_view(cell: Cell) -> dict[str, Any]:
    """What the page shows of a cell: the facts a read serves, and a problem when it holds more."""
    served = cell.served()
    problem = None
    if cell.over_full:
        problem = (f"this cell holds {len(cell.facts)} facts, over the {FACTS_MAX} a customer may have: only the "
                   f"{FACTS_MAX} most recently written are served to the agent and shown here. Remove the "
                   f"{len(cell.facts) - FACTS_MAX} others, or facts you do not need")
    return {"customer_id": cell.customer_id, "scope": f"{cell.tenant}:{cell.customer_id}",
            "facts": [_fact(name, fact) for name, fact in sorted(served.items())],
            "stored": len(cell.facts), "problem": problem,
            "removals": [{"reason": None, **removal.as_json()} for removal in cell.removed]}


def _words(kinds: tuple[str, ...]) -> str:
    said = [PERSONAL_DATA_WORDS.get(kind, kind) for kind in kinds]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def check_personal_data(value: str, confirmed: tuple[str, ...]) -> tuple[str, ...]:
    """The kinds of personal data `value` holds by the write path's redaction rules, all confirmed by
    the operator (PersonalData otherwise); payment card data is refused whatever is confirmed."""
    kinds = personal_data_in(value)
    never = tuple(kind for kind in kinds if kind in NEVER_KEPT)
    if never:
        raise PersonalData(f"this value holds {_words(never)}: payment card data is never kept in a customer's "
                           "memory (it would reach the agent on every turn); remove it from the value", never, False)
    unconfirmed = tuple(kind for kind in kinds if kind not in confirmed)
    if unconfirmed:
        raise PersonalData(f"this value looks like it holds {_words(kinds)}: memory is given to the agent on every "
                           "turn, and everything the agent learns has these redacted. Save it without them, or "
                           "confirm that this customer's memory must hold them", kinds, True)
    return kinds


def _check_revision(revision: Any, *, required: bool) -> None:
    if revision is None and not required:
        return
    if not isinstance(revision, int) or isinstance(revision, bool) or revision < 1:
        raise InvalidRequest("revision: the fact's revision as read" + ("" if required else ", or null for a new fact"))


def _offset(cursor: Optional[str]) -> int:
    return page_offset(cursor, InvalidCursor)


def shown_excerpt(content: str) -> str:
    """A message as an operator may see it on a card: personal data redacted, then cut short."""
    text = pii.redact(content).text
    return text if len(text) <= EXCERPT_MAX else text[:EXCERPT_MAX - 1].rstrip() + "…"


def _order(state: str, proposal: Proposal) -> Any:
    if state == "pending":
        return proposal.proposed_at, proposal.id
    return proposal.resolved_at or proposal.proposed_at, proposal.id


@dataclass
class _Held:
    """An agent's proposals as this container last read them, by key with their ETags: a list
    reads again only what changed since."""

    items: dict[str, tuple[str, Proposal]]


class FactsStudio:
    def __init__(self, s3: Any, *, sessions_bucket: str, proposals: ProposalStore, cells: MemoryCells,
                 review: Review, archive: TurnArchive):
        self._s3, self._sessions_bucket = s3, sessions_bucket
        self._proposals, self._cells, self._review, self._archive = proposals, cells, review, archive
        self.counters = review.counters
        self._held: dict[tuple[str, str], _Held] = {}
        self._agents: set[tuple[str, str]] = set()  # seen to exist (an agent is never un-made here)

    def _check_agent(self, tenant: str, agent: str) -> None:
        """UnknownAgent for a mistyped ?agent=: the Knowledge studio's rule (knowledge.store.agents),
        asked of KNOWLEDGE_BUCKET, where the cells are too."""
        if (tenant, agent) in self._agents:
            return
        if not agent_exists(self._s3, self._cells.bucket, tenant, agent):
            raise unknown_agent(tenant, agent, "check the agent's name in the page's address, ?agent=…, or choose "
                                               "one on the Knowledge page")
        self._agents.add((tenant, agent))

    @staticmethod
    def refs(tenant: str, agent: str, customer_id: str, proposal_id: str) -> ProposalRef:
        """A proposal named by the page's route (the module's `refs`)."""
        return refs(tenant, agent, customer_id, proposal_id)

    # ------------------------------------------------------------ the lists
    def proposals(self, op: Operator, tenant: str, agent: str, state: str = "pending", *,
                  limit: int = 20, cursor: Optional[str] = None, name: Optional[str] = None,
                  customer: Optional[str] = None) -> dict[str, Any]:
        """One page of a list: pending oldest first, stale oldest first, recent newest first;
        `counts` says how many each list holds. Pending and stale rows carry their evidence.
        `name` and `customer` keep the rows of one fact name or one customer (`total` counts them);
        `groups` says how many rows of the list each fact name and each customer has."""
        op.check(tenant)
        check_slug("agent", agent)
        self._check_agent(tenant, agent)
        if state not in STATES:
            raise InvalidRequest(f"state: one of {', '.join(STATES)}")
        if not 1 <= limit <= PAGE_MAX:
            raise InvalidRequest(f"limit: 1 to {PAGE_MAX}")
        start = _offset(cursor)
        held = self._refresh(tenant, agent)
        by_state = {name: [p for p in held if p.status in statuses] for name, statuses in _SHOWN.items()}
        listed = by_state[state]
        groups = _groups(listed)
        listed = [p for p in listed
                  if (name is None or p.name == name) and (customer is None or p.customer_id == customer)]
        rows = sorted(listed, key=lambda p: _order(state, p), reverse=state == "recent")
        page = rows[start:start + limit]
        quotes = _Quotes(self._archive)
        out = [self.view(p, quotes if state != "recent" else None) for p in page]
        following = start + limit
        return {"proposals": out, "total": len(rows), "next": str(following) if following < len(rows) else None,
                "counts": {shown: len(items) for shown, items in by_state.items()}, "groups": groups}

    def proposal(self, op: Operator, ref: ProposalRef) -> dict[str, Any]:
        op.check(ref.tenant)
        return self.view(self._proposals.get(ref).proposal, _Quotes(self._archive))

    def stored_keys(self, tenant: str, agent: str) -> set[str]:
        """The keys of an agent's proposals, by listing (no record read): which ids exist."""
        return {item["Key"] for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self._sessions_bucket,
                                                     Prefix=layout.proposals_prefix(tenant, agent))
                for item in page.get("Contents", [])}

    def held_name(self, ref: ProposalRef) -> Optional[str]:
        """The fact name of a proposal as this container's last list read it (None: not read here)."""
        held = self._held.get((ref.tenant, ref.agent))
        known = held.items.get(ref.key) if held else None
        return known[1].name if known else None

    def _refresh(self, tenant: str, agent: str) -> list[Proposal]:
        prefix = layout.proposals_prefix(tenant, agent)
        held = self._held.setdefault((tenant, agent), _Held({}))
        seen: dict[str, tuple[str, Proposal]] = {}
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self._sessions_bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                key, etag = item["Key"], item["ETag"]
                known = held.items.get(key)
                if known is not None and known[0] == etag:
                    seen[key] = known
                    continue
                stored = self._read(key)
                if stored is not None:
                    seen[key] = (stored.etag, stored.proposal)
        held.items = seen
        return [self._proposals.aged(proposal) for _, proposal in seen.values()]  # aged out: expired

    def _read(self, key: str) -> Optional[StoredProposal]:
        try:
            answer = awscall.call(self._s3, "get_object", Bucket=self._sessions_bucket, Key=key, read_body=True)
        except NotFound:  # removed between the listing and the read (aged out, purged)
            return None
        try:
            proposal = parse_proposal(answer["Body"])
        except RecordUnreadable:
            self.counters.count("ProposalUnreadable")
            return None
        if layout.proposal_key(proposal.tenant, proposal.agent, proposal.customer_id, proposal.id) != key:
            self.counters.count("ProposalUnreadable")
            return None
        return StoredProposal(proposal, answer["ETag"])

    def view(self, proposal: Proposal, quotes: Optional["_Quotes"] = None) -> dict[str, Any]:
        """What the page shows of a proposal; `evidence` is read now when `quotes` is given."""
        current = proposal.current
        return {
            "id": proposal.id, "customer_id": proposal.customer_id,
            "scope": f"{proposal.tenant}:{proposal.customer_id}", "session_id": proposal.session_id,
            "name": proposal.name, "value": proposal.value, "confidence": proposal.confidence,
            "status": proposal.status, "proposed_at": iso(proposal.proposed_at),
            "resolved_at": _stamp(proposal.resolved_at), "resolved_by": proposal.resolved_by,
            "reason": proposal.reason,
            "current": None if current is None else {"value": current.value, "origin": current.origin,
                                                     "revision": current.revision},
            "current_deleted": proposal.current_deleted,
            "evidence": None if quotes is None else [quotes.quote(proposal, link) for link in proposal.evidence],
            "batch": proposal.batch,
            # What Recent may offer: an approval that wrote its fact can be undone, a reject or a dismiss reopened.
            "can_undo": proposal.status == "approved" and proposal.applied_revision is not None,
            "can_reopen": proposal.status in ("rejected", "dismissed"),
            "undos": [{"action": undo.action, "by": undo.by, "at": iso(undo.at)} for undo in proposal.undos],
        }

    # ------------------------------------------------------------ decisions
    def approve(self, op: Operator, ref: ProposalRef, batch: Optional[str] = None) -> dict[str, Any]:
        op.check(ref.tenant)
        done = self._review.approve(ref, op.id, batch)
        if done.status == "stale":
            raise ProposalWentStale(self.view(done))
        return self.view(done)

    def reject(self, op: Operator, ref: ProposalRef, reason: Optional[str] = None,
               batch: Optional[str] = None) -> dict[str, Any]:
        op.check(ref.tenant)
        return self.view(self._review.reject(ref, op.id, reason.strip() if reason else None, batch))

    def dismiss(self, op: Operator, ref: ProposalRef, batch: Optional[str] = None) -> dict[str, Any]:
        op.check(ref.tenant)
        return self.view(self._review.dismiss(ref, op.id, batch))

    def undo(self, op: Operator, ref: ProposalRef) -> dict[str, Any]:
        """An approval undone (the cell as before it, by compare-and-swap), or a reject or dismiss
        reopened (the latch lifted): the proposal pending again."""
        op.check(ref.tenant)
        try:
            status = self._proposals.get(ref).proposal.status
        except ProposalNotFound:
            status = None  # the review says it is gone
        if status in ("rejected", "dismissed"):
            return self.view(self._review.reopen(ref, op.id), _Quotes(self._archive))
        return self.view(self._review.undo_approval(ref, op.id), _Quotes(self._archive))

    def decide_many(self, op: Operator, tenant: str, agent: str, action: str, items: list[tuple[str, str]],
                    reason: Optional[str] = None) -> dict[str, Any]:
        """Several proposals decided in one action, each by its own compare-and-swap (facts.bulk)."""
        op.check(tenant)
        check_slug("agent", agent)
        return bulk.decide_many(self, op, tenant, agent, action, items, reason)

    # ------------------------------------------------------------ the customer's memory cell
    # A cell is the tenant's customer's, whichever agent's page opens it: only the lists check the agent.
    def memory(self, op: Operator, tenant: str, customer_id: str) -> dict[str, Any]:
        op.check(tenant)
        return _cell_view(self._cells.read(tenant, customer_id).cell)

    def remove_fact(self, op: Operator, tenant: str, customer_id: str, name: str, revision: int,
                    reason: Optional[str] = None) -> dict[str, Any]:
        """Remove one fact if it is still at `revision`, recording who and why in the cell (its
        earlier version keeps the value); the cell as it is then."""
        op.check(tenant)
        _check_name(name)
        _check_revision(revision, required=True)
        try:
            stored = self._cells.remove_fact(tenant, customer_id, name, expect=revision, by=op.id, reason=reason)
        except FactMoved:
            now = self._cells.read(tenant, customer_id).cell.facts.get(name)
            raise FactChanged(None if now is None else _fact(name, now)) from None
        self.counters.count("FactRemoved", tenant=tenant)
        return _cell_view(stored.cell)

    def trim(self, op: Operator, tenant: str, customer_id: str) -> dict[str, Any]:
        """An over-full cell cut to the facts a read serves (its most recently written)."""
        op.check(tenant)
        stored, removed = self._cells.trim(tenant, customer_id)
        self.counters.count("FactRemoved", removed, tenant=tenant)
        return {**_cell_view(stored.cell), "removed": removed}

    def restore_cell(self, op: Operator, tenant: str, customer_id: str) -> dict[str, Any]:
        """An unreadable cell back at its newest earlier version that reads."""
        op.check(tenant)
        stored = self._cells.restore(tenant, customer_id)
        self.counters.count("MemoryCellRestored", tenant=tenant)
        return _cell_view(stored.cell)

    def reset_cell(self, op: Operator, tenant: str, customer_id: str, confirm: str) -> dict[str, Any]:
        """An unreadable cell replaced by an empty one; `confirm` must repeat the customer id."""
        op.check(tenant)
        if confirm != customer_id:
            raise InvalidRequest("confirm: type the customer id to confirm that every fact of this cell is lost")
        stored = self._cells.reset(tenant, customer_id)
        self.counters.count("MemoryCellReset", tenant=tenant)
        return _cell_view(stored.cell)

    def edit_fact(self, op: Operator, tenant: str, customer_id: str, name: str, value: str,
                  revision: Optional[int], confirmed: tuple[str, ...] = ()) -> dict[str, Any]:
        """Set one fact (origin `operator`) if it is still at `revision` (None: it did not exist).
        Personal data in the value is refused until the operator confirms its kinds (`confirmed`)."""
        op.check(tenant)
        _check_name(name)
        _check_revision(revision, required=False)
        if revision is None and name_holds_personal_data(name):
            raise InvalidFact("name: a fact's name must not hold personal data (a person's name, an e-mail, a "
                              "number): names are shown in events; say what the fact is in the name and put the "
                              "data in the value, e.g. preferred_email")
        kept = check_personal_data(value if isinstance(value, str) else "", tuple(confirmed))
        try:
            fact = self._cells.write_fact(tenant, customer_id, name, value, "operator", expect=revision)
        except FactMoved:
            now = self._cells.read(tenant, customer_id).cell.facts.get(name)
            raise FactChanged(None if now is None else _fact(name, now)) from None
        self.counters.count("FactEdited", tenant=tenant)
        if kept:
            self.counters.count("FactPersonalDataConfirmed", tenant=tenant)
        return _fact(name, fact)


def _check_name(name: str) -> None:
    """A fact name from the route: InvalidName (400) saying in words what a name may be."""
    problem = name_problem(name)
    if problem:
        raise InvalidName("name", problem)


GROUPS_MAX = 100  # the fact names and customers a list's `groups` names, most rows first


def _groups(rows: list[Proposal]) -> dict[str, list[dict[str, Any]]]:
    """How many rows each fact name and each customer has, most first (then by name)."""
    def count(key) -> list[dict[str, Any]]:
        tally: dict[str, int] = {}
        for row in rows:
            tally[key(row)] = tally.get(key(row), 0) + 1
        ranked = sorted(tally.items(), key=lambda item: (-item[1], item[0]))[:GROUPS_MAX]
        return [{"value": value, "count": n} for value, n in ranked]
    return {"names": count(lambda p: p.name), "customers": count(lambda p: p.customer_id)}


class _Quotes:
    """Evidence for one request: each archived turn read once, each link quoted and redacted."""

    def __init__(self, archive: TurnArchive):
        self._archive = archive
        self._turns: dict[str, Any] = {}

    def quote(self, proposal: Proposal, link: EvidenceLink) -> dict[str, Any]:
        out = {"turn_id": link.turn_id, "completed_at": iso(link.completed_at), "message": link.message,
               "status": "expired", "role": None, "excerpt": None}
        turn = self._turn(proposal, link)
        if turn is None or link.message >= len(turn.messages):
            return out
        message = turn.messages[link.message]
        return {**out, "status": "available", "role": message.role, "excerpt": shown_excerpt(message.content)}

    def _turn(self, proposal: Proposal, link: EvidenceLink) -> Any:
        key = TurnArchive.key_for(proposal.tenant, proposal.agent, link.completed_at, proposal.session_id,
                                  link.turn_id)
        if key not in self._turns:
            try:
                self._turns[key] = self._archive.get(key)
            except (NotFound, AccessDenied):
                # Gone with the archive's retention or a purge (without ListBucket S3 says 403).
                self._turns[key] = None
            except KnowledgeError as exc:
                if exc.code != "invalid_turn":
                    raise
                self._turns[key] = None
        return self._turns[key]


def refs(tenant: str, agent: str, customer_id: str, proposal_id: str) -> ProposalRef:
    """A proposal named by the page's route; InvalidName for ids that cannot be one."""
    layout.proposal_key(tenant, agent, customer_id, proposal_id)
    return ProposalRef(tenant, agent, customer_id, proposal_id)
