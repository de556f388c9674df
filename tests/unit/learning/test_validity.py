"""The date reading: every end and start the dated statements state is found, none invented, and
durations, schedules, times of day and unresolvable phrases give no date."""

from __future__ import annotations

import json
from datetime import date, datetime

import pytest
from helpers.paths import ROOT

from knowledge.learning.validity import Validity, easter, read_validity

DATED = ROOT / "tests" / "data" / "truth" / "dated_turns.jsonl"
TODAY = date(2026, 11, 24)  # a Tuesday


def _rows() -> list[dict]:
    return [json.loads(line) for line in DATED.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_stated_start_and_end_of_the_dated_set_is_read_and_none_is_invented():
    wrong = []
    for row in _rows():
        read = read_validity(row["text"], datetime.fromisoformat(row["completed_at"]).date())
        got = (read.valid_from.isoformat() if read.valid_from else None,
               read.valid_until.isoformat() if read.valid_until else None)
        if got != (row["valid_from"], row["valid_until"]):
            wrong.append((row["id"], got))
    assert wrong == []


@pytest.mark.parametrize("text", [
    "O prazo de troca é de 7 dias após o recebimento do produto.",
    "Entregamos em até 4 dias úteis para o interior de SP.",
    "Atendimento de segunda a sexta, das 9h às 18h, e sábado até as 13h.",
    "Pedidos feitos até as 14h são enviados no mesmo dia.",
    "O boleto vence até o dia 10 de cada mês.",
    "Parcelamos em até 12x sem juros em compras acima de R$ 300.",
    "Promoção válida enquanto durarem os estoques.",
    "Oferta por tempo limitado!",
    "O frete grátis vale até segunda ordem.",
    "A partir da segunda compra você ganha frete grátis.",
    "Peças a partir de R$ 29,90.",
    "Até hoje nenhum pedido foi extraviado nessa rota.",
    "Obrigado pelo contato! Até amanhã!",
    "A garantia é de 12 meses a partir da data da compra.",
    "O cupom NATAL10 dá 10% de desconto.",
    "Os pedidos são entregues de 3 a 5 dias úteis.",
    "A promoção vai até o fim do estoque.",
])
def test_a_duration_a_schedule_a_time_of_day_or_an_unresolvable_phrase_gives_no_date(text):
    assert read_validity(text, TODAY) == Validity()


@pytest.mark.parametrize("text, valid_from, valid_until", [
    ("Só até as 23h59 de hoje: 30% off.", None, TODAY),
    ("Frete grátis em todo o site até domingo (30/11).", None, date(2026, 11, 30)),
    ("Na Black Friday de 2026 tudo com 30% off.", date(2026, 11, 27), date(2026, 11, 27)),
    ("A promoção começa amanhã.", date(2026, 11, 25), None),
    ("Válido para compras entre 10/12 e 15/12.", date(2026, 12, 10), date(2026, 12, 15)),
    ("Hoje é o último dia da promoção!", None, TODAY),
    ("Frete grátis até o Natal.", None, date(2026, 12, 25)),
])
def test_dates_written_the_ways_stores_write_them_are_resolved_against_the_turn_s_day(text, valid_from, valid_until):
    assert read_validity(text, TODAY) == Validity(valid_from, valid_until)


@pytest.mark.parametrize("text", [
    "A receita leva 1/2 xícara de leite e fica pronta até 1/2 hora depois.",
    "Devolvemos até 1/2 do valor do frete em vale-compras.",
    "O seguro cobre até 2/3 das peças e até 3/4 do preço.",
    "A meia vai até 1/2 cano; a bota, até o joelho.",
    "Cabe até 1/2 kg por caixa.",
    "Enche de 1/2 a 3/4 do tanque.",
])
def test_a_fraction_is_no_date(text):
    assert read_validity(text, TODAY) == Validity()


@pytest.mark.parametrize("text, valid_until", [
    ("Cupom vale até 1/2.", date(2027, 2, 1)),  # a day and a month, with nothing measured after it
    ("Frete grátis até 1/12 em todo o site.", date(2026, 12, 1)),
    ("Cano de 1/2 polegada com 20% off até 30/11.", date(2026, 11, 30)),  # the fraction beside a date
    ("Desconto de 1/2 do frete até 15/12 (segunda).", date(2026, 12, 15)),
    ("Vale até 25/12 do ano que vem? Não: até 25/12.", date(2026, 12, 25)),  # not a proper fraction
])
def test_a_date_beside_or_like_a_fraction_is_still_read(text, valid_until):
    assert read_validity(text, TODAY).valid_until == valid_until


def test_easter_and_carnival_follow_the_calendar():
    assert easter(2026) == date(2026, 4, 5) and easter(2027) == date(2027, 3, 28)
    assert read_validity("Vale até o Carnaval.", date(2027, 1, 10)).valid_until == date(2027, 2, 9)
