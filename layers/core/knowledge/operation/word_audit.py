"""`knowledge words audit`: the learned words an agent's traffic taught (origin `loaded` or `sighting`)
that the rules of docs/contract.md, "Learned words", would not have learned, listed and (without a dry
run) taken out of their concepts — one version per concept (writer `engine`, reason `repaired`), never
into `removed_words`, so the traffic may teach them again by the rules. A word is taken out when

- it is a name (`name`): a common given name, as the learning path reads one (knowledge.learning.name_words);
- another concept's own text has it (`another_concepts_word`): it pulls that concept's questions to this one;
- its teachers are too few (`too_few_teachers`): counted again by knowledge.learning.word_rule from what the
  learning ledger still holds — the teachers kept beside a learned word, or for a word learned before they
  were kept, the pending entries of the sessions that taught it, each session read as its customer where
  the customer index (`customers`: Facts', wired in by the command line) names one.

A word whose teachers the ledger no longer holds (their entries expired with the turns) is kept and listed
as not checked: nothing says the rules would not have learned it. Words the model proposed or an operator
added are not the traffic's and are left alone, whatever the traffic said of them. The teachers still kept
for a word no longer on its concept as the traffic's (an operator removed it, or added it back as their
own) are deleted too: the ledger keeps them only while the traffic's word is on a concept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from knowledge.format.learned_words import TRAFFIC
from knowledge.learning.name_words import name_words
from knowledge.learning.word_rule import enough
from knowledge.operation.unlearn import by_word, minimum_of, term_of, without_words
from knowledge.recall.analysis import analyze
from knowledge.recall.postings import LEARNED, concept_terms
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.learning_ledger import KeptWord, Teaching, WordLedger, customer_teacher, term_hash
from shared.errors import Conflict, InvalidConcept, NotFound

REASONS = {"name": "a name", "another_concepts_word": "another concept's own word",
           "too_few_teachers": "taught by too few distinct customers or sessions, or by sessions too close in time"}


@dataclass(frozen=True)
class Finding:
    concept: str
    word: str
    reason: str  # a key of REASONS


@dataclass
class WordAudit:
    checked: int = 0  # learned words of the traffic looked at
    out: list[Finding] = field(default_factory=list)  # removed, or on a dry run to remove
    unchecked: list[tuple[str, str]] = field(default_factory=list)  # (concept, word): teachers no longer known
    contended: list[str] = field(default_factory=list)  # concepts written meanwhile: run again
    # Teachers still kept for a word no longer on its concept (an operator removed it): deleted.
    stale: list[KeptWord] = field(default_factory=list)

    @property
    def concepts(self) -> list[str]:
        return sorted({f.concept for f in self.out})


def audit_words(store: ConceptStore, ledger: WordLedger, tenant: str, agent: str, *, dry_run: bool = False,
                customers: Optional[Callable[[], Mapping[str, str]]] = None) -> WordAudit:
    """Audit the agent's learned words (see the module's doc); `customers` answers the customer id of
    each session the customer index knows (asked once, only for a word learned before teachers were kept)."""
    report = WordAudit()
    stored: dict[str, StoredConcept] = {}
    own: dict[str, set[str]] = {}  # concept -> its own text's terms
    for item in store.load_all(tenant, agent):
        try:
            concept = item.concept
            terms = concept_terms(concept)[0]
        except InvalidConcept:
            continue
        stored[item.name] = item
        own[item.name] = {t for t in terms if not t.startswith(LEARNED)}
    said_by: dict[str, set[str]] = {}
    for name, terms in own.items():
        for term in terms:
            said_by.setdefault(term, set()).add(name)
    minimum = minimum_of(store, tenant, agent)
    sessions_of: Optional[Mapping[str, str]] = None
    for name, item in sorted(stored.items()):
        for entry in item.concept.learned_words:
            if entry.origin not in TRAFFIC:
                continue
            report.checked += 1
            terms = [term for term, _ in analyze(entry.word, shorthand=True).words]
            if name_words([entry.word]):
                report.out.append(Finding(name, entry.word, "name"))
                continue
            if any(said_by.get(term, set()) - {name} for term in terms):
                report.out.append(Finding(name, entry.word, "another_concepts_word"))
                continue
            if len(terms) != 1:
                report.unchecked.append((name, entry.word))
                continue
            teachings = ledger.kept_teachings(tenant, agent, name, terms[0])
            if not teachings:
                if sessions_of is None:
                    sessions_of = customers() if customers is not None else {}
                teachings = _as_customers(ledger.teachings(tenant, agent, name, terms[0]), tenant, sessions_of)
            if not teachings:
                report.unchecked.append((name, entry.word))
            elif not enough(teachings, minimum):
                report.out.append(Finding(name, entry.word, "too_few_teachers"))
    on_concepts = {(name, term_hash(term)) for name, item in stored.items()
                   for term in (term_of(e.word) for e in item.concept.learned_words if e.origin in TRAFFIC) if term}
    report.stale = [kept for kept in ledger.kept(tenant, agent)
                    if kept.concept in stored and (kept.concept, kept.digest) not in on_concepts]
    if not dry_run:
        _remove(store, ledger, tenant, agent, stored, report)
        for kept in report.stale:
            ledger.forget_kept(kept.prefix)
    return report


def _as_customers(teachings: list[Teaching], tenant: str, sessions_of: Mapping[str, str]) -> list[Teaching]:
    """Pending entries keyed by session (written before customers were counted), each read as the
    session's customer where the index names one: one teacher per customer, the earliest teaching."""
    out: dict[str, Teaching] = {}
    for teaching in sorted(teachings, key=lambda t: (t.at is None, t.at)):
        customer = None if teaching.customer else sessions_of.get(teaching.teacher)
        teacher = customer_teacher(tenant, customer) if customer else teaching.teacher
        out.setdefault(teacher, Teaching(teacher, teaching.at))
    return list(out.values())


def _remove(store: ConceptStore, ledger: WordLedger, tenant: str, agent: str, stored: dict[str, StoredConcept],
            report: WordAudit) -> None:
    for name in report.concepts:
        words = [f.word for f in report.out if f.concept == name]
        try:
            without_words(store, tenant, agent, stored[name], by_word(words), reason="repaired")
        except (Conflict, NotFound):
            report.contended.append(name)
            continue
        for word in words:
            term = term_of(word)
            if term is not None:
                ledger.forget_kept(ledger.kept_prefix_of(tenant, agent, name, term))
    report.out = [f for f in report.out if f.concept not in report.contended]
