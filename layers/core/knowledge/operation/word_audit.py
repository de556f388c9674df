"""`knowledge words audit`: the words an agent's traffic taught (origin `loaded` or `sighting`) that the
learned-word rules would not have learned — a name, another concept's own word, too few teachers —
listed and, without a dry run, taken out of their concepts (one version per concept, never into
`removed_words`); a word whose teachers expired is kept and listed as not checked.
docs/contract.md, "Learned words" ("What earlier releases wrote still reads")."""

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
