"""An agent's vocabulary (agents/{tenant}/{agent}/vocabulary.yaml): readings of what its customers write
as the words the store writes, so "cadê meu pedido?" meets a concept about "rastreio". Parsed and
checked here (each refusal names the line, the reading and the rule), with the shipped starters
(STARTERS, `starter_text`) an agent copies from. docs/contract.md, "The agent's vocabulary"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import yaml

from knowledge.errors import InvalidVocabulary
from shared.errors import YamlProblem
from shared.validation import read_yaml

VOCABULARY_MAX_BYTES = 64 * 1024
READINGS_MAX = 500
PHRASES_PER_READING = 100
PHRASES_MAX = 4000
PHRASE_WORDS_MAX = 8
PHRASE_CHARS_MAX = 80
STORE_WORDS_MAX = 12
STORE_CHARS_MAX = 160
QUOTE_MAX = 40
FILE = "vocabulary.yaml"
_KEYS = ("customers", "store")
WORD = re.compile(r"[^\W_]+", re.UNICODE)  # as knowledge.recall.terms splits a text


@dataclass(frozen=True)
class Reading:
    """One reading: the phrases customers write, and the words the store writes."""

    customers: tuple[str, ...]
    store: str


@dataclass(frozen=True)
class Vocabulary:
    readings: tuple[Reading, ...] = ()

    def pairs(self) -> tuple[tuple[tuple[str, ...], str], ...]:
        return tuple((reading.customers, reading.store) for reading in self.readings)


EMPTY = Vocabulary()


def _quote(text: str) -> str:
    return repr(text if len(text) <= QUOTE_MAX else text[:QUOTE_MAX] + "…")


def _item_lines(text: str) -> list[int]:
    """The line (from 1) where each reading starts: read from the node tree, never constructed
    (read_yaml has refused anchors, aliases and tags already); only for a refusal's message."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:  # pragma: no cover - read_yaml read it first
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if key.value == "readings" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _line_of(text: str, number: int, default: int) -> int:
    lines = _item_lines(text)
    return lines[number - 1] if number - 1 < len(lines) else default


