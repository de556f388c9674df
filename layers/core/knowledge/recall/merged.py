"""Recall from two indexes, an agent's own concepts and its tenant's shared ones (`knowledge: shared:
true`): each applies its own floor with its own statistics, the passers are ranked together by
coverage (Hit.coverage, comparable across index sizes, unlike raw BM25), and a shared concept whose
name the agent has is shadowed. docs/retrieval.md, "Shared knowledge: a tenant's concepts, recalled by its agents"."""

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


