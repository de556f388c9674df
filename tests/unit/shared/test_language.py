"""The language a concept or a fact is written in: the setting, the prompts' rule, the reading."""

from __future__ import annotations

import pytest

from facts.prompt import distill_prompt
from knowledge.format.config import parse_agent_config
from knowledge.format.turn import Message
from knowledge.learning.prompt import extraction_prompt
from shared.errors import InvalidConfig
from shared.language import detect, not_english, other_language

PT = ("Olá, boa tarde! Meu pedido 48213 ainda não chegou, vocês podem ver se já saiu do CD? "
      "O CEP é 13083-970 e eu paguei no Pix na segunda.")
EN = "Orders paid by 2pm on a business day are dispatched the same day from the Campinas warehouse."
ES = "Los pedidos pagados antes de las 14h se envían el mismo día desde el centro de distribución."


@pytest.mark.parametrize("text, language", [
    (PT, "pt"), (EN, "en"), (ES, "es"),
    ("Pedidos pagos até as 14h em dia útil são despachados no mesmo dia pelo CD de Campinas.", "pt"),
    ("pedido nao chegou ainda, vcs podem ver pra mim? o cep eh 13083970 e paguei no pix", "pt"),
])
def test_a_text_that_says_its_language_plainly_is_read_as_it(text, language):
    assert detect(text) == language


@pytest.mark.parametrize("text", ["Frete grátis.", "Pix 5%", "CEP 13083-970", "Campinas DC", ""])
def test_a_short_text_says_no_language_and_is_never_counted_as_another(text):
    assert detect(text) is None
    assert not other_language(text, "pt") and not other_language(text, "en")


def test_another_language_is_one_plainly_written_in_another():
    assert other_language(EN, "pt") and other_language(EN, "pt-BR") and not other_language(PT, "pt-BR")
    assert not other_language(EN, None)  # nothing expected: nothing counted


@pytest.mark.parametrize("block", ["knowledge", "distill"])
def test_the_language_setting_takes_a_code_and_refuses_a_name_clearly(block):
    config = parse_agent_config(f"{block}:\n  language: pt-BR\n")
    assert getattr(config, block).language == "pt-BR"
    assert getattr(parse_agent_config(f"{block}: {{}}\n"), block).language is None
    with pytest.raises(InvalidConfig, match=r'language.*language code such as "pt", "pt-BR" or "en"'):
        parse_agent_config(f"{block}:\n  language: Portuguese\n")


def test_the_prompts_require_the_agents_language_or_the_conversations():
    from knowledge.format.turn import Turn

    turn = Turn.model_validate({
        "tenant": "default", "agent": "store-support", "session_id": "s1", "turn_id": "t1",
        "completed_at": "2026-11-20T14:05:31Z", "messages": [{"role": "user", "content": PT}]})
    system, _ = extraction_prompt(turn, ("fact",), None, (), "pt-BR")
    assert "write every description and body in Portuguese (pt-BR)" in system
    system, _ = extraction_prompt(turn, ("fact",), None)
    assert "write every description and body in the language the conversation is written in" in system
    system, _ = distill_prompt([Message(role="user", content=PT)], None, "es")
    assert "write every value in Spanish (es)" in system
    system, _ = distill_prompt([Message(role="user", content=PT)], None, "gn")
    assert "write every value in the language whose code is gn" in system


def test_a_one_line_description_leans_away_from_english_on_one_function_word():
    assert not_english("Formas de pagamento aceitas.")
    assert not_english("Horário das lojas físicas.")
    assert not_english("Políticas de envío y devoluciones.")
    assert not not_english("Returns policy.")  # says nothing either way
    assert not not_english("How to return a product and get your money back.")
    assert not not_english("The return policy for orders from Brazil")
