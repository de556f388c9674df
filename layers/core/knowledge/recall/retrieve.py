"""Retrieval: the per-turn <knowledge> block and the load_knowledge tool, from a warm index.

The index is the container's warm per-agent index (knowledge.recall.warm): a cold container reads
the agent's snapshot and the changes since; refreshed at most once per refresh window, only
changed concepts fetched, a time budget per call, the warm index served when S3 fails, held
under the container's memory budget. Between refreshes a retrieve makes no S3 request at
all; load_knowledge of a concept restored from the snapshot reads that one concept.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any, Callable, Literal, Optional
from xml.sax.saxutils import escape, quoteattr

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from knowledge.format.concept import (
    RETIRED,
    STALE,
    format_timestamp,
    out_of_recall,
    parse_stored,
    recall_changes_at,
    without_claims_kept_beside,
)
from knowledge.format.config import KnowledgeConfig
from knowledge.format.events import RETRIEVED, SEARCHED, detail, search_detail
from knowledge.recall.answers import (
    Concept,
    LoadAnswer,
    RetrieveAnswer,
    SearchAnswer,
    SearchHit,
    Shown,
    Tool,
    tool_input,
)
from knowledge.recall.existence import UNKNOWN, Existence
from knowledge.recall.index import Hit, Index
from knowledge.recall.lexicon import Lexicon
from knowledge.recall.merged import relevant_both, search_both, shadowed
from knowledge.recall.warm import FETCH_BUDGET_SECONDS, SWEEP_SECONDS, AgentKnowledge, WarmIndexes, memory_budget_bytes
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from shared import deadline
from shared.errors import EventPublishError, InvalidConcept, InvalidRequest, KnowledgeError, NotFound, UnknownAgent
from shared.events import Events
from shared.names import SLUG_MAX, SLUG_SCHEMA, SessionId, Slug, is_slug
from shared.telemetry import Counters
from shared.validation import validate_object

PRIORITY = 77
_QUOTE = {'"': "&quot;"}  # escape() covers & < >; quotes too, so nothing in the block looks like markup
MESSAGE_MAX_CHARS = 8000
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
# An objection is what customers say, never what the store says: its line says so itself, and the
# block says what that means, whatever its provenance (an operator may write one down too).
CUSTOMERS_SAY = "objection"
NOT_THE_STORE = (
    'A `said-by="customers"` concept is what customers have said, not what the store says:\n'
    "never repeat it to a customer as true, and answer it with what the store says."
)
TOOL = Tool.model_validate({
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
})


SEARCH_MAX_HITS = 50


def unknown_agent(tenant: str, agent: str) -> UnknownAgent:
    return UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml nor any "
                        "concept (check the agent's name)")


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Slug = "default"
    agent: Slug
    session_id: SessionId


class RetrieveRequest(_Base):
    """The per-turn retrieve: the customer's message, for the <knowledge> block."""

    message: str = Field(max_length=MESSAGE_MAX_CHARS)


class LoadRequest(_Base):
    """load_knowledge: one concept's full text, by the name the block showed."""

    action: Literal["load_knowledge"]
    name: str = Field(max_length=200)


class SearchRequest(_Base):
    """search_knowledge: the agent's concepts ranked for a query, past the block's relevance floor."""

    action: Literal["search_knowledge"]
    query: str = Field(min_length=1, max_length=MESSAGE_MAX_CHARS)
    limit: int = Field(default=10, ge=1, le=SEARCH_MAX_HITS)


# The actions RetrieveFunction answers here (save_knowledge is learning's: knowledge.learning.save).
ACTIONS: dict[str, type[_Base]] = {"load_knowledge": LoadRequest, "search_knowledge": SearchRequest}


def parse_request(event: Any) -> RetrieveRequest | LoadRequest | SearchRequest:
    if isinstance(event, dict) and "action" in event:
        model = ACTIONS.get(event["action"]) if isinstance(event["action"], str) else None
        if model is None:
            raise InvalidRequest("action: must be load_knowledge, search_knowledge, save_knowledge, list_knowledge "
                                 "or knowledge_history")
        return validate_object(model, event, InvalidRequest, "the event")  # type: ignore[return-value]
    return validate_object(RetrieveRequest, event, InvalidRequest, "the event")


