"""What the floor reads beside rarity (knowledge.recall.signals, issue 40): a model word as common as
"carro" does not make a chat about a car the store's business; a one-word question reaches the
concept whose description says the word; a learned phrase matches as a phrase, and a model's by
its rare words too."""

from __future__ import annotations

from datetime import date

from helpers.concepts import make_concept

from knowledge.format.learned_words import LearnedWord
from knowledge.recall import signals
from knowledge.recall.index import Index
from knowledge.recall.signals import floor_weight, model_weight, zipf_of

DAY = date(2026, 11, 20)


def index_of(*concepts):
    index = Index()
    for concept in concepts:
        index.upsert(concept.name, "etag", concept, b"")
    index.settle()
    return index


def names(index, message):
    return [hit.name for hit in index.relevant(message, 5, 1.0)]


def taught(concept, *words, origin="model"):
    return concept.replace(learned_words=tuple(LearnedWord(w, origin, 0 if origin in ("model", "operator") else 3, DAY)
                                               for w in words))


def concepts(*specs):
    """A concept for each (name, description, body)."""
    return [make_concept(name, description=description, body=body) for name, description, body in specs]


def store(parking, *others):
    return index_of(parking, *others, *[make_concept(f"outro-{i}", description=f"Assunto {i} da loja.",
                                                      body=f"Regra {i} sobre pedidos e pagamentos.")
                                         for i in range(40)])


def test_the_tables_know_everyday_words_and_not_the_stores_trade():
    assert zipf_of("carro") > 5 and zipf_of("casa") > 5
    assert zipf_of("catraca") == 0.0 and zipf_of("bioimpedancia") == 0.0  # rarer than COMMON_FROM: whole
    assert floor_weight("carro") < floor_weight("gasolina") < floor_weight("catraca") == 1.0
    assert model_weight("catraca") == 1.0 and model_weight("casa") == 0.0


def test_a_model_word_as_common_as_carro_does_not_make_a_chat_about_a_car_the_stores_business():
    parking = make_concept("estacionamento", description="Estacionamento conveniado para alunos.",
                           body="Duas horas grátis no Park Center com o cartão da academia.")
    by_model = store(taught(parking, "carro", "manobrista"))
    assert names(by_model, "o carro do meu vizinho ta fazendo um barulho estranho kkk") == []
    assert names(by_model, "vcs tem manobrista?")[:1] == ["estacionamento"]  # a rare model word still teaches
    # The same word, taught by three customers' chats, is what customers call it: it counts whole.
    by_traffic = store(taught(parking, "carro", origin="loaded"))
    assert names(by_traffic, "onde deixo o carro?")[:1] == ["estacionamento"]


def test_a_one_word_question_reaches_the_concept_whose_description_says_it():
    warranty = make_concept("garantia-fabrica", description="Garantia de fábrica de 12 meses em todo aparelho.",
                            body="O fabricante cobre defeitos; a loja encaminha.")
    # Eight other concepts speak of the warranty in their bodies: the word alone is common here.
    others = [make_concept(f"servico-{i}", description=f"Serviço {i} da assistência.",
                           body=f"O serviço {i} não altera a garantia do aparelho nem o prazo do reparo.")
              for i in range(8)]
    index = store(warranty, *others)
    assert names(index, "e a garantia?")[:1] == ["garantia-fabrica"]
    # Not a question about it: thanks for the service, a word after a greeting's question mark.
    assert names(index, "tudo bem? so queria dizer que a garantia foi otima") == []


def test_a_learned_phrase_matches_only_with_its_words_adjacent(monkeypatch):
    monkeypatch.setattr(signals, "JUDGE", False)  # the phrase alone, not the judgment of a taught agent
    refund = taught(make_concept("reembolso-estorno", description="Prazos de estorno no cartão e no Pix.",
                                 body="O estorno cai em até 2 faturas."), "dinheiro de volta")
    index = store(refund)
    assert names(index, "quero meu dinheiro de volta")[:1] == ["reembolso-estorno"]
    assert names(index, "a grana ta curta e o dinheiro do imposto nem caiu, volta logo") == []


