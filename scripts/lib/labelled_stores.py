"""The stores report's local AWS (scripts/stores_report.py, whose doc says what is run and counted):
moto's server, the stores written to their agents, RetrieveFunction answering the tests, and the
paths that give an agent learned words — PolicyReviewFunction's `words` job (the model's words,
the scripted model answering from a stand-in's proposals) and the traffic through retrieve,
load_knowledge, ExtractFunction and ConsolidateFunction.

`run_stores()` is one run over some stores, everything inside one process (its own moto server
unless given one), so that the report can hand stores to several processes at once.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from knowledge.format.concept import Concept
from knowledge.recall.overlap import OverlapScan

AGENT = "store-support"
TOP_K = 5
CONFIG = f"knowledge:\n  retrieve: true\n  top_k: {TOP_K}\n"
ACTOR = "operator:stores-report"  # an operator's save: the words job runs only for one
# The learning variants: the agent's `learn_from` for each.
VARIANTS = {"loaded": ("loaded",), "sighting": ("sighting",), "both": ("loaded", "sighting")}
WITH_WORDS = " + model words"
DELIVERIES = 3  # a words job the function fails is delivered again, up to this many times in all
TRAFFIC_END = timedelta(days=3)  # the traffic's last day ends this long before now
# A ranker answers a message with (the ranked names, whether anything was injected, what the block
# reached through links only).
Answer = tuple[list[str], bool, list[str]]
Ranker = Callable[[str, str, str], Answer]  # (store, test id, message) -> Answer
_NAME_LINE = re.compile(r"^name: (\S+)$", re.MULTILINE)


def concepts_of(store: dict) -> list[Concept]:
    """The store's concepts as they are written to its agent (provenance: see the report's doc)."""
    # Sixty days before the run (to the hour), not a fixed date: the agent's default stale rule
    # (180 days) would otherwise take every concept out of recall half a year after that date.
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=60)
    return [Concept(name=c["name"], description=c["description"], type=c["type"],
                    provenance="policy" if c["type"] == "policy" else "observed", confidence=0.6,
                    sources=("sess_seed",), occurrences=1, created_at=start,
                    updated_at=start + timedelta(hours=i), body=c["body"])
            for i, c in enumerate(store["concepts"])]


def tenant_of(name: str, variant: str | None = None, words: bool = False) -> str:
    """Each store, learning variant and model-words choice is a tenant of its own."""
    base = name.lower().replace("_", "-")
    return base + (f"-{variant}" if variant else "") + ("-words" if words else "")


def phase_of(variant: str | None, words: bool) -> str:
    return ("day one" if variant is None else f"after traffic ({variant})") + (WITH_WORDS if words else "")


def sqs_record(body: str, queue: str, attributes: dict | None = None, delivery: int = 1) -> dict:
    """An SQS record as Lambda's event source mapping hands it to a handler, on its `delivery`-th receive."""
    return {"messageId": uuid.uuid4().hex, "receiptHandle": "r", "body": body,
            "attributes": {"SentTimestamp": "0", "SenderId": "x", "ApproximateFirstReceiveTimestamp": "0",
                           **(attributes or {}), "ApproximateReceiveCount": str(delivery)},
            "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
            "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:{queue}", "awsRegion": "us-east-1"}