SEARCH_TOOL = Tool(
    name="search_knowledge",
    description=("Search what this store has learned, when the customer's question changed or the <knowledge> "
                 "block does not cover it. Answers the best matches' summaries; call load_knowledge for one's "
                 "full text."),
    input_schema=tool_input(SearchRequest, {"query": "what to look for, in the customer's words",
                                            "limit": f"how many matches at most (1 to {SEARCH_MAX_HITS}; 10)"}))


@dataclass(frozen=True)
class Injected:
    hit: Hit
    linked: bool

    def shown(self) -> Shown:
        doc = self.hit.doc
        return Shown(name=self.hit.name, score=self.hit.score, confidence=doc.confidence,
                     provenance=doc.provenance, linked=self.linked)


@functools.lru_cache(maxsize=4096)
def _concept_line(name: str, confidence: float, provenance: str, customers_say: bool, description: str) -> str:
    """One concept's line of the block (the same concepts come back turn after turn: kept, not escaped anew)."""
    said_by = ' said-by="customers"' if customers_say else ""
    return (f"  <concept name={quoteattr(name)} confidence=\"{confidence:.2f}\" "
            f"provenance={quoteattr(provenance)}{said_by}>{escape(description, _QUOTE)}</concept>")


def render_block(injected: list[Injected]) -> str:
    """Seed 000's level-1 block: summaries only, then the ordered instruction."""
    if not injected:
        return ""
    lines = ["<knowledge>"]
    for item in injected:
        c = item.hit.doc
        lines.append(_concept_line(c.name, c.confidence, c.provenance, c.type == CUSTOMERS_SAY, c.description))
    lines += ["</knowledge>", "", INSTRUCTION]
    if any(item.hit.doc.provenance == "observed" for item in injected):
        lines.append(NOT_POLICY)
    if any(item.hit.doc.type == CUSTOMERS_SAY for item in injected):
        lines.append(NOT_THE_STORE)
    return "\n".join(lines)


def select(index: Index, message: str, config: KnowledgeConfig,
           lapsed: Optional[dict[str, str]] = None, readings: Optional[Lexicon] = None,
           excluded: Optional[np.ndarray] = None, shared: Optional[tuple[Index, set[str]]] = None) -> list[Injected]:
    """The top_k matches past the relevance floor, then one hop of their [[links]] (capped at
    top_k again), no duplicates; a concept `lapsed` names (expired, not started, stale) is neither.
    `readings`: the agent's lexicon (its vocabulary.yaml and the places; None: the places only);
    `excluded`: the lapsed concepts' slots, when the caller keeps them (else worked out here);
    `shared`: the tenant's shared index and the names of it left out (lapsed, or the agent's own
    name), searched beside the agent's (knowledge.recall.merged)."""
    lapsed = lapsed or {}
    if excluded is None and lapsed:
        excluded = index.slots_of(lapsed)
    if shared is None:
        matches = index.relevant(message, config.top_k, config.min_score, readings, excluded)
    else:
        matches = relevant_both(index, shared[0], message, config, readings, excluded, shared[1])
    chosen = {hit.name for hit in matches}
    injected = [Injected(hit, False) for hit in matches]
    linked: list[Injected] = []
    for hit in matches:
        for name in hit.doc.links:
            if len(linked) >= config.top_k:
                break
            doc = index.docs.get(name)
            if doc is None and shared is not None and name not in shared[1]:
                doc = shared[0].docs.get(name)
            if doc is not None and name not in chosen and name not in lapsed:
                chosen.add(name)
                linked.append(Injected(Hit(name, 0.0, doc), True))
    return injected + linked


def _day(text: Optional[str]) -> Optional[date]:
    return date.fromisoformat(text) if text else None


def _moment(text: Optional[str]) -> Optional[datetime]:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


@dataclass(frozen=True)
class Lapsed:
    """The agent's concepts out of recall at a moment, and until when that answer holds."""

    key: tuple
    names: dict[str, str]  # name -> expired | not_started | stale
    until: Optional[datetime]
    slots: Optional[np.ndarray] = None  # their slots in the index the key names (a mask for each search)


