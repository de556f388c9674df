"""An agent's vocabulary.yaml in a warm retrieval container: a save (journaled) is in force at the
next refresh, a file written by hand (`aws s3 cp`: no journal entry) at the next sweep, a file that
does not parse leaves the agent recalling without it (counted), and a quiet refresh asks S3 for
nothing more than before."""

from __future__ import annotations

import pytest
from helpers.concepts import make_concept
from helpers.fakes import Clock, Events

from knowledge.recall.lexicon import lexicon, lexicon_for
from knowledge.recall.retrieve import Retriever, RetrieveRequest
from knowledge.recall.warm import SWEEP_SECONDS
from knowledge.store.keys import vocabulary_key

T, A = "default", "store-support"
ASKED = "vocês aceitam alelo?"
READING = "readings:\n  - customers: [alelo, sodexo, ticket restaurante]\n    store: vale-alimentação vale-refeição\n"


@pytest.fixture
def grocery(counted):
    store, calls = counted
    # A grocery's agent of its own, so that the demo's wording (its "valor" shares the short stem of
    # "vale") is not what these tests measure: the reading being in force is.
    own = "knowledge:\n  retrieve: true\n"
    store.put_config(T, A, own, actor="operator:ana", if_match=store.get_config(T, A).etag)
    for listed in store.list(T, A):
        store.delete(T, A, listed.name, actor="operator:ana")
    for name, said in (("entrega-bairros", "Entregamos em todos os bairros da cidade em até 2 horas."),
                       ("troca-produtos", "Trocas de produtos com a nota fiscal em até 7 dias.")):
        store.create(T, A, make_concept(name, description=said, body=said), actor="operator:ana")
    store.create(T, A, make_concept("vale-alimentacao", description="Aceitamos vale-alimentação e vale-refeição.",
                                    body="Os cartões de vale-alimentação e vale-refeição valem no caixa e no site."),
                 actor="operator:ana")
    calls.clear()
    return store, calls


def names(retriever, message=ASKED):
    answer = retriever.retrieve(RetrieveRequest(agent=A, session_id="s1", message=message))
    return [c["name"] for c in answer["concepts"] if not c["linked"]]


def test_a_saved_reading_is_in_force_at_the_next_refresh_with_no_request_added_to_a_quiet_one(grocery):
    store, calls = grocery
    clock = Clock()
    retriever = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    assert names(retriever) == []  # the customer's word is no word of the store's
    stored, _ = store.put_vocabulary(T, A, READING, actor="operator:ana")
    assert names(retriever) == []  # within the window: nothing asked of S3
    clock.now += 5
    assert names(retriever) == ["vale-alimentacao"]
    assert names(retriever, "aceitam ticket restaurante?") == ["vale-alimentacao"]
    calls.clear()
    clock.now += 5
    names(retriever)
    assert calls["s3"] == 2  # a quiet refresh: the journal and knowledge.yaml If-None-Match, as without one
    held = retriever.knowledge(T, A)
    assert held.lexicon is not None and held.lexicon is not lexicon()  # the agent's own, not the places' alone
    assert held.vocabulary_etag == stored.etag


def test_a_file_written_by_hand_is_found_by_the_sweep_and_one_that_does_not_parse_is_left_out_counted(grocery, s3,
                                                                                                    bucket):
    store, calls = grocery
    clock = Clock()
    retriever = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    assert names(retriever) == []
    s3.put_object(Bucket=bucket, Key=vocabulary_key(T, A), Body=READING.encode())  # aws s3 cp: no journal entry
    clock.now += 5
    assert names(retriever) == []  # the journal says nothing of it
    clock.now += SWEEP_SECONDS
    assert names(retriever) == ["vale-alimentacao"]
    s3.put_object(Bucket=bucket, Key=vocabulary_key(T, A), Body=READING.replace("store:", "stor:").encode())
    clock.now += SWEEP_SECONDS
    assert names(retriever) == []  # recalls without it: not the last good one, not half of it
    assert retriever.counters.get("VocabularyInvalid", tenant=T, agent=A) == 1
    held = retriever.knowledge(T, A)
    assert "line 2 (reading 1)" in held.vocabulary_error and "stor" in held.vocabulary_error
    clock.now += SWEEP_SECONDS
    names(retriever)
    assert retriever.counters.get("VocabularyInvalid", tenant=T, agent=A) == 2  # at every sweep until it is fixed
    store.put_vocabulary(T, A, READING, actor="operator:ana", if_match=held.vocabulary_etag)
    clock.now += 5
    assert names(retriever) == ["vale-alimentacao"] and retriever.knowledge(T, A).vocabulary_error is None


