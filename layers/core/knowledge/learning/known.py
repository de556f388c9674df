"""The agent's known concepts a turn is about, shown to the extraction model so it reuses their names and
consolidation sees a repeat sighting rather than a near-duplicate: retrieval's search over the turn,
without the floor (a whole turn is no question), from the warm index, with the tenant's shared concepts
where the agent recalls them (knowledge.recall.merged). A hint: when S3 fails, the turn is extracted
with what the container holds. docs/contract.md, "The turn-complete message" (the known concepts)."""

from __future__ import annotations

import time
from typing import Callable, Optional

from knowledge.format.config import KnowledgeConfig
from knowledge.format.turn import Turn
from knowledge.learning.prompt import KnownConcept
from knowledge.recall.index import Index
from knowledge.recall.merged import search_both, shadowed
from knowledge.recall.warm import FETCH_BUDGET_SECONDS, WarmIndexes, memory_budget_bytes
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from shared import deadline
from shared.errors import KnowledgeError
from shared.model import DEFAULT_BUDGET
from shared.telemetry import Counters

KNOWN_MAX = 20
# The model call's own budget plus sending the candidates: what a refresh must leave free.
MODEL_RESERVE_SECONDS = DEFAULT_BUDGET + 2.0
# Less than this left for a refresh: use what the container holds, ask S3 next turn.
MIN_REFRESH_SECONDS = 0.5


def turn_text(turn: Turn) -> str:
    """What the search reads of a turn: what was said, not the engine's system messages."""
    return "\n".join(m.content for m in turn.messages if m.role != "system")


def choose(index: Index, turn: Turn, limit: int = KNOWN_MAX) -> list[KnownConcept]:
    """The `limit` concepts of `index` the turn's text matches best, with no relevance floor."""
    return [KnownConcept(hit.name, hit.doc.description) for hit in index.search(turn_text(turn), limit)]


class KnownConcepts:
    """Per agent, the concepts a turn is about: at most `limit`, best match first."""

    def __init__(self, store: ConceptStore, *, limit: int = KNOWN_MAX, refresh_seconds: float = 5.0,
                 fetch_budget_seconds: float = FETCH_BUDGET_SECONDS, memory_budget: Optional[int] = None,
                 counters: Optional[Counters] = None, clock: Callable[[], float] = time.monotonic):
        """`memory_budget` (bytes of indexes held) defaults to what the function's memory allows."""
        self.limit = limit
        self.counters = counters or Counters()
        self._clock = clock
        self._warm = WarmIndexes(store, lambda config: config.extract, refresh_seconds=refresh_seconds,
                                 fetch_budget_seconds=fetch_budget_seconds, counters=self.counters, clock=clock,
                                 memory_budget=memory_budget if memory_budget is not None else memory_budget_bytes(),
                                 shared_snapshot=False)

    def about(self, turn: Turn, config: KnowledgeConfig) -> list[KnownConcept]:
        """The agent's concepts the turn is about (never another agent's); [] when none are held."""
        budget = self._budget()
        if budget is None:
            self.counters.count("KnownConceptsNotRefreshed", reason="deadline")
            knowledge = self._warm.held(turn.tenant, turn.agent)
        else:
            try:
                with deadline.until(time.monotonic() + budget):  # S3 retries stop in time for the model
                    knowledge = self._warm.knowledge(turn.tenant, turn.agent, budget, config=config)
            except KnowledgeError as exc:  # a hint, never a reason to fail the turn
                self.counters.count("KnownConceptsNotRefreshed", reason=exc.code)
                knowledge = self._warm.held(turn.tenant, turn.agent)
                knowledge.refreshed_at = self._clock()  # a refusal (403) lasts: ask again after the window
        if knowledge.config is None or not knowledge.config.extract:
            return []
        if not knowledge.config.shared:
            return choose(knowledge.index, turn, self.limit)
        shared = self._shared(turn, knowledge.config, budget)
        hits = search_both(knowledge.index, shared, turn_text(turn), self.limit,
                           shadowed(knowledge.index, knowledge.unreadable, shared))
        return [KnownConcept(hit.name, hit.doc.description) for hit in hits]

    def _shared(self, turn: Turn, config: KnowledgeConfig, budget: Optional[float]) -> Index:
        """The tenant's shared index, refreshed within the same budget (what is held when it cannot be)."""
        if budget is None:
            return self._warm.held(turn.tenant, SHARED).index
        try:
            with deadline.until(time.monotonic() + budget):
                return self._warm.knowledge(turn.tenant, SHARED, budget, config=config).index
        except KnowledgeError as exc:
            self.counters.count("KnownConceptsNotRefreshed", reason=exc.code)
            held = self._warm.held(turn.tenant, SHARED)
            held.refreshed_at = self._clock()
            return held.index

    def index_of(self, tenant: str, agent: str) -> Index:
        """The agent's index as the container holds it now (what `about` last refreshed)."""
        return self._warm.held(tenant, agent).index

    def _budget(self) -> Optional[float]:
        """Seconds of S3 the turn can spend on the list, or None when it cannot spend any."""
        budget = self._warm.fetch_budget_seconds
        left = deadline.remaining()
        if left is not None:
            budget = min(budget, left - MODEL_RESERVE_SECONDS)
        return budget if budget >= MIN_REFRESH_SECONDS else None
