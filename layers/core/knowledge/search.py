"""Lexical search over an agent's concepts: an inverted index with BM25 weights, pure Python.

Text is folded (case, accents), split into words, stripped of stopwords and stemmed
(Snowball Portuguese, then English, so troca/trocas/trocar and installment/installments
meet). Name and description count more than the body. Each posting keeps its BM25 term
weight, so a query only sums the postings of its own words; the index changes one concept
at a time and re-weights everything only when the average length drifts.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Optional

import snowballstemmer

from .concept import Concept

K1, B = 1.2, 0.75
FIELD_WEIGHTS = (("name", 3), ("description", 2), ("body", 1))
REWEIGHT_DRIFT = 0.10
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


@dataclass(frozen=True)
class Doc:
    """What the index keeps of one concept."""

    name: str
    etag: str
    concept: Concept
    data: bytes
    length: float
    tf: dict[str, float]
    recency: float


@dataclass(frozen=True)
class Hit:
    name: str
    score: float
    doc: Doc
    coverage: float = 1.0


def _document(name: str, etag: str, concept: Concept, data: bytes) -> Doc:
    tf: dict[str, float] = {}
    length = 0.0
    fields = {"name": concept.name.replace("-", " "), "description": concept.description, "body": concept.body}
    for field, weight in FIELD_WEIGHTS:
        for term in terms(fields[field]):
            tf[term] = tf.get(term, 0.0) + weight
            length += weight
    return Doc(name, etag, concept, data, length, tf, concept.updated_at.timestamp())


class Index:
    """One agent's concepts, searchable. Not thread-safe: one request at a time per container."""

    def __init__(self) -> None:
        self.docs: dict[str, Doc] = {}
        self._postings: dict[str, dict[str, float]] = {}
        self._total_length = 0.0
        self._weighted_avg = 0.0  # the average length the weights were computed with

    def __len__(self) -> int:
        return len(self.docs)

    def etag(self, name: str) -> Optional[str]:
        doc = self.docs.get(name)
        return doc.etag if doc else None

    def upsert(self, name: str, etag: str, concept: Concept, data: bytes) -> None:
        self.remove(name)
        doc = _document(name, etag, concept, data)
        self.docs[name] = doc
        self._total_length += doc.length
        if self._weighted_avg == 0.0:
            self._weighted_avg = self._avg()
        norm = K1 * (1 - B + B * doc.length / self._weighted_avg) if self._weighted_avg else K1
        for term, tf in doc.tf.items():
            self._postings.setdefault(term, {})[name] = tf * (K1 + 1) / (tf + norm)

    def remove(self, name: str) -> None:
        doc = self.docs.pop(name, None)
        if doc is None:
            return
        self._total_length -= doc.length
        for term in doc.tf:
            postings = self._postings.get(term)
            if postings is not None:
                postings.pop(name, None)
                if not postings:
                    del self._postings[term]

    def settle(self) -> None:
        """After a batch of changes: re-weight everything only if the average length drifted."""
        average = self._avg()
        if not self.docs:
            self._weighted_avg = 0.0
            return
        if self._weighted_avg and abs(average - self._weighted_avg) / self._weighted_avg <= REWEIGHT_DRIFT:
            return
        self._weighted_avg = average
        self._postings = {}
        for doc in self.docs.values():
            norm = K1 * (1 - B + B * doc.length / average)
            for term, tf in doc.tf.items():
                self._postings.setdefault(term, {})[doc.name] = tf * (K1 + 1) / (tf + norm)

    def _avg(self) -> float:
        return self._total_length / len(self.docs) if self.docs else 0.0

    def search(self, query: str, top_k: int, min_score: float = 0.0,
               min_coverage: float = 0.0) -> list[Hit]:
        """The best `top_k` concepts scoring at least `min_score` and sharing at least
        `min_coverage` of the query's terms; recency breaks ties."""
        n = len(self.docs)
        scores: dict[str, float] = {}
        query_terms = set(terms(query))
        words = [term for term in query_terms if not term.isdigit()]
        for term in query_terms:
            postings = self._postings.get(term)
            if not postings:
                continue
            df = len(postings)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            get = scores.get
            for name, weight in postings.items():
                scores[name] = get(name, 0.0) + idf * weight
        if not scores:
            return []
        docs = self.docs
        # Coverage is checked on a few more than top_k, so a filtered hit leaves room for the next.
        best = heapq.nlargest(top_k * 3 if min_coverage else top_k, scores.items(),
                              key=lambda item: (item[1], docs[item[0]].recency))
        hits = []
        for name, score in best:
            if score < min_score:
                break
            tf = docs[name].tf
            coverage = sum(1 for term in words if term in tf) / len(words) if words else 1.0
            if coverage >= min_coverage:
                hits.append(Hit(name, round(score, 4), docs[name], round(coverage, 3)))
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