def test_another_tenants_vocabulary_never_applies(grocery):
    store, _ = grocery
    other = "outra-loja"
    store.put_config(other, A, "knowledge:\n  retrieve: true\n", actor="operator:ana")
    for stored in store.load_all(T, A):  # the same concepts
        store.create(other, A, stored.concept, actor="operator:ana")
    store.put_vocabulary(other, A, READING, actor="operator:ana")
    retriever = Retriever(store, Events(), refresh_seconds=5, clock=Clock())
    answer = retriever.retrieve(RetrieveRequest(tenant=other, agent=A, session_id="s1", message=ASKED))
    assert [c["name"] for c in answer["concepts"]] == ["vale-alimentacao"]
    assert names(retriever) == []  # the default tenant's agent has no vocabulary


def test_agents_whose_files_are_the_same_text_share_one_lexicon_built_once():
    readings = ((("alelo",), "vale-alimentação"),)
    assert lexicon_for(readings, "etag-1") is lexicon_for(readings, "etag-1")
    assert lexicon_for(readings, "etag-2") is not lexicon_for(readings, "etag-1")
    assert lexicon_for((), "etag-3") is lexicon()


# ------------------------------------------------------------------ a reading alone passes the floor
def pharmacy_index():
    from knowledge.recall.index import Index

    said = {
        "devolucao-arrependimento": "Devolução por arrependimento em até 7 dias corridos após o recebimento, "
                                    "com a embalagem lacrada; o valor volta pelo mesmo meio de pagamento.",
        "pedido-atrasado": "Pedido atrasado: confira o rastreio no app e, passado o prazo, fale com o atendimento.",
        "horario-lojas": "As lojas abrem de segunda a sábado das 8h às 22h e aos domingos das 9h às 18h.",
        "farmacia-popular": "Somos credenciados no Farmácia Popular: a retirada é só na loja física, com receita.",
        "formas-pagamento": "Aceitamos Pix, cartões de crédito e débito e boleto bancário no site.",
        "entrega-expressa": "Entrega expressa em até 3 horas na capital, para pedidos feitos até as 18h.",
    }
    index = Index()
    for name, text in said.items():
        concept = make_concept(name, description=text.split(":")[0], body=text)
        index.upsert(name, "etag", concept, concept.render().encode())
    index.settle()
    return index


@pytest.mark.parametrize("message", [
    "desencanei",
    "quero largar mão do pedido",
    "Oi, boa tarde! Comprei um protetor solar semana passada pelo site, pedido 2024-10021, mas desencanei, "
    "não quero mais. Como faço? Obrigada, Renata",
])
def test_a_message_that_speaks_only_through_an_operators_reading_reaches_its_concept(message):
    index = pharmacy_index()
    readings = lexicon_for([(("largar mão", "desencanei"), "arrependimento")], None)
    assert "devolucao-arrependimento" not in [hit.name for hit in index.relevant(message, 5)]
    assert "devolucao-arrependimento" in [hit.name for hit in index.relevant(message, 5, readings=readings)]


def test_the_words_a_reading_explains_are_the_customers_own_never_its_stopwords():
    """A reading whose store words no concept has leaves the customer's words telling what unknown
    words tell; "de" and "do" in its phrase tell nothing, read or not."""
    from knowledge.recall.terms import stem

    reading = lexicon_for([(("largar de mão do pedido",), "arrependimento")], None).read(
        "quero largar de mão do pedido")
    assert reading.explained == {stem("largar"), stem("mão"), stem("pedido")}
    (added,) = reading.added
    assert added.explains == reading.explained