def lapsed_now(knowledge: AgentKnowledge, config: KnowledgeConfig, now: datetime,
               known: Optional[Lapsed] = None) -> Lapsed:
    """Which indexed concepts are out of recall at `now`: `known` again while nothing changed (the
    index, the summaries, the settings) and no concept's state can have moved since."""
    key = (id(knowledge.index), id(knowledge.summaries), knowledge.generation, config.stale_after_days,
           config.utc_offset)
    if known is not None and known.key == key and (known.until is None or now < known.until):
        return known
    now = now.replace(microsecond=0)
    stale_days = config.stale_after_days
    # Most concepts state no dates: stale or not is one comparison of sortable stamps.
    cutoff = format_timestamp(now - timedelta(days=stale_days)) if stale_days else None
    names: dict[str, str] = {}
    moments: list[datetime] = []
    oldest_fresh: Optional[str] = None
    for name, doc in knowledge.index.docs.items():
        summary = knowledge.summaries.get(name)
        if summary is None:
            continue
        if summary.retired_by:  # a policy's text retired it: out until a human restores it
            names[name] = RETIRED
            continue
        if summary.valid_from is None and summary.valid_until is None:
            if cutoff is not None and doc.provenance == "observed" and summary.updated_at:
                if summary.updated_at < cutoff:
                    names[name] = STALE
                elif oldest_fresh is None or summary.updated_at < oldest_fresh:
                    oldest_fresh = summary.updated_at
            continue
        fields = {"valid_from": _day(summary.valid_from), "valid_until": _day(summary.valid_until),
                  "provenance": doc.provenance, "updated_at": _moment(summary.updated_at), "now": now,
                  "stale_after_days": stale_days, "utc_offset": config.offset}
        why = out_of_recall(**fields)
        if why is not None:
            names[name] = why
        changes = recall_changes_at(**fields)
        if changes is not None:
            moments.append(changes)
    if oldest_fresh is not None:
        moments.append(_moment(oldest_fresh) + timedelta(days=stale_days, seconds=1))  # type: ignore[operator]
    return Lapsed(key, names, min(moments) if moments else None, knowledge.index.slots_of(names))


