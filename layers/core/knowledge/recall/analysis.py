"""What a text says, for the index: its word terms and its numbers, read whole (a CEP, a CEP
range, a number with a unit, an open range) as the intervals they cover."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple, Optional

from knowledge.recall.terms import DIGIT, LETTERS, SHORTHAND, WORDS, WORDS_PT, fold, is_english, read_word

# Units a number may carry; only these (and CEPs) match as ranges.
_UNITS = {"dia": "dias", "dias": "dias", "day": "dias", "days": "dias",
          "x": "x", "vez": "x", "vezes": "x",
          "h": "h", "hr": "h", "hrs": "h", "hora": "h", "horas": "h", "hour": "h", "hours": "h",
          "mes": "meses", "meses": "meses", "month": "meses", "months": "meses",
          "semana": "semanas", "semanas": "semanas", "week": "semanas", "weeks": "semanas",
          "ano": "anos", "anos": "anos", "year": "anos", "years": "anos",
          "reais": "R$", "real": "R$", "%": "%"}
_TIMES = frozenset({"vez", "vezes"})  # a unit only when it counts installments (see analyze)
_INSTALLMENT_WORDS = ("parcel", "divid", "divis")
_UNIT_GAP = frozenset({"uteis", "corridos", "business", "working"})  # "2 dias úteis", "1-2 business days"
_RANGE_JOIN = frozenset({"a", "ao", "-", "ate", "to", "e"})
# Words that join two bare numbers into a range ("do 34 ao 44", "de 34 a 44", "entre 34 e 44"): a
# grid of sizes, models, ages; a hyphen alone is not one (phones, dates, order numbers).
_BARE_JOIN = frozenset({"a", "ao", "ate", "e"})
BARE = "#"  # the unit of a range of bare numbers
_UP_TO = frozenset({"ate", "within"})
_FROM = frozenset({"acima", "partir", "above", "over"})
# "mais de 3 dias", "passa de 7 dias": from the number on.
_FROM_DE = frozenset({"acima", "partir", "mais", "passa", "passar", "passou", "passando"})
_NEGATIONS = frozenset({"nao", "nunca", "jamais", "not", "never"})
_CEP_WORDS = frozenset({"cep", "ceps", "zip"})
# Words after which a number identifies something (an order, a note), never a CEP; "no" is not one
# ("entregam no 04571-010?").
_NOT_CEP = frozenset({"pedido", "pedidos", "order", "protocolo", "nota", "nf", "n", "numero", "#"})
_TOKEN = re.compile(r"""
    (?P<cep>(?<![\d.,])\d{5}-?\d{3}(?!\d|[.,-]\d))        # 13083-970, 13083970
  | (?P<cepx>(?<![\dx])(?=[\dx]{5}(?![\dx]))\d{2,3}x{2,3})  # 13xxx
  | (?P<money>r\$|us\$)
  | (?P<sign>[%#-])
  | (?P<num>\d+(?:[.,]\d+)*)
  | (?P<word>[^\W\d_]+)
""", re.UNICODE | re.VERBOSE)
_CEP_WRITTEN = re.compile(r"\d{5}(?:-?\d{3})?")
INFINITY = float("inf")


class Interval(NamedTuple):
    """A number a text states, as the range of values it covers, with its unit ('cep' for a CEP's
    5-digit prefix)."""

    unit: str
    low: float
    high: float


@dataclass(slots=True)
class Analysis:
    """What a text says, for the index: its word terms (with the singular form each was written
    in, to tell inflection from accident), whole numbers, and intervals."""

    words: list[tuple[str, str]]
    numbers: list[str]
    intervals: list[Interval]

    def terms(self) -> list[str]:
        return [term for term, _ in self.words] + self.numbers


def _value(text: str) -> Optional[float]:
    """A written number: 1.800 and 1,5 the Brazilian way; 39.90 as a decimal."""
    if "," in text:
        text = text.replace(".", "").replace(",", ".", 1).replace(",", "")
    elif re.fullmatch(r"\d{1,3}(\.\d{3})+", text):
        text = text.replace(".", "")
    try:
        return float(text)
    except ValueError:
        return None


def _cep_prefix(text: str) -> Optional[float]:
    """A CEP's 5-digit prefix, for a token written as one (12345, 12345-678, 12345678); else None."""
    return float(text[:5]) if _CEP_WRITTEN.fullmatch(text) else None


def analyze(text: str, open_ranges: bool = True, shorthand: bool = False) -> Analysis:
    """Words and numbers of a text. `open_ranges`: "até 30 dias" and "acima de R$199" cover
    everything up to or from the number (what a concept states, not what a message asks).
    `shorthand`: read chat shorthand as the word it stands for ("hj" is "hoje"; a message's)."""
    text = text.lower()
    if DIGIT.search(text) is None:  # the common case, and the fast one: words only
        words = LETTERS.findall(text)
        if shorthand:
            words = [SHORTHAND.get(word, word) for word in words]
        english = is_english(words)
        memo = WORDS if english else WORDS_PT  # read_word's memo, read here first: most words are in it
        return Analysis([found for word in words if (found := memo.get(word, False) if word in memo
                                                     else read_word(word, english))], [], [])
    english = is_english(LETTERS.findall(text))
    tokens = _Tokens(text)
    analysis = Analysis([], [], [])
    i = 0
    while i < tokens.n:
        kind, written = tokens.at[i]
        if kind == "word":
            if found := read_word(SHORTHAND.get(written, written) if shorthand else written, english):
                analysis.words.append(found)
            i += 1
        elif kind in ("num", "cep", "cepx"):
            i = _read_number(tokens, i, open_ranges, analysis)
        else:
            i += 1
    return analysis


class _Tokens:
    """A text's tokens (kind, text), and what a number's neighbours say."""

    def __init__(self, text: str) -> None:
        self.at = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]
        self.n = len(self.at)

    def kind(self, j: int) -> Optional[str]:
        return self.at[j][0] if 0 <= j < self.n else None

    def word_at(self, j: int) -> str:
        return fold(self.at[j][1]) if 0 <= j < self.n and self.at[j][0] in ("word", "sign") else ""

    def installments(self, at: int, unit_at: int) -> bool:
        """Whether "N vezes" at `at` counts installments ("em 3 vezes", "parcelar em 10 vezes",
        "10 vezes sem juros"), not times in general ("tentei 2 vezes", "7 vezes 8")."""
        near = [self.word_at(k) for k in range(max(0, at - 3), at)]
        return self.word_at(unit_at + 1) == "sem" or any(w in ("em", "ate") or w.startswith(_INSTALLMENT_WORDS)
                                                         for w in near if w)

    def unit_after(self, j: int) -> tuple[Optional[str], int]:
        """The unit written at `j` (past "úteis"), and where the text goes on; (None, j) when none."""
        at = j - 1
        if self.word_at(j) in _UNIT_GAP:
            j += 1
        word = self.word_at(j)
        if self.kind(j) in ("word", "sign") and word in _UNITS and (word not in _TIMES or self.installments(at, j)):
            return _UNITS[word], j + 1 + (self.word_at(j + 1) in _UNIT_GAP)
        return None, j


def _read_number(tokens: _Tokens, i: int, open_ranges: bool, analysis: Analysis) -> int:
    """The number at `i`, read whole into `analysis` (a CEP, a number with a unit, a range, a bare
    number); where the text goes on."""
    kind, written = tokens.at[i]
    money = tokens.kind(i - 1) == "money"
    before = [tokens.word_at(j) for j in ((i - 2, i - 3) if money else (i - 1, i - 2))]
    ident = any(w in _NOT_CEP for w in before[:2])
    unit, low, high = _cep_at(tokens, i, ident)
    value = _value(written) if kind != "cep" or ident else None
    j = i + 1
    if unit is None and value is not None:
        unit, j = tokens.unit_after(j)
        if money:
            unit = "R$"
        low = high = value
        if unit is None and tokens.word_at(j) in _RANGE_JOIN and tokens.kind(j + 1) == "num":
            unit = tokens.unit_after(j + 2)[0]  # "1 a 2 dias": the unit is written once, at the end
    if unit is None and value is not None and 10 <= value < 10_000 and value.is_integer() and not ident:
        # Two bare numbers joined as a range ("do 34 ao 44"): an interval of bare numbers. A
        # message's bare number asks both for itself and for the ranges that hold it.
        if tokens.word_at(j) in _BARE_JOIN and (tokens.word_at(j) != "e" or "entre" in before) \
                and tokens.kind(j + 1) == "num" and (end := _value(tokens.at[j + 1][1])) is not None \
                and end.is_integer() and value < end < 10_000 and tokens.unit_after(j + 2)[0] is None:
            analysis.intervals.append(Interval(BARE, value, end))
            return j + 2
        if not open_ranges:
            analysis.intervals.append(Interval(BARE, value, value))
    if unit is None:
        # A bare number: matched whole, never a lone digit (list numbers, "3 mais 3").
        if value is not None and (len(written) > 1 or "." in written or "," in written):
            analysis.numbers.append("#" + (str(int(value)) if value.is_integer() else str(value)))
        return i + 1
    high, j = _range_end(tokens, j, unit, low, high, before)
    if open_ranges and low == high:
        low, high = _opened(tokens, i, money, before, low, high)
    if unit == "semanas":  # "2 semanas" is 14 days: concepts count in days
        unit, low, high = "dias", low * 7, high * 7
    elif unit == "anos":  # "1 ano" is 12 months ("garantia de 12 meses")
        unit, low, high = "meses", low * 12, high * 12
    analysis.intervals.append(Interval(unit, low, high))
    return j


def _cep_at(tokens: _Tokens, i: int, ident: bool) -> tuple[Optional[str], float, float]:
    """("cep", low, high) when the token at `i` is a CEP or a CEP range's start; else (None, 0, 0)."""
    kind, written = tokens.at[i]
    if kind == "cep" and not ident:
        return "cep", float(written[:5]), float(written[:5])
    if kind == "cepx":
        digits = written.rstrip("x")
        return "cep", float(digits.ljust(5, "0")), float(digits.ljust(5, "9"))
    if kind == "num" and (prefix := _cep_prefix(written)) is not None and len(written) == 5 and not ident and (
            any(w in _CEP_WORDS for w in [tokens.word_at(j) for j in range(max(0, i - 3), i)])
            or (tokens.word_at(i + 1) in ("-", "a") and tokens.kind(i + 2) in ("num", "cep")
                and _cep_prefix(tokens.at[i + 2][1]) is not None)):
        # Five digits alone: "59,90 - anual" is a price then a word, never a CEP range.
        return "cep", prefix, prefix
    return None, 0.0, 0.0


def _range_end(tokens: _Tokens, j: int, unit: str, low: float, high: float, before: list[str]) -> tuple[float, int]:
    """A range's end after the number ("1 a 2 dias", "13000-13999", "13xxx-13999", "R$50 a R$500"):
    (high, where the text goes on); (high, j) as given when there is none."""
    k = j
    if tokens.word_at(k) not in _RANGE_JOIN or (tokens.word_at(k) == "e" and "entre" not in before):
        return high, j
    k += 1
    if tokens.kind(k) == "money":
        k += 1
    if tokens.kind(k) not in ("num", "cep"):
        return high, j
    end_text = tokens.at[k][1]
    if unit == "cep":
        end = _cep_prefix(end_text)
    else:
        end = _value(end_text)
        later, k2 = tokens.unit_after(k + 1)
        if later is not None and later != unit and low == high and unit != "R$":
            end = None
        elif later is not None:
            k = k2 - 1
    if end is not None and end >= low:
        return end, k + 1
    return high, j


def _opened(tokens: _Tokens, i: int, money: bool, before: list[str], low: float, high: float) -> tuple[float, float]:
    """A concept's "até 30 dias" (from 0) or "acima de R$199" (to infinity); "não pode passar de 30
    dias", "não parcelamos em mais de 10x": up to the number."""
    if before[0] in _UP_TO:
        return 0.0, high
    if before[0] in _FROM or (before[0] == "de" and before[1] in _FROM_DE):
        negated = any(tokens.word_at(k) in _NEGATIONS for k in range(i - (6 if money else 5), i - 2))
        return (0.0, high) if negated else (low, INFINITY)
    return low, high


def terms(text: str) -> list[str]:
    """Index terms of a text, in order, stopwords removed."""
    return analyze(text).terms()
