"""What a turn's customer words offer as candidates: content words only, after PII redaction."""

from __future__ import annotations

from knowledge.format.turn import Turn
from knowledge.learning.traffic_words import customer_words


def turn(*messages: tuple[str, str]) -> Turn:
    return Turn.model_validate({"tenant": "default", "agent": "store-support", "session_id": "s1", "turn_id": "t1",
                                "completed_at": "2026-11-20T14:05:31Z",
                                "messages": [{"role": role, "content": text} for role, text in messages]})


def words(*messages: tuple[str, str]) -> list[str]:
    return [word for _, word in customer_words(turn(*messages))]


def test_only_the_customers_content_words_are_candidates_never_the_stores_or_filler():
    found = words(("user", "oi, bom dia! vc sabe se a telinha do smart tem conserto?"),
                  ("assistant", "Trocamos a tela em até 2 horas."))
    assert "telinha" in found and "smart" in found
    assert not {"oi", "bom", "dia", "vc", "voce", "se", "do", "tela", "trocamos", "hora"} & set(found)


def test_no_number_name_email_phone_or_document_is_a_candidate():
    found = words(("user", "sou a Marcela Fontoura, cpf 123.456.789-09, fone (11) 98765-4321, "
                           "marcela.fontoura@example.com, pedido 2024-00931, 12x, a telinha rachou"))
    assert {"telinha", "rachou"} <= set(found)
    assert not {"marcela", "fontoura", "example"} & set(found)
    assert not any(ch.isdigit() for word in found for ch in word)


def test_each_word_is_offered_once_per_turn():
    found = customer_words(turn(("user", "telinha telinhas"), ("user", "a telinha de novo")))
    assert [term for term, _ in found].count(found[0][0]) == 1
