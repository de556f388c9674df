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


def test_a_concepts_links_do_not_dilute_what_its_own_words_share():
    plain = make_concept("troca-simples", description="Troca em 30 dias.", body="A troca é grátis. Veja.")
    linked = make_concept("troca-loja", description="Troca em 30 dias.",
                          body="A troca é grátis. Veja [[cupom-primeira-compra]], [[vale-presente]], "
                               "[[retirada-na-loja]] e [[nota-fiscal]].")
    frete = make_concept("frete-gratis-acima-99", description="Frete grátis acima de R$ 99.", body="Todo o Brasil.")
    index = index_of(plain, linked, frete)
    scores = {hit.name: hit.score for hit in index.search("a troca é grátis?", 5)}
    assert scores["troca-loja"] == scores["troca-simples"]
    linking = make_concept("cupom-primeira-compra", description="Cupom de 10% na primeira compra.",
                           body="Vale uma vez por CPF; para o envio veja [[frete-gratis-acima-99]].")
    index = index_of(plain, linking, frete)
    assert [hit.name for hit in index.search("o frete é grátis?", 5)][0] == "frete-gratis-acima-99"