# ------------------------------------------------------------------ the local AWS and the handlers
@dataclass
class LocalRetrieve:
    """RetrieveFunction's handler on the local AWS, with the stores' agents written; when model words
    or the traffic are to be learned, PolicyReviewFunction's, ExtractFunction's and
    ConsolidateFunction's handlers too, their queues and the scripted model."""

    handler: Any
    store: Any  # ConceptStore on the knowledge bucket
    bucket: str
    timeout_ms: int
    extract: Any = None
    consolidate: Any = None
    policy_review: Any = None
    sqs: Any = None
    candidates_queue: str = ""
    review_queue: str = ""
    model: Any = None
    vocabulary: str | None = None  # every agent's vocabulary.yaml text, if the run gives one

    def _invoke(self, handler: Any, event: dict, function: str, timeout_ms: int | None = None) -> dict:
        from knowledge_dev.poller import LambdaContext

        return handler.lambda_handler(event, LambdaContext(function, timeout_ms=timeout_ms or self.timeout_ms))

    def call(self, tenant: str, session_id: str, message: str) -> dict:
        event = {"tenant": tenant, "agent": AGENT, "session_id": session_id, "message": message}
        answer = self._invoke(self.handler, event, "retrieve")
        if "error" in answer:
            raise RuntimeError(f"retrieve refused {session_id}: {answer['error']}")
        return answer

    def load(self, tenant: str, session_id: str, name: str) -> dict:
        event = {"action": "load_knowledge", "tenant": tenant, "agent": AGENT, "name": name, "session_id": session_id}
        answer = self._invoke(self.handler, event, "retrieve")
        if "error" in answer:
            raise RuntimeError(f"load_knowledge refused {name}: {answer['error']}")
        return answer

    def drain(self, queue: str) -> list[dict]:
        """Every message waiting on `queue`, deleted from it."""
        out = []
        while got := self.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                              AttributeNames=["All"]).get("Messages", []):
            self.sqs.delete_message_batch(QueueUrl=queue, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
            out.extend(got)
        return out

    def complete(self, turn: dict, reply: str) -> None:
        """One turn-complete message through ExtractFunction, the model answering `reply`, and its
        sightings through ConsolidateFunction."""
        self.model.responder = lambda request: reply
        event = {"Records": [sqs_record(json.dumps(turn, ensure_ascii=False), "turns")]}
        if self._invoke(self.extract, event, "extract", 60_000)["batchItemFailures"]:
            raise RuntimeError(f"extraction failed turn {turn['session_id']}/{turn['turn_id']}")
        records = [sqs_record(m["Body"], "candidates.fifo", m["Attributes"]) for m in self.drain(self.candidates_queue)]
        if records and self._invoke(self.consolidate, {"Records": records}, "consolidate", 60_000)["batchItemFailures"]:
            raise RuntimeError(f"consolidation failed a sighting of {turn['session_id']}")

    def propose_words(self, tenant: str, concepts: list[Concept], proposals: dict[str, list[str]]) -> dict:
        """The concepts written as an import writes them queue their `words` jobs, ten concepts to a
        message (PolicyReviewQueue.saved_many); PolicyReviewFunction runs each, one record per invocation
        (its BatchSize), one model call each, the scripted model answering the batched words prompt with
        the proposals of the concepts its `name:` lines name. The policy reviews the same writes queue are
        left out: they need a judge, and retire, not teach."""
        from knowledge.learning.policy_review import PolicyReviewQueue

        PolicyReviewQueue(self.sqs, self.review_queue).saved_many(tenant, AGENT, [c.render() for c in concepts])
        jobs = [m["Body"] for m in self.drain(self.review_queue)
                if json.loads(m["Body"]).get("job") == "words" and json.loads(m["Body"])["tenant"] == tenant]
        asked: Counter = Counter()
        self.model.responder = words_responder(proposals, asked)
        for body in jobs:
            # A job the function fails (no usable model answer in its time) is delivered again, as the
            # queue would, up to DELIVERIES times in all; the redeliveries are counted.
            for delivery in range(1, DELIVERIES + 1):
                event = {"Records": [sqs_record(body, "policy-review", {"SentTimestamp": str(int(time.time() * 1000))},
                                                delivery)]}
                if not self._invoke(self.policy_review, event, "policy_review", 60_000)["batchItemFailures"]:
                    break
                asked["redelivered"] += 1
            else:
                raise RuntimeError(f"the words job of {json.loads(body)['name']} failed {DELIVERIES} times")
        kept = {}
        for stored in self.store.load_all(tenant, AGENT):
            words = [e.word for e in stored.concept.learned_words if e.origin == "model"]
            if words:
                kept[stored.name] = words
        return {"jobs": len(jobs), "redelivered": asked["redelivered"], "calls": asked["calls"],
                "answered": asked["answered"], "unknown": asked["unknown"],
                "proposed": asked["phrases"], "kept": sum(len(w) for w in kept.values()), "words": kept}


def words_responder(proposals: dict[str, list[str]], asked: Counter) -> Callable[[dict], str]:
    """The scripted model's answer to a words prompt (docs/contract.md): the stand-in's phrases for each
    concept a `name:` line of the user message names — a JSON array for one concept, a JSON object keyed
    by name for a batch (an empty array, counted, for a name the proposals lack)."""
    def respond(request: dict) -> str:
        names = _NAME_LINE.findall(request["messages"][-1]["content"])
        asked["calls"] += 1
        answer = {}
        for name in names:
            phrases = proposals.get(name)
            if phrases is None:
                asked["unknown"] += 1
                phrases = []
            else:
                asked["answered"] += 1
                asked["phrases"] += len(phrases)
            answer[name] = phrases
        return json.dumps(answer[names[0]] if len(names) == 1 else answer, ensure_ascii=False)
    return respond


@contextlib.contextmanager
def local_retrieve(endpoint: str | None = None, learning: bool = False) -> Iterator[LocalRetrieve]:
    """moto's server (started here unless `endpoint` names one already running: the tests'), a
    versioned knowledge bucket and an event bus on it, and the handler imported as a cold start
    would, with its settings; with `learning`, a sessions bucket, the candidates and policy-review
    queues, the scripted model and the words, extraction and consolidation handlers too. The
    environment is restored afterwards."""
    with contextlib.ExitStack() as stack:
        if endpoint is None:
            from scripts.lib.harness import moto

            endpoint = stack.enter_context(moto("stores-report"))
        import boto3

        from knowledge.store.concepts import ConceptStore
        from knowledge_dev.handlers import function_timeout_ms, handler_environment, load_handler

        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        events = boto3.client("events", endpoint_url=endpoint, region_name="us-east-1")
        run = uuid.uuid4().hex[:10]
        bucket, bus = f"stores-knowledge-{run}", f"stores-bus-{run}"
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        events.create_event_bus(Name=bus)
        settings = dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus, POWERTOOLS_METRICS_DISABLED="true",
                        POWERTOOLS_LOG_LEVEL="WARNING")
        sqs = model = None
        queues = {"candidates": "", "review": ""}
        if learning:
            from knowledge_dev.scripted_model import ScriptedModel

            sessions = f"stores-sessions-{run}"
            s3.create_bucket(Bucket=sessions)
            sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
            queues["candidates"] = sqs.create_queue(QueueName=f"stores-candidates-{run}.fifo",
                                                    Attributes={"FifoQueue": "true"})["QueueUrl"]
            queues["review"] = sqs.create_queue(QueueName=f"stores-review-{run}")["QueueUrl"]
            model = stack.enter_context(ScriptedModel(lambda request: "[]"))
            settings.update(SESSIONS_BUCKET=sessions, CANDIDATES_QUEUE_URL=queues["candidates"],
                            POLICY_REVIEW_QUEUE_URL=queues["review"], UTILITY_MODEL="openai:scripted",
                            OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="scripted", KNOWLEDGE_REFRESH_SECONDS="0")
        with handler_environment(**settings):
            handler = load_handler("retrieve", module_name=f"stores_report_retrieve_{run}")
            local = LocalRetrieve(handler, ConceptStore(s3, bucket), bucket, function_timeout_ms("retrieve"))
            if learning:
                local.extract = load_handler("extract", module_name=f"stores_report_extract_{run}")
                local.consolidate = load_handler("consolidate", module_name=f"stores_report_consolidate_{run}")
                local.policy_review = load_handler("policy_review", module_name=f"stores_report_review_{run}")
                local.sqs, local.model = sqs, model
                local.candidates_queue, local.review_queue = queues["candidates"], queues["review"]
            yield local


