"""The same claim with its pieces in another order, for the same-claim rule (knowledge.learning.claims):
pieces that moved ("Durante o primeiro ano, violões…") are the same claim; roles swapped ("Visa sim,
Amex não" / "Amex sim, Visa não") never are, and nothing moves across an "e". Each piece keeps the
preposition, negation, figure or limit that governs it. docs/contract.md, "The same claim without a model"."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Optional, Sequence

from knowledge.learning.claim_terms import NUMBER_WORDS, read_claim

# The claim is read a second time with a mark where a preposition or an "e" the reading drops stood:
# letters no store writes, each read as a term of its own and taken out again here.
_ROLES = {"em": "\u01c0", "a": "\u01c2", "de": "\u01c3"}
_AND = "\u01c1"
_MARKED = {mark: role for role, mark in _ROLES.items()}
_LETTER = r"[^\W\d_]"
_HIDDEN = {
    "em": r"em|no|na|nos|nas|num|numa|in|on|at",
    "a": r"à|às|ao|aos",  # "a" and "as" are articles as often: not marked
    "de": r"de|do|da|dos|das|of",
}
_HIDDEN_RE = {role: re.compile(rf"(?<!{_LETTER})(?:{words})(?!{_LETTER})", re.IGNORECASE)
              for role, words in _HIDDEN.items()}
# "vinte e cinco", "27 e 30 de novembro": one figure, no coordination.
_NUMBER_WORD = "|".join(sorted(set(NUMBER_WORDS) | {"um", "uma"}))
_AND_RE = re.compile(rf"(?<!{_LETTER})(?:e|and)(?=\s+(?!\d|(?:{_NUMBER_WORD})(?!{_LETTER})))", re.IGNORECASE)
_COORDINATIONS = frozenset({"ou", "or", "mas", "but"})


def _terms_of(words: str) -> frozenset[str]:
    return frozenset(term for sentence in read_claim("", words).sentences for term in sentence.terms)


# A phrase that opens with one of these, or with a dropped "em"/"a", is an adverbial.
PREPOSITIONS = _terms_of("para por com até após acima abaixo durante desde antes entre sobre contra sem exceto "
                         "salvo for to with by from within after before until above below under without except")
# Words that bind the word after them, as a preposition does.
LIMITS = _terms_of("só mais menos cada todos todas")
# Steps of the search for a reading of one sentence as another: a sentence of many repeated words is
# the model's to judge.
STEPS_MAX = 2000


@dataclass(frozen=True)
class Shape:
    """A sentence's terms with, for each, the dropped preposition before it (its role: em, a, de or
    ""), whether an "e"/"ou"/"mas" comes right before it, and its clause (the commas)."""

    terms: tuple[str, ...]
    roles: tuple[str, ...]
    joined: tuple[bool, ...]
    clauses: tuple[int, ...]

    @cached_property
    def counts(self) -> Counter:
        return Counter(self.terms)

    def opens(self, at: int) -> str:
        """The preposition of an adverbial opening at `at` ("para", "com", "em", "a"…), else ""."""
        term = self.terms[at]
        if term in PREPOSITIONS:
            return term
        return self.roles[at] if self.roles[at] in ("em", "a") and not term.startswith("!") else ""


def _mark(text: str) -> str:
    for role, pattern in _HIDDEN_RE.items():
        text = pattern.sub(lambda match, mark=_ROLES[role]: f"{mark} {match.group()}", text)
    return _AND_RE.sub(lambda match: f"{_AND} {match.group()}", text)


def shapes(description: str, body: str, spelling: frozenset[str] = frozenset()) -> Optional[tuple[Shape, ...]]:
    """The claim's sentences as shapes; None when the marked reading is not the plain one plus its marks
    (a mark that changed a greeting's or a date's reading): no order is then proved."""
    plain = read_claim(description, body, spelling=spelling)
    marked = read_claim(_mark(description), _mark(body), spelling=spelling)
    if len(plain.sentences) != len(marked.sentences):
        return None
    out = []
    for sentence, reread in zip(plain.sentences, marked.sentences):
        terms: list[str] = []
        roles: list[str] = []
        joined: list[bool] = []
        role, coordinated = "", False
        for term in reread.terms:
            if term in _MARKED:
                role = _MARKED[term]
            elif term == _AND:
                coordinated = True
            else:
                terms.append(term)
                roles.append(role)
                joined.append(coordinated or term in _COORDINATIONS)
                role, coordinated = "", False
        if tuple(terms) != sentence.terms:
            return None
        clauses = tuple(index for index, clause in enumerate(sentence.clauses) for _ in clause)
        out.append(Shape(tuple(terms), tuple(roles), tuple(joined), clauses))
    return tuple(out)


def _binds(term: str) -> bool:
    """The word after it is part of its meaning: a negation, a figure, a date, a preposition, a limit."""
    return term[:1] in "!#@" or term in PREPOSITIONS or term in LIMITS


def _mappings(short: Shape, long: Shape) -> Iterator[tuple[int, ...]]:
    """Each way to read short's terms as long's (each of long's once), every role and bound pair kept;
    at most STEPS_MAX steps of the search."""
    if short.counts - long.counts:
        return
    places = [[at for at, term in enumerate(long.terms) if term == wanted and long.roles[at] == short.roles[index]]
              for index, wanted in enumerate(short.terms)]
    used: set[int] = set()
    chosen: list[int] = []
    steps = [0]

    def extend(index: int) -> Iterator[tuple[int, ...]]:
        if index == len(places):
            yield tuple(chosen)
            return
        bound = index > 0 and _binds(short.terms[index - 1])
        for at in places[index]:
            steps[0] += 1
            if steps[0] > STEPS_MAX:
                return
            if at in used or (bound and at != chosen[-1] + 1):
                continue
            used.add(at)
            chosen.append(at)
            yield from extend(index + 1)
            chosen.pop()
            used.discard(at)

    yield from extend(0)


@dataclass
class _Piece:
    """A run of short's terms that is a run of long's too (words long says and short leaves out aside):
    its place among the pieces in long's order, where it starts and ends in short, where it starts in
    long, and its prepositions when it is an adverbial in both."""

    rank: int
    start: int
    end: int
    at: int
    prepositions: frozenset[str] = field(default_factory=frozenset)


def _ranked(pieces: list[_Piece]) -> list[_Piece]:
    ranks = sorted(piece.rank for piece in pieces)
    for piece in pieces:
        piece.rank = ranks.index(piece.rank)
    return pieces


def _pieces(short: Shape, long: Shape, mapping: tuple[int, ...]) -> list[_Piece]:
    order = sorted(mapping)
    pieces: list[_Piece] = []
    for index, at in enumerate(mapping):
        if index and order.index(at) == order.index(mapping[index - 1]) + 1:
            pieces[-1].end = index + 1
            continue
        opens = short.opens(index)
        adverbial = frozenset({opens}) if opens and opens == long.opens(at) else frozenset()
        pieces.append(_Piece(order.index(at), index, index + 1, at, adverbial))
    return _ranked(pieces)


def _joined(short: Shape, long: Shape, pieces: list[_Piece], swapped: set[int]) -> list[_Piece]:
    """Two neighbours in the other order become one piece when they are adverbials with prepositions
    no other piece has ("com 20 % de desconto para cães" / "para cães com 20 % de desconto") or the two
    sides of an "e" ("no app e na loja" / "na loja e no app"); `swapped` gets such an "e"'s side. Two
    neighbours in order then are one piece too."""
    index = 0
    while index < len(pieces) - 1:
        first, second = pieces[index], pieces[index + 1]
        others = frozenset().union(*(p.prepositions for k, p in enumerate(pieces) if k not in (index, index + 1)))
        both = first.prepositions | second.prepositions
        adverbials = bool(first.prepositions and second.prepositions and not first.prepositions & second.prepositions
                          and not others & both)
        sides = short.joined[second.start] and long.joined[first.at]
        if second.rank == first.rank + 1:
            pieces[index:index + 2] = [_Piece(first.rank, first.start, second.end, first.at, first.prepositions)]
        elif second.rank == first.rank - 1 and (adverbials or sides):
            if sides:
                swapped.add(first.at)
            pieces[index:index + 2] = [_Piece(second.rank, first.start, second.end, second.at,
                                              both if adverbials else frozenset())]
        else:
            index += 1
            continue
        _ranked(pieces)
        index = 0
    return pieces


def _no_three_reversed(ranks: Sequence[int]) -> bool:
    """No three in the reverse order: two runs in long's order, interleaved."""
    top = second = -1
    for rank in ranks:
        if rank < second:
            return False
        if rank < top:
            second = max(second, rank)
        top = max(top, rank)
    return True


def _moved(short: Shape, pieces: list[_Piece]) -> bool:
    """No three pieces in the reverse order. Or an adverbial moved from one end of the sentence to the
    other, the rest no three in the reverse order and holding no "e" when it is not in order ("Para o
    Sul é grátis e cobrado no Norte" / "No Norte é grátis e cobrado para o Sul" is a swap); or long's
    opening and closing pieces exchanged around a middle in order and holding no "e", one of them an
    adverbial."""
    ranks = [piece.rank for piece in pieces]
    if _no_three_reversed(ranks):
        return True
    last = len(pieces) - 1

    def plain(stretch: Sequence[_Piece]) -> bool:
        return not any(short.joined[index] for piece in stretch for index in range(piece.start, piece.end)
                       if index != stretch[0].start)

    for end, other in ((0, last), (last, 0)):
        if pieces[end].rank == other and pieces[end].prepositions:
            rest = pieces[1:] if end == 0 else pieces[:-1]
            if _no_three_reversed([piece.rank for piece in rest]) and plain(rest):
                return True
    return (ranks == [last, *range(1, last), 0] and bool(pieces[0].prepositions or pieces[-1].prepositions)
            and plain(pieces[1:-1]))


def _coordinations_kept(short: Shape, long: Shape, mapping: tuple[int, ...], swapped: set[int]) -> bool:
    """Each "e" of long (one short has too) has the same word before it in short, and one that opens a
    clause (", e para o Norte acima de R$ 199") the same words after it to the clause's end: nothing
    crosses a coordination unless its two sides swapped whole."""
    where = {at: index for index, at in enumerate(mapping)}
    for at, joined in enumerate(long.joined):
        if not joined or at not in where or at in swapped or not short.joined[where[at]]:
            continue
        if at - 1 in where and where[at - 1] != where[at] - 1:
            return False
        if at and long.clauses[at - 1] == long.clauses[at]:
            continue
        start = end = where[at]
        while end < len(short.terms) and short.clauses[end] == short.clauses[start]:
            end += 1
        side = {where.get(k) for k in range(at, len(long.terms)) if long.clauses[k] == long.clauses[at]}
        if side != set(range(start, end)):
            return False
    return True


def rearranged(short: Shape, long: Shape) -> bool:
    """`short` says what `long` says, or some of it, its pieces in an order that keeps their roles."""
    for mapping in _mappings(short, long):
        swapped: set[int] = set()
        pieces = _joined(short, long, _pieces(short, long, mapping), swapped)
        if _moved(short, pieces) and _coordinations_kept(short, long, mapping, swapped):
            return True
    return False


def reordered(old: Optional[tuple[Shape, ...]], fresh: Optional[tuple[Shape, ...]], body: int) -> bool:
    """The record restated in another order (its terms and negations the same, which the caller checks):
    each new sentence inside one of the record's, each of the record's `body` sentences (its last ones)
    inside one of the new, their pieces moved, not swapped."""
    if not old or not fresh:
        return False
    return (all(any(rearranged(s, o) for o in old) for s in fresh)
            and all(any(rearranged(o, s) for s in fresh) for o in old[len(old) - body:]))
