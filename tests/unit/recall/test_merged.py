"""Recall from an agent's index and its tenant's shared one (knowledge.recall.merged): ranked together by
coverage, which a labelled case shows orders the two as one index holding both would, where raw BM25
(whose scale grows with an index's size) does not."""

from __future__ import annotations

import pytest
from helpers.concepts import make_concept

from knowledge.format.config import parse_config
from knowledge.recall.index import Index
from knowledge.recall.merged import relevant_both, search_both, shadowed

CONFIG = parse_config("knowledge:\n  top_k: 5\n")
OWN = [
    make_concept("prazo-reembolso-pix", description="O reembolso no Pix cai em ate 2 dias uteis.",
                 body="Reembolso via Pix em 2 dias uteis."),
    make_concept("frete-gratis", description="Frete gratis acima de R$199.", body="Frete gratis."),
    make_concept("troca-em-30-dias", description="Troca em ate 30 dias.", body="Troca."),
]
# A tenant base far larger than the agent's: its words are rarer, so its raw BM25 scores run higher.
SHARED = [
    make_concept("cashback-no-app", description="Cashback no app em compras com Pix.", body="Cashback de 5% no app."),
    make_concept("politica-de-pagamento", description="Aceitamos Pix, boleto e cartao.",
                 body="Pagamento por Pix com desconto."),
    *[make_concept(f"produto-{i}", description=f"Produto modelo {i} em estoque na cor {colour}.", body=f"Modelo {i}.")
      for i, colour in zip(range(80), ["azul", "verde", "preto", "branco"] * 20)],
]
# The label: the order one index holding both would give (the agent's as if the shared were its own).
LABELLED = ["o pix tem desconto no pagamento?", "posso pagar com pix?", "reembolso do cashback no pix", "pix",
            "o app tem cashback?"]


def index_of(*concepts):
    index = Index()
    for concept in concepts:
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    return index


@pytest.fixture(scope="module")
def indexes():
    return index_of(*OWN), index_of(*SHARED), index_of(*OWN, *SHARED)


@pytest.mark.parametrize("message", LABELLED)
def test_two_indexes_rank_together_as_one_index_holding_both_would(indexes, message):
    own, shared, both = indexes
    one = [hit.name for hit in both.relevant(message, CONFIG.top_k, CONFIG.min_score)]
    assert one, message
    assert [hit.name for hit in relevant_both(own, shared, message, CONFIG, None, None, set())] == one


def test_raw_bm25_would_not_rank_them_so(indexes):
    """Why coverage: merged by raw score, the larger index's concepts come first for most of the labelled case."""
    own, shared, both = indexes
    wrong = 0
    for message in LABELLED:
        raw = sorted(own.relevant(message, 5, CONFIG.min_score) + shared.relevant(message, 5, CONFIG.min_score),
                     key=lambda hit: -hit.score)
        wrong += [hit.name for hit in raw] != [hit.name for hit in both.relevant(message, 5, CONFIG.min_score)]
    assert wrong >= 3


def test_a_shared_concept_the_agent_has_a_concept_of_is_shadowed():
    own = index_of(*OWN)
    shared = index_of(make_concept("frete-gratis", description="Frete gratis acima de R$99 para todos."), *SHARED)
    out = shadowed(own, {}, shared)
    assert out == {"frete-gratis"}
    hits = relevant_both(own, shared, "tem frete gratis?", CONFIG, None, None, out)
    assert [(hit.name, hit.doc.description) for hit in hits] == [("frete-gratis", "Frete gratis acima de R$199.")]
    searched = search_both(own, shared, "frete", 5, out)
    assert [hit.doc.description for hit in searched] == ["Frete gratis acima de R$199."]
    # Unreadable in the agent's store still counts as the agent's name: the shared one stays shadowed.
    assert shadowed(index_of(), {"frete-gratis": "etag"}, shared) == {"frete-gratis"}
