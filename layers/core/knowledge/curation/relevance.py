"""The studio's search: which concepts a query finds, in what order, and what matched in each.

A concept matches when it holds every word of the query that tells something (stopwords aside):
by retrieval's index (stems and accents folded, name, description and body) or as text in its
name or description (so a word being typed, "reemb", finds). Relevance orders them: the exact
name, then names the query starts (the name or one of its hyphen-separated words), then the
index's own ranking of the whole query, then concepts matched by text alone; the name breaks ties.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from knowledge.curation.listing import HeldList, fold_for_search
from knowledge.recall.terms import read_word

MAX_WORDS = 8  # a query's words looked up one by one: the work per request stays bounded
SNIPPET = 160  # characters of description or body shown under a row
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:[-./]\d+)+")
_LINK = re.compile(r"\[\[([^\]]+)\]\]")


@dataclass(frozen=True)
class Query:
    """A query as the search reads it: its folded words, those that tell, and the name it spells."""

    text: str
    words: tuple[str, ...]  # folded, in order, at most MAX_WORDS
    told: tuple[str, ...]  # the words the match requires (all of them when none tells)
    name: str  # the words joined by hyphens, as a concept's name would spell them

    @classmethod
    def of(cls, q: str) -> "Query":
        # A number with its hyphens or dots (a CEP, 13083-970) is one word: the index reads it whole.
        words = tuple(words_of(q))[:MAX_WORDS]
        told = tuple(w for w in words if len(w) > 1 and read_word(w) is not None) or words
        return cls(q.strip(), words, told, "-".join(words))

    def term(self, word: str) -> Optional[str]:
        found = read_word(word)
        return found[0] if found else None


def words_of(q: str) -> dict[str, str]:
    """Every word of a query, folded, each with the text it was typed as (the first time), in order."""
    parts = (w for token in q.split() for w in ([token] if _NUMBER.fullmatch(token) else _WORD.findall(token)))
    out: dict[str, str] = {}
    for part in parts:
        out.setdefault(fold_for_search(part), part)
    return out


def search(held: HeldList, q: str, names: list[str]) -> list[str]:
    """`names` that match `q`, most relevant first."""
    query = Query.of(q)
    everyone = max(1, len(held.index))
    searched: dict[str, list] = {}

    def ranked_by_index(text: str) -> list:
        if text not in searched:
            searched[text] = held.index.search(text, top_k=everyone)
        return searched[text]

    if not query.told:
        needle = fold_for_search(query.text)
        found = {n for n in names if needle and needle in held.folded.get(n, n)}
    else:
        found = set(names)
        for word in query.told:
            hits = {hit.name for hit in ranked_by_index(word)}
            found &= hits | {n for n in found if word in held.folded.get(n, n)}
            if not found:
                break
    # A one-word query ranks as its word did (the index folds case and accents itself).
    whole = query.told[0] if len(query.words) == 1 and query.words == query.told else query.text
    ranked = {hit.name: rank for rank, hit in enumerate(ranked_by_index(whole))}
    unranked = len(ranked)

    def key(name: str) -> tuple[int, int, str]:
        folded = fold_for_search(name)
        if folded == query.name:
            tier = 0
        elif query.name and (folded.startswith(query.name) or f"-{query.name}" in f"-{folded}"):
            tier = 1
        elif name in ranked:
            tier = 2
        else:
            tier = 3
        return tier, ranked.get(name, unranked), name

    return sorted(found, key=key)


def _marks(text: str, query: Query) -> list[list[int]]:
    """Ranges [start, end) of `text`'s words that a query word matches (its stem, or the word
    holds the query word; a stopword of three letters or more only as itself), accents and case aside."""
    marks = []
    terms = {t for w in query.told if (t := query.term(w))}
    starts = {w[:3] for w in query.told}  # a word is stemmed (the slow part) only when it begins as one of them
    plain = {w for w in query.words if len(w) > 2 and w not in query.told}
    for match in _WORD.finditer(text):
        word = fold_for_search(match.group())
        if any(w in word for w in query.told) or word in plain or (
                terms and word[:3] in starts and query.term(word) in terms):
            marks.append([match.start(), match.end()])
    return marks


def _name_marks(name: str, query: Query) -> list[list[int]]:
    """Ranges of the name's hyphen-separated words that begin with a query word."""
    marks, start = [], 0
    for part in name.split("-"):
        folded = fold_for_search(part)
        best = max((len(w) for w in query.words if folded.startswith(w)), default=0)
        if best:
            marks.append([start, start + min(best, len(part))])
        start += len(part) + 1
    return marks


def _body(data: Optional[bytes]) -> str:
    """The body of stored markdown (after its frontmatter), links as their names; '' when not held."""
    if not data:
        return ""
    text = data.decode("utf-8", errors="replace")
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[end + 4:] if end >= 0 else ""
    return _LINK.sub(lambda m: m.group(1), text)


def _window(text: str, marks: list[list[int]]) -> tuple[str, list[list[int]]]:
    """At most SNIPPET characters of `text` around its first mark, cut at spaces, "…" where cut."""
    if len(text) <= SNIPPET:
        return text, marks
    first = marks[0][0] if marks else 0
    start = 0 if first < SNIPPET // 3 else text.rfind(" ", 0, first - SNIPPET // 4) + 1
    prefix = "…" if start > 0 else ""
    room = SNIPPET - len(prefix) - 1  # one for the closing "…"
    end = start + room
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + room // 2 else end
        suffix = "…"
    else:
        end, suffix = len(text), ""
    shift = len(prefix) - start
    kept = [[a + shift, min(b, end) + shift] for a, b in marks if a >= start and a < end]
    return prefix + text[start:end] + suffix, kept


def matched(held: HeldList, name: str, q: str, data: Optional[bytes] = None) -> dict[str, Any]:
    """What matched in one row: a snippet of its description (or, when the description holds no
    query word, of its body: the container's copy, else `data`, the stored document read for it),
    the matched words in it and in the name as [start, end) ranges."""
    query = Query.of(q)
    doc = held.index.docs.get(name)
    description = _SPACE.sub(" ", doc.description).strip() if doc else ""
    source, text, marks = "description", description, _marks(description, query)
    held_text = doc.data if doc is not None and doc.data else data
    if not marks and held_text:
        body = _SPACE.sub(" ", _body(held_text)).strip()
        found = _marks(body, query)
        if found:
            source, text, marks = "body", body, found
    snippet, kept = _window(text, marks)
    return {"source": source, "snippet": snippet, "marks": kept, "name_marks": _name_marks(name, query)}


def body_unheld(held: HeldList, name: str, q: str) -> bool:
    """The row matched beyond its description and the container holds no body to say where (a
    container that restored its index from the snapshot): its document must be read to say why."""
    doc = held.index.docs.get(name)
    if doc is None or doc.data:
        return False
    return not _marks(_SPACE.sub(" ", doc.description).strip(), Query.of(q))
