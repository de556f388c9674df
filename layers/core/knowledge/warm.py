"""The warm index of an agent's concepts that a container keeps, shared by retrieval and extraction.

The container keeps one index per agent. At most once per refresh window it lists the
agent's concepts (and re-checks its knowledge.yaml with a conditional GET, unless the caller
has just read it); only changed concepts are fetched (in parallel, newest first) and parsed,
deleted ones are dropped. Between refreshes a call makes no S3 request at all.

Fetching has a time budget per call. An agent too large to load in one call (a cold
container, thousands of concepts) is served from the part already indexed, and the next
calls fetch the rest without listing again: a call is never held past the budget. When S3
fails, what the container already holds is served (counted ServedStale) and S3 is asked
again after the window.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import deadline
from .config import KnowledgeConfig
from .errors import InvalidConcept, InvalidConfig, StoreUnavailable
from .search import Index
from .store import ConceptStore, NotModified
from .telemetry import Counters

FETCH_CHUNK = 128  # concepts fetched and indexed between two looks at the clock
FETCH_BUDGET_SECONDS = 4.0


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


class WarmIndexes:
    """One AgentKnowledge per (tenant, agent), indexed only while `wanted(config)` holds."""

    def __init__(self, store: ConceptStore, wanted: Callable[[KnowledgeConfig], bool], *,
                 refresh_seconds: float = 5.0, fetch_budget_seconds: float = FETCH_BUDGET_SECONDS,
                 counters: Optional[Counters] = None, clock: Callable[[], float] = time.monotonic):
        self._store, self._wanted = store, wanted
        self.refresh_seconds = refresh_seconds
        self.fetch_budget_seconds = fetch_budget_seconds
        self.counters = counters or Counters()
        self._clock = clock
        self._agents: dict[tuple[str, str], AgentKnowledge] = {}
        self._agents_lock = threading.Lock()

    def held(self, tenant: str, agent: str) -> AgentKnowledge:
        """What this container holds for the agent now, without asking S3."""
        with self._agents_lock:
            return self._agents.setdefault((tenant, agent), AgentKnowledge())

    def knowledge(self, tenant: str, agent: str, budget: Optional[float] = None, *,
                  config: Optional[KnowledgeConfig] = None) -> AgentKnowledge:
        """The agent's config and index, refreshed when the window has passed, and caught up
        (within `budget` seconds of fetching) while a backlog remains. A `config` the caller
        has just read is used as is (knowledge.yaml is not read again)."""
        knowledge = self.held(tenant, agent)
        if config is not None:
            knowledge.config = config
        if self._clock() - knowledge.refreshed_at < self.refresh_seconds and not knowledge.backlog:
            return knowledge
        fetch_until = self._clock() + (self.fetch_budget_seconds if budget is None else budget)
        with knowledge.lock:
            try:
                if self._clock() - knowledge.refreshed_at >= self.refresh_seconds:
                    self._refresh(tenant, agent, knowledge, fetch_until, read_config=config is None)
                    knowledge.refreshed_at = self._clock()
                elif knowledge.backlog:
                    self._catch_up(tenant, agent, knowledge, fetch_until)
            except (StoreUnavailable, deadline.DeadlineExceeded, InvalidConfig) as exc:
                if knowledge.config_etag is None and config is None:
                    raise  # nothing to serve yet: the caller gets the error
                # Serve what this container already holds, and look again after the window.
                knowledge.refreshed_at = self._clock()
                self.counters.count("ServedStale", reason=exc.code)
        return knowledge

    def fetch_pending(self, tenant: str, agent: str, knowledge: AgentKnowledge, name: str) -> None:
        """Fetch one concept the warm-up has listed but not reached yet (no-op otherwise)."""
        if name not in knowledge.index.docs and name in knowledge.backlog:
            with knowledge.lock:
                if name in knowledge.backlog:
                    self._fetch(tenant, agent, knowledge, [name])
                    knowledge.backlog.remove(name)

    def _refresh(self, tenant: str, agent: str, knowledge: AgentKnowledge, fetch_until: float, *,
                 read_config: bool) -> None:
        if read_config:
            try:
                stored = self._store.get_config(tenant, agent, unless_etag=knowledge.config_etag)
            except NotModified:
                pass
            else:
                knowledge.config = stored.config if stored else None
                knowledge.config_etag = stored.etag if stored else None
        if knowledge.config is None or not self._wanted(knowledge.config):
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
