"""The words prompt and its answer (docs/contract.md): one concept asked with the instruction the stand-in
proposal files were answered from and answered with an array; a batch asked by `name:` lines and answered
with an object keyed by name; anything else is no answer."""

import pytest
from helpers.concepts import make_concept

from knowledge.learning.word_prompt import BATCH_MAX, SYSTEM, SYSTEM_BATCH, parse_answer, words_prompt
from shared.errors import ModelAnswerUnusable


def concept(name: str):
    return make_concept(name, description=f"Sobre {name}.", type="fact", body=f"O texto de {name}.")


def test_one_concept_is_asked_as_the_stand_in_was_and_a_batch_names_each_concept_on_its_own_line():
    system, user = words_prompt([concept("frete")])
    assert system == SYSTEM and user == "name: frete\ntype: fact\ndescription: Sobre frete.\n\nO texto de frete."
    system, user = words_prompt([concept("frete"), concept("troca")])
    assert system == SYSTEM_BATCH and "JSON object" in system
    assert user.split("\n\n---\n\n") == [words_prompt([concept(n)])[1] for n in ("frete", "troca")]
    with pytest.raises(ValueError):
        words_prompt([concept(f"c{i}") for i in range(BATCH_MAX + 1)])


def test_an_answer_is_an_array_for_one_concept_or_an_object_keyed_by_name():
    assert parse_answer('["frete gratis", "fretinho"]', ["frete"]) == ({"frete": ["frete gratis", "fretinho"]}, 0)
    assert parse_answer('```json\n{"frete": ["fretinho"]}\n```', ["frete"]) == ({"frete": ["fretinho"]}, 0)
    answered, unknown = parse_answer('{"frete": ["fretinho"], "troca": [], "outro": ["x"], "mais": []}',
                                     ["frete", "troca"])
    assert answered == {"frete": ["fretinho"], "troca": []} and unknown == 2  # unknown names ignored, counted


@pytest.mark.parametrize("answer", [
    "Claro! fretinho, frete gratis",  # not JSON
    '["fretinho"]',  # an array for a batch: whose words?
    '{"frete": "fretinho"}',  # a value that is no array
    '{"frete": ["fretinho", 3]}',  # a phrase that is no string
    '{"frete": [' + ", ".join(['"x"'] * 51) + "]}",  # longer than any answer to what was asked
    '"fretinho"',
])
def test_anything_else_is_no_answer(answer):
    with pytest.raises(ModelAnswerUnusable):
        parse_answer(answer, ["frete", "troca"])
