"""The model proposes the words a store's customers use for a concept an operator saved (docs/contract.md,
learned words: `origin: model`).

An operator's save (the studio's create, edit or restore, an import) queues a `words` job beside the
policy review on PolicyReviewQueue (knowledge.learning.policy_review: the concept's name only). Off
the request path, PolicyReviewFunction runs it, for an agent whose `learn_from` holds `model`:

- only a version an operator wrote, whose text (name, type, description, body) differs from the
  version before it: a re-save, or an edit that only removes a learned word, asks nothing;
- one model call, within the tenant's daily model budget (KNOWLEDGE_TENANT_DAILY_MODEL_CALLS, when
  set), asking for a JSON array of at most PROPOSAL_MAX short phrases;
- each phrase gated like a learned word (knowledge.format.learned.word_problem: 1 to 3 words of
  letters, no digit or sign, so no phone, CPF, order number or e-mail), lowercased, and refused
  when the PII redactor would change it, when every word of it is a word the concept already has or
  a stopword (it teaches nothing), when it is one of `removed_words`, or when it is learned already;
- written into `learned_words` (`origin: model`, `sessions: 0`, today) after the traffic's words,
  up to LEARNED_MAX in all, through the store's compare-and-swap (writer `learning`, reason
  `learned`). A version written meanwhile is never overwritten: its own save queued its own job.

An answer that is not a JSON array of strings fails the job (ModelAnswerUnusable), and the queue
asks again until ANSWER_ATTEMPTS deliveries; then the job ends with nothing proposed, counted. Counts
only reach a metric (WordsProposed, WordProposalRefused by reason, WordProposalSkipped by reason):
never a word. Whether the words are good can only be judged with a real model.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from knowledge.format.concept import Concept
from knowledge.format.learned import LEARNED_MAX, LearnedWord, fold_word, word_problem
from knowledge.learning.usage import record_model_call
from knowledge.recall.analysis import analyze
from knowledge.recall.postings import concept_terms
from knowledge.store.concepts import ConceptStore
from knowledge.store.config_cache import ConfigCache
from shared.errors import Conflict, InvalidConcept
from shared.model import ModelAnswerUnusable, ModelCache, answer_attempts_left, metered
from shared.pii import redact
from shared.telemetry import Counters
from shared.validation import unfence

PROPOSAL_MAX = 8  # phrases asked for, and kept at most, per save
ANSWER_MAX_ITEMS = 50  # an answer longer than this is no answer to what was asked
LEARNER = "learning"
SIGNAL = "model"

SYSTEM = (
    "You help a store's support agent understand its customers. Given one topic of the store's "
    "knowledge, list the words and short phrases (1 to 3 words each) that customers write for it in "
    "chat and that the text does not already say: colloquial words, slang, abbreviations, common "
    "misspellings. Write in the language of the text, lowercase, with no numbers, names, brands of "
    f"people or contact details. Answer with a JSON array of at most {PROPOSAL_MAX} strings and "
    "nothing else."
)


def words_prompt(concept: Concept) -> tuple[str, str]:
    return SYSTEM, f"name: {concept.name}\ntype: {concept.type}\ndescription: {concept.description}\n\n{concept.body}"


def text_of(concept: Concept) -> tuple[str, str, str, str]:
    """What a proposal reads: a change of anything else (learned words, counters) asks nothing."""
    return concept.name, concept.type, concept.description, concept.body


def parse_words(answer: str) -> list[str]:
    """The answer's phrases; ModelAnswerUnusable unless it is a JSON array of strings."""
    try:
        data = json.loads(unfence(answer))
    except ValueError:
        raise ModelAnswerUnusable("answer_not_json") from None
    if not isinstance(data, list) or len(data) > ANSWER_MAX_ITEMS or not all(isinstance(w, str) for w in data):
        raise ModelAnswerUnusable("answer_not_array")
    return data


