"""Forgetting one customer (LGPD), and Facts' share of a tenant's purge.

forget_customer removes, every version and delete marker: the customer's proposals (every status,
every agent of the tenant), the memory cell and its latches, and each session the customer is in,
found through the customer index (facts/customers/): its archived turns (named by the session's
state, so no turn is read), its extracted/ markers, idle markers, state, and last its index entry.
Deleting in that order makes a crash or a deadline harmless: a rerun finds the session through the
index entry still there and removes what is left; a run that finds nothing removes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Literal, Mapping, Optional, Protocol, Sequence

from pydantic import BaseModel, ConfigDict

from knowledge.errors import InvalidTurn
from knowledge.store.archive import TurnArchive
from shared.errors import InvalidRequest, NotFound
from shared.names import SessionId, Slug, is_session_id, is_slug
from shared.pii import names_in
from shared.purge import Bucket, PurgeReport, Sweeper, run
from shared.validation import validate_object

from . import layout
from .errors import RecordUnreadable
from .sessions import TURNS_MAX, SessionStates


class ForgetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["forget_customer"] = "forget_customer"
    tenant: Slug
    customer_id: SessionId
    dry_run: bool = False


def parse_forget_request(event: Any) -> ForgetRequest:
    return validate_object(ForgetRequest, event, InvalidRequest, "the forget_customer request")


def facts_kind(bucket: Bucket, key: str) -> Optional[str]:
    """The kind of a key Facts writes (layout.py)."""
    parts = key.split("/")
    if bucket == "knowledge":
        if parts[0] != "memory" or len(parts) < 4:
            return None
        return "memory_cells" if parts[3] == "cell.json" else "latches" if parts[3] == "latch" else None
    if len(parts) >= 5 and parts[2] == "facts":
        return {"sessions": "session_states", "idle": "idle_markers", "customers": "customer_index",
                "proposals": "proposals"}.get(parts[3])
    return None


class FactsTenantPart:
    """Facts' share of delete_tenant_data: the tenant's memory cells and latches (its session
    states, markers and proposals are under the tenant's prefix of SESSIONS_BUCKET already)."""

    def prefixes(self, tenant: str) -> Sequence[tuple[Bucket, str]]:
        return [("knowledge", layout.tenant_memory_prefix(tenant))]

    def kind(self, bucket: Bucket, key: str) -> Optional[str]:
        return facts_kind(bucket, key)


TENANT_PART = FactsTenantPart()


class CustomerPart(Protocol):
    """Another bounded context's share of one customer (knowledge: their dead letters on the queues, the
    concepts citing their sessions)."""

    def forget(self, sweeper: Sweeper, tenant: str, customer_id: str, sessions: Mapping[str, Sequence[str]],
               names: Callable[[], Sequence[str]]) -> None:
        """Remove it (count only on a dry run); `sessions` are the customer's session ids per agent, `names`
        the persons' names their archived turns give (read on the first call, only if needed)."""


def forget_customer(s3: Any, *, knowledge_bucket: str, sessions_bucket: str, tenant: str, customer_id: str,
                    dry_run: bool = False, keep_going: Callable[[], bool] = lambda: True,
                    parts: Sequence[CustomerPart] = ()) -> PurgeReport:
    """Everything of one customer in both buckets and in the other contexts' `parts`; counts per kind,
    never an id."""
    layout.memory_prefix(tenant, customer_id)  # validates both before any request
    report = PurgeReport(dry_run=dry_run)
    purge = _CustomerPurge(s3, Sweeper(s3, report, keep_going), knowledge_bucket, sessions_bucket, tenant, customer_id,
                           tuple(parts))
    return run(report, purge.everything)


class _CustomerPurge:
    def __init__(self, s3: Any, sweeper: Sweeper, knowledge_bucket: str, sessions_bucket: str, tenant: str,
                 customer_id: str, parts: Sequence[CustomerPart] = ()):
        self.sweeper, self.knowledge, self.sessions = sweeper, knowledge_bucket, sessions_bucket
        self.tenant, self.customer, self.parts = tenant, customer_id, parts
        self.states = SessionStates(s3, sessions_bucket)
        self.archive = TurnArchive(s3, sessions_bucket)
        self._names: Optional[tuple[str, ...]] = None

    def everything(self) -> None:
        agents = [agent for agent in self.sweeper.children(self.sessions, f"{self.tenant}/") if is_slug(agent)]
        sessions = {agent: self.sessions_of(agent) for agent in agents}
        # The other contexts' shares while the index still names the sessions (a rerun finds them
        # again), then the conversations: they are what a stopped purge should have removed.
        for part in self.parts:
            part.forget(self.sweeper, self.tenant, self.customer, sessions, lambda: self.names(sessions))
        for agent in agents:
            self.agent(agent, sessions[agent])
        self.sweeper.prefix(self.knowledge, layout.memory_prefix(self.tenant, self.customer),
                             lambda key: facts_kind("knowledge", key))

    def names(self, sessions: dict[str, list[str]]) -> tuple[str, ...]:
        """The persons' names the customer's archived turns give (greeting, "meu nome é", signature), read
        once: what a concept citing their sessions must not keep. Never logged, never reported."""
        if self._names is None:
            found: list[str] = []
            for agent, ids in sessions.items():
                for keys in self._turn_keys(agent, ids).values() if ids else ():
                    for key in keys:
                        self.sweeper.checkpoint()
                        try:
                            turn = self.archive.get(key)
                        except (NotFound, InvalidTurn):
                            continue
                        found += names_in([m.content for m in turn.messages if m.role in ("user", "assistant")])
            self._names = tuple(dict.fromkeys(found))
        return self._names

    def sessions_of(self, agent: str) -> list[str]:
        index = layout.customer_sessions_prefix(self.tenant, agent, self.customer)
        return [sid for sid in (key[len(index):] for key in self.sweeper.listed(self.sessions, index))
                if is_session_id(sid)]

    def agent(self, agent: str, sessions: list[str]) -> None:
        if sessions:
            # The words the customer taught (the learning ledger's, pending or learned) are knowledge's
            # share (knowledge.operation.unlearn), run before this while the index still names the sessions.
            turns = self._turn_keys(agent, sessions)
            idle = self._idle_markers(agent, set(sessions))
            shared = self._other_customers(agent, set(sessions))
            for session_id in sessions:
                self.session(agent, session_id, turns.get(session_id, []), idle.get(session_id, []),
                             shared.get(session_id, []))
        self.sweeper.prefix(self.sessions, layout.proposals_prefix(self.tenant, agent, self.customer), "proposals")

    def session(self, agent: str, session_id: str, turns: list[str], idle: list[str], shared: list[str]) -> None:
        # The index entry last: until it goes, a rerun finds this session again. The whole session
        # goes (the other customer's turns hold this one's words too), so the entries of the other
        # customers it was shared with go before it: none is left pointing at nothing.
        self.sweeper.keys(self.sessions, turns, "archived_turns")
        self.sweeper.prefix(self.sessions, f"{self.tenant}/{agent}/extracted/{session_id}/", "extracted_markers")
        # What became of the session's save_knowledge calls (knowledge.store.saves): ids and outcomes.
        self.sweeper.prefix(self.sessions, f"{self.tenant}/{agent}/saves/{session_id}/", "saved_insights")
        self.sweeper.prefix(self.sessions, f"{self.tenant}/{agent}/learning/loaded/{session_id}/", "learning_ledger")
        self.sweeper.keys(self.sessions, idle, "idle_markers")
        self.sweeper.keys(self.sessions, [layout.session_key(self.tenant, agent, session_id)], "session_states")
        self.sweeper.keys(self.sessions, shared, "customer_index")
        self.sweeper.keys(self.sessions, [layout.customer_session_key(self.tenant, agent, self.customer, session_id)],
                          "customer_index")

    def _turn_keys(self, agent: str, sessions: list[str]) -> dict[str, list[str]]:
        """Each session's archived turn keys, from its state. A session whose state is gone,
        unreadable or full is looked up in one listing of the agent's archive keys (no turn read)."""
        keys: dict[str, list[str]] = {}
        unknown: set[str] = set()
        for session_id in sessions:
            self.sweeper.checkpoint()
            try:
                stored = self.states.get(self.tenant, agent, session_id)
            except RecordUnreadable:
                stored = None
            if stored is None or len(stored.state.turns) >= TURNS_MAX:
                unknown.add(session_id)
            if stored is not None:
                keys[session_id] = [TurnArchive.key_for(self.tenant, agent, t.completed_at, session_id, t.turn_id)
                                    for t in stored.state.turns]
        if unknown:
            prefix = TurnArchive.prefix(self.tenant, agent)
            for key in self.sweeper.listed(self.sessions, prefix):
                _stamp, _, rest = key[len(prefix):].partition("/")
                session_id = rest.partition("/")[0]
                if session_id in unknown and key not in keys.get(session_id, ()):
                    keys.setdefault(session_id, []).append(key)
        return keys

    def _other_customers(self, agent: str, sessions: set[str]) -> dict[str, list[str]]:
        """The index entries of the other customers each session was shared with (one listing of the
        agent's customer index: key names only, no object read)."""
        prefix = f"{layout.facts_prefix(self.tenant, agent)}customers/"
        own = layout.customer_sessions_prefix(self.tenant, agent, self.customer)
        found: dict[str, list[str]] = defaultdict(list)
        for key in self.sweeper.listed(self.sessions, prefix):
            customer, _, session_id = key[len(prefix):].partition("/")
            if session_id in sessions and not key.startswith(own) and is_session_id(customer):
                found[session_id].append(key)
        return found

    def _idle_markers(self, agent: str, sessions: set[str]) -> dict[str, list[str]]:
        """The sessions' idle markers, stray ones included (one listing of the agent's due sessions)."""
        prefix = layout.idle_prefix(self.tenant, agent)
        found: dict[str, list[str]] = defaultdict(list)
        for key in self.sweeper.listed(self.sessions, prefix):
            parsed = layout.read_idle_key(prefix, key)
            if parsed is not None and parsed[1] in sessions:
                found[parsed[1]].append(key)
        return found


class CustomerPurge:
    """PurgeFunction's forget_customer: a request parsed, then everything of the customer removed."""

    def __init__(self, s3: Any, *, knowledge_bucket: str, sessions_bucket: str, parts: Sequence[CustomerPart] = ()):
        self._s3, self._parts = s3, tuple(parts)
        self._buckets = dict(knowledge_bucket=knowledge_bucket, sessions_bucket=sessions_bucket)

    def parse(self, event: Any) -> ForgetRequest:
        return parse_forget_request(event)

    def run(self, request: ForgetRequest, keep_going: Callable[[], bool]) -> PurgeReport:
        return forget_customer(self._s3, **self._buckets, tenant=request.tenant, customer_id=request.customer_id,
                               dry_run=request.dry_run, keep_going=keep_going, parts=self._parts)
