"""Lexical search over an agent's concepts: an inverted index with BM25 weights, pure Python. `Index.search`
ranks; `Index.relevant` is the floor retrieval applies before injecting. Terms come from
knowledge.recall.terms, numbers from knowledge.recall.analysis, customer phrasings from
knowledge.recall.lexicon, postings from knowledge.recall.postings. docs/retrieval.md, "Ranking" to "Numbers and links".
Over 500 lines on purpose: Index is one structure (the vocabulary, the postings and their dead slots,
each term's forms, the typo memory, the snapshot state) whose invariants span every method that changes it."""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from array import array
from typing import Iterable, Optional

import numpy as np

from knowledge.format.concept import Concept
from knowledge.recall.analysis import Analysis, analyze
from knowledge.recall.lexicon import Lexicon, Reading, lexicon
from knowledge.recall.matching import Match, Scoring
from knowledge.recall.postings import (
    BY_FORM_BYTES,
    DOC_OVERHEAD,
    K1,
    LEARNED,
    NO_PENDING_COUNTS,
    NO_PENDING_SLOTS,
    POSTINGS_OVERHEAD,
    SPAN_BYTES,
    TYPO_BYTES,
    B,
    Doc,
    Hit,
    Postings,
    bm25_idf,
    bm25_weight,
    concept_terms,
)
from knowledge.recall.signals import TAUGHT, asked, describes, judgment
from knowledge.recall.terms import proper_names

# The floor (Index.relevant), in units of the most one word can tell (found in no other
# concept, named in the concept's name). A concept sharing two or more of the message's words
# must share MIN_SHARED: half of one rare word, or several common ones. A concept sharing one
# word only (a city, "capital", "conta") must share SINGLE, and that word must be at least
# COVER of what the message itself tells (each of its words weighed by rarity, a word no
# concept has as one unit), unless the message asks something of the store (lexicon.CUES): so
# "qual a população de Recife?" injects nothing while "Sou de Recife, qual o prazo?" does. A
# word that shares only a short stem with the concept (valeu/vale; under STEM_MIN letters)
# counts STEM_ONLY of what it would; longer stems are the same word (parcelo/parcela).
# Chosen on tests/data/retrieval_labelled.json with scripts/reports/retrieval.py; the held-out
# sets were not used to choose them.
MIN_SHARED = 0.4
SINGLE = 0.5
COVER = 0.3
STEM_ONLY = 0.5
STEM_MIN = 5
# A word no concept has, one typed letter away from one that some concept has (entrga, reembolço),
# is read as that word, weighing TYPO of it; only words of TYPO_MIN letters or more.
TYPO = 0.8
TYPO_MIN = 6
TYPO_MAX = 20
TYPO_TRIES = 16  # unknown words of one message looked up as typos, at most
TYPO_CACHE = 1024  # words whose candidates are kept per index (memory_bytes counts them at most)
# A number outside every range a concept states of its unit, within NEAR_FACTOR of one of them,
# reaches that concept at NEAR of a match (it answers "no": "até 10x" for 12 vezes); not a CEP.
NEAR = 0.5
NEAR_FACTOR = 2.0
# A message holding every word of a concept's name (NAMED_MIN words or more) names that concept.
NAMED_MIN = 2
NAMED_TRIES = 8  # the best scored concepts whose names are compared with the message
# A word learned by more than LEARNED_SPREAD concepts tells none of them apart: it counts for none.
LEARNED_SPREAD = 3
# Once a concept passes, the others in the top_k follow it only when they share at least TAIL of
# what the best passing one shares.
TAIL = 0.2
_LOWER = "abcdefghijklmnopqrstuvwxyz"
FLOOR_CONCEPTS = 40
DESCRIBED_MAX = 8  # a one-word question's word said by more descriptions than this asks nothing of one
DESCRIBED_SCAN = 256  # its concepts read, at most (a word of more asks nothing of one either)
# BM25 normalises a concept's length by the agent's average length, taken on a grid of steps of
# LENGTH_STEP (10 %): the weights follow which concepts the index holds, never the order a cold
# start's parallel fetch delivered them in, and are recomputed only when the average crosses a step.
LENGTH_STEP = 1.1


def pivot_length(average: float) -> float:
    """The average length the weights are computed with: `average` rounded to the grid."""
    return LENGTH_STEP ** round(math.log(max(average, 1.0), LENGTH_STEP))


