"""What one message shares with each of an agent's concepts: `Match`, the value `Index.match`
returns, and `Scoring`, the per-term sums it is built from ([retrieval](../../../../docs/retrieval.md)).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from knowledge.recall.postings import K1, bm25_idf


@dataclass
class Match:
    """Per concept slot, what a message shares with it; what the message itself tells."""

    scores: np.ndarray  # the BM25 score
    shared: np.ndarray  # what the concept shares, in units of the most one word can tell
    told: float  # what the message's own words tell, in the same units
    term_slots: list[np.ndarray]  # per message term, the slots that have it
    grounded: Optional[np.ndarray]  # which slots share more than places (None: the message names none)
    terms: set[str]  # the message's index terms
    words: int  # how many distinct words the message says
    unknown: list  # the message's words no concept has
    asks: bool = False  # whether the message asks the store for something (knowledge.recall.lexicon.CUES; read only)
    _shared_terms: Optional[np.ndarray] = field(default=None, repr=False, compare=False)

    @property
    def said(self) -> tuple[int, list]:
        """(words, unknown), as knowledge.recall.signals.features reads them."""
        return self.words, self.unknown

    @property
    def shared_terms(self) -> np.ndarray:
        """Per slot, how many of the message's terms it has (counted on first use)."""
        found = self._shared_terms
        if found is None:
            found = self._shared_terms = np.bincount(np.concatenate(self.term_slots), minlength=len(self.scores))
        return found

    def candidates(self, min_score: float, least_shared: float) -> np.ndarray:
        """The slots that score `min_score` and share `least_shared`, never one sharing only places."""
        ok = self.scores >= min_score
        if min_score <= 0:  # else a score of min_score is one above 0
            ok &= self.scores > 0
        ok &= self.shared >= least_shared
        if self.grounded is not None:
            ok &= self.grounded
        return ok.nonzero()[0]


class Scoring:
    """One message's entries (a term's slots, their weights, what the floor counts per unit of
    score, whether the term names a place), summed per slot by `result`."""

    def __init__(self, n_docs: int, n_slots: int, floor_concepts: int) -> None:
        self.n_docs, self.n = n_docs, n_slots
        # The floor reads rarity as if the agent had at least floor_concepts concepts: in a
        # small agent every word is in a large share of them, and would tell nothing.
        self.floor_docs = max(n_docs, floor_concepts)
        self.rarest = bm25_idf(self.floor_docs, 0)
        self.scale = 1.0 / (self.rarest * (K1 + 1))
        self.slots: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.ratios: list = []  # a number, or one per slot
        self.placed: list[bool] = []
        self.term_slots: list[np.ndarray] = []
        self.told = 0.0
        self.unknown: list = []

    def ratio_of(self, live: int) -> float:
        """What the floor counts per unit of score of a term `live` concepts have; the same for every
        term in an agent of the floor's size or more."""
        if self.n_docs >= self.floor_docs:
            return self.scale
        return bm25_idf(self.floor_docs, live) * self.scale / bm25_idf(self.n_docs, live)

    def tells(self, live: int) -> float:
        """What a word `live` concepts have tells, in units of the rarest word."""
        return bm25_idf(self.floor_docs, live) / self.rarest

    def add(self, slots: np.ndarray, weights: np.ndarray, ratio, place: bool, term: bool = True) -> None:
        """An entry; `term`: it counts as one of the message's terms for the slots it names."""
        self.slots.append(slots)
        self.weights.append(weights)
        self.ratios.append(ratio)
        self.placed.append(place)
        if term:
            self.term_slots.append(slots)

    def result(self, dead_slots: np.ndarray, terms: set[str], words: int, asks: bool = False) -> Optional[Match]:
        """The sums, one C pass each; None when no entry was added."""
        if not self.slots:
            return None
        n = self.n
        all_slots = np.concatenate(self.slots)
        scores = np.bincount(all_slots, weights=np.concatenate(self.weights), minlength=n)
        if len(dead_slots):
            scores[dead_slots] = 0.0
        ratios = self.ratios
        if all(type(r) is float for r in ratios) and max(ratios) - min(ratios) < 1e-9:
            shared = scores * ratios[0]
        else:
            shared = np.bincount(all_slots, minlength=n,
                                 weights=np.concatenate([w * r for w, r in zip(self.weights, ratios)]))
        grounded = None
        if any(self.placed):
            kept = [slots for slots, place in zip(self.slots, self.placed) if not place]
            grounded = np.bincount(np.concatenate(kept), minlength=n) > 0 if kept else np.zeros(n, dtype=bool)
        return Match(scores, shared, self.told, self.term_slots, grounded, terms, words, self.unknown, asks)
