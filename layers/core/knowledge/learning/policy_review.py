"""A human's policy retires the observed concepts it contradicts, off the request path: the agent's
observed concepts ranked against the policy by the recall index, the judge asked one call each;
no verdict leaves the pair waiting beside the concept (knowledge.store.waiting), and a policy never
retires a human's text. A shared policy is fanned out to every agent that recalls it.
docs/contract.md, "Policy review"."""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from knowledge.errors import InvalidPolicyReview, ReviewsNotQueued
from knowledge.format.concept import Concept, parse, utc_now
from knowledge.format.events import CONFLICT as CONFLICT_EVENT
from knowledge.format.events import LEARNED, detail
from knowledge.learning import claims
from knowledge.learning.usage import record_model_call
from knowledge.learning.word_prompt import BATCH_MAX
from knowledge.recall.warm import WarmIndexes
from knowledge.store.concepts import ConceptStore
from knowledge.store.config_cache import ConfigCache
from knowledge.store.keys import SHARED, check_scope
from knowledge.store.waiting import CONFLICT, POLICY, WaitingPair
from shared import awscall, deadline
from shared.errors import Conflict, InvalidConcept, InvalidConfig, KnowledgeError, ModelAnswerUnusable
from shared.events import Events
from shared.model import ModelCache, answer_attempts_left, metered
from shared.names import Slug
from shared.telemetry import Counters

REVIEWED_MAX = 5
POLICIES_REVIEWED = 3  # the other policies in force a saved policy is judged against (conflicts of two policies)
# How far back the history is read for an operator's version before a concept is retired: further
# than consolidate.MERGE_HISTORY_LOOKED (20), since retiring takes a concept out of recall and this
# read is off the request path, once per candidate (the lifecycle also keeps every version of 30 days).
RETIRE_HISTORY_LOOKED = 50
ENGINE = "engine"
# What the index is asked for: more than REVIEWED_MAX, since the policy itself and other policies rank too.
_ASKED = 4 * REVIEWED_MAX
_BATCH = 10  # SQS's most messages in one SendMessageBatch
FAN_OUT_READS = 16  # agents' knowledge.yaml read at once when a shared policy is fanned out


