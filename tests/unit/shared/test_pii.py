"""PII redaction: typed placeholders, counts, what is kept, speed, and the labelled sets' figures."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from helpers.paths import ROOT

from shared.pii import redact


@pytest.mark.parametrize("text, expected", [
    ("mail ana@example.com now", "mail [email] now"),
    ("cpf 529.982.247-25.", "cpf [cpf]."),
    ("cnpj 11.222.333/0001-81", "cnpj [cnpj]"),
    ("card 4111 1111 1111 1111 ok", "card [card] ok"),
    ("tel (11) 98765-4321", "tel [phone]"),
    ("ip 189.45.201.7", "ip [ip]"),
    ("CEP 13083-970, pedido PED-48213, R$ 1.299,90", "CEP 13083-970, pedido PED-48213, R$ 1.299,90"),
    ("entregar na Rua das Flores, 123 amanhã", "entregar na [address] amanhã"),
    ("Avenida Brasil 4500", "[address]"),
    ("moro na av. getulio vargas 850 bl 3 ap 204, BH", "moro na [address], BH"),
    ("Rua 25 de Março, 1002, apto 31, CEP 01021-200", "[address], CEP 01021-200"),
    ("Rod. Raposo Tavares km 22, casa 14", "[address]"),
    ("deixa no apto 42 com a minha filha", "deixa no [address] com a minha filha"),
    ("ship to 42 Maple Street, apt 5B", "ship to [address]"),
    ("aqui é a Sra. Maria Aparecida Souza", "aqui é a Sra. [name]"),
    ("deixar com o porteiro Sr. José Carlos na portaria", "deixar com o porteiro Sr. [name] na portaria"),
    ("meu nome é ana paula ferreira e nao recebi", "meu nome é [name] e nao recebi"),
    ("my name is Robert Miller.", "my name is [name]."),
    ("aos cuidados de Beatriz Nogueira, recepção", "aos cuidados de [name], recepção"),
    ("a vizinha Rosângela pegou", "a vizinha [name] pegou"),
    ("RG 12.345.678-9 SSP/SP", "RG [rg] SSP/SP"),
    ("rg 123456789 sp", "rg [rg] sp"),
    ("o meu é MG-14.567.890", "o meu é MG-[rg]"),
    ("whats 11 9 8765 4321", "whats [phone]"),
    ("(11) 98765 4321 depois das 18h", "[phone] depois das 18h"),
    ("cvv 123", "cvv [cvv]"),
    ("o código de segurança é 4567", "o código de segurança é [cvv]"),
    ("chave pix 3f1c2b7e-8a9d-4e6f-b1c2-7d8e9f0a1b2c ok", "chave pix [pix] ok"),
    ("titulo de eleitor 1023 4567 8901", "titulo de eleitor [voter_id]"),
    ("meu título é 004356870906", "meu título é [voter_id]"),
])
def test_redaction_uses_typed_placeholders(text, expected):
    assert redact(text).text == expected


@pytest.mark.parametrize("text", [
    # the store's own addresses are knowledge
    "Nossa loja da Rua Augusta, 1500 abre às 10h.",
    "O CD de Cajamar fica na Rodovia Anhanguera, km 33.",
    "O centro de distribuição fica na Rodovia Fernão Dias, km 62.",
    "Retire no ponto de coleta da Praça da Liberdade, 450.",
    "Rua Augusta 1500 - nossa loja principal.",
    "Our store at 350 Fifth Avenue opens at 9 am.",
    "Nosso endereço para devolução é Rua do Porto, 77, galpão 3.",
    # products named like a street or a person
    "O Sofá Avenida 3 lugares está esgotado.",
    "A travessa oval 30 cm veio trincada.",
    "Vinho Estrada Real 750 ml safra 2019.",
    "A Cadeira Dona Flor sai por R$ 890,00.",
    "O Sr. Frio ar-condicionado 9000 BTUs tem garantia.",
    "Quero trocar o Mr. Músculo 500ml.",
    "Comprei a poltrona Seu Jorge em 5x.",
    "O livro Dona Flor e Seus Dois Maridos está na promoção.",
    # tiers, templates, carriers, and RG in other senses
    "Cliente Premium tem frete grátis; cliente Prime recebe em 24h.",
    "Seu Pedido #123456 foi enviado.",
    "O entregador Loggi tentou 3 vezes.",
    "Cabo RG58 de 50 metros e conector RG-6.",
    "Entregamos em Rio Grande (RG) em 3 a 5 dias úteis.",
    "pode usar RG ou CNH pra retirar",
    # numbers that look like phones, and prose that looks like a street
    "O pedido 2025 0042 foi dividido.",
    "ticket 4521-7788 aberto",
    "Comprei os modelos 2023 2024 do mesmo colchão.",
    "A rua estava bloqueada no dia 12, a entrega atrasou 2 dias.",
    "entrega prevista para 24/08/2026 entre 14:30 e 18:00",
    # a reference named by its word, a three-digit number with no security-code cue, 12 digits of an order
    "protocolo 3f1c2b7e-8a9d-4e6f-b1c2-7d8e9f0a1b2c aberto",
    "o modelo 123 tem 3 cores",
    "pedido 1023 4567 8901 enviado",
])

def test_near_misses_are_kept(text):
    assert redact(text).text == text



def test_the_stores_published_contacts_are_kept_and_a_customers_are_not():
    text = "Fale com SAC@casanatal.com.br ou (84) 3201-4455; a cliente usa ana@gmail.com e 84 98765-4321."
    assert redact(text, published=("sac@casanatal.com.br", "84 3201 4455")).text == (
        "Fale com SAC@casanatal.com.br ou (84) 3201-4455; a cliente usa [email] e [phone].")


def test_an_address_is_the_customers_when_the_nearest_cue_is_theirs():
    text = "Posso retirar na loja da Av. Paulista, 2073? Se não der, entrega na Rua Pamplona, 1200, apto 81."
    assert redact(text).text == "Posso retirar na loja da Av. Paulista, 2073? Se não der, entrega na [address]."


def test_a_slug_after_name_colon_is_not_a_name():
    assert redact("name: troca-em-30-dias").counts == {}


def test_redaction_counts_each_kind():
    result = redact("a@b.co, c@d.io, 529.982.247-25 and +1 415 555 0132")
    assert result.counts == {"email": 2, "cpf": 1, "phone": 1}
    result = redact("Sra. Teresa Campos, Av. Rio Branco, 156, sala 1204, RG 22.333.444-5, tel 21 99876 5432")
    assert result.counts == {"name": 1, "address": 1, "rg": 1, "phone": 1}


def test_a_valid_cpf_is_a_cpf_not_a_phone_and_an_invalid_one_is_left_alone():
    assert redact("52998224725").counts == {"cpf": 1}
    assert redact("123.456.789-00").counts == {}


def _fill(unit: str, size: int = 30_000) -> str:
    return (unit * (size // len(unit) + 1))[:size]


@pytest.mark.parametrize("unit", [
    "Rua ", "Av. ", "Rua Das Flores Bonitas Que Nunca ", "Rua X 1 apto 1 ", "Rod. X km 1 ", "apto 1 bloco B ",
    "Sr. ", "Sr. José ", "cliente Ana ", "meu nome é ", "12 Oak Avenue ", "RG 1234567 ", "11 9 8765 4321 ",
    "1 ", "1.", "a-", ". ", "Aa ", "a@b.", "1:",
    "Rua das Flores, 123, apto 4, Sr. José Silva, RG 12.345.678-9, (11) 98765 4321, loja. ",
])
def test_a_30_kb_adversarial_text_is_redacted_in_linear_time(unit):
    # Measured against itself in the same run: ten times the text takes about ten times as long when
    # the detectors are linear, a hundred when one backtracks quadratically. The absolute figure is the
    # benchmark's (./run script reports.pii --timing).
    small, big = _best(_fill(unit, 3_000), _fill(unit, 30_000))
    assert big < 30 * small + 0.005, f"3 KB {small * 1000:.2f} ms, 30 KB {big * 1000:.2f} ms"


def test_a_long_street_word_run_is_linear():
    small, big = _best("Rua " + "A" * 3_000, "Rua " + "A" * 30_000)
    assert big < 30 * small + 0.005, f"3 KB {small * 1000:.2f} ms, 30 KB {big * 1000:.2f} ms"


def _best(small: str, big: str, rounds: int = 5) -> tuple[float, float]:
    """The fastest of a few redactions of each text, in this thread's CPU time, the two texts taken
    in turn: another process (or the moto server's threads) on a loaded 2-core machine moves neither
    figure, and a slow spell of the caches moves both."""
    times: dict[str, list[float]] = {small: [], big: []}
    for _ in range(rounds):
        for text in (small, big):
            start = time.thread_time()
            redact(text)
            times[text].append(time.thread_time() - start)
    return min(times[small]), min(times[big])


def test_the_labelled_sets_meet_their_bar():
    result = subprocess.run([sys.executable, "-m", "scripts.reports.pii", "--json"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    reports = json.loads(result.stdout)
    names = reports.pop("names")
    assert reports["tuning"]["rows"] >= 150 and reports["heldout"]["rows"] >= 48
    for name, report in reports.items():
        table, near = report["table"], report["near_misses"]
        assert table["all"]["recall"] >= 0.95, (name, report["misses"])
        assert near["all"]["rate"] >= 0.95, (name, report["misses"])
        for kind in ("address", "name", "rg", "phone"):
            assert table[kind]["tp"] > 0 and table[kind]["recall"] >= 0.9, (name, kind, report["misses"])
        for kind in ("store_address", "product", "cep", "order", "price", "date", "rg_other"):
            assert near[kind]["total"] > 0 and near[kind]["rate"] >= 0.9, (name, kind, report["misses"])
    tuning = reports["tuning"]["table"]
    assert tuning["all"]["recall"] == 1.0 and tuning["all"]["precision"] >= 0.95, reports["tuning"]["misses"]
    for kind in ("email", "card", "cnpj", "cpf", "ip"):
        assert tuning[kind]["precision"] == 1.0, (kind, reports["tuning"]["misses"])


def test_bare_person_names_are_found_and_places_brands_and_products_are_left_on_both_names_sets():
    result = subprocess.run([sys.executable, "-m", "scripts.reports.pii", "--json"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    names = json.loads(result.stdout)["names"]
    tune, heldout = names["names tune"], names["names heldout"]
    assert tune["rows"] >= 250 and heldout["rows"] >= 150
    # Tuned on the tune set only; the held-out set was never looked at while tuning.
    assert tune["recall"] >= 0.95 and heldout["recall"] >= 0.8, (tune["recall"], heldout["recall"])
    assert tune["false_positive_rate"] <= 0.03 and heldout["false_positive_rate"] <= 0.06


@pytest.mark.parametrize("text, expected", [
    ("aqui é o paulo, o banho do Thor ta marcado?", "aqui é o [name], o banho do Thor ta marcado?"),
    ("Daniela Nunes aqui, quero cancelar", "[name] aqui, quero cancelar"),
    ("ok obrigado\natt, Leandro", "ok obrigado\natt, [name]"),
    ("o número tá no nome do meu pai osvaldo rocha", "o número tá no nome do meu pai [name]"),
    ("ROBERTO AQUI DE NOVO. CADÊ O REEMBOLSO?", "[name] AQUI DE NOVO. CADÊ O REEMBOLSO?"),
    ("Falar com a Letícia do Pão de Açúcar Vila Mariana", "Falar com a [name] do Pão de Açúcar Vila Mariana"),
    ("Entregamos em Natal, Salvador e Vitória; aceitamos Sodexo e Alelo.",
     "Entregamos em Natal, Salvador e Vitória; aceitamos Sodexo e Alelo."),
    ("tem loja em Vitória? sou de Vila Velha", "tem loja em Vitória? sou de Vila Velha"),
    ("A Poltrona Dona Rosa veio com defeito", "A Poltrona Dona Rosa veio com defeito"),
    # A city named like a person is the city where a place is said, and a person anywhere else.
    ("oi, boa tarde! moro em João Pessoa, o frete pro CEP 58038-000 é grátis?",
     "oi, boa tarde! moro em João Pessoa, o frete pro CEP 58038-000 é grátis?"),
    ("vcs tem entrega pra joao pessoa? e loja em Lauro de Freitas?",
     "vcs tem entrega pra joao pessoa? e loja em Lauro de Freitas?"),
    ("Paulo Afonso aqui, cade meu pedido 48213?", "[name] aqui, cade meu pedido 48213?"),
    ("meu nome é João Pessoa e moro em Recife", "meu nome é [name] e moro em Recife"),
    ("o pedido de Carlos Barbosa chegou quebrado", "o pedido de [name] chegou quebrado"),
    # "loja de" names the city; a person's order, a customer "de" a city, stays a person's name.
    ("Qual o horário na loja de João Pessoa?", "Qual o horário na loja de João Pessoa?"),
    ("a unidade de Paulo Afonso abre sábado?", "a unidade de Paulo Afonso abre sábado?"),
    ("o pedido de Paulo Afonso atrasou", "o pedido de [name] atrasou"),
    ("a cliente de João Pessoa ligou de novo", "a cliente de [name] ligou de novo"),
])
def test_a_bare_name_is_redacted_and_a_place_or_product_is_not(text, expected):
    assert redact(text).text == expected


def test_a_name_the_turn_gives_is_redacted_wherever_it_is_repeated():
    assert redact("A cliente KLEBERSON pediu; kleberson volta amanhã", known=("Kleberson",)).text == (
        "A cliente [name] pediu; [name] volta amanhã")


def test_a_concept_may_be_named_for_a_city_named_like_a_person_but_never_for_a_customer():
    from shared.pii import person_in_slug

    assert not person_in_slug("frete-joao-pessoa") and not person_in_slug("entrega-lauro-de-freitas")
    assert person_in_slug("cliente-joao-pessoa") and person_in_slug("paulo-afonso-vip")
    assert not person_in_slug("horario-da-loja-de-joao-pessoa") and person_in_slug("pedido-de-paulo-afonso")


@pytest.mark.parametrize("slug, kind", [
    ("cliente-529-982-247-25", "cpf"),  # 529.982.247-25, its dots and dash written as hyphens
    ("cliente-52998224725-vip", "cpf"),
    ("pedido-2024-529-982-247-25", "cpf"),  # read from any digit group on
    ("fornecedor-11-222-333-0001-81", "cnpj"),
    ("cliente-11-98765-4321", "phone"),
    ("whats-11987654321", "phone"),
    ("loja-centro-3456-7890", "phone"),  # read as the redactor reads "3456 7890"
    ("cliente-joana-prado-vip", "name"),
    ("cliente_529_982_247_25", "cpf"),  # a fact's name, with underscores
    # Numbers a store's concepts are named for: prices, CEPs, order and model numbers, years, sizes.
    ("frete-gratis-acima-199", None),
    ("parcelamento-sem-juros-10x", None),
    ("cep-01310-100-sao-paulo", None),
    ("pedido-1234-5678", None),
    ("prazo-natal-2025-2026", None),
    ("tamanhos-34-36-38-40", None),
    ("cliente-123-456-789-00", None),  # the check digits do not hold
    ("horario-da-loja-de-joao-pessoa", None),
])
def test_a_slug_carries_personal_data_when_its_digit_groups_spell_a_number_the_redactor_reads(slug, kind):
    from shared.pii import pii_in_slug

    assert pii_in_slug(slug) == kind
