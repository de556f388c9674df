"""Retrieval: the exact block, ranking quality, links, and the index under change (the warm index and
its freshness: test_warm_index.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.concepts import make_concept
from helpers.paths import DEMO, ROOT
from helpers.vocabulary import demo_lexicon

from knowledge.format.concept import parse
from knowledge.format.config import parse_config
from knowledge.recall.index import Index
from knowledge.recall.terms import stem
from knowledge.recall.retrieve import render_block, select

T, A = "default", "store-support"


def index_of(*concepts, **options):
    index = Index(**options)
    for concept in concepts:
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    return index


def demo_index():
    return index_of(*(parse(p.read_text()) for p in sorted(DEMO.glob("*.md"))))


CONFIG = parse_config((DEMO / "knowledge.yaml").read_text())
FURNITURE = demo_lexicon()  # the demo store's own readings (its vocabulary.yaml)


def test_the_block_has_the_seeds_exact_shape():
    injected = select(demo_index(), "Moro em Campinas, o frete é grátis?", CONFIG, readings=FURNITURE)
    assert render_block(injected) == (
        "<knowledge>\n"
        '  <concept name="frete-gratis-acima-199" confidence="0.95" provenance="policy">'
        "Frete grátis para compras acima de R$199 nas regiões Sul e Sudeste.</concept>\n"
        '  <concept name="cep-sudeste-cd-campinas" confidence="0.70" provenance="observed">'
        "CEPs 13xxx-13999 são atendidos pelo CD de Campinas, em 1-2 dias úteis.</concept>\n"
        '  <concept name="objecao-frete-caro" confidence="0.60" provenance="observed" said-by="customers">'
        "Clientes hesitam quando o frete passa de 15% do valor do carrinho.</concept>\n"
        "</knowledge>\n"
        "\n"
        "If the customer's question needs more than the summary above, call\n"
        '`load_knowledge("name")` FIRST — before any other lookup for that topic.\n'
        "This is learned from past conversations, not official policy: never state\n"
        'a `provenance="observed"` concept to the customer as a guarantee.\n'
        'A `said-by="customers"` concept is what customers have said, not what the store says:\n'
        "never repeat it to a customer as true, and answer it with what the store says.")


def test_the_warning_appears_only_with_an_observed_concept():
    policy_only = select(demo_index(), "posso trocar o produto em 30 dias?", CONFIG, readings=FURNITURE)
    assert [i.hit.name for i in policy_only] == ["troca-em-30-dias", "rastreio-pedido"]
    block = render_block([i for i in policy_only if not i.linked])
    assert "not official policy" not in block and block.endswith("before any other lookup for that topic.")
    assert "not official policy" in render_block(policy_only)  # the linked concept is observed


def test_hostile_text_is_escaped():
    hostile = make_concept("evil", description='"><script>alert(1)</script> & \'x\'', body="frete evil script")
    block = render_block(select(index_of(hostile), "frete evil script", CONFIG, readings=FURNITURE))
    assert '<concept name="evil" confidence="0.60" provenance="observed">' in block
    assert "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; 'x'</concept>" in block
    assert "<script>" not in block


@pytest.mark.parametrize("message", ["oi, tudo bem?", "qual é a capital da França?", "bom dia!", "ok",
                                     "valeu, até mais", "quanto é 3 mais 3?"])
def test_small_talk_injects_nothing(message):
    assert select(demo_index(), message, CONFIG, readings=FURNITURE) == []


@pytest.mark.parametrize("message", ["valeu, até mais", "quanto é 3 mais 3?", "obrigada, era só isso",
                                     "oi, tudo bem?", "bom dia, tudo bem com vc?", "kkkkk"])
def test_small_talk_injects_nothing_in_a_store_of_44_concepts(message):
    # "vale-presente" (valeu), "3 a 5 dias" and "boleto em 3 dias" (3) are all in this store.
    assert select(labelled_index(), message, CONFIG, readings=FURNITURE) == []


_LABELLED = []


def labelled_index():
    if not _LABELLED:  # built once: the tests below only read it
        from scripts.reports import retrieval as retrieval_report

        _LABELLED.append(index_of(*retrieval_report.concepts_of()))
    return _LABELLED[0]


def injected(message):
    return [i.hit.name for i in select(labelled_index(), message, CONFIG, readings=FURNITURE) if not i.linked]


@pytest.mark.parametrize("message", ["obrigado, vou agradecer ao atendente", "agradecemos a atenção de vocês",
                                     "muito obrigada, agradecida mesmo", "obrigadao!!", "brigadão, até mais"])
def test_thanks_in_any_form_injects_nothing(message):
    assert injected(message) == []


def test_vezes_is_a_number_of_installments_only_when_it_counts_installments():
    assert injected("parcelei em 3 vezes")[0] == "parcelamento-10x-sem-juros"
    assert injected("quero parcelar em 12 vezes")[0] == "parcelamento-10x-sem-juros"
    # Before, "7 vezes" read as 7 installments and reached the 10x concept.
    for message in ("quanto é 7 vezes 8?", "quantas vezes tentei e nada", "tentei umas 3 vezes e nada"):
        assert injected(message) == [], message


@pytest.mark.parametrize("small_talk, question, expected", [
    ("qual a capital do Japão?", "a montagem é grátis nas capitais?", "montagem-gratis-capitais"),
    ("minha irmã mora em Curitiba, faz frio lá?", "moro em Curitiba, em quantos dias chega?", "cep-sul-cd-curitiba"),
    ("abri uma conta no Nubank ontem", "esqueci a senha da minha conta", "recuperar-senha"),
    ("qual o melhor bairro pra morar em Campinas?", "Moro em Campinas, quanto tempo demora a entrega?",
     "cep-sudeste-cd-campinas"),
])
def test_one_rare_store_word_in_small_talk_injects_nothing_but_in_a_question_about_it_does(small_talk, question,
                                                                                           expected):
    assert injected(small_talk) == []
    assert injected(question)[0] == expected
    # The studio's search and extraction's known-concepts list have no floor: they still see it.
    assert labelled_index().search(small_talk, 5)


def test_a_single_store_word_passes_when_the_message_asks_the_store_for_it():
    assert injected("tem montagem em BH?")[0] == "montagem-gratis-capitais"  # BH reads as Minas Gerais, Sudeste
    assert "cupom-nao-cumulativo" in injected("posso usar dois cupons?")


@pytest.mark.parametrize("small_talk", ["qual a população de Recife?", "qual a capital do Ceará?",
                                        "o Rio de Janeiro continua lindo", "a Rua Augusta é boa pra sair à noite?",
                                        "tem previsão de chuva pro Rio de Janeiro amanhã?"])
def test_a_concept_sharing_only_places_with_the_message_answers_nothing_asked(small_talk):
    assert injected(small_talk) == []
    assert labelled_index().search(small_talk, 5)  # the raw search still sees the place


@pytest.mark.parametrize("message, expected", [
    ("sou de Teresina, em quantos dias chega?", "cep-nordeste-cd-recife"),  # a capital the store never wrote
    ("moro em Natal, qual o prazo?", "cep-nordeste-cd-recife"),  # Natal the city, after "em"
    ("entregam em Londrina? quanto tempo leva", "cep-sul-cd-curitiba"),
])
def test_a_city_the_store_never_wrote_reads_as_its_region(message, expected):
    assert injected(message)[0] == expected


@pytest.mark.parametrize("message, expected", [
    ("cadê minha encomenda?", {"pedido-atrasado", "rastreio-pedido"}),
    ("meu pedido 88123 ainda não chegou", {"pedido-atrasado"}),
    ("o pedido chegou todo quebrado", {"produto-avariado-na-entrega"}),  # "chegou" alone is no delay
    ("vocês montam os móveis que eu comprar?", {"montagem-gratis-capitais"}),
    ("quando o dinheiro volta pra minha conta do pix?", {"reembolso-pix-prazo"}),
    ("posso buscar na loja?", {"retirada-na-loja"}),
    ("vcs entregam fora do brasil?", {"international-shipping-none"}),
])
def test_what_customers_write_reaches_what_the_store_wrote(message, expected):
    assert injected(message)[0] in expected


def test_a_reading_of_a_word_the_store_wrote_never_outranks_the_store_word():
    # "estorno" reads as "reembolso" too, but the store wrote "estorno": its concept stays first.
    assert injected("o estorno do cartão demora?")[0] == "estorno-cartao-faturas"
    # The studio's search takes the words as written: no readings, no typos read.
    assert [hit.name for hit in labelled_index().search("cadê minha encomenda", 5)] == ["pedido-atrasado"]
    assert labelled_index().search("reembolço", 5) == []


@pytest.mark.parametrize("message, expected", [
    ("até q horas tenho q pagar pra sair hj?", "despacho-mesmo-dia"),  # chat shorthand: q, hj
    ("recebi a mesa faz 2 semanas, ainda posso devolver?", "troca-em-30-dias"),  # 2 semanas is 14 days
    ("do you deliver to Lisbon or Buenos Aires?", "international-shipping-none"),  # abroad
    ("a entrega ja passa de 10 dias, tem algo mais rapido?", "objecao-prazo-longo"),  # "passa de 7 dias" is a range
])
def test_shorthand_weeks_abroad_and_open_ranges(message, expected):
    assert expected in injected(message)[:2]


# Everyday sentences that use a word the lexicon reads ("atrasou", "buscar", "acabou", "late"):
# one reading counts as one word, and everyday single words are read only in a store's phrase.
@pytest.mark.parametrize("small_talk", [
    "meu voo atrasou de novo", "estou perdido nessa matéria de cálculo", "sorry for the late reply",
    "it's getting late, good night", "vou buscar meu filho na escola agora", "o site não abre no meu celular",
    "o Brasil vai vencer a Copa?", "vamos dividir a conta do restaurante", "é a primeira vez que vou a Paris",
    "vocês postam no instagram?", "acabou a luz aqui em casa", "preciso limpar a casa hoje",
    "o Flamengo perdeu, perderam feio", "vocês entregam antes do Natal?", "feliz natal pra vcs",
    "we went together to the beach",
    "vou montar um time de futebol", "o restaurante fecha que horas?", "oi, aqui é a Marcela, tudo bem?",
    "minha receita de bolo ficou ótima", "I changed my mind",
])
def test_everyday_words_the_lexicon_reads_inject_nothing_in_small_talk(small_talk):
    assert injected(small_talk) == []


@pytest.mark.parametrize("message, expected", [
    ("moro no Rio, qual o prazo?", "cep-rio-cd-caxias"),
    ("moro em Niterói, quanto tempo demora?", "cep-rio-cd-caxias"),  # Niterói adds the state of Rio
    ("qual o prazo de entrega pro Rio Grande do Sul?", "cep-sul-cd-curitiba"),  # "grande" is no word of it
    ("vocês entregam em Natal?", "cep-nordeste-cd-recife"),
    ("oi, aqui é a Marcela, meu pedido não chegou", "pedido-atrasado"),
])
def test_a_place_reads_as_its_state_and_region_and_its_name_as_one_word(message, expected):
    assert injected(message)[0] == expected


def test_a_concept_sharing_only_places_is_never_injected_even_behind_one_that_answers():
    got = injected("moro no Rio, tem desconto no pix?")
    assert got[0] == "desconto-pix-5"
    # Both outscore later hits, but share only "Rio" (and the Sudeste) with the message.
    assert "cep-rio-cd-caxias" not in got and "envio-expresso-capitais" not in got
    assert "cep-rio-cd-caxias" in [hit.name for hit in labelled_index().search("moro no Rio, tem desconto no pix?", 5)]


def test_a_name_is_never_read_as_a_typo_and_a_typo_reads_only_into_a_long_store_word():
    index = labelled_index()
    assert index.corrected("parcelaa") == stem("parcela")
    assert index.corrected("marcela") is None  # the first letter is never the typo
    assert "parcelamento-10x-sem-juros" not in injected("a minha irmã Parcelaa comprou o sofá")  # a name: mid-sentence capital
    assert injected("quero parcelaa em 10x")[0] == "parcelamento-10x-sem-juros"
    assert index.corrected("frente") is None  # "frete" is shorter than a typo's bound
    assert index.corrected("x" * 21) is None  # no word is that long: never built into a million strings


@pytest.mark.parametrize("message, expected", [
    ("qual o prazo de entrga pra campinas?", "cep-sudeste-cd-campinas"),
    ("quero o reembolço do meu pix", "reembolso-pix-prazo"),
    ("meu cartao foi recuzado", "cartao-recusado-procedimento"),
])
def test_a_word_one_typed_letter_away_reads_as_the_store_word(message, expected):
    assert injected(message)[0] == expected


def test_a_typo_is_read_only_in_long_words_and_never_over_a_word_the_store_has():
    index = labelled_index()
    assert index.corrected("marco") is None  # five letters: "março" is not "marca"
    assert index.corrected("entrga") == stem("entrega")
    assert index.corrected("xyzwvut") is None
    assert injected("o pedido chegou, obrigado pela atenção") == []


@pytest.mark.parametrize("message, expected", [
    ("Olá, meu cartão foi recusado duas vezes na hora de fechar a compra, o que eu faço? Tenho limite disponível.",
     "cartao-recusado-procedimento"),
    ("Paguei com Pix e cancelei a compra, em quantos dias recebo o reembolso?", "reembolso-pix-prazo"),
    ("boa noite, moro em recife, quanto tempo a entrega demora pra chegar aqui?", "cep-nordeste-cd-recife"),
    ("Hi, I'm in Campinas. When will my order arrive?", "cep-sudeste-cd-campinas"),
    ("Qual o prazo de entrega para o CEP 13083-970?", "cep-sudeste-cd-campinas"),
])
def test_a_long_message_with_one_clear_question_reaches_its_concept_first(message, expected):
    chosen = select(labelled_index(), message, CONFIG, readings=FURNITURE)
    assert [i.hit.name for i in chosen if not i.linked][0] == expected


@pytest.mark.parametrize("stated", ["CEPs 13000-13999 saem de Campinas.", "CEPs 13xxx saem de Campinas.",
                                    "CEPs 13000 a 13999 saem de Campinas.", "CEPs 13xxx-13999 saem de Campinas."])
@pytest.mark.parametrize("asked", ["meu cep é 13083-970, chega quando?", "cep 13083970, chega quando?",
                                   "meu cep é 13083, chega quando?"])
def test_a_cep_inside_a_stated_range_matches_that_concept(stated, asked):
    campinas = make_concept("cd-campinas", description=stated, body="Despacho pelo CD.")
    other = make_concept("cd-recife", description="CEPs 50000-56999 saem de Recife.", body="Despacho pelo CD.")
    filler = [make_concept(f"outro-{i}", description=f"Assunto {i} sem relação.", body="Texto.") for i in range(8)]
    index = index_of(campinas, other, *filler)
    assert index.relevant(asked, 5, 0, readings=FURNITURE)[0].name == "cd-campinas"
    assert index.relevant(asked.replace("13083", "52083"), 5, 0)[0].name == "cd-recife"


def test_numbers_match_whole_or_in_a_range_with_their_unit_never_as_a_lone_digit():
    index = labelled_index()
    assert index.relevant("quanto é 3 mais 3?", 5, 1.0, readings=FURNITURE) == []
    assert index.search("3", 5) == []  # a lone digit matches nothing, not "3 dias" nor "13000-13999"
    # An order number is no CEP, however CEP-shaped: it reaches no CEP range.
    assert "cep-sudeste-cd-campinas" not in [h.name for h in index.search("pedido 13083970", 5)]
    assert index.search("cep 13083970", 1)[0].name == "cep-sudeste-cd-campinas"
    # R$ inside a stated range ("R$50 a R$500") matches; the same number with no unit does not.
    assert "vale-presente" in [h.name for h in index.search("R$ 120", 5)]
    assert index.search("120", 5) == []


def test_a_stem_shared_by_accident_carries_no_match_alone_but_singular_and_plural_do():
    voucher = make_concept("vale-presente", description="Vale-presente digital.", body="Vale por 12 meses.")
    furniture = make_concept("garantia-moveis", description="Móveis têm garantia.", body="Defeitos de fabricação.")
    filler = [make_concept(f"outro-{i}", description=f"Assunto {i} sem relação.", body="Texto.") for i in range(8)]
    index = index_of(voucher, furniture, *filler)
    assert index.relevant("isso valeria a pena?", 5, 0, readings=FURNITURE) == []  # valeria: only a stem of vale
    assert "vale-presente" in [h.name for h in index.search("isso valeria a pena?", 5)]  # the raw search still sees it
    assert [h.name for h in index.relevant("o móvel tem garantia?", 5, 0, readings=FURNITURE)] == ["garantia-moveis"]
    assert [h.name for h in index.relevant("moveis", 5, 0, readings=FURNITURE)] == ["garantia-moveis"]


def test_a_verb_and_a_noun_of_the_same_long_stem_are_the_same_word():
    assert injected("parcelo em 12 vezes?")[0] == "parcelamento-10x-sem-juros"  # parcelo / parcela
    assert injected("o produto esgotou, e agora?")[0] == "avise-me-estoque"  # esgotou / esgotado


def test_matching_survives_accents_and_inflection():
    index = demo_index()
    assert index.search("frete gratis", 1)[0].name == "frete-gratis-acima-199"
    assert index.search("quero trocas", 1)[0].name == "troca-em-30-dias"
    assert index.search("installment", 1)[0].name == "parcelamento-sem-juros-10x"
    assert index.search("parcelas", 1)[0].name == "parcelamento-sem-juros-10x"  # English concept, Portuguese word


def test_links_are_one_hop_capped_and_never_duplicated():
    a = make_concept("a-frete", description="frete campinas", body="See [[b-link]], [[c-link]], [[missing]], [[a-frete]].")
    b = make_concept("b-link", description="unrelated b", body="Goes on to [[d-far]].")
    c = make_concept("c-link", description="unrelated c", body="c")
    d = make_concept("d-far", description="unrelated d", body="d")
    config = parse_config("knowledge:\n  top_k: 1\n  min_score: 0\n")
    injected = select(index_of(a, b, c, d), "frete campinas", config, readings=FURNITURE)
    assert [(i.hit.name, i.linked) for i in injected] == [("a-frete", False), ("b-link", True)]
    wide = select(index_of(a, b, c, d), "frete campinas", parse_config("knowledge:\n  top_k: 5\n  min_score: 0\n"),
                  readings=FURNITURE)
    assert [i.hit.name for i in wide] == ["a-frete", "b-link", "c-link"]  # no d-far: one hop only


def test_recency_breaks_ties():
    from datetime import datetime, timezone

    older = make_concept("older", description="frete campinas", body="x")
    newer = make_concept("newer", description="frete campinas", body="x",
                         updated_at=datetime(2026, 10, 1, tzinfo=timezone.utc))
    assert [h.name for h in index_of(older, newer).search("frete campinas", 2)] == ["newer", "older"]


def test_ties_at_the_cut_off_go_to_the_most_recent():
    from datetime import datetime, timedelta, timezone

    # Ten concepts scoring the same on the message, among forty: the top 3 are the 3 most recent of the ten,
    # whichever slots they hold.
    day = datetime(2026, 10, 1, tzinfo=timezone.utc)
    same = [make_concept(f"c{i:02d}", description="prazo de entrega em campinas", body="x",
                         updated_at=day + timedelta(days=(i * 7) % 10)) for i in range(10)]
    others = [make_concept(f"o{i:02d}", description=f"assunto {i} sem relação", body="y") for i in range(30)]
    newest = [c.name for c in sorted(same, key=lambda c: c.updated_at, reverse=True)[:3]]
    index = index_of(*others[:15], *same, *others[15:])
    assert [h.name for h in index.search("entrega campinas", 3)] == newest
    assert [h.name for h in index.relevant("qual o prazo de entrega em campinas?", 3, 0.0)] == newest


@pytest.fixture(scope="module")
def report():
    result = subprocess.run([sys.executable, "-m", "scripts.reports.retrieval", "--json"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_the_labelled_set_meets_the_targets(report):
    tuning = report["sets"]["tuning"]
    assert report["concepts"] >= 40
    assert tuning["queries"] + tuning["off_topic"] >= 120
    ours = tuning["rankers"]["index"]
    assert ours["long"]["n"] >= 30 and ours["off_topic"]["n_off_topic"] >= 40 and ours["english"]["n"] >= 5
    overall = ours["overall"]
    # Issue 12's targets: hit@5 >= 0.95, MRR >= 0.90, off-topic <= 10%.
    assert overall["hit_at_5"] >= 0.95 and overall["mrr"] >= 0.90 and overall["off_topic_injecting"] <= 0.10


@pytest.mark.parametrize("which", ["tuning", "heldout-1, seen", "heldout-2, seen", "heldout-3, seen", "heldout-4"])
def test_the_index_is_never_below_plain_term_overlap_on_any_slice(report, which):
    rankers = report["sets"][which]["rankers"]
    for slice_, ours in rankers["index"].items():
        baseline = rankers["overlap"][slice_]
        if "hit_at_5" in ours and ours["n"]:
            assert ours["hit_at_5"] >= baseline["hit_at_5"] and ours["mrr"] >= baseline["mrr"], slice_
        if "off_topic_injecting" in ours and ours["n_off_topic"]:
            assert ours["off_topic_injecting"] <= baseline["off_topic_injecting"], slice_


# ------------------------------------------------------------------ the index under change

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

WORDS = ["frete", "grátis", "campinas", "troca", "pix", "boleto", "prazo", "entrega", "cupom", "garantia",
         "sofá", "colchão", "parcelas", "reembolso", "montagem", "loja"]
_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
_op = st.tuples(st.sampled_from(["put", "put", "put", "delete"]), st.integers(0, 7), _text, _text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, min_size=1, max_size=60), st.lists(_text, min_size=1, max_size=4))
def test_an_index_changed_one_concept_at_a_time_ranks_like_one_built_fresh(ops, questions):
    live = Index()
    final = {}
    for op, number, description, body in ops:
        name = f"c-{number}"
        if op == "delete":
            live.remove(name)
            final.pop(name, None)
        else:
            concept = make_concept(name, description=description, body=body)
            live.upsert(name, f"e{len(final)}", concept, b"")
            final[name] = concept
        if number % 3 == 0:
            live.settle()  # sometimes between changes, as refreshes do
    fresh = index_of(*final.values())
    live.settle()
    assert set(live.docs) == set(fresh.docs)
    for question in questions:
        ours = [(h.name, h.score) for h in live.search(question, 5)]
        theirs = [(h.name, h.score) for h in fresh.search(question, 5)]
        assert {n for n, _ in ours} <= set(final)  # a deleted concept is never found
        assert len(ours) == len(theirs)
        # Weights follow the concepts held, not the history of changes: the same as a fresh build.
        for (_, mine), (_, fresh_score) in zip(ours, theirs):
            assert abs(mine - fresh_score) <= 1e-3 * fresh_score + 1e-6


def test_many_deletions_compact_the_postings():
    index = Index()
    for i in range(300):
        index.upsert(f"c-{i}", "e", make_concept(f"c-{i}", description=f"frete campinas {i}", body="texto " * 9 + "fim"), b"")
    index.settle()
    for i in range(250):
        index.remove(f"c-{i}")
    index.settle()
    # Compacted: no dead postings left, the 50 renumbered into the first 50 slots.
    assert len(index) == 50 and index.shape()[2] == 0
    assert sorted(index.slots_of(f"c-{i}" for i in range(250, 300)).tolist()) == list(range(50))
    assert {h.name for h in index.search("frete campinas", 60)} == {f"c-{i}" for i in range(250, 300)}


ONLY_POLICY = make_concept("prazo-de-troca", type="policy", provenance="policy", confidence=1.0, sources=(),
                           description="Trocas e devoluções em até 30 dias corridos após a entrega.",
                           body="A loja aceita trocas e devoluções em até 30 dias corridos após a entrega, com o "
                                "produto na embalagem original e a nota fiscal.")
DEFAULTS = parse_config("knowledge:\n  retrieve: true\n")  # min_score 1.0, the default


@pytest.mark.parametrize("message", ["qual o prazo de troca?", "posso devolver em quantos dias apos a entrega?",
                                     "trocas e devoluções", "oi boa noite, qual o prazo pra trocar? pedido 48213"])
def test_a_short_question_reaches_the_one_concept_of_a_small_index(message):
    # A tenant's one shared policy, a new agent's first FAQ row: min_score reads rarity as the floor does
    # (as if there were 40 concepts), or every word of a one-concept index would weigh 0.29 against 3.3.
    assert [i.hit.name for i in select(index_of(ONLY_POLICY), message, DEFAULTS)] == ["prazo-de-troca"]


def test_read_as_the_raw_bm25_score_min_score_keeps_a_short_question_from_the_one_concept():
    # What the scaling buys (scripts/reports/small_index.py compares both on the stores): unscaled, the
    # same question scores under the default min_score in a one-concept index, and nothing is injected.
    assert select(index_of(ONLY_POLICY, scaled_gate=False), "qual o prazo de troca?", DEFAULTS) == []
    assert index_of(ONLY_POLICY, scaled_gate=False).search("qual o prazo de troca?", 5)[0].name == "prazo-de-troca"


@pytest.mark.parametrize("message", ["oi, tudo bem?", "boa tarde, obrigado pela ajuda", "aceitam pix?",
                                     "qual o horário de funcionamento da loja?", "vocês vendem sofá?",
                                     "o frete pra Campinas é grátis?", "quero falar com um atendente"])
def test_what_the_one_concept_does_not_answer_stays_silent(message):
    assert select(index_of(ONLY_POLICY), message, DEFAULTS) == []
