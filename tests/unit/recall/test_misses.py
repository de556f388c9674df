"""Recall's generic misses and false matches (issue 24): each test is a message of one class and
the concept it must, or must not, reach."""

from __future__ import annotations

import random

from helpers.concepts import make_concept

from knowledge.recall.index import Index


def index_of(*concepts, order=None):
    index = Index()
    listed = list(concepts)
    if order is not None:
        random.Random(order).shuffle(listed)
    for concept in listed:
        index.upsert(concept.name, "etag", concept, b"")
    index.settle()
    return index


def names(index, message):
    return [hit.name for hit in index.relevant(message, 5, 1.0)]


def test_scores_do_not_depend_on_the_order_concepts_were_indexed_in():
    concepts = [make_concept(f"c-{i}", description=f"frete prazo entrega {i}",
                             body=" ".join(["entrega rápida na capital"] * (1 + i % 7)) + f" campinas {i}")
                for i in range(40)]
    first = index_of(*concepts, order=1)
    for order in (2, 3, 4):
        other = index_of(*concepts, order=order)
        for question in ("qual o prazo de entrega?", "frete para campinas", "entrega rápida"):
            assert ({h.name: h.score for h in first.search(question, 40)}
                    == {h.name: h.score for h in other.search(question, 40)})