class Retriever:
    def __init__(self, store: ConceptStore, events: Events, *, refresh_seconds: float = 5.0,
                 fetch_budget_seconds: float = FETCH_BUDGET_SECONDS, memory_budget: Optional[int] = None,
                 counters: Optional[Counters] = None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, sweep_seconds: float = SWEEP_SECONDS):
        """`memory_budget` (bytes of indexes held) defaults to what the function's memory allows;
        `sweep_seconds`: how often a held agent lists every concept (knowledge.recall.warm)."""
        self._store, self._events = store, events
        self.store = store  # the builders' reads (knowledge.recall.reads) read versions through it
        self.fetch_budget_seconds = fetch_budget_seconds
        self.counters = counters or Counters()
        self._wall = wall
        self._lapsed: dict[tuple[str, str], Lapsed] = {}
        self._shared_lapsed: dict[tuple[str, str], Lapsed] = {}  # per agent: its settings decide
        self.existence = Existence(lambda tenant, agent: store.agent_exists(tenant, agent, current_only=True),
                                   refresh_seconds, clock)
        self._warm = WarmIndexes(store, lambda config: config.retrieve, refresh_seconds=refresh_seconds,
                                 vocabulary=True, fetch_budget_seconds=fetch_budget_seconds, counters=self.counters,
                                 sweep_seconds=sweep_seconds,
                                 clock=clock, wall=wall, memory_budget=memory_budget if memory_budget is not None
                                 else memory_budget_bytes())

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
            if isinstance(request, SearchRequest):
                return self.search(request, budget)
            return self.retrieve(request, budget)

    def retrieve(self, request: RetrieveRequest, budget: Optional[float] = None) -> dict[str, Any]:
        knowledge = self.knowledge(request.tenant, request.agent, budget)
        config = knowledge.config
        if config is None or not config.retrieve:
            # The engine's turn never fails for it: an empty block, and why.
            reason = self.existence.why_off(request.tenant, request.agent, has_config=config is not None)
            return RetrieveAnswer(block="", concepts=[], priority=PRIORITY, tool=None,
                                  reason=reason).model_dump(mode="json")
        lapsed = self.lapsed(request.tenant, request.agent, knowledge)
        shared = self.shared(request.tenant, request.agent, knowledge, budget)
        injected = select(knowledge.index, request.message, config, lapsed.names, knowledge.lexicon, lapsed.slots,
                          shared and (shared[0].index, shared[1]))
        self.counters.count("BlockInjected" if injected else "BlockEmpty")
        return RetrieveAnswer(block=render_block(injected), concepts=[i.shown() for i in injected],
                              priority=PRIORITY, tool=TOOL).model_dump(mode="json")

    def load(self, request: LoadRequest, budget: Optional[float] = None) -> dict[str, Any]:
        if not is_slug(request.name):
            raise NotFound(f"no such concept: {request.name[:SLUG_MAX]!r} is not a concept name")
        knowledge = self.knowledge(request.tenant, request.agent, budget)
        if knowledge.config is None or not knowledge.config.retrieve:
            self.refuse_off(request.tenant, request.agent, knowledge)
        # Not reached yet by the warm-up: this one now.
        self._warm.fetch_pending(request.tenant, request.agent, knowledge, request.name)
        doc, scope = knowledge.index.docs.get(request.name), request.agent
        if doc is None and request.name not in knowledge.unreadable:
            shared = self.shared(request.tenant, request.agent, knowledge, budget)
            if shared is not None:  # the agent has no concept of the name: the shared one is its own
                self._warm.fetch_pending(request.tenant, SHARED, shared[0], request.name)
                doc, scope = shared[0].index.docs.get(request.name), SHARED
        if doc is None:
            raise NotFound(f"no such concept: {request.name}")
        # Restored from the snapshot, which keeps no text: the stored object, byte for byte.
        data = doc.data if doc.data is not None else self._store.get(request.tenant, scope, request.name).data
        try:
            concept = parse_stored(data, request.name)
        except InvalidConcept:
            # Changed since it was indexed into something retrieval cannot serve under this name.
            self.counters.count("ConceptUnreadable")
            raise NotFound(f"no such concept: {request.name}") from None
        if scope == SHARED and (served := without_claims_kept_beside(concept.body)) != concept.body:
            # Shared knowledge serves only what a human approved: claims a sighting left beside it are not.
            concept = concept.replace(body=served)
            data = concept.render().encode("utf-8")
        try:
            self._events.publish(RETRIEVED, detail(request.tenant, request.agent, concept.name, concept.type,
                                                   session_id=request.session_id))
        except EventPublishError:
            # The customer's turn needs the concept more than the bus needs the event: answer,
            # and count the loss where an alarm can see it.
            self.counters.count("EventPublishFailed")
        self.counters.count("KnowledgeRetrieved", tenant=request.tenant, agent=request.agent)
        # Answered all the same, marked: the engine may be asking for a name from an older block.
        recall = out_of_recall(valid_from=concept.valid_from, valid_until=concept.valid_until,
                               provenance=concept.provenance, updated_at=concept.updated_at, now=self._now(),
                               stale_after_days=knowledge.config.stale_after_days, utc_offset=knowledge.config.offset,
                               retired_by=concept.retired_by)
        return LoadAnswer(name=concept.name, markdown=data.decode("utf-8"), concept=Concept(
            name=concept.name, description=concept.description, type=concept.type,
            provenance=concept.provenance, confidence=concept.confidence, sources=list(concept.sources),
            occurrences=concept.occurrences, created_at=concept.created_at.isoformat().replace("+00:00", "Z"),
            updated_at=concept.updated_at.isoformat().replace("+00:00", "Z"), body=concept.body,
            conflict=concept.in_conflict,
            valid_from=concept.valid_from.isoformat() if concept.valid_from else None,
            valid_until=concept.valid_until.isoformat() if concept.valid_until else None,
            retired_by=concept.retired_by, recall=recall)).model_dump(mode="json")

    def search(self, request: SearchRequest, budget: Optional[float] = None) -> dict[str, Any]:
        """The index's ranking for the query without the block's relevance floor, each hit marked
        with whether the block would carry it; nothing when retrieval is off for the agent."""
        knowledge = self.knowledge(request.tenant, request.agent, budget)
        config = knowledge.config
        if config is None or not config.retrieve:
            if self.existence.why_off(request.tenant, request.agent, has_config=config is not None) == UNKNOWN:
                raise unknown_agent(request.tenant, request.agent)
            return SearchAnswer(hits=[]).model_dump(mode="json")
        lapsed = self.lapsed(request.tenant, request.agent, knowledge)
        shared = self.shared(request.tenant, request.agent, knowledge, budget)
        injected = {item.hit.name for item in select(knowledge.index, request.query, config, lapsed.names,
                                                     knowledge.lexicon, lapsed.slots,
                                                     shared and (shared[0].index, shared[1]))}
        recall = dict(shared[2]) if shared else {}
        recall.update(lapsed.names)
        found = (knowledge.index.search(request.query, request.limit) if shared is None else
                 search_both(knowledge.index, shared[0].index, request.query, request.limit,
                             shadowed(knowledge.index, knowledge.unreadable, shared[0].index)))
        hits = [SearchHit(name=hit.name, description=hit.doc.description, type=hit.doc.type,
                          provenance=hit.doc.provenance, confidence=hit.doc.confidence, score=hit.score,
                          injected=hit.name in injected, recall=recall.get(hit.name))
                for hit in found if hit.score > 0]
        try:
            self._events.publish(SEARCHED, search_detail(request.tenant, request.agent, request.session_id,
                                                         [hit.name for hit in hits]))
        except EventPublishError:
            self.counters.count("EventPublishFailed")
        self.counters.count("KnowledgeSearched", tenant=request.tenant, agent=request.agent)
        return SearchAnswer(hits=hits).model_dump(mode="json")

    def refuse_off(self, tenant: str, agent: str, knowledge: AgentKnowledge) -> None:
        """A call that needs retrieval on, for an agent without it: unknown_agent or not_found."""
        if self.existence.why_off(tenant, agent, has_config=knowledge.config is not None) == UNKNOWN:
            raise unknown_agent(tenant, agent)
        raise NotFound("retrieval is off for this agent (its knowledge.yaml is missing, says retrieve: false, "
                       "or does not parse)")

    # ------------------------------------------------------------ the warm index
    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._wall(), timezone.utc)

    def lapsed(self, tenant: str, agent: str, knowledge: AgentKnowledge) -> Lapsed:
        """The agent's concepts out of recall now (worked out again only when something changed)."""
        known = lapsed_now(knowledge, knowledge.config, self._now(), self._lapsed.get((tenant, agent)))
        self._lapsed[(tenant, agent)] = known
        return known

    def shared(self, tenant: str, agent: str, knowledge: AgentKnowledge,
               budget: Optional[float] = None) -> Optional[tuple[AgentKnowledge, set[str], dict[str, str]]]:
        """The tenant's shared concepts for an agent that opted in (`knowledge: shared: true`): their
        warm index (refreshed like an agent's, from its own journal; the agent's settings in force),
        the names of it left out for this agent (out of recall, or the agent's own name: shadowed),
        and why each lapsed one is out. None when the agent did not opt in, or the shared scope
        cannot be read yet (counted SharedUnavailable: the agent's own concepts are served)."""
        config = knowledge.config
        if config is None or not config.retrieve or not config.shared:
            return None
        try:
            held = self._warm.knowledge(tenant, SHARED, budget, config=config)
        except KnowledgeError as exc:
            self.counters.count("SharedUnavailable", reason=exc.code)
            return None
        known = lapsed_now(held, config, self._now(), self._shared_lapsed.get((tenant, agent)))
        self._shared_lapsed[(tenant, agent)] = known
        return held, set(known.names) | shadowed(knowledge.index, knowledge.unreadable, held.index), known.names

    def knowledge(self, tenant: str, agent: str, budget: Optional[float] = None) -> AgentKnowledge:
        """The agent's config and index (knowledge.recall.warm), caught up within `budget` seconds."""
        return self._warm.knowledge(tenant, agent, budget)
