"""The words a store's traffic teaches its concepts (origins `loaded` and `sighting`), in ExtractFunction
after a turn's sightings are sent: a customer's words as candidates, each teacher counted in the
learning ledger (knowledge.store.learning_ledger), and the word written into the concept once
knowledge.learning.word_rule says its teachers are enough. Counts only, never a word.
docs/contract.md, "Learned words"."""

from __future__ import annotations

from datetime import timezone
from typing import Iterable, Optional

from knowledge.format.concept import Concept
from knowledge.format.learned_words import LEARNED_MAX, LearnedWord, fold_word, word_problem
from knowledge.format.turn import Turn
from knowledge.learning.name_words import name_words
from knowledge.learning.word_rule import enough
from knowledge.recall.analysis import analyze
from knowledge.recall.index import Index
from knowledge.store.concepts import ConceptStore
from knowledge.store.learning_ledger import Teaching, WordLedger, teacher_id
from shared.errors import Conflict, InvalidConcept, NotFound
from shared.pii import names_in, redact
from shared.telemetry import Counters

MIN_LETTERS = 3
PER_TURN = 12  # candidate words per concept and turn, at most
CAS_TRIES = 3
LEARNER = "learning"


def customer_words(turn: Turn, published: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(index term, word) of what the customer wrote in the turn, PII redacted first and no word standing
    where a name stands: content words only, in order, each term once."""
    texts = [m.content for m in turn.messages if m.role == "user"]
    known = names_in(texts)
    named = name_words(texts, known)
    seen: dict[str, str] = {}
    for text in texts:
        cleaned = redact(text, placeholder=lambda kind: " . ", published=tuple(published), known=known).text
        for term, form in analyze(cleaned, shorthand=True).words:
            if len(form) >= MIN_LETTERS and form.isalpha() and word_problem(form) is None \
                    and fold_word(form) not in named:
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
        teacher = teacher_id(turn.tenant, turn.customer_id, turn.session_id)
        learned = 0
        for name, signal in taught.items():
            has = index.terms_of(name)
            # Another concept's own word is never X's: spread counts the concepts whose own text has it
            # (X's own included, so a term X has with a spread of 0 is one of its learned words).
            offered = [(term, word) for term, word in words if index.spread(term) == 0][:PER_TURN]
            for term, word in offered:
                if term in has:  # learned already: one more teacher kept for it
                    self._ledger.keep_one(turn.tenant, turn.agent, name, term, word,
                                          Teaching(teacher, turn.completed_at))
                    continue
                count = self._ledger.add(turn.tenant, turn.agent, name, term, word, teacher, signal,
                                         turn.completed_at)
                self.counters.count("WordCandidate", signal=signal)
                if count is None or count < config.learn_min_sessions:
                    continue
                teachings = self._ledger.teachings(turn.tenant, turn.agent, name, term)
                if not enough(teachings, config.learn_min_sessions):
                    self.counters.count("WordNotLearned", reason="too_close")
                    continue
                learned += self._learn(turn, name, term, word, signal, teachings,
                                       Teaching(teacher, turn.completed_at))
        return learned

    def _learn(self, turn: Turn, name: str, term: str, word: str, signal: str, teachings: list[Teaching],
               mine: Teaching) -> int:
        """Write `word` into the concept's learned words (1), or refuse (0, counted by reason); `mine` is
        this turn's teacher, kept for a word some other turn has just learned."""
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
                # Learned meanwhile (this container's index had not seen it yet): one more teacher kept.
                self._ledger.keep_one(turn.tenant, turn.agent, name, term, word, mine)
                return 0
            if len(concept.learned_words) >= LEARNED_MAX:
                self.counters.count("WordNotLearned", reason="full")
                return 0
            entry = LearnedWord(word, signal, len(teachings), turn.completed_at.astimezone(timezone.utc).date())
            # Its teachers first, so that a word on a concept always has them (forget_customer reads them).
            self._ledger.keep(turn.tenant, turn.agent, name, term, word, teachings)
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