class PolicySaved(BaseModel):
    """The PolicyReviewQueue message: which concept an operator saved, never its text; `job`: the
    policy review (a policy concept; the field is then left out) or the model's word proposal
    (`words`, any concept: knowledge.learning.model_words). `agent` SHARED: a policy of the tenant's
    shared scope, fanned out; `shared: true`: that policy reviewed against `agent`'s concepts."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    v: Literal[1] = 1
    tenant: Slug
    agent: Annotated[str, AfterValidator(check_scope)]  # an agent, or SHARED
    name: Slug
    job: Literal["review", "words"] = "review"
    shared: bool = False
    # A words job of several concepts (up to BATCH_MAX, `name` the first): one model call for them all.
    names: tuple[Slug, ...] = Field(default=(), max_length=BATCH_MAX)
    # Why the words are asked: a save (the text changed), a concept extraction created, one the budget
    # deferred, or a backfill (knowledge.learning.model_words).
    mode: Literal["save", "created", "pending", "backfill"] = "save"

    @field_validator("names", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        return tuple(value) if isinstance(value, list) else value  # JSON has arrays; strict mode wants a tuple

    @model_validator(mode="after")
    def _one_scope(self) -> "PolicySaved":
        if self.shared and self.job != "review":
            raise ValueError("`shared` marks a shared policy's review fanned out to an agent")
        if self.agent == SHARED and self.job == "review" and self.shared:
            raise ValueError("the shared scope's policy review is fanned out to its agents")
        if self.job != "words" and (self.names or self.mode != "save"):
            raise ValueError("`names` and `mode` belong to a words job")
        if self.names and (self.names[0] != self.name or len(set(self.names)) != len(self.names)):
            raise ValueError("`names` starts with `name` and repeats none")
        return self

    @property
    def concepts(self) -> tuple[str, ...]:
        return self.names or (self.name,)

    def body(self) -> str:
        left_out = {"job"} if self.job == "review" else set()
        left_out |= {"shared"} if not self.shared else set()
        left_out |= {"names"} if len(self.names) < 2 else set()
        left_out |= {"mode"} if self.mode == "save" else set()
        return self.model_dump_json(exclude=left_out)


def words_messages(tenant: str, agent: str, names: list[str], mode: str = "save") -> list[PolicySaved]:
    """The words jobs of `names` (an agent's or the shared scope's), BATCH_MAX concepts to a message."""
    return [PolicySaved(tenant=tenant, agent=agent, name=batch[0], job="words", mode=mode,
                        names=tuple(batch) if len(batch) > 1 else ())
            for batch in (names[i:i + BATCH_MAX] for i in range(0, len(names), BATCH_MAX))]


def parse_policy_saved(body: str) -> PolicySaved:
    try:
        return PolicySaved.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        raise InvalidPolicyReview(f"not a policy review message: {type(exc).__name__}") from None


class PolicyReviewQueue:
    """The studio's side: a policy concept saved is queued for review (its name only)."""

    def __init__(self, sqs, queue_url: str, counters: Optional[Counters] = None, words: bool = True):
        self._sqs, self._url = sqs, queue_url
        self.counters = counters or Counters()
        self.words = words  # also queue the model's word proposal of every concept saved (the agent's
        # `learn_from: [model]` decides, in PolicyReviewFunction: the studio reads no knowledge.yaml to save)

    def saved(self, tenant: str, agent: str, markdown: str) -> bool:
        """Queue the review when the saved document is a policy concept, and, when asked for
        (`words`), the model's word proposal for any concept; whether the review was queued."""
        try:
            concept = parse(markdown)
        except InvalidConcept:
            return False
        if self.words:  # an agent's concept, or a shared one (taught once, in the shared scope)
            message = PolicySaved(tenant=tenant, agent=agent, name=concept.name, job="words")
            self._sqs.send_message(QueueUrl=self._url, MessageBody=message.body())
            self.counters.count("WordProposalQueued")
        if concept.provenance != "policy":
            return False
        message = PolicySaved(tenant=tenant, agent=agent, name=concept.name)
        self._sqs.send_message(QueueUrl=self._url, MessageBody=message.body())
        self.counters.count("PolicyReviewQueued")
        return True

    def saved_many(self, tenant: str, agent: str, markdowns: list[str]) -> int:
        """What `saved` queues for each of many documents (an import), ten messages to a SendMessageBatch;
        how many were not queued (the queue refused them: each concept stands, its review is counted lost)."""
        messages: list[tuple[str, PolicySaved]] = []
        named: list[str] = []
        for markdown in markdowns:
            try:
                concept = parse(markdown)
            except InvalidConcept:
                continue
            named.append(concept.name)
            if concept.provenance == "policy":
                messages.append(("PolicyReviewQueued", PolicySaved(tenant=tenant, agent=agent, name=concept.name)))
        if self.words:  # the words of BATCH_MAX concepts to a message: one model call for each message
            named = list(dict.fromkeys(named))
            messages += [("WordProposalQueued", m) for m in words_messages(tenant, agent, named)]
        return self.send(messages)

    def words_for(self, tenant: str, agent: str, names: list[str], mode: str = "save") -> int:
        """The words jobs of `names`, BATCH_MAX to a message; how many concepts' jobs were not queued."""
        return self.send([("WordProposalQueued", m) for m in words_messages(tenant, agent, names, mode=mode)])

    def send(self, messages: list[tuple[str, PolicySaved]]) -> int:
        """`messages` (each with the metric it counts), ten to a SendMessageBatch; how many concepts' jobs
        the queue refused (each counted PolicyReviewNotQueued)."""
        lost = 0
        for start in range(0, len(messages), _BATCH):
            batch = messages[start:start + _BATCH]
            entries = [{"Id": str(i), "MessageBody": message.body()} for i, (_, message) in enumerate(batch)]
            try:
                failed = {entry["Id"] for entry in awscall.call(self._sqs, "send_message_batch", QueueUrl=self._url,
                                                                Entries=entries).get("Failed", [])}
            except KnowledgeError:
                failed = {entry["Id"] for entry in entries}
            for i, (metric, message) in enumerate(batch):
                n = len(message.concepts)
                if str(i) in failed:
                    lost += n
                    self.counters.count("PolicyReviewNotQueued", n)
                else:
                    self.counters.count(metric, n)
        return lost

    def fan_out(self, tenant: str, agents: list[str], name: str) -> None:
        """The shared policy `name` queued for its review in each of `agents`, ten to a request; an
        entry the queue refused raises, so the fanned-out message is received again (a review
        repeated retires and flags nothing twice; a concept it kept is judged again)."""
        for start in range(0, len(agents), _BATCH):
            entries = [{"Id": str(i), "MessageBody": PolicySaved(tenant=tenant, agent=agent, name=name,
                                                                  shared=True).body()}
                       for i, agent in enumerate(agents[start:start + _BATCH])]
            answer = awscall.call(self._sqs, "send_message_batch", QueueUrl=self._url, Entries=entries)
            if answer.get("Failed"):
                raise ReviewsNotQueued(f"{len(answer['Failed'])} of {len(entries)} shared policy reviews not queued")
            self.counters.count("PolicyReviewQueued", len(entries))