def gate_words(proposed: list[str], concept: Concept) -> tuple[list[str], Counter]:
    """The phrases that may become model words of `concept` (at most the room it has left, and
    PROPOSAL_MAX), and how many were refused, by reason."""
    refused: Counter = Counter()
    own = set(concept_terms(concept.replace(learned_words=()))[0])
    had = {fold_word(e.word) for e in concept.learned_words} | {fold_word(w) for w in concept.removed_words}
    removed = {fold_word(w) for w in concept.removed_words}
    room = min(PROPOSAL_MAX, LEARNED_MAX - len(concept.learned_words))
    kept: list[str] = []
    for raw in proposed:
        word = " ".join(raw.strip().lower().split())
        if word_problem(word) is not None:
            refused["invalid"] += 1
        elif redact(word).text != word:
            refused["personal_data"] += 1
        elif fold_word(word) in removed:
            refused["removed"] += 1
        elif fold_word(word) in had or fold_word(word) in {fold_word(k) for k in kept}:
            refused["learned_already"] += 1
        elif not (terms := analyze(word).terms()) or set(terms) <= own:
            refused["known"] += 1  # the concept says it already (or it is only stopwords): it teaches nothing
        elif len(kept) >= room:
            refused["full"] += 1
        else:
            kept.append(word)
    return kept, refused


class WordProposer:
    """PolicyReviewFunction's `words` job (see the module's doc)."""

    def __init__(self, store: ConceptStore, configs: ConfigCache, models: ModelCache, utility_model: Optional[str],
                 quota: Any = None, counters: Optional[Counters] = None,
                 today: Callable[[], datetime] = lambda: datetime.now(timezone.utc)):
        self._store, self._configs, self._models = store, configs, models
        self._utility_model, self._quota, self._today = utility_model, quota, today
        self.counters = counters or Counters()

    def propose(self, tenant: str, agent: str, name: str, delivery: int = 1) -> str:
        """What the job did: `proposed`, or why it proposed nothing (counted either way)."""
        config = self._configs.get(tenant, agent)
        if config is None or SIGNAL not in config.learn_from:
            return self._skip("off")
        stored = self._store.find(tenant, agent, name)
        if stored is None:
            return self._skip("gone")
        try:
            concept = stored.concept
        except InvalidConcept:
            return self._skip("unreadable")
        if not (stored.actor or "").startswith("operator:"):
            return self._skip("not_operator")
        if not self._text_changed(tenant, agent, name, stored.version_id, concept):
            return self._skip("text_unchanged")
        ref = (config.model if config else None) or self._utility_model
        if not ref:
            return self._skip("no_model")
        if self._quota is not None and not self._quota.take(tenant):
            return self._skip("budget")
        system, user = words_prompt(concept)
        with metered() as meter:
            answer = self._models.get(ref).complete(system, user)  # no answer (ModelError) fails the job
        record_model_call(self.counters, tenant, meter.usage, len(system) + len(user), len(answer))
        try:
            proposed = parse_words(answer)
        except ModelAnswerUnusable as exc:
            if answer_attempts_left(delivery):
                raise
            self.counters.count("WordProposalDropped", reason=str(exc))
            return "dropped"
        kept, refused = gate_words(proposed, concept)
        for reason, n in refused.items():
            self.counters.count("WordProposalRefused", n, reason=reason)
        if not kept:
            return self._skip("nothing_kept")
        day = self._today().date()
        updated = concept.replace(learned_words=(*concept.learned_words, *(LearnedWord(w, SIGNAL, 0, day)
                                                                          for w in kept)))
        try:
            self._store.replace(tenant, agent, updated, if_match=stored.etag, actor=LEARNER, reason="learned")
        except Conflict:
            return self._skip("written_since")  # that version's own save queued its own job
        self.counters.count("WordsProposed", len(kept))
        return "proposed"

    def _text_changed(self, tenant: str, agent: str, name: str, version_id: Optional[str], concept: Concept) -> bool:
        """Whether the version before `version_id` said another text (True when there is none)."""
        versions, _ = self._store.version_page(tenant, agent, name, limit=5, marker=None)
        ids = [v.version_id for v in versions]
        if version_id not in ids:
            return True
        before = next((v for v in versions[ids.index(version_id) + 1:] if not v.deleted), None)
        if before is None:
            return True
        try:
            return text_of(self._store.read_version(tenant, agent, name, before.version_id).concept) != text_of(concept)
        except InvalidConcept:
            return True

    def _skip(self, why: str) -> str:
        self.counters.count("WordProposalSkipped", reason=why)
        return why
