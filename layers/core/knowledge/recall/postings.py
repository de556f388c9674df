"""What the index keeps per concept and per term: a Doc, a term's postings (BM25 weights in numpy
arrays), the weights themselves, and what each costs in memory."""

from __future__ import annotations

import functools
import math
import re
from array import array
from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

from knowledge.errors import Unindexable
from knowledge.format.concept import Concept, parse_stored
from knowledge.recall.analysis import Interval, analyze
from knowledge.recall.signals import TAUGHT, model_weight

K1, B = 1.2, 0.75
# A body's `[[links]]` name other concepts, not words the concept says: a link's words count
# LINK_WEIGHT of a body word (what the concept relates to) and add nothing to its length, so a
# concept's links never dilute what its own words share with a message.
_LINKS = re.compile(r"\[\[([^\[\]\n]*)\]\]")
LINK_WEIGHT = 0.5
FIELD_WEIGHTS = (("name", 3), ("description", 2), ("body", 1))
# A concept's learned words (what its store's customers call it, knowledge.format.learned_words) are kept
# as terms of their own, LEARNED + the word's term, each weighing LEARNED_WEIGHT of a body word (its weight
# not shortened by the concept's length, see Index._merge) and
# adding nothing to the concept's length; the index reads one as a reading of the concept's own
# words, unless too many concepts learned it (knowledge.recall.index.LEARNED_SPREAD).
LEARNED = "\x1f"
LEARNED_WEIGHT = 3.0
PHRASES = True  # a learned phrase matches as a phrase (docs/retrieval.md: the figures each way)
MODEL_PHRASE_WORDS = True  # and a model's phrase by its words too, each weighed by its commonness
PHRASE_MIN = 2


@dataclass(frozen=True, slots=True)
class Doc:
    """What the index keeps of one concept: its stored bytes, what the block shows, and its
    terms (ids into the index's vocabulary) with their field-weighted counts. The body is not
    kept parsed: `concept` parses the bytes again when load_knowledge needs it. A concept
    restored from a snapshot has no bytes (`data` None): load_knowledge reads it from S3."""

    name: str
    etag: str
    data: Optional[bytes]
    description: str
    type: str
    provenance: str
    confidence: float
    links: tuple[str, ...]
    slot: int
    length: float
    term_ids: array
    counts: array
    recency: float
    spans: tuple[tuple[str, float, float, float], ...] = ()  # (unit, low, high, field-weighted count)

    @property
    def concept(self) -> Concept:
        if self.data is None:
            raise ValueError(f"{self.name}: restored from a snapshot without its text")
        return parse_stored(self.data, self.name)


# Per-object costs sys.getsizeof cannot see from the outside (CPython 3.11-3.13, 64-bit; checked
# against tracemalloc by tests/unit/recall/test_snapshot.py): a Doc with its slots, tuples and dict entry; a
# term's Postings with its two numpy headers and its dict entries; one span tuple of four floats.
DOC_OVERHEAD = 360
POSTINGS_OVERHEAD = 360
SPAN_BYTES = 160
BY_FORM_BYTES = 40
TYPO_BYTES = 120


class Hit(NamedTuple):
    """One search result (a tuple: made for every hit of every turn, so it is cheap)."""

    name: str
    score: float
    doc: Doc
    coverage: float = 1.0  # what the concept shares with the message, in rare words (see MIN_SHARED)


def concept_terms(concept: Concept) -> tuple[dict[str, float], float, dict[Interval, float], set[tuple[str, str]]]:
    """A concept's weighted terms, length, spans and word forms; Unindexable when its text cannot be
    read. The analyzer reads text anyone may write: a fault in it costs that concept, not its agent."""
    try:
        return _concept_terms(concept)
    except Exception as exc:  # noqa: BLE001 — any fault, turned into the one typed refusal above
        raise Unindexable() from exc


