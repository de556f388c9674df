"""Retrieval: the per-turn <knowledge> block and the load_knowledge tool, from a warm index.

The container keeps one index per agent. At most once per refresh window it lists the
agent's concepts (and re-checks its knowledge.yaml with a conditional GET); only changed
concepts are fetched (in parallel, newest first) and parsed, deleted ones are dropped.
Between refreshes a call makes no S3 request at all.

Fetching has a time budget per call. An agent too large to load in one call (a cold
container, thousands of concepts) is answered from the part already indexed, and the next
calls fetch the rest without listing again: a first turn is never held past the budget,
and the function never times out trying to warm up.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional
from xml.sax.saxutils import escape, quoteattr

from pydantic import BaseModel, ConfigDict, Field

from . import deadline
from .config import KnowledgeConfig
from .errors import InvalidConcept, InvalidConfig, KnowledgeError, NotFound, StoreUnavailable
from .events import RETRIEVED, EventPublishError, Events, detail
from .names import SLUG_MAX, SLUG_SCHEMA, SessionId, Slug, is_slug
from .search import MIN_COVERAGE, Hit, Index
from .store import ConceptStore, NotModified
from .telemetry import Counters
from .validation import validate_object

PRIORITY = 77
_QUOTE = {'"': "&quot;"}  # escape() covers & < >; quotes too, so nothing in the block looks like markup
MESSAGE_MAX_CHARS = 8000
FETCH_CHUNK = 128  # concepts fetched and indexed between two looks at the clock
FETCH_BUDGET_SECONDS = 4.0
# Kept free of fetching at the end of an invocation, for the answer itself.
INVOCATION_RESERVE_SECONDS = 1.5
INSTRUCTION = (
    "If the customer's question needs more than the summary above, call\n"
    '`load_knowledge("name")` FIRST — before any other lookup for that topic.'
)
NOT_POLICY = (
    "This is learned from past conversations, not official policy: never state\n"
    'a `provenance="observed"` concept to the customer as a guarantee.'
)
TOOL = {
    "name": "load_knowledge",
    "description": ("Load the full text of one concept listed in the <knowledge> block. Call it FIRST, "
                    "before any other lookup, when the customer's question needs more than the summary."),
    "input_schema": {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "the concept's name, as in the block",
                                **SLUG_SCHEMA}},
        "required": ["name"],
        "additionalProperties": False,
    },
}


class InvalidRequest(KnowledgeError, ValueError):
    code = "invalid_request"


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Slug = "default"
    agent: Slug
    session_id: SessionId



class RetrieveRequest(_Base):
    message: str = Field(max_length=MESSAGE_MAX_CHARS)


class LoadRequest(_Base):
    action: str = Field(pattern="^load_knowledge$")
    name: str = Field(max_length=200)


def parse_request(event: Any) -> RetrieveRequest | LoadRequest:
    if isinstance(event, dict) and "action" in event:
        if event["action"] != "load_knowledge":
            raise InvalidRequest("action: the only action is load_knowledge")
        return validate_object(LoadRequest, event, InvalidRequest, "the event")
    return validate_object(RetrieveRequest, event, InvalidRequest, "the event")


@dataclass(frozen=True)
class Injected:
    hit: Hit
    linked: bool

    def as_dict(self) -> dict[str, Any]:
        doc = self.hit.doc
        return {"name": self.hit.name, "score": self.hit.score, "confidence": doc.confidence,
                "provenance": doc.provenance, "linked": self.linked}


def render_block(injected: list[Injected]) -> str:
    """Seed 000's level-1 block: summaries only, then the ordered instruction."""
    if not injected:
        return ""
    lines = ["<knowledge>"]
    for item in injected:
        c = item.hit.doc
        lines.append(f"  <concept name={quoteattr(c.name)} confidence=\"{c.confidence:.2f}\" "
                     f"provenance={quoteattr(c.provenance)}>{escape(c.description, _QUOTE)}</concept>")
    lines += ["</knowledge>", "", INSTRUCTION]
    if any(item.hit.doc.provenance == "observed" for item in injected):
        lines.append(NOT_POLICY)
    return "\n".join(lines)