def write_store(local: LocalRetrieve, tenant: str, store: dict, config: str = CONFIG) -> list[Concept]:
    """The store's knowledge.yaml, the run's vocabulary.yaml (`local.vocabulary`, if any) and its
    concepts, written to `tenant`'s agent."""
    local.store.put_config(tenant, AGENT, config, actor=ACTOR)
    if local.vocabulary is not None:
        local.store.put_vocabulary(tenant, AGENT, local.vocabulary, actor=ACTOR)
    concepts = concepts_of(store)
    for concept in concepts:
        local.store.create(tenant, AGENT, concept, actor=ACTOR)
    return concepts


def sighting_reply(concepts: dict[str, dict], about: list[str], said: str) -> str:
    """The perfect extractor's answer: a sighting of the session's first `about` concept, its
    evidence the assistant's first sentence (quoted verbatim, as the gates require)."""
    if not about or about[0] not in concepts:
        return "[]"
    concept = concepts[about[0]]
    evidence = said.split(". ")[0].strip()[:300] or said[:300]
    return json.dumps([{"name": concept["name"], "type": concept["type"], "description": concept["description"],
                        "body": concept["body"], "evidence": evidence}], ensure_ascii=False)


def dated_sessions(store: dict, now: datetime) -> list[tuple[dict, datetime]]:
    """The traffic's sessions in the order they happened, each with the moment its first turn
    completes: a session's `day`, moved so that the last day ends TRAFFIC_END before now (where a store
    gives no days, its sessions spread over the month before, in the file's order: real traffic is not
    one burst, and an engine with no customer ids counts a word's sessions only half a day apart), each
    turn a second after the one before."""
    sessions = store["traffic"]
    days = [date.fromisoformat(s["day"]) if s.get("day") else None for s in sessions]
    last = max((d for d in days if d), default=None)
    end = now.replace(microsecond=0) - TRAFFIC_END
    running: datetime | None = None
    out = []
    spread = timedelta(days=30) / max(1, len(sessions))  # a store with no days: its sessions over a month
    for rank, i in enumerate(sorted(range(len(sessions)), key=lambda i: (days[i] or date.min, i))):
        start = end - (timedelta(days=(last - days[i]).days + 1) if days[i] and last
                       else timedelta(days=30) - rank * spread)
        moment = start if running is None else max(start, running)
        out.append((sessions[i], moment))
        running = moment + timedelta(seconds=len(sessions[i]["turns"]))
    return out


