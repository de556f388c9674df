"""A concept's learned words and removed words: the frontmatter fields `learned_words` (each a word, its
origin — `loaded`, `sighting`, `model` or `operator` —, sessions and day) and `removed_words`, parsed,
checked (`word_problem`: 1 to 3 words of letters, no digit or sign) and folded for comparison
(`fold_word`). ORIGINS only grows at its end: the words summary codes an origin by its place.
docs/contract.md, "The concept format" and "Learned words"."""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from typing import Any, NamedTuple, Optional

# Append only: the words summary stores each word's origin as its index here (curation.words_held).
ORIGINS = ("loaded", "sighting", "model", "operator")
TRAFFIC = ("loaded", "sighting")  # the origins the store's traffic teaches (the rest are never its)
OPERATOR = "operator"
LEARNED_FIELD, REMOVED_FIELD = "learned_words", "removed_words"
LEARNED_MAX = 24  # learned words per concept
REMOVED_MAX = 200  # removed words per concept
WORD_MAX = 40  # characters of one learned word or phrase
PHRASE_WORDS = 3
SESSIONS_MAX = 10**6
_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")
_ENTRY_KEYS = ("word", "origin", "sessions", "at")


class LearnedWord(NamedTuple):
    word: str
    origin: str
    sessions: int
    at: date


def fold_word(text: str) -> str:
    """How two words are compared: lowercase, without accents, single spaces."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def word_problem(word: object) -> Optional[str]:
    """Why `word` cannot be a learned or removed word, or None."""
    if not isinstance(word, str):
        return "must be text"
    if not word or word != word.strip():
        return "must not be empty or start or end with a space"
    if len(word) > WORD_MAX:
        return f"must be at most {WORD_MAX} characters"
    if word != word.lower():
        return "must be lowercase"
    parts = word.split(" ")
    if len(parts) > PHRASE_WORDS:
        return f"must be at most {PHRASE_WORDS} words"
    if not all(_WORD.fullmatch(part) for part in parts):
        return "must be words of letters separated by single spaces (no digits or signs)"
    return None


def validate(learned: object, removed: object) -> list[tuple[str, str]]:
    """(field, problem) for every problem of the two fields (both already parsed into tuples)."""
    errors: list[tuple[str, str]] = []
    if not isinstance(learned, tuple) or not all(isinstance(e, LearnedWord) for e in learned):
        errors.append((LEARNED_FIELD, "must be a list of {word, origin, sessions, at}"))
        learned = ()
    if not isinstance(removed, tuple):
        errors.append((REMOVED_FIELD, "must be a list of words"))
        removed = ()
    if len(learned) > LEARNED_MAX:
        errors.append((LEARNED_FIELD, f"must hold at most {LEARNED_MAX} words"))
    if len(removed) > REMOVED_MAX:
        errors.append((REMOVED_FIELD, f"must hold at most {REMOVED_MAX} words"))
    seen: set[str] = set()
    for i, entry in enumerate(learned):
        problem = word_problem(entry.word)
        if problem:
            errors.append((LEARNED_FIELD, f"{i}: word {problem}"))
            continue
        if entry.origin not in ORIGINS:
            errors.append((LEARNED_FIELD, f"{i}: origin must be one of {', '.join(ORIGINS)}"))
        if isinstance(entry.sessions, bool) or not isinstance(entry.sessions, int) \
                or not 0 <= entry.sessions <= SESSIONS_MAX:
            errors.append((LEARNED_FIELD, f"{i}: sessions must be a whole number from 0 to {SESSIONS_MAX}"))
        elif entry.origin == OPERATOR and entry.sessions != 0:
            errors.append((LEARNED_FIELD, f"{i}: sessions must be 0 for an operator's word (no session taught it)"))
        if not isinstance(entry.at, date):
            errors.append((LEARNED_FIELD, f"{i}: at must be a date like 2026-11-30"))
        folded = fold_word(entry.word)
        if folded in seen:
            errors.append((LEARNED_FIELD, f"{i}: repeats the word {entry.word!r}"))
        seen.add(folded)
    gone: set[str] = set()
    for i, word in enumerate(removed):
        problem = word_problem(word)
        if problem:
            errors.append((REMOVED_FIELD, f"{i}: {problem}"))
            continue
        folded = fold_word(word)
        if folded in gone:
            errors.append((REMOVED_FIELD, f"{i}: repeats the word {word!r}"))
        elif folded in seen:
            errors.append((REMOVED_FIELD, f"{i}: {word!r} is also a learned word (remove it from one list)"))
        gone.add(folded)
    return errors


def parse_learned(value: Any, parse_date: Any) -> tuple[Optional[tuple[LearnedWord, ...]], Optional[str]]:
    """The `learned_words` field as read from YAML: (entries, None) or (None, problem)."""
    if value is None:
        return (), None
    if not isinstance(value, list):
        return None, "must be a list of {word, origin, sessions, at}"
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) != set(_ENTRY_KEYS):
            return None, f"{i}: must be {{word: \"…\", origin: {'|'.join(ORIGINS)}, sessions: N, at: YYYY-MM-DD}}"
        day = parse_date(item["at"]) if isinstance(item["at"], str) else None
        if day is None:
            return None, f"{i}: at must be a date like 2026-11-30"
        out.append(LearnedWord(item["word"], item["origin"], item["sessions"], day))
    return tuple(out), None


def parse_removed(value: Any) -> tuple[Optional[tuple[str, ...]], Optional[str]]:
    if value is None:
        return (), None
    if not isinstance(value, list):
        return None, "must be a list of words"
    return tuple(value), None


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_lines(learned: tuple[LearnedWord, ...], removed: tuple[str, ...]) -> list[str]:
    """The frontmatter lines of the two fields (none when both are empty)."""
    lines = []
    if learned:
        lines.append(f"{LEARNED_FIELD}:")
        lines.extend(f"  - {{word: {_quoted(e.word)}, origin: {e.origin}, sessions: {e.sessions}, "
                     f"at: {e.at.isoformat()}}}" for e in learned)
    if removed:
        lines.append(f"{REMOVED_FIELD}: [" + ", ".join(_quoted(w) for w in removed) + "]")
    return lines


def folded_words(learned: tuple[LearnedWord, ...]) -> set[str]:
    return {fold_word(e.word) for e in learned}