def parse_vocabulary(text: Union[str, bytes]) -> Vocabulary:
    """A vocabulary.yaml's readings; InvalidVocabulary naming the line and the rule otherwise."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > VOCABULARY_MAX_BYTES:
            raise InvalidVocabulary(f"{FILE} must be at most {VOCABULARY_MAX_BYTES} bytes")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidVocabulary(f"{FILE} is not UTF-8 text (byte {exc.start})") from None
    if not isinstance(text, str):
        raise InvalidVocabulary(f"{FILE} must be text")
    if len(text.encode("utf-8", "surrogatepass")) > VOCABULARY_MAX_BYTES:
        raise InvalidVocabulary(f"{FILE} must be at most {VOCABULARY_MAX_BYTES} bytes")
    try:
        document = read_yaml(text, max_depth=4, max_items=max(READINGS_MAX, PHRASES_PER_READING) + 1, max_keys=8)
    except YamlProblem as exc:
        line = exc.line + 1 if exc.line is not None else None
        where = f" line {line}" if line is not None else ""
        raise InvalidVocabulary(f"{FILE}{where}: {exc.message}", line) from None
    data = document.data
    if data is None:
        return EMPTY
    if not isinstance(data, dict):
        raise InvalidVocabulary(f"{FILE} line 1: must be a mapping with the key `readings`", 1)
    for key in data:
        if key != "readings":
            line = document.key_lines.get(key, 0) + 1
            raise InvalidVocabulary(f"{FILE} line {line}: {_quote(str(key))}: unknown key (the file holds "
                                    "`readings` only)", line)
    items = data.get("readings")
    readings_line = document.key_lines.get("readings", 0) + 1
    if items is None:
        return EMPTY
    if not isinstance(items, list):
        raise InvalidVocabulary(f"{FILE} line {readings_line}: `readings` must be a list of readings "
                                "(`- customers: [...]` and `store: ...`)", readings_line)
    if len(items) > READINGS_MAX:
        raise InvalidVocabulary(f"{FILE} line {readings_line}: at most {READINGS_MAX} readings", readings_line)
    seen: dict[str, int] = {}
    total = 0
    readings = []
    for number, item in enumerate(items, 1):
        try:
            readings.append(_reading(item, number, seen))
        except InvalidVocabulary as exc:
            line = _line_of(text, number, readings_line)  # worked out only for a refusal
            raise InvalidVocabulary(f"{FILE} line {line} (reading {number}): {exc}", line) from None
        total += len(readings[-1].customers)
        if total > PHRASES_MAX:
            line = _line_of(text, number, readings_line)
            raise InvalidVocabulary(f"{FILE} line {line}: at most {PHRASES_MAX} phrases in the file", line)
    return Vocabulary(tuple(readings))


def _reading(item: Any, number: int, seen: dict[str, int]) -> Reading:
    def refuse(rule: str) -> InvalidVocabulary:
        return InvalidVocabulary(rule)  # the caller says where

    if not isinstance(item, dict):
        raise refuse("a reading must be a mapping of `customers` and `store`")
    unknown = [key for key in item if key not in _KEYS]
    if unknown:
        raise refuse(f"{_quote(str(unknown[0]))}: unknown key (a reading holds `customers` and `store`)")
    for key in _KEYS:
        if key not in item:
            raise refuse(f"`{key}` is missing")
    said = item["customers"]
    phrases = [said] if isinstance(said, str) else said
    if not isinstance(phrases, list) or not phrases:
        raise refuse("`customers` must be a phrase or a list of phrases")
    if len(phrases) > PHRASES_PER_READING:
        raise refuse(f"`customers` holds at most {PHRASES_PER_READING} phrases")
    kept = []
    for phrase in phrases:
        if not isinstance(phrase, str):
            raise refuse(f"`customers`: each phrase must be text (quote {_quote(str(phrase))})")
        phrase = phrase.strip()
        if "\n" in phrase or "\r" in phrase:
            raise refuse("`customers`: a phrase must be one line")
        if len(phrase) > PHRASE_CHARS_MAX:
            raise refuse(f"`customers`: {_quote(phrase)}: a phrase must be at most {PHRASE_CHARS_MAX} characters")
        words = WORD.findall(phrase.lower())
        if not words:
            raise refuse(f"`customers`: {_quote(phrase)}: a phrase must hold a word")
        if len(words) > PHRASE_WORDS_MAX:
            raise refuse(f"`customers`: {_quote(phrase)}: a phrase must be at most {PHRASE_WORDS_MAX} words")
        folded = " ".join(words)
        if folded in seen:
            raise refuse(f"`customers`: {_quote(phrase)} is read already by reading {seen[folded]}")
        seen[folded] = number
        kept.append(phrase)
    store = item["store"]
    if not isinstance(store, str):
        raise refuse("`store` must be text: the words the store writes")
    store = store.strip()
    if "\n" in store or "\r" in store:
        raise refuse("`store` must be one line")
    if len(store) > STORE_CHARS_MAX:
        raise refuse(f"`store` must be at most {STORE_CHARS_MAX} characters")
    words = WORD.findall(store.lower())
    if not words or len(words) > STORE_WORDS_MAX:
        raise refuse(f"`store` must be 1 to {STORE_WORDS_MAX} words")
    return Reading(tuple(kept), store)


def render_vocabulary(vocabulary: Vocabulary, header: str = "") -> str:
    """vocabulary.yaml text for readings (what `parse_vocabulary` reads back)."""
    body = yaml.safe_dump({"readings": [{"customers": list(r.customers), "store": r.store}
                                        for r in vocabulary.readings]},
                          sort_keys=False, allow_unicode=True, width=110, default_flow_style=None)
    return header + body


STARTERS = {"varejo-br": Path(__file__).with_name("vocabularies") / "varejo-br.yaml"}


def starter_text(name: str = "varejo-br") -> str:
    """A shipped starter vocabulary's text (valid: tests/unit/format/test_vocabulary.py reads it)."""
    path = STARTERS.get(name)
    if path is None:
        raise InvalidVocabulary(f"no starter vocabulary {_quote(name)} (known: {', '.join(sorted(STARTERS))})")
    return path.read_text(encoding="utf-8")