def learn_from_traffic(local: LocalRetrieve, tenant: str, store: dict) -> dict:
    """The store's `traffic` sent through retrieve -> load_knowledge -> turn-complete -> extraction ->
    consolidation (see the report's doc) to `tenant`, already written; answers what was learned:
    turns, loads, and the words the traffic taught per concept (not the model's)."""
    concepts = {c["name"]: c for c in store["concepts"]}
    turns = loads = 0
    for session, moment in dated_sessions(store, datetime.now(UTC)):
        session_id = f"traffic-{tenant}-{session['session']}"
        about = [n for n in session.get("about", []) if n in concepts]
        retrieved: dict[str, None] = {}
        loaded: dict[str, None] = {}
        for k, exchange in enumerate(session["turns"]):
            answer = local.call(tenant, session_id, exchange["customer"])
            ranked = [c["name"] for c in answer["concepts"]]
            retrieved.update(dict.fromkeys(ranked))
            for wanted in about:
                if (not ranked or ranked[0] != wanted) and wanted not in loaded:
                    local.load(tenant, session_id, wanted)
                    loaded[wanted] = None
                    loads += 1
            turn = {"tenant": tenant, "agent": AGENT, "session_id": session_id, "turn_id": f"turn-{k + 1}",
                    "completed_at": (moment + timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "messages": [{"role": "user", "content": exchange["customer"]},
                                 {"role": "assistant", "content": exchange["assistant"]}],
                    "shown": {"retrieved": list(retrieved)[-50:], "loaded": list(loaded)[-50:]}}
            if session.get("customer"):
                turn["customer_id"] = session["customer"]
            local.complete(turn, sighting_reply(concepts, about, exchange["assistant"]))
            turns += 1
    learned = {}
    for concept in local.store.load_all(tenant, AGENT):
        words = [e.word for e in concept.concept.learned_words if e.origin != "model"]
        if words:
            learned[concept.name] = words
    return {"turns": turns, "loads": loads, "learned": learned}


# ------------------------------------------------------------------ the rankers
def handler_ranker(local: LocalRetrieve, variant: str | None = None, words: bool = False) -> Ranker:
    def rank(store: str, test_id: str, message: str) -> Answer:
        tenant = tenant_of(store, variant, words)
        answer = local.call(tenant, f"eval-{tenant}-{test_id}", message)
        ranked = [c["name"] for c in answer["concepts"] if not c["linked"]]
        linked = [c["name"] for c in answer["concepts"] if c["linked"]]
        return ranked, bool(answer["block"]), linked
    return rank


def overlap_ranker(concepts: dict[str, list[Concept]]) -> Ranker:
    scans = {name: OverlapScan(items) for name, items in concepts.items()}

    def rank(store: str, test_id: str, message: str) -> Answer:
        ranked = [name for name, _ in scans[store].search(message, TOP_K)]
        return ranked, bool(ranked), []
    return rank


def answers_of(rank: Ranker, tests: dict[str, list[dict]]) -> list[dict]:
    """Every test of every store, with what the ranker answered."""
    out = []
    for store, items in tests.items():
        for test in items:
            ranked, injected, linked = rank(store, test["id"], test["message"])
            out.append({**test, "store": store, "ranked": ranked, "injected": injected, "linked": linked})
    return out


# ------------------------------------------------------------------ one run
@dataclass
class Run:
    """What one process answered: per phase, per ranker, every test's answer (see answers_of)."""

    answers: dict[str, dict[str, list[dict]]] = field(default_factory=dict)
    learning: dict[str, dict[str, dict]] = field(default_factory=dict)  # variant (+ words) -> store -> learned
    words: dict[str, dict] = field(default_factory=dict)  # store -> what the words jobs kept
    concepts: dict[str, int] = field(default_factory=dict)
    setup_seconds: float = 0.0


def run_stores(stores: dict[str, dict], endpoint: str | None = None, variants: tuple[str, ...] = (),
               vocabulary: str | None = None, proposals: dict[str, dict] | None = None) -> Run:
    """Each store written, asked its tests on day one, then for each of `variants` written again and
    its traffic learned from, and asked again; with `proposals` (store -> concept -> phrases), each of
    those phases again on a tenant whose concepts got their model words first (`learn_from` holds
    `model`)."""
    started = time.monotonic()
    tests = {name: store["tests"] for name, store in stores.items()}
    out = Run()
    choices = (False, True) if proposals is not None else (False,)
    with local_retrieve(endpoint, learning=bool(variants) or proposals is not None) as local:
        local.vocabulary = vocabulary
        concepts = {name: write_store(local, tenant_of(name), store) for name, store in stores.items()}
        out.concepts = {name: len(items) for name, items in concepts.items()}
        if proposals is not None:
            config = CONFIG + "  learn_from: [model]\n"
            for name, store in stores.items():
                tenant = tenant_of(name, words=True)
                out.words[name] = local.propose_words(tenant, write_store(local, tenant, store, config),
                                                      proposals.get(name, {}))
        out.setup_seconds = time.monotonic() - started
        overlap = overlap_ranker(concepts)
        out.answers[phase_of(None, False)] = {"index": answers_of(handler_ranker(local), tests),
                                              "overlap": answers_of(overlap, tests)}
        if proposals is not None:
            out.answers[phase_of(None, True)] = {"index": answers_of(handler_ranker(local, words=True), tests)}
        for variant in variants:
            for words in choices:
                signals = ", ".join((*VARIANTS[variant], *(("model",) if words else ())))
                phase = phase_of(variant, words)
                out.learning[phase] = {}
                for name, store in stores.items():
                    tenant = tenant_of(name, variant, words)
                    written = write_store(local, tenant, store, CONFIG + f"  learn_from: [{signals}]\n")
                    if words:
                        local.propose_words(tenant, written, proposals.get(name, {}))
                    out.learning[phase][name] = learn_from_traffic(local, tenant, store)
                out.answers[phase] = {"index": answers_of(handler_ranker(local, variant, words), tests)}
    return out
