"""Lexical search over an agent's concepts: an inverted index with BM25 weights, pure Python.

Text is folded (case, accents), split into words, stripped of stopwords and stemmed
(Snowball Portuguese, then English, so troca/trocas/trocar and installment/installments
meet). Name and description count more than the body. Each posting keeps its BM25 term
weight, so a query only sums the postings of its own words; the index changes one concept
at a time and re-weights everything only when the average length drifts.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
import unicodedata
from array import array
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Optional

import numpy as np
import snowballstemmer

from .concept import Concept, parse

K1, B = 1.2, 0.75
FIELD_WEIGHTS = (("name", 3), ("description", 2), ("body", 1))
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset("""
a o as os um uma uns umas de da do das dos em na no nas nos num numa por para pra pro com sem e ou
que se ao aos à às é são ser foi era está estão estou estava ter tem têm tinha pelo pela pelos pelas
mais menos muito muita muitos muitas seu sua seus suas meu minha meus minhas este esta isso isto
esse essa aquele aquela até após como quando onde também já não sim lá aqui eu você vocês ele ela
eles elas nós me te lhe nos vos qual quais quanto quanta quantos quantas oi olá ola bom boa dia
tarde noite tudo bem obrigado obrigada favor por então entao ainda só so mas porém porem pois
sobre entre qualquer algum alguma alguns algumas cada outro outra vou vai vamos pode posso podem
the a an of to in on at by for with without and or is are be was were been it its this that these
those from as into than then there their our your we you they he she not no yes can will would
could should do does did have has had i me my mine hi hello hey thanks thank please what which who
how when where why about just also any some each other
moro mora morar tempo quero queria gostaria preciso precisa fica faz fazer sou agora acho achei saber
ajuda ajudar demais coisa gente alguém alguem ta tá pra né ne aí ai
""".split())
# A concept must share at least this share of the message's words (after stopwords) to be
# injected: one shared word out of three is chance, not relevance. Numbers are not counted:
# a CEP the store never wrote down should not hide the concept about its range.
MIN_COVERAGE = 0.5

_PT = snowballstemmer.stemmer("portuguese")
_EN = snowballstemmer.stemmer("english")
_STEMS: dict[str, str] = {}
_FOLD: dict[str, str] = {}


def _fold(word: str) -> str:
    folded = _FOLD.get(word)
    if folded is None:
        folded = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
        if len(_FOLD) < 200_000:
            _FOLD[word] = folded
    return folded


def stem(word: str) -> str:
    """The index term for one lowercase word (memoised: stemming is the slow part)."""
    term = _STEMS.get(word)
    if term is None:
        term = _EN.stemWord(_PT.stemWord(_fold(word)))
        if len(_STEMS) < 200_000:
            _STEMS[word] = term
    return term


def terms(text: str) -> list[str]:
    """Index terms of a text, in order, stopwords removed."""
    out = []
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS or _fold(word) in STOPWORDS:
            continue
        out.append(stem(word))
    return out


def plain_words(text: str) -> set[str]:
    """The baseline's view of a text: lowercase words, nothing else."""
    return set(_WORD.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class Doc:
    """What the index keeps of one concept: its stored bytes, what the block shows, and its
    terms (ids into the index's vocabulary) with their field-weighted counts. The body is not
    kept parsed: `concept` parses the bytes again when load_knowledge needs it."""

    name: str
    etag: str
    data: bytes
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

    @property
    def concept(self) -> Concept:
        return parse(self.data)


class Hit(NamedTuple):
    """One search result (a tuple: made for every hit of every turn, so it is cheap)."""

    name: str
    score: float
    doc: Doc
    coverage: float = 1.0


def _analyze(concept: Concept) -> tuple[dict[str, float], float]:
    tf: dict[str, float] = {}
    length = 0.0
    fields = {"name": concept.name.replace("-", " "), "description": concept.description, "body": concept.body}
    for field, weight in FIELD_WEIGHTS:
        for term in terms(fields[field]):
            tf[term] = tf.get(term, 0.0) + weight
            length += weight
    return tf, length


class _Postings:
    """One term's postings: slots and BM25 weights as numpy arrays, plus appends not yet merged."""

    __slots__ = ("slots", "weights", "pending_slots", "pending_counts", "live", "scaled", "scaled_for")

    def __init__(self) -> None:
        self.slots = np.zeros(0, dtype=np.int32)
        self.weights = np.zeros(0, dtype=np.float32)
        # Appends not merged yet, as compact C arrays: no Python object per posting.
        self.pending_slots, self.pending_counts = array("i"), array("f")
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
            idf = math.log(1 + (n_docs - self.live + 0.5) / (self.live + 0.5))
            self.scaled, self.scaled_for = self.weights * idf, key
        return self.scaled


def _weight(tf: float, norm: float) -> float:
    return tf * (K1 + 1) / (tf + norm)


class Index:
    """One agent's concepts, searchable.

    Each posting keeps its BM25 term weight (idf is applied per query, from the live
    document frequency), so a query is a handful of vectorised numpy operations per query
    word. Changes touch only the changed concept's postings; a removed concept's postings
    stay, masked as dead, until they outnumber the live ones and the index is compacted; the
    weights are recomputed only when the average concept length drifts by more than 10%.
    Not thread-safe: one request at a time per container.
    """

    def __init__(self) -> None:
        self.docs: dict[str, Doc] = {}
        self._postings: dict[str, _Postings] = {}
        self._by_slot: list[Optional[Doc]] = []
        self._vocab: dict[str, int] = {}
        self._terms: list[str] = []
        self._dead: list[int] = []
        self._dead_slots = np.zeros(0, dtype=np.int64)
        self._recency = np.zeros(64, dtype=np.float64)
        self._total_length = 0.0
        self._weighted_avg = 0.0  # the average length the weights were computed with
        self._live_postings = 0
        self._dead_postings = 0

    def __len__(self) -> int:
        return len(self.docs)

    def etag(self, name: str) -> Optional[str]:
        doc = self.docs.get(name)
        return doc.etag if doc else None

    def _norm(self, length: float) -> float:
        return K1 * (1 - B + B * length / self._weighted_avg) if self._weighted_avg else K1

    def upsert(self, name: str, etag: str, concept: Concept, data: bytes) -> None:
        self.remove(name)
        tf, length = _analyze(concept)
        slot = len(self._by_slot)
        if slot >= len(self._recency):
            grown = np.zeros(len(self._recency) * 2, dtype=np.float64)
            grown[: len(self._recency)] = self._recency
            self._recency = grown
        ids = array("i", (self._term_id(t) for t in tf))
        doc = Doc(name, etag, data, concept.description, concept.type, concept.provenance, concept.confidence,
                  tuple(concept.links), slot, length, ids, array("f", tf.values()), concept.updated_at.timestamp())
        self.docs[name] = doc
        self._by_slot.append(doc)
        self._recency[slot] = doc.recency
        self._total_length += length
        if not self._weighted_avg:
            self._weighted_avg = length or 1.0
        for term, count in tf.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.pending_slots.append(slot)
            postings.pending_counts.append(count)
            postings.live += 1
        self._live_postings += len(ids)

    def _term_id(self, term: str) -> int:
        found = self._vocab.get(term)
        if found is None:
            found = self._vocab[term] = len(self._terms)
            self._terms.append(term)
        return found

    def remove(self, name: str) -> None:
        doc = self.docs.pop(name, None)
        if doc is None:
            return
        self._by_slot[doc.slot] = None
        self._dead.append(doc.slot)
        self._total_length -= doc.length
        for term_id in doc.term_ids:
            term = self._terms[term_id]
            postings = self._postings[term]
            postings.live -= 1
            if postings.live == 0:  # the whole list goes, with the dead postings it held
                self._dead_postings -= len(postings.slots) + postings.pending - 1
                del self._postings[term]
            else:
                self._dead_postings += 1
        self._live_postings -= len(doc.term_ids)

    def settle(self) -> None:
        """After a batch of changes: compact or re-weight when needed, merge pending postings."""
        if not self.docs:
            self.__init__()
            return
        average = self._total_length / len(self.docs)
        if self._dead_postings > max(1024, self._live_postings):
            self._compact()
        elif abs(average - self._weighted_avg) / self._weighted_avg > 0.10:
            self._reweight(average)
        for postings in self._postings.values():
            if postings.pending:
                self._merge(postings)

    def _merge(self, postings: _Postings) -> None:
        slots = np.frombuffer(postings.pending_slots, dtype=np.int32)
        counts = np.frombuffer(postings.pending_counts, dtype=np.float32)
        norms = np.array([self._norm(self._lengths_of(slot)) for slot in postings.pending_slots], dtype=np.float32)
        weights = counts * (K1 + 1) / (counts + norms)
        postings.slots = np.concatenate((postings.slots, slots))
        postings.weights = np.concatenate((postings.weights, weights.astype(np.float32)))
        del slots, counts  # release the buffer exports before replacing the arrays
        postings.pending_slots, postings.pending_counts = array("i"), array("f")
        postings.scaled_for = None

    def _lengths_of(self, slot: int) -> float:
        doc = self._by_slot[slot]
        return doc.length if doc is not None else self._weighted_avg

    def _reweight(self, average: float) -> None:
        """Recompute every live weight for a new average length (dead postings are dropped)."""
        self._weighted_avg = average
        self._rebuild(renumber=False)

    def _compact(self) -> None:
        self._weighted_avg = self._total_length / len(self.docs)
        self._rebuild(renumber=True)

    def _rebuild(self, renumber: bool) -> None:
        docs = sorted(self.docs.values(), key=lambda d: d.slot)
        if renumber:
            self._by_slot, self._dead = [], []
            self._recency = np.zeros(max(64, len(docs) * 2), dtype=np.float64)
        collected: dict[str, tuple[list[int], list[float]]] = {}
        for doc in docs:
            if renumber:
                moved = dataclasses.replace(doc, slot=len(self._by_slot))
                self.docs[doc.name] = moved
                self._by_slot.append(moved)
                self._recency[moved.slot] = doc.recency
                doc = moved
            norm = self._norm(doc.length)
            for term_id, count in zip(doc.term_ids, doc.counts):
                entry = collected.setdefault(self._terms[term_id], ([], []))
                entry[0].append(doc.slot)
                entry[1].append(_weight(count, norm))
        self._postings = {}
        for term, (slots, weights) in collected.items():
            postings = _Postings()
            postings.slots = np.array(slots, dtype=np.int32)
            postings.weights = np.array(weights, dtype=np.float32)
            postings.live = len(slots)
            self._postings[term] = postings
        self._dead_postings = 0
        self._live_postings = sum(len(d.term_ids) for d in self.docs.values())
        self._dead = []  # rebuilt from live concepts only: nothing left to mask
        self._dead_slots = np.zeros(0, dtype=np.int64)

    def search(self, query: str, top_k: int, min_score: float = 0.0,
               min_coverage: float = 0.0) -> list[Hit]:
        """The best `top_k` concepts scoring at least `min_score` and sharing at least
        `min_coverage` of the query's (non-numeric) terms; recency breaks ties."""
        n_docs = len(self.docs)
        query_terms = set(terms(query))
        if not n_docs or not query_terms:
            return []
        n = len(self._by_slot)
        slot_arrays, weight_arrays, word_arrays = [], [], []
        for term in query_terms:
            postings = self._postings.get(term)
            if postings is None:
                continue
            if postings.pending:
                self._merge(postings)
            slot_arrays.append(postings.slots)
            weight_arrays.append(postings.idf_weights(n_docs))
            if not term.isdigit():
                word_arrays.append(postings.slots)
        if not slot_arrays:
            return []
        # One C pass sums every query word's weights per concept.
        all_slots = np.concatenate(slot_arrays)
        scores = np.bincount(all_slots, weights=np.concatenate(weight_arrays), minlength=n)
        if self._dead:
            if len(self._dead) != len(self._dead_slots):
                self._dead_slots = np.array(self._dead, dtype=np.int64)
            scores[self._dead_slots] = 0.0
        wanted = min(n, top_k * 3 if min_coverage else top_k)
        candidates = np.argpartition(scores, n - wanted)[n - wanted:] if wanted < n else np.arange(n)
        words = sum(1 for term in query_terms if not term.isdigit())
        if not word_arrays:
            matched = [0] * len(candidates)
        else:
            word_slots = all_slots if len(word_arrays) == len(slot_arrays) else np.concatenate(word_arrays)
            matched = np.bincount(word_slots, minlength=n)[candidates].tolist()
        ranked = sorted(zip(scores[candidates].tolist(), self._recency[candidates].tolist(), candidates.tolist(),
                            matched), reverse=True)
        hits = []
        for score, _, slot, shared in ranked:
            if score <= 0 or score < min_score:
                break
            coverage = shared / words if words else 1.0
            if coverage >= min_coverage:
                doc = self._by_slot[slot]
                hits.append(Hit(doc.name, round(score, 4), doc, round(coverage, 3)))
                if len(hits) == top_k:
                    break
        return hits


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
