"""Learning a store's words from its own traffic (docs/contract.md, learned words).

Runs in ExtractFunction, after a turn's sightings are on their way, off the per-turn retrieve path:
extraction is the one place that sees every turn (the first signal comes from turns no sighting is
made of), holds the turn's words in memory (no archive read), knows the sightings (the second
signal) and holds the agent's warm index (which words each concept already has: no concept read
per candidate). A concept is read and written only when a word reaches its threshold.

Two signals, each for a concept X of the agent's index, only from a turn carrying `shown`:

- `loaded`: the turn in which the session first loaded X (`shown.loaded` gains X: the agent
  called load_knowledge(X) after the customer's message): the customer's words of that turn;
- `sighting`: a turn extraction saw X in: the customer's words of that turn.

A candidate is one word of a customer message, after PII redaction (shared.pii: nothing redacted is
ever a candidate), that is no stopword, no chat filler, no number (a word of letters only, at least
MIN_LETTERS long), that X's own text and learned words do not have (words that already reached X
teach nothing), and that no more than KNOWN_SPREAD of the agent's concepts say. At most PER_TURN per
concept and turn. Each (concept, word) counts the distinct sessions that taught it in the learning
ledger (knowledge.store.word_ledger); once `learn_min_sessions` (default 3) have, the word is
written into X's `learned_words` through the store's compare-and-swap as a new version (writer
`learning`, reason `learned`). An operator's edit wins: a word in X's `removed_words` is never
written back, a concept whose document does not parse is never written, and a compare-and-swap that
meets an operator's newer version reads it again and respects what it says. Nothing of a message
reaches a log or a metric: counts only.
"""

from __future__ import annotations

from datetime import timezone
from typing import Iterable, Optional

from knowledge.format.concept import Concept
from knowledge.format.learned import LEARNED_MAX, LearnedWord, fold_word, word_problem
from knowledge.format.turn import Turn
from knowledge.recall.analysis import analyze
from knowledge.recall.index import Index
from knowledge.store.concepts import ConceptStore
from knowledge.store.word_ledger import WordLedger
from shared.errors import Conflict, InvalidConcept, NotFound
from shared.pii import names_in, redact
from shared.telemetry import Counters

MIN_LETTERS = 3
PER_TURN = 12  # candidate words per concept and turn, at most
# A word more than KNOWN_SPREAD of the agent's concepts already say means something in the store
# already ("pedido", "celular" in a phone shop): learning it for one more tells that one nothing apart.
KNOWN_SPREAD = 2
CAS_TRIES = 3
LEARNER = "learning"


def customer_words(turn: Turn, published: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(index term, word) of what the customer wrote in the turn, PII redacted first: content words
    only, in order, each term once."""
    texts = [m.content for m in turn.messages if m.role == "user"]
    known = names_in(texts)
    seen: dict[str, str] = {}
    for text in texts:
        cleaned = redact(text, placeholder=lambda kind: " . ", published=tuple(published), known=known).text
        for term, form in analyze(cleaned, shorthand=True).words:
            if len(form) >= MIN_LETTERS and form.isalpha() and word_problem(form) is None:
                seen.setdefault(term, form)
    return list(seen.items())


class Teacher:
    def __init__(self, store: ConceptStore, ledger: WordLedger, counters: Optional[Counters] = None):
        self._store, self._ledger = store, ledger
        self.counters = counters or Counters()

    def learn(self, turn: Turn, sighted: Iterable[str], index: Optional[Index], config) -> int:
        """Count the turn's candidates; answer how many words became learned words."""
        if not config.learn_from:
            return 0
        if turn.shown is None:
            self.counters.count("LearningSkipped", reason="no_shown")
            return 0
        if index is None or not len(index):
            return 0
        taught: dict[str, str] = {}  # concept -> signal (loaded first: it is the stronger one)
        if "loaded" in config.learn_from:
            for name in turn.shown.loaded:
                if index.etag(name) is not None and self._ledger.first_loaded_in(
                        turn.tenant, turn.agent, turn.session_id, name, turn.turn_id):
                    taught.setdefault(name, "loaded")
        if "sighting" in config.learn_from:
            for name in sighted:
                if index.etag(name) is not None:
                    taught.setdefault(name, "sighting")
        if not taught:
            return 0
        words = customer_words(turn, config.published_contacts)
        learned = 0
        for name, signal in taught.items():
            has = index.terms_of(name)
            fresh = [(term, word) for term, word in words
                     if term not in has and index.spread(term) <= KNOWN_SPREAD][:PER_TURN]
            for term, word in fresh:
                count = self._ledger.add(turn.tenant, turn.agent, name, term, word, turn.session_id, signal)
                self.counters.count("WordCandidate", signal=signal)
                if count is not None and count >= config.learn_min_sessions:
                    learned += self._learn(turn, name, word, signal, count)
        return learned

    def _learn(self, turn: Turn, name: str, word: str, signal: str, sessions: int) -> int:
        """Write `word` into the concept's learned words (1), or refuse (0, counted by reason)."""
        for _ in range(CAS_TRIES):
            try:
                stored = self._store.get(turn.tenant, turn.agent, name)
                concept = stored.concept
            except (NotFound, InvalidConcept):
                self.counters.count("WordNotLearned", reason="unreadable")
                return 0
            folded = fold_word(word)
            if folded in {fold_word(w) for w in concept.removed_words}:
                self.counters.count("WordNotLearned", reason="removed")
                return 0
            if folded in {fold_word(e.word) for e in concept.learned_words}:
                return 0
            if len(concept.learned_words) >= LEARNED_MAX:
                self.counters.count("WordNotLearned", reason="full")
                return 0
            entry = LearnedWord(word, signal, sessions, turn.completed_at.astimezone(timezone.utc).date())
            try:
                updated: Concept = concept.replace(learned_words=(*concept.learned_words, entry))
                self._store.replace(turn.tenant, turn.agent, updated, if_match=stored.etag, actor=LEARNER,
                                    reason="learned")
            except InvalidConcept:
                self.counters.count("WordNotLearned", reason="invalid")
                return 0
            except Conflict:
                continue  # someone wrote it meanwhile (an operator, a sighting): read it again
            self.counters.count("WordLearned", signal=signal)
            return 1
        # Kept changing: the next session that teaches the word writes it (the ledger keeps the count).
        self.counters.count("WordNotLearned", reason="busy")
        return 0
