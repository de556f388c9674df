"""The language a text is written in, as far as its function words say, and the prompts' rule.

`knowledge: language:` and `distill: language:` name the language concepts and facts are
written in (a code: "pt", "pt-BR", "en", "es"…); without it, the language the conversation is
written in. The gates read a candidate's language from its function words (articles,
prepositions, pronouns: never a store's words) and only when the text says it plainly: at least
MARKERS_MIN of them, and twice as many of one language as of any other. Anything shorter or
mixed is "not known", and never refused for its language.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Optional

LANGUAGE = re.compile(r"[a-z]{2,3}(?:-[A-Z]{2})?")
NAMES = {"pt": "Portuguese", "en": "English", "es": "Spanish"}
# Words of one language only among the three (folded: case and accents); words two of them
# share (de, que, a, o, no, para, por) say nothing.
_MARKERS = {
    "pt": frozenset("""
        nao voce voces sao do da dos das em com uma uns umas os pelo pela pelos pelas na nas ao aos
        seu sua seus suas estao tambem ate apos mais ou isso isto tem sera foi pode podem ja
        entao muito nosso nossa quando onde eu meu minha mim ainda obrigado obrigada vc vcs pra pro eh
    """.split()),
    "en": frozenset("""
        the is are of and to for with on be can you your we our will not in at by from it this that
        have has after before only within every all any
    """.split()),
    "es": frozenset("""
        el los las del y es son con una unos unas al su sus usted ustedes estan tambien hasta
        despues pero muy cuando donde nuestro nuestra puede pueden hay yo gracias ya
    """.split()),
}
MARKERS_MIN = 4
_WORD = re.compile(r"[^\W\d_]+")
# Function words English never writes that the markers leave out (Portuguese and Spanish share them, or
# they are short): between English and another language, they tell.
_NOT_ENGLISH = _MARKERS["pt"] | _MARKERS["es"] | frozenset("de que o e para por como se esta um".split())


def _fold(text: str) -> str:
    stripped = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return stripped.casefold()


def base(code: Optional[str]) -> Optional[str]:
    """'pt-BR' -> 'pt'."""
    return code.split("-", 1)[0] if code else None


def detect(text: str) -> Optional[str]:
    """The language `text` is plainly written in ("pt", "en", "es"), or None when it does not say."""
    counts = {code: 0 for code in _MARKERS}
    for word in _WORD.findall(_fold(text)):
        for code, markers in _MARKERS.items():
            if word in markers:
                counts[code] += 1
    ranked = sorted(counts.items(), key=lambda item: item[1], reverse=True)
    (best, most), (_, second) = ranked[0], ranked[1]
    if most >= MARKERS_MIN and most >= 2 * second:
        return best
    return None


def not_english(text: str) -> bool:
    """Whether a short text's function words lean away from English, one being enough (a concept's
    one-line description): "Formas de pagamento aceitas." does; "Returns policy." says nothing (False)."""
    words = _WORD.findall(_fold(text))
    return sum(word in _NOT_ENGLISH for word in words) > sum(word in _MARKERS["en"] for word in words)


def other_language(text: str, expected: Optional[str]) -> bool:
    """`text` is plainly in a language other than `expected` (a code; None: nothing expected)."""
    found = detect(text)
    return bool(expected) and found is not None and found != base(expected)


def language_rule(language: Optional[str], what: str) -> str:
    """The prompts' sentence on language; `what` names the fields it covers."""
    if language:
        named = NAMES.get(base(language))
        label = f"{named} ({language})" if named else f"the language whose code is {language}"
        return (f"Language: write {what} in {label}, whatever language these rules or the conversation "
                "are written in. Evidence is quoted verbatim, never translated.")
    return (f"Language: write {what} in the language the conversation is written in (the customer's), "
            "never translated to another, whatever language these rules are written in. Evidence is "
            "quoted verbatim.")
