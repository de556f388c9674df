"""Recall's generic misses and false matches (issue 24): each test is a message of one class and
the concept it must, or must not, reach."""

from __future__ import annotations

import random

from helpers.concepts import make_concept

from knowledge.recall.analysis import BARE, Interval, analyze
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
    assert index.search("o frete é grátis?", 5)[0].name == "frete-gratis-acima-99"


def test_a_verb_never_meets_a_weekday_that_the_stemmer_cuts_the_same_way():
    index = index_of(
        make_concept("atendimento-sabado", description="Atendimento aos sábados das 9h às 13h.",
                     body="Aos sábados a loja abre só de manhã."),
        make_concept("troca-em-30-dias", description="Troca em até 30 dias.", body="Com a nota fiscal."))
    assert "atendimento-sabado" not in [hit.name for hit in index.search("vocês sabem se ainda dá?", 5)]
    assert names(index, "a loja abre no sábado?") == ["atendimento-sabado"]


def test_a_portuguese_loanword_is_not_read_as_an_english_word():
    index = index_of(
        make_concept("retirada-na-loja", description="Retirada grátis na loja.", body="Pronto em 2 horas."),
        make_concept("troca-em-30-dias", description="Troca em até 30 dias.", body="Com a nota fiscal."))
    assert index.search("perdi minha carteira no shopping, sabem de algo?", 5) == []
    assert [hit.name for hit in index.search("can I pick it up at the shop?", 5)] == ["retirada-na-loja"]


def test_question_words_are_not_what_a_message_asks_about():
    index = index_of(
        make_concept("clube-de-pontos", description="Quem compra ganha pontos no clube.",
                     body="Funciona assim: cada real vira um ponto, e nem precisa de cadastro."),
        make_concept("troca-em-30-dias", description="Troca em até 30 dias.", body="Com a nota fiscal."))
    assert names(index, "quem ganhou o jogo ontem? nem vi, como funciona a final?") == []
    assert names(index, "como funciona o clube de pontos?") == ["clube-de-pontos"]


def test_a_cep_after_no_or_without_its_hyphen_is_read_as_a_cep():
    assert analyze("entregam no 04571-010?", open_ranges=False).intervals == [Interval("cep", 4571, 4571)]
    assert analyze("entregam no 04571010?", open_ranges=False).intervals == [Interval("cep", 4571, 4571)]
    assert analyze("pedido no 04571010", open_ranges=False).intervals == []


def test_do_38_ao_44_is_a_range_and_years_are_counted_in_months():
    assert analyze("Calçados masculinos do 38 ao 44.").intervals == [Interval(BARE, 38, 44)]
    assert analyze("garantia de 2 anos").intervals == [Interval("meses", 24, 24)]
    index = index_of(
        make_concept("garantia-fabrica", description="Garantia de fábrica.", body="Amortecedores têm garantia de 1 ano."),
        make_concept("troca-em-30-dias", description="Troca em até 30 dias.", body="Com a nota fiscal."))
    assert index.search("amortecedor tem 12 meses?", 5)[0].name == "garantia-fabrica"


def test_a_number_outside_a_concepts_range_reaches_the_concept_that_answers_no():
    index = index_of(
        make_concept("parcelamento", description="Parcelamento no cartão de crédito.",
                     body="Parcelamos em até 10x sem juros, parcela mínima de R$ 30."),
        make_concept("grade-numeracao", description="Numerações disponíveis.",
                     body="Calçados femininos do 33 ao 40 e masculinos do 37 ao 44."),
        make_concept("troca-em-30-dias", description="Troca em até 30 dias.", body="Com a nota fiscal."),
        *[make_concept(f"outro-{i}", description=f"Outro assunto {i}.", body="Nada a ver.") for i in range(10)])
    def found(message):
        return [hit.name for hit in index.search(message, 5)]

    assert found("dá pra fazer em 12 vezes?") == ["parcelamento"]
    assert found("tem numeração 45?")[0] == "grade-numeracao"
    assert found("tem o 43?") == ["grade-numeracao"]
    assert found("dá pra fazer em 30 vezes?") == []  # far from any range: not an answer


def test_a_question_about_a_concept_by_its_own_name_reaches_it_however_common_its_words():
    # Every concept of this store speaks of its club and its advantages: the words tell little.
    index = index_of(
        make_concept("clube-de-vantagens", description="Programa de fidelidade Bem Viver.",
                     body="Cada real em compras vira um ponto."),
        *[make_concept(f"servico-{i}", description=f"Serviço {i} da loja.",
                       body=f"O serviço {i} é agendado pelo app; membros do clube têm vantagens nele, "
                            "como prioridade no atendimento e desconto na taxa.") for i in range(12)],
        *[make_concept(f"outro-{i}", description=f"Outro assunto {i}.", body="Nada a ver.") for i in range(27)])
    assert names(index, "como funciona o clube de vantagens de vcs")[0] == "clube-de-vantagens"


def test_a_place_abroad_reaches_the_concept_that_says_the_store_does_not_ship_out_of_brazil():
    index = index_of(
        make_concept("regioes-nao-atendidas", description="Destinos para onde a loja não entrega.",
                     body="Não entregamos para Fernando de Noronha, para caixa postal nem para fora do Brasil."),
        make_concept("prazo-entrega", description="Prazo de entrega por região.", body="Sul e Sudeste em 2 a 5 dias úteis."),
        make_concept("troca-em-30-dias", description="Troca em até 30 dias.", body="Com a nota fiscal."))
    assert names(index, "Do you deliver to Buenos Aires?")[0] == "regioes-nao-atendidas"
    assert names(index, "vcs entregam no Chile?")[0] == "regioes-nao-atendidas"
    assert names(index, "qual a capital do Chile?") == []


def test_a_cap_stated_with_a_verb_between_the_negation_and_the_number_is_a_cap():
    assert analyze("Não parcelamos em mais de 10 vezes.").intervals == [Interval("x", 0, 10)]
    assert analyze("O frete é grátis acima de R$ 199.").intervals == [Interval("R$", 199, float("inf"))]
