"""Taking learned words back out of concepts: forget_customer's share in them (a word whose count falls
below its threshold once the customer is taken out), and `knowledge words audit` (the words the rules of
docs/contract.md, "Learned words", would not have learned). A word taken out is never written into
`removed_words`: the traffic may teach it again, by the rules. An operator's own word (`origin:
operator`) is never taken out: no customer taught it, whatever teachers the ledger still keeps.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from knowledge.format.config import KnowledgeConfig
from knowledge.format.learned_words import OPERATOR, LearnedWord, fold_word
from knowledge.learning.word_rule import enough
from knowledge.recall.analysis import analyze
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.keys import concept_key
from knowledge.store.learning_ledger import KeptWord, WordLedger, term_hash
from shared.errors import Conflict, InvalidConcept, InvalidConfig, NotFound
from shared.purge import Sweeper

ENGINE = "engine"
DEFAULT_MINIMUM = KnowledgeConfig.model_fields["learn_min_sessions"].default


def minimum_of(store: ConceptStore, tenant: str, agent: str) -> int:
    """The agent's `learn_min_sessions` (the default when it has no readable knowledge.yaml)."""
    try:
        stored = store.get_config(tenant, agent)
    except InvalidConfig:
        return DEFAULT_MINIMUM
    return stored.config.learn_min_sessions if stored is not None and stored.config is not None else DEFAULT_MINIMUM


def term_of(word: str) -> Optional[str]:
    """The index term a learned word of one word is counted under (None for a phrase)."""
    terms = [term for term, _ in analyze(word, shorthand=True).words]
    return terms[0] if len(terms) == 1 else None


def is_word(digest: str) -> Callable[[LearnedWord], bool]:
    """Whether a learned word is the one a kept record (its term's hash) is of, in whatever form, and the
    traffic's: an operator who added the word back as their own is no customer's teaching."""
    def matches(entry: LearnedWord) -> bool:
        if entry.origin == OPERATOR:
            return False
        term = term_of(entry.word)
        return term is not None and term_hash(term) == digest
    return matches


def by_word(words: Iterable[str]) -> Callable[[LearnedWord], bool]:
    gone = {fold_word(w) for w in words}
    return lambda entry: fold_word(entry.word) in gone


def without_words(store: ConceptStore, tenant: str, agent: str, stored: StoredConcept,
                  out: Callable[[LearnedWord], bool], *, reason: str) -> StoredConcept:
    """The concept rewritten without the learned words `out` picks (compare-and-swap, writer `engine`),
    its `removed_words` as they are; Conflict when it was written meanwhile."""
    concept = stored.concept
    kept = tuple(e for e in concept.learned_words if not out(e))
    return store.replace(tenant, agent, concept.replace(learned_words=kept), if_match=stored.etag, actor=ENGINE,
                         reason=reason, sightings=stored.sightings)


def versions_holding(store: ConceptStore, tenant: str, agent: str, name: str,
                     holds: Callable[[LearnedWord], bool]) -> list[str]:
    """The older versions (not the current one) with a learned word `holds` picks."""
    out = []
    try:
        versions = store.versions(tenant, agent, name)
    except NotFound:
        return []
    for version in versions:
        if version.latest or version.deleted:
            continue
        try:
            held = store.read_version(tenant, agent, name, version.version_id).concept.learned_words
        except (InvalidConcept, NotFound):
            continue
        if any(holds(e) for e in held):
            out.append(version.version_id)
    return out


class ForgetWords:
    """forget_customer's share in learned words, agent by agent: the customer's pending words deleted
    from the learning ledger; each learned word they taught counted again without them — kept (their
    teacher object deleted) while the rest still make it (knowledge.learning.word_rule), else taken out
    of its concept (reason `purged`, not into `removed_words`), every older version holding it deleted,
    then its teachers. Ordered so that a rerun after a stop finds what is left and finishes it."""

    def __init__(self, store: ConceptStore, ledger: WordLedger):
        self._store, self._ledger = store, ledger

    def forget(self, sweeper: Sweeper, tenant: str, agent: str, teachers: frozenset[str]) -> None:
        self._pending(sweeper, tenant, agent, teachers)
        minimum: Optional[int] = None
        for kept in self._ledger.kept(tenant, agent):
            sweeper.checkpoint()
            mine = [t for t in kept.teachers if t in teachers]
            if not mine:
                continue
            _, teachings = self._ledger.read(kept)
            if minimum is None:
                minimum = minimum_of(self._store, tenant, agent)
            if enough([t for t in teachings if t.teacher not in teachers], minimum):
                self._drop(sweeper, kept, mine)
            elif self._unlearn(sweeper, tenant, agent, kept.concept, is_word(kept.digest)):
                self._drop(sweeper, kept, kept.teachers)

    def _pending(self, sweeper: Sweeper, tenant: str, agent: str, teachers: frozenset[str]) -> None:
        """The words not yet learned that the customer taught (keyed by their teacher id or session)."""
        mine = [key for key in sweeper.listed(self._ledger.bucket, self._ledger.words_prefix(tenant, agent))
                if key.rsplit("/", 1)[-1] in teachers]
        sweeper.keys(self._ledger.bucket, mine, "learning_ledger")

    def _drop(self, sweeper: Sweeper, kept: KeptWord, teachers: Iterable[str]) -> None:
        sweeper.keys(self._ledger.knowledge_bucket, [kept.prefix + t for t in teachers], "learned_word_teachers")

    def _unlearn(self, sweeper: Sweeper, tenant: str, agent: str, name: str,
                 word: Callable[[LearnedWord], bool]) -> bool:
        """Take the word out of the concept and delete every older version holding it; False when the
        concept was written meanwhile or does not read (the next run does it)."""
        report = sweeper.report
        try:
            stored = self._store.find(tenant, agent, name)
            holds = stored is not None and any(word(e) for e in stored.concept.learned_words)
        except InvalidConcept:
            report.complete = False  # nothing here can rewrite it: the studio lists it as a problem
            return False
        doomed = versions_holding(self._store, tenant, agent, name, word)
        if holds:
            if not report.dry_run:
                try:
                    without_words(self._store, tenant, agent, stored, word, reason="purged")
                except (Conflict, NotFound):
                    report.complete = False
                    return False
            doomed.append(stored.version_id)  # the version the rewrite replaced (on a dry run, would)
        if doomed:
            sweeper.versions(self._store.bucket, concept_key(tenant, agent, name), doomed, "concept_versions")
            report.concepts[f"{agent}/{name}"] += len(doomed)
        return True
