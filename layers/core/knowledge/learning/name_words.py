"""The words of a customer's message that stand where a person's name stands: never a learned word's
candidate (knowledge.learning.traffic_words), whatever the redactor (shared.pii) made of them —
a name the redactor reads, a common given name, the words after a name cue or a role, a signature,
a capitalised word the store does not know. docs/contract.md, "Learned words" ("No word standing
where a person's name stands")."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from knowledge.format.learned_words import fold_word
from knowledge.recall.terms import FILLER, STOPWORDS
from shared import pii
from shared.pii.bare_names import ambiguous_names, given_names

NAME_REACH = 3  # words after a cue taken as the name
_CONNECTORS = frozenset("da de do das dos d' di del du van von e".split())
_COMMON = frozenset({fold_word(w) for w in STOPWORDS | FILLER})
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_CUE = re.compile(
    r"(?<![^\W\d_])(?i:fam[ií]lia|sobrenome|sou\s+[oa]|aqui\s+(?:[ée]h?|quem\s+fala\s+[ée])(?:\s+[oa])?|"
    r"quem\s+fala\s+[ée](?:\s+[oa])?|meu\s+nome\s+(?:[ée]h?|:)|me\s+chamo|nome\s+completo|nome\s*:|"
    r"assinado|atenciosamente|att\.?|ass\s*[.:]|abs\.?|bjs|beijos|em\s+nome\s+d[eoa]|da\s+parte\s+d[eoa])"
    r"(?![^\W\d_])")
# Who a customer's story names by their role: the redactor's roles (which it reads before a capitalised
# name only) and the staff a customer talks about.
_ROLE = re.compile(
    r"(?<![^\W\d_])(?i:cliente|porteir[oa]|zelador[a]?|vizinh[oa]|s[íi]ndic[oa]|recepcionista|entregador[a]?|"
    r"motorista|motoboy|destinat[áa]ri[oa]|titular|espos[oa]|marido|namorad[oa]|atendente|vendedor[a]?|"
    r"gerente|t[ée]cnic[oa]|consultor[a]?|funcion[áa]ri[oa]|mo[çc][oa]|rapaz|menina|colega|caixa)"
    r"[ \t]*,?(?![^\W\d_])")
ROLE_REACH = 2
# The one who says something in the story ("a rita disse que sim"): a person.
_SPEAKER = re.compile(
    r"(?<![^\W\d_])(?i:[oa]|seu|sua|dona|tal)[ \t]+([^\W\d_]+)[ \t]+(?i:me[ \t]+|nos[ \t]+|j[áa][ \t]+)?"
    r"(?i:disse|falou|pediu|mandou|informou|explicou|avisou|garantiu|prometeu|respondeu|confirmou)(?![^\W\d_])")
_HERE = re.compile(r"(?:^|(?<=[\n.!?,;:]))[ \t]*((?:[^\W\d_]+[ \t]+){1,3})aqui"
                   r"(?=[ \t]*(?:$|[\n.!?,;:]|de\s+novo|novamente|falando|again))", re.IGNORECASE | re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?;:\n]|\s-\s")


def _shouting(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 8 and sum(c.isupper() for c in letters) >= 0.6 * len(letters)


def _after_cue(text: str, start: int, reach: int = NAME_REACH) -> list[str]:
    """The words a cue at `start` names: up to `reach`, through connectors, until a common word or a sign."""
    taken: list[str] = []
    at = start
    while len(taken) < reach:
        gap = re.match(r"[ \t]*", text[at:])
        at += gap.end() if gap else 0
        word = _WORD.match(text, at)
        if word is None:
            break
        folded = fold_word(word.group())
        if folded in _CONNECTORS and taken:
            at = word.end()
            continue
        if folded in _COMMON:
            break
        taken.append(folded)
        at = word.end()
    return taken


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"'“(")
    return not before or _SENTENCE_END.search(before[-1]) is not None or before.endswith(" -")


def _set_apart(text: str, end: int) -> bool:
    """Whether a word ending at `end` stands alone (a comma, a sign or the line's end next) or goes on
    into another capitalised word (a name and a surname)."""
    after = text[end:].lstrip(" \t")
    return not after or after[0] in ",;:!?\n-" or after[0].isupper()


@lru_cache(maxsize=1)
def _given_names() -> frozenset[str]:
    return frozenset(fold_word(n) for n in given_names() - ambiguous_names())


def name_words(messages: Sequence[str], known: Sequence[str] = ()) -> set[str]:
    """The words (folded: lowercase, no accents) of `messages` that stand where a name stands."""
    out: set[str] = set()
    for text in messages:
        for finding in pii.find(text, known=known):
            if finding.kind == "name":
                out.update(fold_word(w) for w in _WORD.findall(text[finding.start:finding.end]))
        for cue in _CUE.finditer(text):
            out.update(_after_cue(text, cue.end()))
        for role in _ROLE.finditer(text):
            out.update(_after_cue(text, role.end(), ROLE_REACH))
        out.update(fold_word(speaker.group(1)) for speaker in _SPEAKER.finditer(text))
        out.update(w for w in (fold_word(x) for x in _WORD.findall(text)) if w in _given_names())
        for here in _HERE.finditer(text):
            out.update(w for w in (fold_word(x) for x in _WORD.findall(here.group(1))) if w not in _COMMON)
        lines = [line.strip() for line in text.strip().split("\n")]
        if len(lines) > 1 and 1 <= len(_WORD.findall(lines[-1])) <= 3 and not re.search(r"[\d?]", lines[-1]):
            out.update(w for w in (fold_word(x) for x in _WORD.findall(lines[-1])) if w not in _COMMON)
        if _shouting(text):
            continue
        for word in _WORD.finditer(text):
            if not word.group()[0].isupper():
                continue
            if not _opens_sentence(text, word.start()) or _set_apart(text, word.end()):
                out.add(fold_word(word.group()))
    return out - _COMMON
