"""The baseline recall is measured against (scripts/reports/retrieval.py, scripts/reports/stores.py)."""

from __future__ import annotations

import heapq
from typing import Iterable

from knowledge.format.concept import Concept
from knowledge.recall.terms import plain_words


class OverlapScan:
    """The baseline (seed 000's Index::Scan): count shared lowercase words, scanning every concept."""

    def __init__(self, concepts: Iterable[Concept]):
        self._docs = [(c.name, plain_words(f"{c.name} {c.description} {c.body}"), c.updated_at.timestamp())
                      for c in concepts]

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        words = plain_words(query)
        scored = [(len(words & doc_words), recency, name) for name, doc_words, recency in self._docs]
        best = heapq.nlargest(top_k, (s for s in scored if s[0] > 0))
        return [(name, float(overlap)) for overlap, _, name in best]