def test_a_models_phrase_also_reaches_a_message_by_its_rare_word_and_an_operators_only_whole(monkeypatch):
    monkeypatch.setattr(signals, "JUDGE", False)  # the words alone, not the judgment of a taught agent
    freeze = make_concept("trancamento-plano", description="Como trancar o plano por um período.",
                          body="O plano fica trancado de 30 a 90 dias por ano, pelo app.")
    asked = "da pra pausar a academia uns 40 dias? vou operar o joelho"
    # "pausar" is rare in the language: a model's "pausar plano" teaches it alone too.
    assert names(store(taught(freeze, "pausar plano")), asked)[:1] == ["trancamento-plano"]
    # An operator wrote exactly that phrase: only the phrase, its words adjacent, reaches it.
    assert names(store(taught(freeze, "pausar plano", origin="operator")), asked) == []
    assert names(store(taught(freeze, "pausar plano", origin="operator")), "quero pausar plano")[:1] == \
        ["trancamento-plano"]


def test_an_agent_the_model_taught_judges_whether_a_message_is_about_the_store_at_all():
    price = make_concept("objecao-preco", description="Quando o cliente acha o preço alto.",
                         body="Mostre o parcelamento em 10x e o frete grátis acima de R$ 199.")
    hours = make_concept("horario-lojas", description="Horário das lojas físicas.",
                         body="De segunda a sábado, das 9h às 20h; domingo das 10h às 16h.")
    chat = "o preço do frete da minha mudança subiu demais kkk"
    # Without a model word, the floor alone decides, as it always did: two shared words pass.
    plain = store(price, hours)
    assert names(plain, chat)[:1] == ["objecao-preco"]
    # The model taught the agent (a model word on any concept): the judgment reads the message too.
    by_model = store(taught(price, "caro"), hours)
    assert names(by_model, chat) == []
    assert names(by_model, "ta caro demais, faz em 10x?")[:1] == ["objecao-preco"]
    assert names(by_model, "qual o horário das lojas no domingo?")[:1] == ["horario-lojas"]


def test_an_english_question_to_a_portuguese_concept_is_not_judged_off_topic_for_its_english_words():
    # An English question's words are the language's, not another topic's: the Portuguese concepts
    # lack them as they lack the weather's. The judgment reads the language apart ("foreign").
    returns, hours = concepts(
        ("trocas-devolucoes", "Como trocar ou devolver um produto comprado.",
         "A troca é grátis em até 30 dias com a nota fiscal; o reembolso sai em até 7 dias úteis no mesmo meio de "
         "pagamento."),
        ("horario-lojas", "Horário das lojas físicas.", "De segunda a sábado, das 9h às 20h; domingo das 10h às 16h."))
    agent = store(taught(returns, "devolucao", "dinheiro de volta"), hours)
    assert names(agent, "I want to return these shoes, they are too small. Can I get my money back?")[:1] == [
        "trocas-devolucoes"]
    assert names(agent, "Can I exchange it for another size?")[:1] == ["trocas-devolucoes"]
    # English chat about something else shares a word or two and is still refused.
    assert names(agent, "my brother had to return his car to the rental after 7 days") == []
    assert names(agent, "what's the weather like in London tomorrow?") == []


def test_an_english_stores_concepts_are_judged_as_before():
    # Only a concept whose description leans to another language is foreign to an English message; a
    # description that says nothing either way ("Returns policy.") is not.
    returns, hours, *others = concepts(
        ("returns", "Returns policy.",
         "You can return any item within 30 days with the receipt; the refund goes back to your card in 7 business days."),
        ("hours", "Store opening hours.", "Monday to Saturday 9am to 8pm; Sunday 10am to 4pm."),
        *((f"topic-{i}", f"Store topic {i}.", f"Rule {i} on orders and payments.") for i in range(40)))
    agent = index_of(taught(returns, "refund", "money back"), hours, *others)
    assert names(agent, "I want to return these shoes, can I get my money back?")[:1] == ["returns"]
    assert names(agent, "my card got cloned and the bank took 7 days to give the money back") == []
    assert signals.is_foreign(True, "Formas de pagamento aceitas.")
    assert not signals.is_foreign(True, "Returns policy.")
    assert not signals.is_foreign(False, "Formas de pagamento aceitas.")
