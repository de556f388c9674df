"""The words the model proposes for a concept when it enters (`origin: model`): which concepts a words
job asks for, one model call per batch within the tenant's daily model calls (the rest wait in
knowledge.store.pending_words), each phrase gated as a learned word, and the write by compare-and-swap.
Run by PolicyReviewFunction; counts only, never a word. docs/contract.md, "Words the model proposes"."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Sequence

from knowledge.format.concept import Concept
from knowledge.format.learned_words import LEARNED_MAX, LearnedWord, fold_word, word_problem
from knowledge.learning.usage import record_model_call
from knowledge.learning.word_prompt import BATCH_MAX, PROPOSAL_MAX, concept_block, parse_answer, words_prompt
from knowledge.recall.analysis import analyze
from knowledge.recall.postings import concept_terms
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.config_cache import ConfigCache
from knowledge.store.keys import SHARED
from knowledge.store.pending_words import PendingWords
from shared.errors import Conflict, InvalidConcept, ModelAnswerUnusable
from shared.model import ModelCache, answer_attempts_left, metered
from shared.pii import redact
from shared.telemetry import Counters

LEARNER = "learning"
SIGNAL = "model"
PROMPT_CHARS_MAX = 40_000  # one call's concepts' text at most (a concept longer than this is asked alone)


def text_of(concept: Concept) -> tuple[str, str, str, str]:
    """What a proposal reads: a change of anything else (learned words, counters) asks nothing."""
    return concept.name, concept.type, concept.description, concept.body


def calls_of(concepts: Sequence[Concept]) -> list[list[Concept]]:
    """`concepts` grouped into model calls: at most BATCH_MAX each and PROMPT_CHARS_MAX of text."""
    calls: list[list[Concept]] = []
    size = 0
    for concept in concepts:
        chars = len(concept_block(concept))
        if not calls or len(calls[-1]) >= BATCH_MAX or size + chars > PROMPT_CHARS_MAX:
            calls.append([])
            size = 0
        calls[-1].append(concept)
        size += chars
    return calls


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
                 today: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 pending: Optional[PendingWords] = None):
        """`pending`: where concepts the budget deferred wait (None: a deferred concept is only counted)."""
        self._store, self._configs, self._models = store, configs, models
        self._utility_model, self._quota, self._today, self._pending = utility_model, quota, today, pending
        self.counters = counters or Counters()

    def propose(self, tenant: str, agent: str, name: str, delivery: int = 1) -> str:
        """One concept's job (see propose_many): `proposed`, or why it proposed nothing."""
        outcomes = self.propose_many(tenant, agent, (name,), delivery=delivery)
        return next(iter(outcomes))

    def propose_many(self, tenant: str, agent: str, names: Sequence[str], delivery: int = 1,
                     mode: str = "save") -> Counter:
        """The job of 1 to BATCH_MAX concepts of `agent` (or the tenant's shared scope): the outcome of
        each, counted by outcome (`proposed`, `deferred`, or why nothing was proposed)."""
        outcomes: Counter = Counter()
        ref, why = self._model_for(tenant, agent)
        if why is not None:
            for _ in names:
                outcomes[self._skip(why)] += 1
            if mode == "pending" and self._pending is not None:  # nothing will teach them: they wait no more
                self._done(tenant, agent, self._pending.among(tenant, agent, names))
            return outcomes
        waiting = self._pending.among(tenant, agent, names) if self._pending is not None else set()
        asked: list[tuple[StoredConcept, Concept]] = []
        for name in names:
            found, why = self._askable(tenant, agent, name, mode, name in waiting)
            if found is None:
                outcomes[self._skip(why)] += 1
            else:
                asked.append(found)
        stored_of = {concept.name: stored for stored, concept in asked}
        calls = calls_of([concept for _, concept in asked])
        for i, call in enumerate(calls):
            if self._quota is not None and not self._quota.take(tenant):
                deferred = [c.name for later in calls[i:] for c in later]
                self._defer(tenant, agent, deferred)
                outcomes["deferred"] += len(deferred)
                waiting -= set(deferred)
                break
            for name, outcome in self._ask(tenant, agent, ref, call, stored_of, delivery).items():
                outcomes[outcome] += 1
            self._done(tenant, agent, waiting & {c.name for c in call})
        self._done(tenant, agent, waiting - {c.name for call in calls for c in call})
        return outcomes

    def _model_for(self, tenant: str, agent: str) -> tuple[Optional[str], Optional[str]]:
        """The model that teaches `agent`, or why none does. The tenant's shared scope has no knowledge.yaml:
        the deployment's utility model teaches its concepts, once there, for every agent that recalls them."""
        if agent == SHARED:
            return (self._utility_model, None) if self._utility_model else (None, "no_model")
        config = self._configs.get(tenant, agent)
        if config is None or SIGNAL not in config.learn_from:
            return None, "off"
        ref = config.model or self._utility_model
        return (ref, None) if ref else (None, "no_model")

    def _askable(self, tenant: str, agent: str, name: str, mode: str,
                 waiting: bool) -> tuple[Optional[tuple[StoredConcept, Concept]], str]:
        """The concept to ask for, or why it is not asked for: one that waits for the budget always; else a
        save's job when the version is not the learner's own and its text changed; a created concept's or a
        backfill's when the concept has no model word yet (a confirmation since changes nothing)."""
        stored = self._store.find(tenant, agent, name)
        if stored is None:
            return None, "gone"
        try:
            concept = stored.concept
        except InvalidConcept:
            return None, "unreadable"
        if waiting:
            return (stored, concept), ""  # deferred by the budget: asked whatever wrote it since
        if mode == "pending":
            return None, "not_pending"  # taught since it was queued again
        if mode in ("created", "backfill"):  # never taught yet: a retried job asks no more
            if any(e.origin == SIGNAL for e in concept.learned_words):
                return None, "taught_already"
            return (stored, concept), ""
        if stored.actor == LEARNER:
            return None, "learner_wrote"  # the words written (by the model or the traffic) ask nothing more
        if not self._text_changed(tenant, agent, name, stored.version_id, concept):
            return None, "text_unchanged"
        return (stored, concept), ""

    def _ask(self, tenant: str, agent: str, ref: str, call: list[Concept], stored_of: dict[str, StoredConcept],
             delivery: int) -> dict[str, str]:
        """One model call for `call`'s concepts, each one's words gated and written; its outcome by name."""
        system, user = words_prompt(call)
        with metered() as meter:
            answer = self._models.get(ref).complete(system, user)  # no answer (ModelError) fails the job
        record_model_call(self.counters, tenant, meter.usage, len(system) + len(user), len(answer))
        self.counters.count("WordProposalCalls")
        try:
            answered, unknown = parse_answer(answer, [c.name for c in call])
        except ModelAnswerUnusable as exc:
            if answer_attempts_left(delivery):
                raise
            self.counters.count("WordProposalDropped", len(call), reason=str(exc))
            return {c.name: "dropped" for c in call}
        if unknown:
            self.counters.count("WordProposalUnknownNames", unknown)
        return {c.name: (self._write(tenant, agent, c, stored_of[c.name], answered[c.name]) if c.name in answered
                         else self._skip("unanswered")) for c in call}

    def _write(self, tenant: str, agent: str, concept: Concept, stored: StoredConcept, proposed: list[str]) -> str:
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

    def _defer(self, tenant: str, agent: str, names: list[str]) -> None:
        """The tenant's model calls are spent for today: the concepts wait for the next day, never dropped."""
        if self._pending is not None:
            self._pending.put(tenant, agent, names)
        self.counters.count("WordProposalDeferred", len(names))

    def _done(self, tenant: str, agent: str, names: set[str]) -> None:
        if names and self._pending is not None:
            self._pending.done(tenant, agent, sorted(names))

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
