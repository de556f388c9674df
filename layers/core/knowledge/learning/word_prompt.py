"""The words prompt and its answer: one contract for one concept (SYSTEM, answered with a JSON array) or
a batch (SYSTEM_BATCH, answered with a JSON object by name), so a stand-in can answer it from a file
(tests/data/stores/proposals). Parsing is strict: anything else is ModelAnswerUnusable.
docs/contract.md, "Learned words" ("The words prompt and its answer")."""

from __future__ import annotations

import json
from typing import Sequence

from knowledge.format.concept import Concept
from shared.errors import ModelAnswerUnusable
from shared.validation import unfence

PROPOSAL_MAX = 8  # phrases asked for, and kept at most, per concept
BATCH_MAX = 10  # concepts in one words message, and in one model call
ANSWER_MAX_ITEMS = 50  # an array longer than this is no answer to what was asked
SEPARATOR = "\n\n---\n\n"

SYSTEM = (
    "You help a store's support agent understand its customers. Given one topic of the store's "
    "knowledge, list the words and short phrases (1 to 3 words each) that customers write for it in "
    "chat and that the text does not already say: colloquial words, slang, abbreviations, common "
    "misspellings. Write in the language of the text, lowercase, with no numbers, names, brands of "
    f"people or contact details. Answer with a JSON array of at most {PROPOSAL_MAX} strings and "
    "nothing else."
)

SYSTEM_BATCH = (
    "You help a store's support agent understand its customers. Given several topics of the store's "
    "knowledge, each introduced by its `name:` line, list for each topic the words and short phrases "
    "(1 to 3 words each) that customers write for it in chat and that its text does not already say: "
    "colloquial words, slang, abbreviations, common misspellings. Write in the language of the text, "
    "lowercase, with no numbers, names, brands of people or contact details. Answer with a JSON object "
    f"mapping each topic's name to a JSON array of at most {PROPOSAL_MAX} strings, and nothing else."
)


def concept_block(concept: Concept) -> str:
    return f"name: {concept.name}\ntype: {concept.type}\ndescription: {concept.description}\n\n{concept.body}"


def words_prompt(concepts: Sequence[Concept]) -> tuple[str, str]:
    """(system, user) asking for the words of 1 to BATCH_MAX concepts."""
    if not 1 <= len(concepts) <= BATCH_MAX:
        raise ValueError(f"a words prompt asks for 1 to {BATCH_MAX} concepts")
    system = SYSTEM if len(concepts) == 1 else SYSTEM_BATCH
    return system, SEPARATOR.join(concept_block(c) for c in concepts)


def _phrases(value: object) -> list[str]:
    if not isinstance(value, list) or len(value) > ANSWER_MAX_ITEMS or not all(isinstance(w, str) for w in value):
        raise ModelAnswerUnusable("answer_not_array")
    return value


def parse_answer(answer: str, names: Sequence[str]) -> tuple[dict[str, list[str]], int]:
    """The phrases answered per asked name, and how many names the answer gave that were not asked
    (ignored). ModelAnswerUnusable unless the answer is a JSON array of strings (one concept asked) or
    a JSON object whose values are such arrays."""
    try:
        data = json.loads(unfence(answer))
    except ValueError:
        raise ModelAnswerUnusable("answer_not_json") from None
    if isinstance(data, list):
        if len(names) != 1:
            raise ModelAnswerUnusable("answer_not_object")
        return {names[0]: _phrases(data)}, 0
    if not isinstance(data, dict):
        raise ModelAnswerUnusable("answer_not_object")
    asked = set(names)
    answered = {name: _phrases(value) for name, value in data.items()}  # any malformed value: unusable
    return {name: words for name, words in answered.items() if name in asked}, len(set(answered) - asked)
