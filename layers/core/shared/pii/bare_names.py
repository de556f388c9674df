"""The PII detector of a bare person's name, with no honorific, role or "meu nome é" ("aqui é o paulo",
"Daniela Nunes aqui", "att, Leandro"): a common given name from data/given_names.txt starts a name,
known surnames continue it; ambiguous names (data/ambiguous_names.txt) count only where they stand as
a name, and places, brands, products and cities named like people (data/places_named_like_people.txt)
are told apart. Measured by scripts/reports/pii.py. docs/personal-data.md, "A person's bare name"."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from pathlib import Path

from shared.pii.context import PRODUCT_NOUNS, STOP, Context, Span, words

_DATA = Path(__file__).resolve().parent / "data"
_WORD = re.compile(r"[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*")
_CONNECTORS = words("da de do das dos")
_PLACE_BEFORE = words("em de do da para pra pro no na nos nas até ate")
# The words after which a city named like a person (data/places_named_like_people.txt) is that city.
# Not after "de": "o pedido de Paulo Afonso" may be a person's.
_PLACE_CONTEXT = words("em para pra pro no na até ate frete entrega entregas entregam envio envios cep cidade capital "
                       "loja lojas")
# ...and the places whose "de" names a city: "a loja de João Pessoa", "a unidade de Paulo Afonso". A person's
# thing before "de" ("o pedido de Paulo Afonso") is not one of them: that may be a person's.
_PLACE_OF = words("loja lojas unidade unidades filial filiais cidade região regiao")
_NO_NAME_AFTER = words("""
santa santo são sao nossa senhora rua r avenida av travessa tv alameda al rodovia rod estrada praça pça largo
viela beco ladeira bairro jardim vila parque residencial condomínio condominio edifício edificio shopping
""")
# Capitalised words that never continue a name ("Daniela Nunes Aqui"): what a sentence says next.
_NOT_SURNAME = STOP | words("""
aqui oi olá ola obrigado obrigada bom boa dia tarde noite tudo bem sim não nao pedido loja cliente
att atenciosamente abraço abraços beijo beijos valeu vlw ok tá ta já ja quero queria preciso
""")


def fold(word: str) -> str:
    """Lowercase, accents dropped: "Antônio" and "antonio" are one name."""
    low = word.lower()
    if low.isascii():
        return low
    return "".join(c for c in unicodedata.normalize("NFKD", low) if not unicodedata.combining(c))


@cache
def _lexicon(name: str) -> frozenset[str]:
    lines = (_DATA / name).read_text(encoding="utf-8").splitlines()
    return frozenset(fold(line.strip()) for line in lines if line.strip() and not line.startswith("#"))


def given_names() -> frozenset[str]:
    return _lexicon("given_names.txt")


def surnames() -> frozenset[str]:
    return _lexicon("surnames.txt")


def ambiguous_names() -> frozenset[str]:
    return _lexicon("ambiguous_names.txt")


def places_named_like_people() -> frozenset[str]:
    return _lexicon("places_named_like_people.txt")


def _shape(word: str) -> str:
    if word.isupper() and len(word) > 1:
        return "upper"
    if word[0].isupper():
        return "title"
    return "lower" if word.islower() else "mixed"


def _opens_sentence(text: str, start: int) -> bool:
    head = text[max(0, start - 3):start].rstrip(" \t")
    return not head or head[-1] in ".!?\n:;\"“(-"


def _starts_name(text: str, match: re.Match, words_before: list[str]) -> bool:
    word = match.group()
    key = fold(word)
    if key not in given_names() or len(key) < 2:
        return False
    shape = _shape(word)
    if shape == "mixed":
        return False
    previous = words_before[-1] if words_before else ""
    # A place named in a list: "em Natal, Salvador e Vitória".
    after_place = any(word in _PLACE_BEFORE for word in words_before)
    if previous in _NO_NAME_AFTER or previous in PRODUCT_NOUNS:
        return False
    if key in ambiguous_names():
        return shape == "title" and not after_place and not _opens_sentence(text, match.start())
    if shape == "upper":  # a shouted text: the whole sentence in capitals, not an acronym in a normal one
        line = text[max(0, match.start() - 40):match.end() + 40]
        letters = [c for c in line if c.isalpha()]
        return sum(c.isupper() for c in letters) >= 0.8 * len(letters)
    return True


def _continues(word: str, first_shape: str) -> bool:
    key = fold(word)
    if key in surnames():
        return _shape(word) == first_shape or _shape(word) in ("title", "upper") or first_shape == "lower"
    return (first_shape == "title" and _shape(word) == "title" and key not in _NOT_SURNAME
            and word.lower() not in PRODUCT_NOUNS and key not in ambiguous_names())


@cache
def _given_as_written() -> frozenset[str]:
    """Each given name lowercase as listed and folded: one set lookup per word, no folding."""
    lines = (_DATA / "given_names.txt").read_text(encoding="utf-8").splitlines()
    listed = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    return frozenset(listed | {fold(name) for name in listed})


_PUNCTUATION = str.maketrans({c: " " for c in ".,;:!?()[]{}\"'“”‘’/\\*_|<>=+#@&%$-–—0123456789"})


@lru_cache(maxsize=1024)
def _alternation(present: frozenset[str]) -> re.Pattern:
    names = "|".join(re.escape(name) for name in sorted(present, key=len, reverse=True))
    return re.compile(r"(?<![\w'’-])(?i:" + names + r")(?![\w'’])")


_NEXT_WORD = re.compile(r"[ \t]([^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*)")


def _place_said(previous: list[str]) -> bool:
    """Whether the words just before a city named like a person say it is a place: "em", "frete", or
    "loja de" (previous: the lowercase words before it, the nearest last)."""
    if not previous:
        return False
    if previous[-1] in _PLACE_CONTEXT:
        return True
    return previous[-1] == "de" and len(previous) > 1 and previous[-2] in _PLACE_OF


def find_bare_names(context: Context) -> Iterator[Span]:
    text = context.text
    # Most texts hold no given name at all: one split in C says so before any word is matched, and
    # the words looked for are only the given names the text holds.
    present = _given_as_written().intersection(text.lower().translate(_PUNCTUATION).split())
    if not present:
        return
    done = 0  # a name already yielded ends here
    for match in _alternation(frozenset(present)).finditer(text):
        if match.start() < done or context.taken(match.start(), match.end()):
            continue
        key = match.group().lower()
        reach = 60 if key in ambiguous_names() or fold(key) in ambiguous_names() else 24
        previous = [word.lower() for word in _WORD.findall(text, max(0, match.start() - reach), match.start())][-4:]
        if not _starts_name(text, match, previous):
            continue
        shape, end, position = _shape(match.group()), match.end(), match.end()
        for _ in range(4):
            nxt = _NEXT_WORD.match(text, position)
            if nxt is None:
                break
            word = nxt.group(1)
            if fold(word) in _CONNECTORS:
                after = _NEXT_WORD.match(text, nxt.end())
                if after is not None and fold(after.group(1)) in surnames():
                    end = position = after.end()
                    continue
                break
            if not _continues(word, shape):
                break
            end = position = nxt.end()
        done = end
        if _place_said(previous) and \
                " ".join(fold(w) for w in text[match.start():end].split()) in places_named_like_people():
            continue  # a city where a place is said ("moro em João Pessoa", frete-joao-pessoa), not a person
        yield match.start(), end, True


def known_finder(known: Iterable[str]):
    """A detector of the turn's own names (any case, accents folded), word by word."""
    keys = frozenset(fold(part) for name in known for part in _WORD.findall(name)
                     if len(part) >= 3 and fold(part) not in _NOT_SURNAME and fold(part) not in _CONNECTORS)

    def find(context: Context) -> Iterator[Span]:
        if not keys:
            return
        for match in _WORD.finditer(context.text):
            if fold(match.group()) in keys:
                yield match.start(), match.end(), True

    return find


__all__ = ["ambiguous_names", "find_bare_names", "fold", "given_names", "known_finder", "places_named_like_people",
           "surnames"]