@dataclass
class Review:
    """What one policy's review did, by outcome (retired, flagged, kept), for the log and metrics."""

    policy: str
    outcomes: Counter = field(default_factory=Counter)
    skipped: Optional[str] = None


class PolicyReviewer:
    def __init__(self, store: ConceptStore, warm: WarmIndexes, configs: ConfigCache, models: ModelCache,
                 utility_model: Optional[str], events: Events, counters: Optional[Counters] = None,
                 queue: Optional[PolicyReviewQueue] = None):
        self._store, self._warm, self._configs = store, warm, configs
        self._models, self._utility_model, self._events = models, utility_model, events
        self.counters = counters or Counters()
        self._queue = queue  # where a shared policy's review is fanned out (None: it is skipped, counted)

    def review(self, saved: PolicySaved, delivery: Optional[int] = None) -> Review:
        """`delivery`: the message's receive count; before the ANSWER_ATTEMPTS-th, an answer that is no
        verdict fails the message so the queue asks again (None: no queue, the pair waits at once)."""
        tenant, agent = saved.tenant, saved.agent
        review = Review(saved.name)
        scope = SHARED if saved.shared else agent
        current = self._store.find(tenant, scope, saved.name)
        if current is None:
            return self._skip(review, "gone")
        policy = current.concept  # an unreadable concept raises InvalidConcept: the message fails
        if policy.provenance != "policy":
            return self._skip(review, "not_policy")
        if agent == SHARED:
            if self._queue is None:  # the template always sets POLICY_REVIEW_QUEUE_URL; a bare setup may not
                return self._skip(review, "no_queue")
            return self._fan_out(tenant, policy, review)
        if saved.shared and (why := self._not_recalling(tenant, agent)):
            return self._skip(review, why)  # the agent stopped recalling shared knowledge, or is off
        if saved.shared and self._store.find(tenant, agent, policy.name) is not None:
            return self._skip(review, "shadowed")  # its own concept of the name is in force there
        config = self._configs.get(tenant, agent)
        knowledge = self._warm.knowledge(tenant, agent, config=config)
        text = f"{policy.description}\n{claims.primary_claim(policy.body)}"
        names = [hit.name for hit in knowledge.index.search(text, _ASKED)
                 if hit.name != policy.name and hit.doc.provenance == "observed"][:REVIEWED_MAX]
        ref = (config.model if config else None) or self._utility_model
        for name in names:
            outcome = self._review_one(tenant, agent, name, policy, ref, delivery)
            review.outcomes[outcome] += 1
            self.counters.count("PolicyReviewOutcome", outcome=outcome)
        for other, other_scope in self._policies_near(tenant, agent, policy, text, knowledge, config, saved.shared):
            outcome = self._against_policy(tenant, agent, policy, saved.shared, other, other_scope, ref, delivery)
            review.outcomes[outcome] += 1
            self.counters.count("PolicyReviewOutcome", outcome=outcome)
        self.counters.count("PolicyReviewed")
        return review

    def _policies_near(self, tenant: str, agent: str, policy: Concept, text: str, knowledge, config,
                       policy_shared: bool) -> list[tuple[str, str]]:
        """The other policies in force in the agent that the policy's text ranks closest (at most
        POLICIES_REVIEWED): the agent's own, and the tenant's shared ones it recalls and does not shadow."""
        near = [(hit.score, hit.name, agent) for hit in knowledge.index.search(text, _ASKED)
                if hit.name != policy.name and hit.doc.provenance == "policy"]
        if not policy_shared and config is not None and config.shared:
            shared = self._warm.knowledge(tenant, SHARED, config=config)
            near += [(hit.score, hit.name, SHARED) for hit in shared.index.search(text, _ASKED)
                     if hit.name != policy.name and hit.doc.provenance == "policy"
                     and hit.name not in knowledge.index.docs]
        near.sort(key=lambda found: (-found[0], found[1]))
        return [(name, scope) for _, name, scope in near[:POLICIES_REVIEWED]]

    def _against_policy(self, tenant: str, agent: str, policy: Concept, policy_shared: bool, name: str, scope: str,
                        ref: Optional[str], delivery: Optional[int]) -> str:
        """Two policies in force in the agent, judged: when they contradict, a conflict of two policies is
        recorded beside each (both kept, neither retired, neither's text changed) and announced; when they
        agree, a conflict or a wait recorded before between them is lifted; with no verdict, the pair waits."""
        stored = self._store.find(tenant, scope, name)
        if stored is None:
            return "gone"
        other = stored.concept
        if other.provenance != "policy":
            return "kept"
        verdict = self._judge(tenant, other, policy, ref)
        if verdict.why in claims.UNJUDGED:
            return self._wait(tenant, agent, name, policy, verdict.why, delivery, shared=scope == SHARED)
        waiting, today = self._store.waiting(), utc_now().strftime("%Y-%m-%d")
        sides = ((policy.name, other.name, policy_shared), (other.name, policy.name, scope == SHARED))
        if verdict.why != "contradicting":
            for concept, against, _ in sides:
                waiting.dismiss_pair(tenant, agent, concept, CONFLICT, against)
            waiting.dismiss_pair(tenant, agent, other.name, POLICY, policy.name)
            return "kept"
        for concept, against, shared in sides:
            waiting.put(tenant, agent, WaitingPair(concept=concept, kind=CONFLICT, why="contradicting", since=today,
                                                   policy=against, shared=shared))
        waiting.dismiss_pair(tenant, agent, other.name, POLICY, policy.name)
        self._events.publish(CONFLICT_EVENT, detail(tenant, agent, policy.name, policy.type, outcome="policy_conflict",
                                                    conflicts_with=other.name))
        return "conflict"

    def _fan_out(self, tenant: str, policy: Concept, review: Review) -> Review:
        """The shared policy's review queued, one per agent that recalls shared knowledge. The agents'
        knowledge.yaml are read side by side (FAN_OUT_READS at once); one the store cannot answer fails
        the message, one that does not parse is skipped."""
        listed = self._store.agents(tenant)
        with ThreadPoolExecutor(max_workers=max(1, min(FAN_OUT_READS, len(listed)))) as pool:
            why_not = list(pool.map(deadline.carry(lambda a: self._not_recalling(tenant, a)), listed))
        agents = [a for a, why in zip(listed, why_not) if why is None]
        for why in why_not:
            if why == "invalid_config":
                self.counters.count("PolicyReviewSkipped", reason=why)
        review.outcomes["agents"] = len(agents)
        self._queue.fan_out(tenant, agents, policy.name)
        self.counters.count("PolicyReviewFannedOut")
        return review

    def _not_recalling(self, tenant: str, agent: str) -> Optional[str]:
        """Why the agent does not recall shared knowledge now (None: it does). An invalid knowledge.yaml
        turns the agent off (a kill switch fails safe): it recalls nothing shared, and blocks no other
        agent's review."""
        try:
            config = self._configs.get(tenant, agent)
        except InvalidConfig:
            return "invalid_config"
        return None if config is not None and config.shared else "not_shared"

    def _skip(self, review: Review, why: str) -> Review:
        review.skipped = why
        self.counters.count("PolicyReviewSkipped", reason=why)
        return review

    def _review_one(self, tenant: str, agent: str, name: str, policy: Concept, ref: Optional[str],
                    delivery: Optional[int]) -> str:
        verdicts: dict[str, claims.Verdict] = {}
        for _ in range(3):  # a concept written meanwhile is read and judged again (the verdict is kept)
            stored = self._store.find(tenant, agent, name)
            if stored is None:
                return "gone"
            observed = stored.concept
            if observed.provenance != "observed" or observed.retired_by:
                return "kept"
            if f"Policy [[{policy.name}]]" in observed.body or self._store.waiting().has(
                    tenant, agent, name, CONFLICT, policy.name):  # flagged by an earlier review: a human decides
                return "flagged"
            key = claims.primary_claim(observed.body)
            if key not in verdicts:
                verdicts[key] = self._judge(tenant, observed, policy, ref)
            verdict = verdicts[key]
            if verdict.why in claims.UNJUDGED:
                return self._wait(tenant, agent, name, policy, verdict.why, delivery)
            if verdict.why != "contradicting":
                self._store.waiting().dismiss_pair(tenant, agent, name, POLICY, policy.name)  # judged now
                return "kept"
            if self._operator_wrote(tenant, agent, name, stored.actor):
                return self._flag(tenant, agent, observed, policy)
            updated, outcome, reason = observed.replace(retired_by=policy.name), "retired", "retired"
            try:
                self._store.replace(tenant, agent, updated, if_match=stored.etag, actor=ENGINE, reason=reason)
            except Conflict:
                self.counters.count("PolicyReviewRetry")
                continue
            self._store.waiting().dismiss_pair(tenant, agent, name, POLICY, policy.name)  # judged now
            self._events.publish(LEARNED, detail(tenant, agent, name, observed.type, outcome=outcome))
            return outcome
        return "contended"

    def _flag(self, tenant: str, agent: str, observed: Concept, policy: Concept) -> str:
        """A human's text the judge found contradicting the policy: never retired, never written; the conflict
        is recorded beside it (both kept) for a human to decide, and announced."""
        waiting = self._store.waiting()
        waiting.put(tenant, agent, WaitingPair(concept=observed.name, kind=CONFLICT, why="contradicting",
                                               since=utc_now().strftime("%Y-%m-%d"), policy=policy.name))
        waiting.dismiss_pair(tenant, agent, observed.name, POLICY, policy.name)
        self._events.publish(CONFLICT_EVENT, detail(tenant, agent, observed.name, observed.type,
                                                    outcome="policy_conflict", conflicts_with=policy.name))
        return "flagged"

    def _wait(self, tenant: str, agent: str, name: str, policy: Concept, why: str, delivery: Optional[int],
              shared: bool = False) -> str:
        """No usable verdict: asked again while the message has deliveries left, then the pair waits
        beside the observed concept for the operator; the concept itself is not written."""
        if why == "unusable" and delivery is not None and answer_attempts_left(delivery):
            raise ModelAnswerUnusable(f"the judge's answer on {name!r} was no verdict (delivery {delivery})")
        pair = WaitingPair(concept=name, kind=POLICY, why=why, since=utc_now().strftime("%Y-%m-%d"), policy=policy.name,
                           shared=shared)
        self._store.waiting().put(tenant, agent, pair)
        return "waiting"

    def _operator_wrote(self, tenant: str, agent: str, name: str, actor: Optional[str]) -> bool:
        """An operator wrote one of the concept's last RETIRE_HISTORY_LOOKED versions: its text is (partly)
        a human's, which the engine never retires (a later confirmation leaves the body as it was)."""
        if (actor or "").startswith("operator:"):
            return True
        versions, _ = self._store.version_page(tenant, agent, name, limit=RETIRE_HISTORY_LOOKED, marker=None)
        return any((v.actor or "").startswith("operator:") for v in versions)

    def _judge(self, tenant: str, observed: Concept, policy: Concept, ref: Optional[str]) -> claims.Verdict:
        if not ref:
            return claims.unusable("no_model")
        system, user = claims.judge_prompt(observed, policy)
        with metered() as meter:
            answer = self._models.get(ref).complete(system, user)  # no answer (ModelError) fails the message
        record_model_call(self.counters, tenant, meter.usage, len(system) + len(user), len(answer))
        return claims.parse_verdict(answer)
