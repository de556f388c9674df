"""The studio's search over a container's list state: every word needed, the order of relevance,
and a snippet no longer than 160 characters whose marks point at the matched words."""

from __future__ import annotations

from helpers.concepts import make_concept

from knowledge.curation import relevance
from knowledge.curation.listing import HeldList
from knowledge.store.concepts import StoredConcept


def held(*concepts):
    out = HeldList()
    for i, concept in enumerate(concepts):
        out.take(StoredConcept(concept.name, concept.render().encode(), f'"{i}"', None, actor="engine",
                               written_at=f"2026-01-01T00:00:{i:02d}.000000Z"))
    return out


def test_the_exact_name_then_a_name_it_begins_then_the_index_s_ranking_then_text_alone():
    h = held(make_concept("frete-sul", description="Frete para o Sul."),
             make_concept("regras-de-entrega", description="O frete expresso sai hoje.", body="Frete expresso."),
             make_concept("frete", description="O frete de tudo."),
             make_concept("fretes-antigos-x", description="Tabela antiga.", body="Nada aqui."))
    assert relevance.search(h, "frete", list(h.summaries)) == ["frete", "frete-sul", "fretes-antigos-x",
                                                              "regras-de-entrega"]


def test_a_query_of_stopwords_or_punctuation_alone_is_read_as_text_and_finds_what_holds_it():
    h = held(make_concept("horario-de-fim-de-ano", description="Lojas abertas até 22h."),
             make_concept("troca", description="Troca em 30 dias."))
    names = list(h.summaries)
    assert relevance.search(h, "de", names) == ["horario-de-fim-de-ano"]
    assert relevance.search(h, "?!", names) == []


def test_a_long_description_gives_a_snippet_of_at_most_160_characters_around_the_word():
    long = ("Palavra comum " * 13) + "o reembolso via pix cai em até 2 dias úteis " + ("depois " * 8)
    h = held(make_concept("prazo-pix", description=long.strip()))
    found = relevance.matched(h, "prazo-pix", "reembolso pix")
    assert found["source"] == "description" and len(found["snippet"]) <= 160
    assert found["snippet"].startswith("…Palavra comum") and found["snippet"].endswith("depois")  # the end reached
    assert [found["snippet"][a:b] for a, b in found["marks"]] == ["reembolso", "pix"]
    assert found["name_marks"] == [[6, 9]]  # "pix" begins the name's second word