def _concept_terms(concept: Concept) -> tuple[dict[str, float], float, dict[Interval, float], set[tuple[str, str]]]:
    tf: dict[str, float] = {}
    spans: dict[Interval, float] = {}
    forms: set[tuple[str, str]] = set()
    length = 0.0
    fields = {"name": concept.name.replace("-", " "), "description": concept.description,
              "body": _LINKS.sub(" ", concept.body),
              "links": " ".join(name.replace("-", " ") for name in _LINKS.findall(concept.body))}
    for field, weight in (*FIELD_WEIGHTS, ("links", LINK_WEIGHT)):
        analysis = analyze(fields[field])
        forms.update(analysis.words)
        counted = weight if field != "links" else 0.0
        for term in analysis.terms():
            tf[term] = tf.get(term, 0.0) + weight
            length += counted
        for interval in analysis.intervals:
            spans[interval] = spans.get(interval, 0.0) + weight
            length += counted
    for entry in concept.learned_words:
        terms, form_of = learned_terms(entry.word, entry.origin), dict(analyze(entry.word).words)
        for term in terms:
            weight = LEARNED_WEIGHT * (model_weight(form_of.get(term, term)) if entry.origin == "model" else 1.0)
            if weight > 0:
                tf[LEARNED + term] = max(weight, tf.get(LEARNED + term, 0.0))
        if entry.origin == "model":
            tf[TAUGHT] = 0.0  # weighs nothing: says that the model taught this concept (signals.TAUGHT)
    return tf, length, spans, forms


def learned_terms(word: str, origin: str = "") -> list[str]:
    """The index terms of a learned word: one per word, or, for a phrase of PHRASE_MIN words or more
    (its stopwords left out), the phrase as one term ("dinheiro de volta": "dinheir volt"), which a
    message holds only with those words adjacent (knowledge.recall.index reads its word pairs and
    triples): "volta" alone is not what an operator called the refund. A model's phrase also holds
    each of its words (MODEL_PHRASE_WORDS), weighed as a model word by how common it is in the
    language: "pausar a academia" meets "pausar plano" by its rare word; "volta" weighs nothing."""
    analysis = analyze(word)
    terms = analysis.terms()
    if not PHRASES or len(terms) < PHRASE_MIN:
        return terms
    phrase = [" ".join(terms)]
    return [*phrase, *dict(analysis.words)] if origin == "model" and MODEL_PHRASE_WORDS else phrase


# Shared empty arrays, never written to: a term costs no arrays of its own until it needs them.
_NO_SLOTS, _NO_WEIGHTS = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
NO_PENDING_SLOTS, NO_PENDING_COUNTS = array("i"), array("f")


class Postings:
    """One term's postings: slots and BM25 weights as numpy arrays, plus appends not yet merged."""

    __slots__ = ("slots", "weights", "pending_slots", "pending_counts", "live", "scaled", "scaled_for")

    def __init__(self) -> None:
        self.slots, self.weights = _NO_SLOTS, _NO_WEIGHTS
        # Appends not merged yet, as compact C arrays: no Python object per posting. Shared
        # empty ones until the first append (most terms of a restored index never get one).
        self.pending_slots, self.pending_counts = NO_PENDING_SLOTS, NO_PENDING_COUNTS
        self.live = 0
        # The weights times idf, and the (concept count, live, postings) they were scaled for:
        # reused by every query until one of the three changes.
        self.scaled = self.weights
        self.scaled_for: Optional[tuple[int, int, int]] = None

    @property
    def pending(self) -> int:
        return len(self.pending_slots)

    def idf_weights(self, n_docs: int) -> np.ndarray:
        key = (n_docs, self.live, len(self.slots))
        if self.scaled_for != key:
            idf = bm25_idf(n_docs, self.live)
            self.scaled, self.scaled_for = self.weights * idf, key
        return self.scaled


def bm25_weight(tf: float, norm: float) -> float:
    return tf * (K1 + 1) / (tf + norm)


@functools.lru_cache(maxsize=4096)  # a few concept counts times the words' spreads: bounded
def bm25_idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