class Index:
    """One agent's concepts, searchable.

    Each posting keeps its BM25 term weight (idf is applied per query, from the live
    document frequency), so a query is a handful of vectorised numpy operations per query
    word. Changes touch only the changed concept's postings; a removed concept's postings
    stay, masked as dead, until they outnumber the live ones and the index is compacted; the
    weights are recomputed only when the average concept length crosses a step of the grid
    (`pivot_length`), so they depend on the concepts held, not on the order they came in.
    Not thread-safe: one request at a time per container.
    """

    def __init__(self, scaled_gate: bool = True) -> None:
        """`scaled_gate` False: `min_score` is the raw BM25 score whatever the agent's size (a report's
        comparison, scripts/reports/small_index.py; retrieval always scales it, see `gate`)."""
        self.scaled_gate = scaled_gate
        self.docs: dict[str, Doc] = {}
        self._postings: dict[str, Postings] = {}
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
        self._settled = True  # no postings hold appends not merged (else `_postings_of` merges a term's)
        # Each stem's singular forms seen in any concept since the index was built: a message
        # word whose form is not among them shares only a stem, maybe by accident (valeu/vale).
        # A lone form is kept as the string itself (most stems have one), several as a set.
        self._forms: dict[str, str | set[str]] = {}
        self._form_writes = 0
        # Every form to its term, for reading typos; built on the first typo after a change.
        self._by_form: dict[str, str] = {}
        self._by_form_at = -1
        self._typos: dict[str, tuple[str, ...]] = {}
        # Numbers with a unit, and CEPs: unit -> slot -> (low, high, count); as arrays per
        # unit, built on the first query after a change.
        self._spans: dict[str, dict[int, list[tuple[float, float, float]]]] = {}
        self._span_arrays: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        # The first word of each learned phrase, with how many phrases start with it: a message's
        # words that start none are never looked up as phrases.
        self._heads: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.docs)

    def etag(self, name: str) -> Optional[str]:
        doc = self.docs.get(name)
        return doc.etag if doc else None

    def spread(self, term: str) -> int:
        """How many of the held concepts have `term` among their own words (not their learned ones)."""
        postings = self._postings.get(term)
        return 0 if postings is None else postings.live

    def terms_of(self, name: str) -> set[str]:
        """The terms a concept has, its own and its learned words' ({} for a concept not held)."""
        doc = self.docs.get(name)
        if doc is None:
            return set()
        return {term[1:] if term.startswith(LEARNED) else term for term in (self._terms[i] for i in doc.term_ids)}

    def _norm(self, length: float) -> float:
        return K1 * (1 - B + B * length / self._weighted_avg) if self._weighted_avg else K1

    def upsert(self, name: str, etag: str, concept: Concept, data: bytes) -> None:
        self.remove(name)
        self._settled = False
        tf, length, spans, forms = concept_terms(concept)
        slot = len(self._by_slot)
        if slot >= len(self._recency):
            grown = np.zeros(len(self._recency) * 2, dtype=np.float64)
            grown[: len(self._recency)] = self._recency
            self._recency = grown
        ids = array("i", (self._term_id(t) for t in tf))
        doc = Doc(name, etag, data, concept.description, concept.type, concept.provenance, concept.confidence,
                  tuple(concept.hop_links), slot, length, ids, array("f", tf.values()), concept.updated_at.timestamp(),
                  tuple((span.unit, span.low, span.high, count) for span, count in spans.items()))
        for term, form in forms:
            self._add_form(term, form)
        self._add_spans(doc)
        self.docs[name] = doc
        self._by_slot.append(doc)
        self._recency[slot] = doc.recency
        self._total_length += length
        if not self._weighted_avg:
            self._weighted_avg = length or 1.0
        for term, count in tf.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = Postings()
                self._count_head(term, 1)
            if not postings.pending:
                postings.pending_slots, postings.pending_counts = array("i"), array("f")
            postings.pending_slots.append(slot)
            postings.pending_counts.append(count)
            postings.live += 1
        self._live_postings += len(ids)

    def _count_head(self, term: str, change: int) -> None:
        if term.startswith(LEARNED) and " " in term:
            head = term[1:term.index(" ")]
            count = self._heads.get(head, 0) + change
            if count:
                self._heads[head] = count
            else:
                del self._heads[head]

    def _add_spans(self, doc: Doc) -> None:
        for unit, low, high, count in doc.spans:
            self._spans.setdefault(unit, {}).setdefault(doc.slot, []).append((low, high, count))
            self._span_arrays.pop(unit, None)

    def _spans_of(self, unit: str) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """(lows, highs, slots, BM25 weights) of the unit's live intervals."""
        found = self._span_arrays.get(unit)
        if found is None:
            by_slot = self._spans.get(unit)
            if not by_slot:
                return None
            rows = [(low, high, slot, bm25_weight(count, self._norm(self._by_slot[slot].length)))
                    for slot, spans in by_slot.items() for low, high, count in spans]
            lows, highs, slots, weights = zip(*rows)
            found = self._span_arrays[unit] = (np.array(lows), np.array(highs), np.array(slots, dtype=np.int64),
                                               np.array(weights))
        return found

    def _add_form(self, term: str, form: str) -> None:
        self._form_writes += 1
        held = self._forms.get(term)
        if held is None:
            self._forms[term] = form
        elif type(held) is str:
            if held != form:
                self._forms[term] = {held, form}
        else:
            held.add(form)

    def _known(self, term: str) -> bool:
        postings = self._postings.get(term)
        return postings is not None and postings.live > 0

    def corrected(self, form: str) -> Optional[str]:
        """The term a word no concept has was probably meant as: one typed letter away (dropped,
        added, swapped or wrong, never the first) from a form some live concept has, when exactly
        one live term is that close. Only words of TYPO_MIN to TYPO_MAX letters: shorter ones
        are too often other words, longer ones no word."""
        if not TYPO_MIN <= len(form) <= TYPO_MAX or not form.isalpha() or not form.isascii():
            return None
        if self._by_form_at != self._form_writes:
            self._by_form = {f: term for term, held in self._forms.items()
                             for f in ((held,) if type(held) is str else held)}
            self._by_form_at = self._form_writes
            self._typos = {}
        # Each word's candidate terms are kept (a bounded number of words), and which are live
        # is asked at every query: a removed concept's terms drop out as they would from a
        # snapshot of this index.
        near = self._typos.get(form)
        if near is None:
            by_form = self._by_form
            first, rest = form[0], form[1:]
            splits = [(rest[:i], rest[i:]) for i in range(len(rest) + 1)]
            candidates = {left + right[1:] for left, right in splits if right}
            candidates.update(left + right[1] + right[0] + right[2:] for left, right in splits if len(right) > 1)
            candidates.update(left + c + right[1:] for left, right in splits if right for c in _LOWER)
            candidates.update(left + c + right for left, right in splits for c in _LOWER)
            # Into a word as long as the typo's bound: a short store word is too near common
            # words ("frente" is not "frete").
            near = tuple(sorted({term for c in candidates if len(c) >= TYPO_MIN - 1
                                 and (term := by_form.get(first + c)) is not None}))
            if len(self._typos) < TYPO_CACHE:
                self._typos[form] = near
        live = [term for term in near if self._known(term)]
        return live[0] if len(live) == 1 else None

    def _has_form(self, term: str, form: str) -> bool:
        held = self._forms.get(term)
        return held == form if type(held) is str else held is not None and form in held

    def _forms_of(self, term: str) -> list[str]:
        held = self._forms.get(term)
        return [] if held is None else [held] if type(held) is str else sorted(held)

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
        for unit, *_ in doc.spans:
            self._spans[unit].pop(doc.slot, None)
            self._span_arrays.pop(unit, None)
        self._total_length -= doc.length
        for term_id in doc.term_ids:
            term = self._terms[term_id]
            postings = self._postings[term]
            postings.live -= 1
            if postings.live == 0:  # the whole list goes, with the dead postings it held
                self._dead_postings -= len(postings.slots) + postings.pending - 1
                del self._postings[term]
                self._count_head(term, -1)
            else:
                self._dead_postings += 1
        self._live_postings -= len(doc.term_ids)

    def settle(self) -> None:
        """After a batch of changes: compact or re-weight when needed, merge pending postings."""
        if not self.docs:
            self.__init__(self.scaled_gate)
            return
        average = pivot_length(self._total_length / len(self.docs))
        if self._dead_postings > max(1024, self._live_postings):
            self._compact()
        elif average != self._weighted_avg:
            self._reweight(average)
        for term, postings in self._postings.items():
            if postings.pending:
                self._merge(postings, term.startswith(LEARNED))
        self._settled = True

    def _merge(self, postings: Postings, learned: bool = False) -> None:
        slots = np.frombuffer(postings.pending_slots, dtype=np.int32)
        counts = np.frombuffer(postings.pending_counts, dtype=np.float32)
        if learned:  # what customers call the concept: as strong in a long concept as in a short one
            norms = np.full(len(slots), K1, dtype=np.float32)
        else:
            norms = np.array([self._norm(self._lengths_of(slot)) for slot in postings.pending_slots], dtype=np.float32)
        weights = counts * (K1 + 1) / (counts + norms)
        postings.slots = np.concatenate((postings.slots, slots))
        postings.weights = np.concatenate((postings.weights, weights.astype(np.float32)))
        del slots, counts  # release the buffer exports before replacing the arrays
        postings.pending_slots, postings.pending_counts = NO_PENDING_SLOTS, NO_PENDING_COUNTS
        postings.scaled_for = None

    def _lengths_of(self, slot: int) -> float:
        doc = self._by_slot[slot]
        return doc.length if doc is not None else self._weighted_avg

    def _reweight(self, average: float) -> None:
        """Recompute every live weight for a new average length (dead postings are dropped)."""
        self._weighted_avg = average
        self._rebuild(renumber=False)

    def _compact(self) -> None:
        self._weighted_avg = pivot_length(self._total_length / len(self.docs))
        self._rebuild(renumber=True)

    def _rebuild(self, renumber: bool) -> None:
        docs = sorted(self.docs.values(), key=lambda d: d.slot)
        self._span_arrays = {}  # their weights follow the average length
        if renumber:
            self._by_slot, self._dead, self._spans = [], [], {}
            self._recency = np.zeros(max(64, len(docs) * 2), dtype=np.float64)
        collected: dict[str, tuple[list[int], list[float]]] = {}
        for doc in docs:
            if renumber:
                moved = dataclasses.replace(doc, slot=len(self._by_slot))
                self.docs[doc.name] = moved
                self._by_slot.append(moved)
                self._recency[moved.slot] = doc.recency
                doc = moved
                self._add_spans(doc)
            norm = self._norm(doc.length)
            for term_id, count in zip(doc.term_ids, doc.counts):
                term = self._terms[term_id]
                entry = collected.setdefault(term, ([], []))
                entry[0].append(doc.slot)
                entry[1].append(bm25_weight(count, K1 if term.startswith(LEARNED) else norm))
        self._postings = {}
        for term, (slots, weights) in collected.items():
            postings = Postings()
            postings.slots = np.array(slots, dtype=np.int32)
            postings.weights = np.array(weights, dtype=np.float32)
            postings.live = len(slots)
            self._postings[term] = postings
        self._dead_postings = 0
        self._live_postings = sum(len(d.term_ids) for d in self.docs.values())
        self._dead = []  # rebuilt from live concepts only: nothing left to mask
        self._dead_slots = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------ snapshots and size
    def export_state(self) -> tuple[dict, list[bytes]]:
        """What a snapshot keeps of the index: everything a search reads, without the concepts'
        text. Slots are renumbered densely in their order (so recency ties break the same way);
        the postings keep their weights, so a restored index scores exactly as this one."""
        for term, postings in self._postings.items():
            if postings.pending:
                self._merge(postings, term.startswith(LEARNED))
        docs = sorted(self.docs.values(), key=lambda d: d.slot)
        renumber = np.full(len(self._by_slot) + 1, -1, dtype=np.int64)
        renumber[[d.slot for d in docs]] = np.arange(len(docs))
        used = sorted({term_id for d in docs for term_id in d.term_ids})
        term_of = {old: new for new, old in enumerate(used)}
        terms = [self._terms[old] for old in used]
        doc_terms = array("i", (term_of[t] for d in docs for t in d.term_ids))
        doc_counts = array("f", (c for d in docs for c in d.counts))
        posting_terms, slot_parts, weight_parts = [], [], []
        for term_id, term in enumerate(terms):
            postings = self._postings[term]
            moved = renumber[postings.slots]
            live = moved >= 0
            posting_terms.append([term_id, int(live.sum())])
            slot_parts.append(moved[live].astype(np.int32))
            weight_parts.append(postings.weights[live])
        header = {
            "terms": terms,
            "forms": [self._forms_of(term) for term in terms],
            "weighted_avg": self._weighted_avg,
            "docs": [[d.name, d.etag, d.description, d.type, d.provenance, d.confidence, list(d.links), d.length,
                      d.recency, len(d.term_ids), [list(span) for span in d.spans]] for d in docs],
            "postings": posting_terms,
        }
        empty_i, empty_f = np.zeros(0, np.int32), np.zeros(0, np.float32)
        blobs = [doc_terms.tobytes(), doc_counts.tobytes(),
                 np.concatenate(slot_parts or [empty_i]).astype(np.int32).tobytes(),
                 np.concatenate(weight_parts or [empty_f]).astype(np.float32).tobytes()]
        return header, blobs

    @classmethod
    def from_state(cls, header: dict, blobs: list[bytes]) -> "Index":
        """The index `export_state` described (ValueError, KeyError or TypeError when it is not one)."""
        index = cls()
        terms = [str(t) for t in header["terms"]]
        index._terms = terms
        index._vocab = {term: i for i, term in enumerate(terms)}
        if len(index._vocab) != len(terms):
            raise ValueError("repeated term")
        forms_of = header["forms"]
        if len(forms_of) != len(terms):
            raise ValueError("forms do not match the terms")
        for term, forms in zip(terms, forms_of):
            for form in forms:
                index._add_form(term, str(form))
        doc_terms, doc_counts = array("i"), array("f")
        doc_terms.frombytes(blobs[0])
        doc_counts.frombytes(blobs[1])
        slots = np.frombuffer(blobs[2], dtype=np.int32)
        weights = np.frombuffer(blobs[3], dtype=np.float32)
        rows = header["docs"]
        if len(doc_terms) != len(doc_counts) or len(slots) != len(weights):
            raise ValueError("postings do not add up")
        index._recency = np.zeros(max(64, len(rows) * 2), dtype=np.float64)
        at = 0
        for slot, (name, etag, description, type_, provenance, confidence, links, length, recency, n_terms,
                   spans) in enumerate(rows):
            term_ids, counts = doc_terms[at:at + n_terms], doc_counts[at:at + n_terms]
            if len(term_ids) != n_terms:
                raise ValueError("postings do not add up")
            at += n_terms
            doc = Doc(str(name), str(etag), None, str(description), str(type_), str(provenance), float(confidence),
                      tuple(str(link) for link in links), slot, float(length), term_ids, counts, float(recency),
                      tuple((str(unit), float(low), float(high), float(count)) for unit, low, high, count in spans))
            index.docs[doc.name] = doc
            index._by_slot.append(doc)
            index._recency[slot] = doc.recency
            index._total_length += doc.length
            index._live_postings += n_terms
            index._add_spans(doc)
        if len(index.docs) != len(rows) or at != len(doc_terms):
            raise ValueError("repeated or missing concepts")
        at = 0
        for term_id, n in header["postings"]:
            postings = Postings()
            postings.slots, postings.weights = slots[at:at + n], weights[at:at + n]
            postings.scaled = postings.weights
            postings.live = int(n)
            at += n
            index._postings[terms[term_id]] = postings
            index._count_head(terms[term_id], 1)
        if at != len(slots) or (len(slots) and int(slots.max()) >= len(rows)):
            raise ValueError("postings do not add up")
        index._weighted_avg = float(header["weighted_avg"])
        return index

    def slots_of(self, names: Iterable[str]) -> np.ndarray:
        """The slots of the named concepts this index holds (a mask for `relevant`'s `excluded`)."""
        docs = self.docs
        return np.fromiter((docs[name].slot for name in names if name in docs), dtype=np.int64)

    def doc_at(self, slot: int) -> Optional[Doc]:
        """The concept in `slot` (a Match's arrays are by slot); None for a removed one's."""
        return self._by_slot[slot]

    @property
    def typos_held(self) -> int:
        """How many typed words' candidates `corrected` keeps (at most TYPO_CACHE)."""
        return len(self._typos)

    def shape(self) -> tuple[int, int, int, int]:
        """Counts that move whenever the index changes: a cheap test before measuring it again."""
        return len(self.docs), self._live_postings, self._dead_postings, len(self._postings)

    def memory_bytes(self) -> int:
        """About what the index holds in memory (its objects, arrays and strings), for the
        container's memory budget; measured, not guessed per concept (a concept's text is
        kept only when it was fetched, not restored)."""
        size = sys.getsizeof(self.docs) + sys.getsizeof(self._by_slot) + sys.getsizeof(self._postings)
        size += sys.getsizeof(self._vocab) + sys.getsizeof(self._terms) + self._recency.nbytes
        for doc in self.docs.values():
            size += (DOC_OVERHEAD + sys.getsizeof(doc.name) + sys.getsizeof(doc.etag) + sys.getsizeof(doc.description)
                     + (sys.getsizeof(doc.data) if doc.data is not None else 0)
                     + sys.getsizeof(doc.term_ids) + sys.getsizeof(doc.counts)
                     + sum(sys.getsizeof(link) for link in doc.links) + SPAN_BYTES * len(doc.spans))
        for term, postings in self._postings.items():
            size += POSTINGS_OVERHEAD + sys.getsizeof(term) + postings.slots.nbytes + postings.weights.nbytes
            if postings.scaled is not postings.weights:
                size += postings.scaled.nbytes
            size += 8 * postings.pending
        if self._by_form:
            # The typo cache fills without changing `shape`, so it is counted full. Measured with
            # tracemalloc: 36 bytes per form of `_by_form` (its strings are the index's own),
            # 110 per cached word (the word, its candidates).
            size += sys.getsizeof(self._by_form) + BY_FORM_BYTES * len(self._by_form) + TYPO_CACHE * TYPO_BYTES
        for forms in self._forms.values():
            size += sys.getsizeof(forms) if type(forms) is str else (
                sys.getsizeof(forms) + sum(sys.getsizeof(form) for form in forms))
        return size

    def match(self, query: str, read: bool = True, readings: Optional[Lexicon] = None) -> Optional[Match]:
        """What `query` shares with each concept, as `relevant` weighs it (knowledge.recall.matching.Match);
        None when nothing matches. `read`: add what the lexicon reads into the message and read typos
        (retrieval), or not (search); `readings`: the agent's lexicon (knowledge.recall.lexicon.lexicon_for),
        else the places'."""
        n_docs = len(self.docs)
        if not n_docs:
            return None
        analysis = analyze(query, open_ranges=False, shorthand=read)
        if not analysis.words and not analysis.numbers and not analysis.intervals:
            return None
        scoring = Scoring(n_docs, len(self._by_slot), FLOOR_CONCEPTS)
        readings = readings or lexicon()
        reading = readings.read(query, self._known) if read else _NOTHING_READ
        phrased = self._phrases(scoring, [term for term, _ in analysis.words])
        used = self._words(scoring, analysis, reading, readings.place_terms, phrased, query if read else None)
        self._readings(scoring, reading, used - reading.grouped)
        self._numbers(scoring, analysis.intervals)
        if self._dead and len(self._dead) != len(self._dead_slots):
            self._dead_slots = np.array(self._dead, dtype=np.int64)
        return scoring.result(self._dead_slots, set(analysis.terms()), len(dict(analysis.words)), reading.asks)

    def _postings_of(self, term: str) -> Optional[Postings]:
        postings = self._postings.get(term)
        if postings is not None and postings.pending_slots:  # appends not merged yet (`pending`)
            self._merge(postings, term.startswith(LEARNED))
        return postings

    def _phrases(self, scoring: Scoring, sequence: list[str]) -> set[str]:
        """A learned phrase, its words adjacent in the message (knowledge.recall.postings.learned_terms):
        it tells as one word, for the words of it no concept has. The words of the phrases found."""
        phrased: set[str] = set()
        if not self._heads:
            return phrased
        heads = [at for at, word in enumerate(sequence) if word in self._heads]  # a learned phrase starts there
        for size in (2, 3):
            for at in heads:
                if at + size > len(sequence):
                    break
                postings = self._postings_of(LEARNED + " ".join(sequence[at:at + size]))
                if postings is not None and postings.live <= LEARNED_SPREAD:
                    scoring.add(postings.slots, postings.idf_weights(scoring.n_docs), scoring.ratio_of(postings.live),
                                False)
                    scoring.told += scoring.tells(postings.live)
                    phrased.update(sequence[at:at + size])
        return phrased

    def _words(self, scoring: Scoring, analysis: Analysis, reading: Reading, place_terms: frozenset[str] | set[str],
               phrased: set[str], typed: Optional[str]) -> set[str]:
        """The message's own words and numbers (a typo read as the word it meant, weighing TYPO; typos
        read only in the message as `typed`). The terms used, the typos' meanings among them."""
        n_docs = scoring.n_docs
        names = None  # the message's proper names, never read as typos: read at the first typo
        used: set[str] = set(term for term, _ in analysis.words)
        tried = 0  # unknown words looked up as typos: a long message reads only its first TYPO_TRIES
        postings_of = self._postings.get if self._settled else self._postings_of
        for term, form in [*dict(analysis.words).items(), *((number, None) for number in analysis.numbers)]:
            place = term in reading.places or term in place_terms
            postings, factor = postings_of(term), 1.0
            learned = postings_of(LEARNED + term) if form is not None else None
            if learned is not None and learned.live <= LEARNED_SPREAD:  # a concept's learned word
                scoring.add(learned.slots, learned.idf_weights(n_docs), scoring.ratio_of(learned.live), place)
                if postings is None:
                    scoring.told += scoring.tells(learned.live)
                    continue
            elif learned is not None and postings is None:
                continue  # a word too many concepts learned: customers' filler, it tells nothing
            if term in reading.grouped:  # part of a place's name: it tells, but is matched with its reading below
                scoring.told += scoring.tells(postings.live) if postings is not None else 1.0
                continue
            if postings is None and (term in reading.explained or term in phrased):
                continue  # a customer's word the vocabulary reads: it tells what its reading tells, below
            if postings is None and typed is not None and form is not None and len(form) >= TYPO_MIN \
                    and tried < TYPO_TRIES:
                tried += 1
                if names is None:
                    names = proper_names(typed) if not typed.islower() else ()
                meant = self.corrected(form) if form not in names else None
                if meant is not None:
                    if meant in used:
                        continue  # the word it meant is in the message already
                    used.add(meant)
                    term, postings, factor = meant, self._postings_of(meant), TYPO
            if postings is None:
                scoring.told += 1.0 if form is not None else 0.0  # a word no concept has: as rare as can be
                scoring.unknown.append(form)
                continue
            scoring.told += scoring.tells(postings.live)
            ratio = scoring.ratio_of(postings.live)
            if form is not None and factor == 1.0 and len(term) < STEM_MIN and not self._has_form(term, form):
                ratio *= STEM_ONLY  # a short stem shared by accident (valeu/vale)
            weights = postings.idf_weights(n_docs)
            scoring.add(postings.slots, weights if factor == 1.0 else weights * factor, ratio, place)
        return used

    def _readings(self, scoring: Scoring, reading: Reading, used: set[str]) -> None:
        """What the lexicon read into the message: each reading counts as one word, the best of its words
        for each concept, weighing what the reading weighs; it tells nothing the message did not."""
        n_docs, n = scoring.n_docs, scoring.n
        for added in reading.added:
            weight_of = dict(sorted(added.words, key=lambda word: word[1]))  # a word both own and added: own
            found = [(postings, weight) for term, weight in weight_of.items()
                     if term not in used and (postings := self._postings_of(term)) is not None]
            used.update(weight_of)
            if added.explains:  # the reading stands for words no concept has: it tells as its rarest word
                scoring.told += max(scoring.tells(postings.live) for postings, _ in found) if found \
                    else float(len(added.explains))  # nothing here says what it reads: unknown words, as before
            # The floor counts a vocabulary reading as the store's word itself (an operator said the
            # customer's words mean it); the ranking weighs it `weight`, so a concept that says the
            # customer's own words ranks first. A place's reading is weighed the same in both.
            full = 1.0 if added.place else None
            if len(found) == 1:
                postings, weight = found[0]
                scoring.add(postings.slots, postings.idf_weights(n_docs) * weight,
                            scoring.ratio_of(postings.live) / (full or weight), added.place)
            elif found:
                # Per concept, the best of the reading's words: written in ascending order of
                # weight, the last write to a slot is its largest.
                slots = np.concatenate([postings.slots for postings, _ in found])
                weights = np.concatenate([postings.idf_weights(n_docs) * weight for postings, weight in found])
                order = np.argsort(weights, kind="stable")
                best = np.zeros(n)
                best[slots[order]] = weights[order]
                if n_docs >= FLOOR_CONCEPTS and added.place:
                    ratio = scoring.scale  # the same for every word
                else:
                    shared_by = np.zeros(n)
                    shared_by[slots[order]] = (weights * np.concatenate(
                        [np.full(len(postings.slots), scoring.ratio_of(postings.live) / (full or weight))
                         for postings, weight in found]))[order]
                    ratio = None
                slots = best.nonzero()[0]
                scoring.add(slots, best[slots], ratio if ratio is not None else shared_by[slots] / best[slots],
                            added.place)

    def _numbers(self, scoring: Scoring, intervals: Iterable[tuple[str, float, float]]) -> None:
        """The message's numbers inside (or near) the ranges concepts state of their unit."""
        n_docs, n = scoring.n_docs, scoring.n
        for unit, low, high in dict.fromkeys(intervals):  # once each, in the order the message says them
            spans = self._spans_of(unit)
            if spans is None:
                continue
            lows, highs, slots, weights = spans
            inside = (lows <= high) & (highs >= low)
            factor = 1.0
            if unit != "cep":
                # A number no range of a concept holds, near one it states (12x against "até 10x",
                # 45 against "do 34 ao 44"): that concept answers "no", at NEAR of a match.
                held = np.zeros(n, dtype=bool)
                held[slots[inside]] = True
                near = ~inside & ~held[slots] & (((low > highs) & (low <= highs * NEAR_FACTOR))
                                                 | ((high < lows) & (high * NEAR_FACTOR >= lows)))
                if near.any():
                    if not inside.any():
                        inside, factor = near, NEAR
                    else:
                        extra = near.nonzero()[0]
                        scoring.term_slots.append(unique := np.unique(slots[extra]))
                        scoring.add(slots[extra], weights[extra] * bm25_idf(n_docs, live_near := len(unique)) * NEAR,
                                    scoring.ratio_of(live_near), False, term=False)
            if inside.any():
                # A number inside a stated range weighs as a word found in that many concepts.
                scoring.term_slots.append(unique := np.unique(slots[inside]))  # two ranges that hold it: one term
                live = len(unique)
                scoring.told += scoring.tells(live)
                scoring.add(slots[inside], weights[inside] * bm25_idf(n_docs, live) * factor, scoring.ratio_of(live),
                            False, term=False)

    def _ranked(self, scores: np.ndarray, wanted: int, least: float) -> list[tuple[float, float, int]]:
        """The best `wanted` slots scoring above 0 and at least `least`, as (score, recency, slot), best first;
        a tie goes to the most recent, then to the later slot, at the cut-off as above it."""
        eligible = (scores >= least if least > 0 else scores > 0).nonzero()[0]
        if len(eligible) > wanted:  # those at or above the wanted-th score: every tie at the cut-off
            values = scores[eligible]
            eligible = eligible[values >= np.partition(values, len(values) - wanted)[len(values) - wanted]]
        score, recency = scores.item, self._recency.item
        return sorted([(score(slot), recency(slot), slot) for slot in eligible.tolist()], reverse=True)[:wanted]

    def search(self, query: str, top_k: int, min_score: float = 0.0) -> list[Hit]:
        """The best `top_k` concepts scoring at least `min_score`, with no relevance floor and the
        words as written (listing known concepts, the studio's search); recency breaks ties."""
        matched = self.match(query, read=False)
        return self._hits(matched, top_k, min_score, floor=False) if matched is not None else []

    def relevant(self, query: str, top_k: int, min_score: float = 0.0,
                 readings: Optional[Lexicon] = None, excluded: Optional[np.ndarray] = None) -> list[Hit]:
        """What retrieval injects: `search`, once some concept passes the floor (MIN_SHARED with
        two shared words or more; with one, SINGLE and COVER of the message, or a question cue);
        the message read through `readings`, the agent's lexicon (None: the places' only). The
        `excluded` slots (concepts out of recall) weigh in the floor but are never answered: the
        next concepts take their places."""
        matched = self.match(query, readings=readings)
        if matched is None:
            return []
        min_score = self.gate(min_score)
        passing = self._passing(matched, query, min_score)
        if passing is not None:
            # Below the best answer, a concept that shares a small part of what it shares is noise.
            return self._hits(matched, top_k, min_score, TAIL * passing, excluded=excluded)
        # A question of one word ("e a garantia?") asks about the concepts whose description says it,
        # however many of their bodies do too.
        terms = matched.terms
        if len(terms) == 1 and asked(query, term := next(iter(terms))) and (
                described := self._described(term, matched.scores, min_score)):
            return self._hits(matched, top_k, min_score, math.inf, described, excluded)
        named = self._named(matched, min_score)
        if not named:
            return []
        return self._hits(matched, top_k, min_score, TAIL * max(matched.shared.item(slot) for slot in named), named,
                          excluded)

    def _passing(self, matched: Match, query: str, min_score: float) -> Optional[float]:
        """What the best concept passing the floor shares; None when none passes. The candidates
        are a few dozen at most: read as Python numbers, not as small arrays."""
        candidates = matched.candidates(min_score, min(MIN_SHARED, SINGLE))
        if not len(candidates):
            return None
        their, terms = matched.shared[candidates].tolist(), matched.shared_terms[candidates].tolist()
        cover = COVER * matched.told
        passes = [s >= MIN_SHARED if t >= 2 else s >= SINGLE and s >= cover for s, t in zip(their, terms)]
        if matched.asks and not any(passes):
            passes = [s >= MIN_SHARED if t >= 2 else s >= SINGLE for s, t in zip(their, terms)]
        # The best passing one: the floor's in descending order of what they share, the first the judgment of
        # a model-taught agent (recall.signals) lets through; judged only until one passes.
        ranked = sorted((i for i, ok in enumerate(passes) if ok), key=their.__getitem__, reverse=True)
        if not ranked or len(matched.terms) < 2 or not self._known(TAUGHT):
            return their[ranked[0]] if ranked else None
        judge, scale, docs = judgment(matched.told, matched.said, matched.asks, query), self.gate(1.0), self._by_slot
        return next((their[i] for i in ranked if judge(matched.scores.item(slot := candidates.item(i)) / scale, their[i],
                                                       terms[i], docs[slot].description)), None)

    def _named(self, matched: Match, min_score: float) -> set[int]:
        """The concepts the message calls by their own names ("como funciona o clube de vantagens?" and
        clube-de-vantagens): what it asks about, however common the name's words are."""
        terms, scores = matched.terms, matched.scores
        if len(terms) < NAMED_MIN:
            return set()
        above = scores >= min_score if min_score > 0 else scores > 0  # (at min_score > 0, above 0 as well)
        maybe = ((matched.shared_terms >= NAMED_MIN) & above).nonzero()[0]
        if len(maybe) > NAMED_TRIES:  # the best scored of them: a named concept scores its name 3 times
            maybe = maybe[np.argpartition(scores[maybe], len(maybe) - NAMED_TRIES)[-NAMED_TRIES:]]
        grounded = matched.grounded
        return {slot for slot in maybe.tolist() if (grounded is None or grounded[slot])
                and len(words := name_terms(self._by_slot[slot].name)) >= NAMED_MIN and words <= terms}

    def _described(self, term: str, scores: np.ndarray, min_score: float) -> set[int]:
        """The slots of the concepts whose description says `term` (a word, not a number)."""
        postings = self._postings.get(term)
        if postings is None or not term[:1].isalpha() or postings.live > DESCRIBED_SCAN:
            return set()
        said = {slot for slot in postings.slots.tolist() if (doc := self._by_slot[slot]) is not None
                and scores[slot] > 0 and scores[slot] >= min_score and describes(doc.description, term)}
        return said if len(said) <= DESCRIBED_MAX else set()

    def gate(self, min_score: float) -> float:
        """`min_score` as this index reads it: a BM25 score as an agent of FLOOR_CONCEPTS concepts would
        give it, as the floor reads rarity. In a smaller one every word's idf is a fraction of that (one
        concept: 0.29 against 3.3), and no short question reached the 1.0 a tenant's one shared policy
        or a new agent's first concepts needed; it is scaled by a rare word's idf here against there."""
        n_docs = len(self.docs)
        if min_score <= 0 or n_docs >= FLOOR_CONCEPTS or not self.scaled_gate:
            return min_score
        return min_score * bm25_idf(n_docs, 1) / bm25_idf(FLOOR_CONCEPTS, 1)

    def _hits(self, matched: Match, top_k: int, min_score: float, least_shared: float = 0.0,
              named: frozenset | set = frozenset(), excluded: Optional[np.ndarray] = None,
              floor: bool = True) -> list[Hit]:
        """The best `top_k` hits; `floor`: as retrieval injects them (never a concept sharing only places)."""
        scores, shared, grounded = matched.scores, matched.shared, matched.grounded
        if floor and grounded is not None:  # a concept sharing only places with the message is never injected
            scores = np.where(grounded, scores, 0.0)
        window = top_k
        if excluded is not None and len(excluded):
            scores = scores.copy() if scores is matched.scores else scores
            scores[excluded] = 0.0
            # The best top_k that pass, past the ones skipped below: a wider look only when needed.
            window = top_k * 2
        while True:
            hits, looked = [], 0
            for score, _, slot in self._ranked(scores, window, min_score):
                looked += 1
                if shared.item(slot) < least_shared and slot not in named:
                    continue
                doc = self._by_slot[slot]
                hits.append(Hit(doc.name, round(score, 4), doc, round(shared.item(slot), 3)))
                if len(hits) == top_k:
                    break
            if excluded is None or len(hits) >= top_k or looked < window or window >= len(scores):
                return hits
            window *= 4


_NOTHING_READ = Reading([], set(), set())

@functools.lru_cache(maxsize=65536)
def name_terms(name: str) -> frozenset[str]:
    """The index terms of a concept's name (its words, stopwords dropped)."""
    return frozenset(analyze(name.replace("-", " ")).terms())
