"""Recall from two indexes: an agent's own concepts and its tenant's shared ones (`knowledge: shared: true`).

Each index applies its own relevance floor with its own statistics (a word rare among the shared
concepts may be common among the agent's), so a concept passes or not exactly as it would alone.
The passers are then ranked together by what each shares with the message in units of the most
one word can tell in its own index (Hit.coverage, normalised by that index's rarest word and its
FLOOR_CONCEPTS floor), not by raw BM25: a BM25 score grows with the index's size (its IDF), so an
agent of 10 concepts and a tenant base of 500 would not be comparable, while coverage is. A shared
concept whose name the agent has (indexed, or stored but unreadable) is shadowed: never injected,
searched or loaded for that agent, so the agent's own concept of the name wins.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from knowledge.format.config import KnowledgeConfig
from knowledge.recall.index import Hit, Index
from knowledge.recall.lexicon import Lexicon


def shadowed(own_index: Index, own_unreadable: dict[str, str], shared_index: Index) -> set[str]:
    """The shared concepts the agent has a concept of the same name of."""
    return {name for name in shared_index.docs if name in own_index.docs or name in own_unreadable}


def _merged(own: list[Hit], shared: list[Hit], top_k: int) -> list[Hit]:
    # Coverage first (comparable across indexes), then the score, then the agent's own first.
    ranked = sorted([(h.coverage, h.score, 1, i, h) for i, h in enumerate(own)]
                    + [(h.coverage, h.score, 0, i, h) for i, h in enumerate(shared)],
                    key=lambda t: (t[0], t[1], t[2], -t[3]), reverse=True)
    return [t[4] for t in ranked[:top_k]]


def relevant_both(own_index: Index, shared_index: Index, message: str, config: KnowledgeConfig,
                  readings: Optional[Lexicon], own_excluded: Optional[np.ndarray],
                  shared_out: set[str]) -> list[Hit]:
    """The top_k of both indexes' relevant concepts; `shared_out`: shared names out of recall or shadowed."""
    own = own_index.relevant(message, config.top_k, config.min_score, readings, own_excluded)
    excluded = shared_index.slots_of(shared_out) if shared_out else None
    shared = shared_index.relevant(message, config.top_k, config.min_score, readings, excluded)
    return _merged(own, shared, config.top_k)


def search_both(own_index: Index, shared_index: Index, query: str, limit: int, shared_out: set[str]) -> list[Hit]:
    """The studio's and search_knowledge's ranking over both, shadowed shared names left out."""
    own = own_index.search(query, limit)
    shared = [hit for hit in shared_index.search(query, limit + len(shared_out)) if hit.name not in shared_out]
    return _merged(own, shared, limit)