def select(index: Index, message: str, config: KnowledgeConfig) -> list[Injected]:
    """The top_k matches, then one hop of their [[links]] (capped at top_k again), no duplicates."""
    matches = index.search(message, config.top_k, config.min_score, MIN_COVERAGE)
    chosen = {hit.name for hit in matches}
    injected = [Injected(hit, False) for hit in matches]
    linked: list[Injected] = []
    for hit in matches:
        for name in hit.doc.links:
            if len(linked) >= config.top_k:
                break
            doc = index.docs.get(name)
            if doc is not None and name not in chosen:
                chosen.add(name)
                linked.append(Injected(Hit(name, 0.0, doc), True))
    return injected + linked


@dataclass
class AgentKnowledge:
    config: Optional[KnowledgeConfig] = None
    config_etag: Optional[str] = None
    index: Index = field(default_factory=Index)
    refreshed_at: float = float("-inf")
    unreadable: dict[str, str] = field(default_factory=dict)  # name -> ETag that did not parse
    # Changed concepts found by a listing but not fetched yet (a refresh ran out of time).
    backlog: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Retriever:
    def __init__(self, store: ConceptStore, events: Events, *, refresh_seconds: float = 5.0,
                 fetch_budget_seconds: float = FETCH_BUDGET_SECONDS,
                 counters: Optional[Counters] = None, clock: Callable[[], float] = time.monotonic):
        self._store, self._events = store, events
        self.refresh_seconds = refresh_seconds
        self.fetch_budget_seconds = fetch_budget_seconds
        self.counters = counters or Counters()
        self._clock = clock
        self._agents: dict[tuple[str, str], AgentKnowledge] = {}
        self._agents_lock = threading.Lock()

    # ------------------------------------------------------------ the two calls
    def handle(self, event: Any, remaining_seconds: Optional[float] = None) -> dict[str, Any]:
        """One engine invocation: a retrieve or a load_knowledge, validated first.
        `remaining_seconds` (what Lambda says is left) caps the fetch budget."""
        request = parse_request(event)
        budget = self.fetch_budget_seconds
        ends = None
        if remaining_seconds is not None:
            budget = max(0.0, min(budget, remaining_seconds - INVOCATION_RESERVE_SECONDS))
            ends = time.monotonic() + max(0.0, remaining_seconds - INVOCATION_RESERVE_SECONDS)
        with deadline.until(ends):  # S3 retries stop in time for the answer
            if isinstance(request, LoadRequest):
                return self.load(request, budget)
            return self.retrieve(request, budget)

    def retrieve(self, request: RetrieveRequest, budget: Optional[float] = None) -> dict[str, Any]:
        knowledge = self.knowledge(request.tenant, request.agent, budget)
        config = knowledge.config
        if config is None or not config.retrieve:
            return {"block": "", "concepts": [], "priority": PRIORITY, "tool": None}
        injected = select(knowledge.index, request.message, config)
        self.counters.count("BlockInjected" if injected else "BlockEmpty")
        return {"block": render_block(injected), "concepts": [i.as_dict() for i in injected],
                "priority": PRIORITY, "tool": TOOL}

    def load(self, request: LoadRequest, budget: Optional[float] = None) -> dict[str, Any]:
        if not is_slug(request.name):
            raise NotFound(f"no such concept: {request.name[:SLUG_MAX]!r} is not a concept name")
        knowledge = self.knowledge(request.tenant, request.agent, budget)
        if knowledge.config is None or not knowledge.config.retrieve:
            raise NotFound("retrieval is off for this agent")
        if request.name not in knowledge.index.docs and request.name in knowledge.backlog:
            with knowledge.lock:  # not reached yet by the warm-up: this one now
                if request.name in knowledge.backlog:
                    self._fetch(request.tenant, request.agent, knowledge, [request.name])
                    knowledge.backlog.remove(request.name)
        doc = knowledge.index.docs.get(request.name)
        if doc is None:
            raise NotFound(f"no such concept: {request.name}")
        concept = doc.concept
        try:
            self._events.publish(RETRIEVED, detail(request.tenant, request.agent, concept.name, concept.type,
                                                   session_id=request.session_id))
        except EventPublishError:
            # The customer's turn needs the concept more than the bus needs the event: answer,
            # and count the loss where an alarm can see it.
            self.counters.count("EventPublishFailed")
        self.counters.count("KnowledgeRetrieved", tenant=request.tenant, agent=request.agent)
        return {"name": concept.name, "markdown": doc.data.decode("utf-8"), "concept": {
            "name": concept.name, "description": concept.description, "type": concept.type,
            "provenance": concept.provenance, "confidence": concept.confidence, "sources": list(concept.sources),
            "occurrences": concept.occurrences, "created_at": concept.created_at.isoformat().replace("+00:00", "Z"),
            "updated_at": concept.updated_at.isoformat().replace("+00:00", "Z"), "body": concept.body,
            "conflict": concept.in_conflict}}

    # ------------------------------------------------------------ the warm index
    def knowledge(self, tenant: str, agent: str, budget: Optional[float] = None) -> AgentKnowledge:
        """The agent's config and index, refreshed when the window has passed, and caught up
        (within `budget` seconds of fetching) while a backlog remains."""
        with self._agents_lock:
            knowledge = self._agents.setdefault((tenant, agent), AgentKnowledge())
        if self._clock() - knowledge.refreshed_at < self.refresh_seconds and not knowledge.backlog:
            return knowledge
        fetch_until = self._clock() + (self.fetch_budget_seconds if budget is None else budget)
        with knowledge.lock:
            try:
                if self._clock() - knowledge.refreshed_at >= self.refresh_seconds:
                    self._refresh(tenant, agent, knowledge, fetch_until)
                    knowledge.refreshed_at = self._clock()
                elif knowledge.backlog:
                    self._catch_up(tenant, agent, knowledge, fetch_until)
            except (StoreUnavailable, deadline.DeadlineExceeded, InvalidConfig) as exc:
                if knowledge.config_etag is None:
                    raise  # nothing to serve yet: the engine gets the error
                # Serve what this container already holds, and look again after the window.
                knowledge.refreshed_at = self._clock()
                self.counters.count("ServedStale", reason=exc.code)
        return knowledge

    def _refresh(self, tenant: str, agent: str, knowledge: AgentKnowledge, fetch_until: float) -> None:
        try:
            stored = self._store.get_config(tenant, agent, unless_etag=knowledge.config_etag)
        except NotModified:
            pass
        else:
            knowledge.config = stored.config if stored else None
            knowledge.config_etag = stored.etag if stored else None
        if knowledge.config is None or not knowledge.config.retrieve:
            if len(knowledge.index):
                knowledge.index = Index()
            knowledge.backlog = []
            return
        index = knowledge.index
        listing = self._store.list(tenant, agent)
        listed = {item.name for item in listing}
        for name in [name for name in index.docs if name not in listed]:
            index.remove(name)
        # Newest first: what a warm-up cut short leaves out is the oldest knowledge.
        listing.sort(key=lambda item: (item.last_modified, item.name), reverse=True)
        knowledge.backlog = [item.name for item in listing
                             if index.etag(item.name) != item.etag and knowledge.unreadable.get(item.name) != item.etag]
        self.counters.count("IndexRefreshed")
        self._catch_up(tenant, agent, knowledge, fetch_until)

    def _catch_up(self, tenant: str, agent: str, knowledge: AgentKnowledge, fetch_until: float) -> None:
        """Fetch the backlog in chunks (a few hundred parsed concepts held at a time, not all)
        until it is done or the deadline passes; at least one chunk per call, so it ends."""
        try:
            while knowledge.backlog:
                self._fetch(tenant, agent, knowledge, knowledge.backlog[:FETCH_CHUNK])
                del knowledge.backlog[:FETCH_CHUNK]
                if knowledge.backlog and self._clock() >= fetch_until:
                    self.counters.count("IndexIncomplete")
                    break
        finally:
            knowledge.index.settle()

    def _fetch(self, tenant: str, agent: str, knowledge: AgentKnowledge, names: list[str]) -> None:
        index = knowledge.index
        for stored_concept in self._store.fetch_many(tenant, agent, names):
            if stored_concept is None:
                continue
            try:
                index.upsert(stored_concept.name, stored_concept.etag, stored_concept.concept, stored_concept.data)
            except InvalidConcept:
                index.remove(stored_concept.name)
                knowledge.unreadable[stored_concept.name] = stored_concept.etag
                self.counters.count("ConceptUnreadable")
