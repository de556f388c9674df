#!/usr/bin/env python3
"""Recall on the six labelled stores that are not furniture (tests/data/stores/, issue 24),
each store run through the real RetrieveFunction handler, side by side with plain term overlap
(seed 000's scan) on the same messages in the same run.

    .venv/bin/python scripts/stores_report.py [--store NAME ...] [--heldout] [--misses]
        [--vocabulary FILE | --starter NAME] [--json]

`--vocabulary FILE` writes that vocabulary.yaml to every store's agent (through ConceptStore, as
the studio saves one); `--starter varejo-br` the starter for Brazilian retail that ships with the
engine (knowledge/format/vocabularies/). Without either, no agent has a vocabulary: the engine
knows only what holds for every store (issue 24).

How a store is run, as the engine and the deployed function would see it:

- moto's server starts in this process on 127.0.0.1 (knowledge_dev.local_aws, as the tests and
  the local stack start it), with a versioned knowledge bucket and an event bus on it;
- each store is one agent of its own tenant (tenant = the store's name, agent `store-support`):
  its `knowledge.yaml` (`retrieve: true`, `top_k: 5`, the default `min_score`) and its concepts are
  written through ConceptStore, the journal included, as the studio writes them. A concept whose
  `type` is `policy` is written with `provenance: policy` (the stores' written rules, which only a
  human may mark so); every other type with `provenance: observed`; all at confidence 0.6, one
  source, one occurrence, the first `updated_at` sixty days before the run and each next an hour
  after the one before in the file's order
  (confidence does not rank; recency breaks ties, as in scripts/retrieval_report.py);
- functions/retrieve/app.py is imported once, as a cold start does (knowledge_dev.handlers, with
  the template's literal settings), and serves every store, as one container serves many agents.
  It reads `KNOWLEDGE_BUCKET` and `EVENT_BUS_NAME`; metrics and info logs are switched off
  (`POWERTOOLS_METRICS_DISABLED`, `POWERTOOLS_LOG_LEVEL=WARNING`) so they do not mix into the
  table; the fetch budget and the refresh window are the defaults; the context's time left is
  the template's timeout;
- every test message is one retrieve call, `{tenant, agent, session_id, message}`
  (docs/retrieval.md, events/retrieve.json), in a session of its own.

What is counted, per store and per slice (`concept-words`, `taught`, `never-taught`, `off-topic`,
`wordshare`; `english` = the tests in English; `overall` = every on-topic test, and the off-topic
and wordshare tests for the last column):

- hit@5 and MRR over the answer's ranked concepts (`linked: false`, at most `top_k`; a concept
  reached only through a `[[link]]` is not ranked and does not count as a hit — the JSON says how
  many misses the block reached that way);
- silent: the on-topic messages whose answer injects nothing (an empty block);
- off-topic injecting: the off-topic and wordshare messages whose answer injects anything.

Plain overlap ranks the same concepts with knowledge.recall.index.OverlapScan as
scripts/retrieval_report.py builds it: any shared word is a hit, so it injects whenever a word is
shared. The final "all stores" rows pool every message of the stores reported.

The handler's figures are the same from run to run: the index weighs lengths against an average
taken on a fixed grid, so its scores do not depend on the order the cold start's parallel fetch
delivers the concepts.

`tests/data/stores/heldout/beleza.json` is held out: `--heldout` adds it, and it is to be read
once, at the end of the recall work of issue 24, never while tuning.

After day one, the "after learning" phases (`learn_from_traffic()`): each store is written again
to a tenant of its own per learning variant — signal `loaded` alone, `sighting` alone, and both
(the agent's `learn_from`; docs/contract.md, learned words), and `customers` (both, each turn with its
session's labelled `customer` as `customer_id`) — and its `traffic` is sent through the real handlers,
session by session (at noon of its labelled `day`, else of day n mod 30 of the month before), as an engine would:

- each customer message is one retrieve call in the session;
- when the session was `about` a concept the block did not rank first, the agent calls
  load_knowledge for it (RetrieveFunction's `load_knowledge` action), as an engine's agent would;
- the turn-complete message (the customer's message, the assistant's answer, and `shown`: the
  names retrieve answered and the loads made in the session so far) goes through ExtractFunction's
  handler (as an SQS record), and the sightings it sends to the CandidatesQueue through
  ConsolidateFunction's handler;
- the extraction model is the scripted local HTTP model (knowledge_dev.scripted_model, a real
  server the product's client talks to): for every turn it answers a sighting of the concept the
  labelled session is `about`, quoting the assistant's answer. It is a perfect extractor: the
  `sighting` figures say what the signal gives when extraction is right, and are no evidence of a
  real model's quality.

Then the tests are asked again of each variant's agent (plain overlap reads no learned word).
`--learn none` skips the phase, `--learn both` runs only that variant. The extraction container
refreshes its index at every turn (`KNOWLEDGE_REFRESH_SECONDS=0`): a word learned is known to the next.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from knowledge.format.concept import Concept
from knowledge.recall.index import OverlapScan

ROOT = Path(__file__).resolve().parents[1]
STORES = ROOT / "tests" / "data" / "stores"
HELDOUT = {"beleza": STORES / "heldout" / "beleza.json"}
AGENT = "store-support"
TOP_K = 5
ON_TOPIC = ("concept-words", "taught", "never-taught")
OFF_TOPIC = ("off-topic", "wordshare")
SLICES = (*ON_TOPIC, *OFF_TOPIC, "english", "overall")
CONFIG = f"knowledge:\n  retrieve: true\n  top_k: {TOP_K}\n"
# The learning variants: the agent's `learn_from`, and whether turns carry the labelled `customer`.
VARIANTS = {"loaded": ("loaded",), "sighting": ("sighting",), "both": ("loaded", "sighting"),
            "customers": ("loaded", "sighting")}
WITH_CUSTOMERS = frozenset({"customers"})
TRAFFIC_START, TRAFFIC_DAYS = timedelta(days=33), 30  # a file without days: the month before now
# A ranker answers a message with (the ranked names, whether anything was injected, what the block
# reached through links only).
Answer = tuple[list[str], bool, list[str]]
Ranker = Callable[[str, str, str], Answer]  # (store, test id, message) -> Answer


def store_paths(heldout: bool = False) -> dict[str, Path]:
    paths = {path.stem: path for path in sorted(STORES.glob("*.json"))}
    return {**paths, **HELDOUT} if heldout else paths


def load_store(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def concepts_of(store: dict) -> list[Concept]:
    """The store's concepts as they are written to its agent (provenance: see the module's doc)."""
    # Sixty days before the run (to the hour), not a fixed date: the agent's default stale rule
    # (180 days) would otherwise take every concept out of recall half a year after that date.
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=60)
    return [Concept(name=c["name"], description=c["description"], type=c["type"],
                    provenance="policy" if c["type"] == "policy" else "observed", confidence=0.6,
                    sources=("sess_seed",), occurrences=1, created_at=start,
                    updated_at=start + timedelta(hours=i), body=c["body"])
            for i, c in enumerate(store["concepts"])]


def tenant_of(name: str) -> str:
    return name.lower().replace("_", "-")


# ------------------------------------------------------------------ the local AWS and the handler
@dataclass
class LocalRetrieve:
    """RetrieveFunction's handler on the local AWS, with the stores' agents written (and, when the
    traffic is to be learned from, ExtractFunction's and ConsolidateFunction's, the candidates
    queue between them and the scripted model)."""

    handler: Any
    store: Any  # ConceptStore on the knowledge bucket
    bucket: str
    timeout_ms: int
    extract: Any = None
    consolidate: Any = None
    sqs: Any = None
    candidates_queue: str = ""
    model: Any = None
    vocabulary: str | None = None  # every agent's vocabulary.yaml text, if the run gives one

    def call(self, tenant: str, session_id: str, message: str) -> dict:
        from knowledge_dev.poller import LambdaContext

        event = {"tenant": tenant, "agent": AGENT, "session_id": session_id, "message": message}
        answer = self.handler.lambda_handler(event, LambdaContext("retrieve", timeout_ms=self.timeout_ms))
        if "error" in answer:
            raise RuntimeError(f"retrieve refused {session_id}: {answer['error']}")
        return answer

    def load(self, tenant: str, session_id: str, name: str) -> dict:
        from knowledge_dev.poller import LambdaContext

        event = {"action": "load_knowledge", "tenant": tenant, "agent": AGENT, "name": name, "session_id": session_id}
        answer = self.handler.lambda_handler(event, LambdaContext("retrieve", timeout_ms=self.timeout_ms))
        if "error" in answer:
            raise RuntimeError(f"load_knowledge refused {name}: {answer['error']}")
        return answer

    def complete(self, turn: dict, reply: str) -> None:
        """One turn-complete message through ExtractFunction, the model answering `reply`, and its
        sightings through ConsolidateFunction."""
        from knowledge_dev.poller import LambdaContext

        self.model.responder = lambda request: reply
        record = {"messageId": uuid.uuid4().hex, "receiptHandle": "r", "body": json.dumps(turn, ensure_ascii=False),
                  "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                                 "ApproximateFirstReceiveTimestamp": "0"},
                  "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
                  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:turns", "awsRegion": "us-east-1"}
        failed = self.extract.lambda_handler({"Records": [record]}, LambdaContext("extract", timeout_ms=60_000))
        if failed["batchItemFailures"]:
            raise RuntimeError(f"extraction failed turn {turn['session_id']}/{turn['turn_id']}")
        records = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.candidates_queue, MaxNumberOfMessages=10,
                                           WaitTimeSeconds=0, AttributeNames=["All"]).get("Messages", [])
            if not got:
                break
            self.sqs.delete_message_batch(QueueUrl=self.candidates_queue, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
            for m in got:
                records.append({"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                                "attributes": {**m["Attributes"], "ApproximateReceiveCount": "1"},
                                "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
                                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo",
                                "awsRegion": "us-east-1"})
        if records:
            failed = self.consolidate.lambda_handler({"Records": records}, LambdaContext("consolidate",
                                                                                         timeout_ms=60_000))
            if failed["batchItemFailures"]:
                raise RuntimeError(f"consolidation failed a sighting of {turn['session_id']}")


@contextlib.contextmanager
def local_retrieve(endpoint: str | None = None, learning: bool = False) -> Iterator[LocalRetrieve]:
    """moto's server (started here unless `endpoint` names one already running: the tests'), a
    versioned knowledge bucket and an event bus on it, and the handler imported as a cold start
    would, with its settings; with `learning`, a sessions bucket, a candidates queue, the scripted
    model and the extraction and consolidation handlers too. The environment is restored afterwards."""
    with contextlib.ExitStack() as stack:
        if endpoint is None:
            from knowledge_dev.local_aws import moto_server

            endpoint = stack.enter_context(moto_server("stores-report"))
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
        sqs, queue, model = None, "", None
        if learning:
            from knowledge_dev.scripted_model import ScriptedModel

            sessions = f"stores-sessions-{run}"
            s3.create_bucket(Bucket=sessions)
            sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
            queue = sqs.create_queue(QueueName=f"stores-candidates-{run}.fifo",
                                     Attributes={"FifoQueue": "true"})["QueueUrl"]
            model = stack.enter_context(ScriptedModel(lambda request: "[]"))
            settings.update(SESSIONS_BUCKET=sessions, CANDIDATES_QUEUE_URL=queue, UTILITY_MODEL="openai:scripted",
                            OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="scripted", KNOWLEDGE_REFRESH_SECONDS="0")
        with handler_environment(**settings):
            handler = load_handler("retrieve", module_name=f"stores_report_retrieve_{run}")
            local = LocalRetrieve(handler, ConceptStore(s3, bucket), bucket, function_timeout_ms("retrieve"))
            if learning:
                local.extract = load_handler("extract", module_name=f"stores_report_extract_{run}")
                local.consolidate = load_handler("consolidate", module_name=f"stores_report_consolidate_{run}")
                local.sqs, local.candidates_queue, local.model = sqs, queue, model
            yield local


def write_store(local: LocalRetrieve, name: str, store: dict, tenant: str | None = None,
                config: str = CONFIG) -> list[Concept]:
    """The store's knowledge.yaml, the run's vocabulary.yaml (`local.vocabulary`, if any) and its
    concepts, written to its own tenant's agent."""
    tenant = tenant or tenant_of(name)
    local.store.put_config(tenant, AGENT, config, actor="operator:stores-report")
    if local.vocabulary is not None:
        local.store.put_vocabulary(tenant, AGENT, local.vocabulary, actor="operator:stores-report")
    concepts = concepts_of(store)
    for concept in concepts:
        local.store.create(tenant, AGENT, concept, actor="operator:stores-report")
    return concepts


def variant_tenant(name: str, variant: str) -> str:
    return f"{tenant_of(name)}-{variant}"


def sighting_reply(concepts: dict[str, dict], about: list[str], said: str) -> str:
    """The perfect extractor's answer: a sighting of the session's first `about` concept, its
    evidence the assistant's first sentence (quoted verbatim, as the gates require)."""
    if not about or about[0] not in concepts:
        return "[]"
    concept = concepts[about[0]]
    evidence = said.split(". ")[0].strip()[:300] or said[:300]
    return json.dumps([{"name": concept["name"], "type": concept["type"], "description": concept["description"],
                        "body": concept["body"], "evidence": evidence}], ensure_ascii=False)


def session_start(store: dict, index: int) -> datetime:
    """Noon of the `index`-th session's `day`, else of day `index` mod 30 from TRAFFIC_START before now."""
    day = store["traffic"][index].get("day")
    start = datetime.fromisoformat(day) if day else datetime.now(UTC) - TRAFFIC_START + timedelta(index % TRAFFIC_DAYS)
    return start.replace(hour=12, minute=0, second=0, microsecond=0, tzinfo=UTC)


def learn_from_traffic(local: LocalRetrieve, name: str, store: dict, variant: str) -> dict:
    """The store written to the variant's tenant, its `traffic` sent through retrieve ->
    load_knowledge -> turn-complete -> extraction -> consolidation (see the module's doc); answers
    what was learned: turns, loads, and the learned words per concept."""
    tenant = variant_tenant(name, variant)
    signals = ", ".join(VARIANTS[variant])
    write_store(local, name, store, tenant, CONFIG + f"  learn_from: [{signals}]\n")
    concepts = {c["name"]: c for c in store["concepts"]}
    turns = loads = customers = 0
    for index, session in enumerate(store["traffic"]):
        session_id = f"traffic-{tenant}-{session['session']}"
        moment = session_start(store, index)
        customer = session.get("customer") if variant in WITH_CUSTOMERS else None
        customers += customer is not None
        about = [n for n in session.get("about", []) if n in concepts]
        retrieved: dict[str, None] = {}
        loaded: dict[str, None] = {}
        for k, exchange in enumerate(session["turns"]):
            answer = local.call(tenant, session_id, exchange["customer"])
            ranked = [c["name"] for c in answer["concepts"]]
            retrieved.update(dict.fromkeys(ranked))
            for wanted in about:
                if (not ranked or ranked[0] != wanted) and wanted not in loaded and wanted not in ranked[:1]:
                    local.load(tenant, session_id, wanted)
                    loaded[wanted] = None
                    loads += 1
            moment += timedelta(seconds=1)
            turn = {"tenant": tenant, "agent": AGENT, "session_id": session_id, "turn_id": f"turn-{k + 1}",
                    "completed_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "messages": [{"role": "user", "content": exchange["customer"]},
                                 {"role": "assistant", "content": exchange["assistant"]}],
                    "shown": {"retrieved": list(retrieved)[-50:], "loaded": list(loaded)[-50:]},
                    **({"customer_id": customer} if customer else {})}
            local.complete(turn, sighting_reply(concepts, about, exchange["assistant"]))
            turns += 1
    learned = {}
    for concept in local.store.load_all(tenant, AGENT):
        words = [e.word for e in concept.concept.learned_words]
        if words:
            learned[concept.name] = words
    return {"turns": turns, "loads": loads, "sessions_with_customer": customers, "learned": learned}


def handler_ranker(local: LocalRetrieve, variant: str | None = None) -> Ranker:
    def rank(store: str, test_id: str, message: str) -> Answer:
        tenant = variant_tenant(store, variant) if variant else tenant_of(store)
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


# ------------------------------------------------------------------ counting
def answers_of(rank: Ranker, tests: dict[str, list[dict]]) -> list[dict]:
    """Every test of every store, with what the ranker answered."""
    out = []
    for store, items in tests.items():
        for test in items:
            ranked, injected, linked = rank(store, test["id"], test["message"])
            out.append({**test, "store": store, "ranked": ranked, "injected": injected, "linked": linked})
    return out


def quality(rows: list[dict]) -> dict:
    """hit@5, MRR, silent over on-topic rows; off-topic injecting over off-topic rows."""
    on = [r for r in rows if r["slice"] in ON_TOPIC]
    off = [r for r in rows if r["slice"] in OFF_TOPIC]
    out: dict[str, Any] = {}
    if on:
        hits, reciprocal, silent, misses, linked_only = 0, 0.0, 0, [], 0
        for row in on:
            positions = [row["ranked"].index(name) for name in row["expected"] if name in row["ranked"]]
            silent += not row["injected"]
            if positions:
                hits += 1
                reciprocal += 1 / (min(positions) + 1)
                continue
            linked_only += any(name in row["linked"] for name in row["expected"])
            misses.append({"store": row["store"], "id": row["id"], "slice": row["slice"],
                           "message": row["message"], "expected": row["expected"], "got": row["ranked"]})
        out.update(n=len(on), hit_at_5=hits / len(on), mrr=reciprocal / len(on), silent=silent / len(on),
                   silent_n=silent, linked_only=linked_only, misses=misses)
    if off:
        injected = [{"store": r["store"], "id": r["id"], "slice": r["slice"], "message": r["message"],
                     "got": r["ranked"] or r["linked"]} for r in off if r["injected"]]
        out.update(n_off_topic=len(off), off_topic_injecting=len(injected) / len(off), injected=injected)
    return out


def by_slice(rows: list[dict]) -> dict:
    result = {slice_: quality([r for r in rows if r["slice"] == slice_]) for slice_ in (*ON_TOPIC, *OFF_TOPIC)}
    result["english"] = quality([r for r in rows if r.get("language") == "en"])
    result["overall"] = quality(rows)
    return result


def evaluate(stores: dict[str, dict], endpoint: str | None = None, variants: tuple[str, ...] = (),
             vocabulary: str | None = None) -> dict:
    """Each store through the handler and through plain overlap, per slice; `stores` maps a
    store's name to its data (a file of tests/data/stores/ as loaded). With more than one store,
    an "all stores" entry pools every message. Each of `variants` (VARIANTS' names) adds an
    "after learning" phase: the traffic learned from with those signals, then the tests again.
    `vocabulary`: every agent's vocabulary.yaml text."""
    started = time.monotonic()
    tests = {name: store["tests"] for name, store in stores.items()}
    phases: dict[str, dict] = {}
    learning: dict[str, dict] = {}
    with local_retrieve(endpoint, learning=bool(variants)) as local:
        local.vocabulary = vocabulary
        concepts = {name: write_store(local, name, store) for name, store in stores.items()}
        written = time.monotonic()
        overlap = overlap_ranker(concepts)
        phases["day one"] = _phase({"index": handler_ranker(local), "overlap": overlap}, tests)
        for variant in variants:
            learning[variant] = {name: learn_from_traffic(local, name, store, variant)
                                 for name, store in stores.items()}
            phases[f"after learning ({variant})"] = _phase(
                {"index": handler_ranker(local, variant), "overlap": overlap}, tests)
    return {"top_k": TOP_K, "agent": AGENT,
            "stores": {name: {"concepts": len(concepts[name]), "tests": len(tests[name])} for name in stores},
            "phases": phases, "learning": learning,
            "seconds": {"setup": written - started, "total": time.monotonic() - started}}


def _phase(rankers: dict[str, Ranker], tests: dict[str, list[dict]]) -> dict:
    answered = {ranker: answers_of(rank, tests) for ranker, rank in rankers.items()}
    out = {name: {ranker: by_slice([r for r in rows if r["store"] == name]) for ranker, rows in answered.items()}
           for name in tests}
    if len(tests) > 1:
        out["all stores"] = {ranker: by_slice(rows) for ranker, rows in answered.items()}
    return out


# ------------------------------------------------------------------ printing
def _num(row: dict, key: str, percent: bool = False) -> str:
    if key not in row:
        return "-"
    return f"{row[key] * 100:.1f}%" if percent else f"{row[key]:.3f}"


def print_report(report: dict, misses: bool) -> None:
    stores = report["stores"]
    listed = ", ".join(f"{name}: {s['concepts']} concepts, {s['tests']} tests" for name, s in stores.items())
    print(f"{len(stores)} stores ({listed}); top {TOP_K}; through RetrieveFunction's handler on moto, "
          "and plain overlap on the same messages")
    for phase, results in report["phases"].items():
        for label, rankers in results.items():
            print(f"\n[{phase}] {label}")
            print(f"  {'slice':<14} {'ranker':<8} {'n':>4} {'hit@5':>7} {'MRR':>7} {'silent':>7} "
                  f"{'n':>5} {'off-topic injecting':>20}")
            for slice_ in SLICES:
                for name, rows in rankers.items():
                    row = rows[slice_]
                    print(f"  {slice_:<14} {name:<8} {row.get('n', '-'):>4} {_num(row, 'hit_at_5'):>7} "
                          f"{_num(row, 'mrr'):>7} {_num(row, 'silent', True):>7} {row.get('n_off_topic', '-'):>5} "
                          f"{_num(row, 'off_topic_injecting', True):>20}")
        print(f"\n[{phase}] summary, overall: index / plain overlap")
        print(f"  {'store':<12} {'hit@5':>13} {'MRR':>13} {'silent':>15} {'off-topic injecting':>21}")
        for label, rankers in results.items():
            i, o = rankers["index"]["overall"], rankers["overlap"]["overall"]
            print(f"  {label:<12} {_num(i, 'hit_at_5'):>5} / {_num(o, 'hit_at_5'):<5} {_num(i, 'mrr'):>5} / {_num(o, 'mrr'):<5} "
                  f"{_num(i, 'silent', True):>6} / {_num(o, 'silent', True):<6} "
                  f"{_num(i, 'off_topic_injecting', True):>10} / {_num(o, 'off_topic_injecting', True):<8}")
        if misses:
            for label, rankers in results.items():
                if label == "all stores":
                    continue
                row = rankers["index"]["overall"]
                for miss in row.get("misses", []):
                    print(f"\n  [{phase}/{label}/index] missed ({miss['slice']}): {miss['message']!r}\n"
                          f"    expected {miss['expected']}\n    got      {miss['got']}")
                for item in row.get("injected", []):
                    print(f"\n  [{phase}/{label}/index] {item['slice']} injected: {item['message']!r} -> {item['got']}")
    print_learning(report)
    seconds = report["seconds"]
    print(f"\n{seconds['total']:.1f} s in all ({seconds['setup']:.1f} s starting moto and writing the stores)")


def print_learning(report: dict) -> None:
    """Day one beside each after-learning variant and plain overlap, per store and slice: hit@5 of the
    on-topic slices (and how many of them inject nothing), the share injecting of the off-topic ones."""
    phases = report["phases"]
    variants = [p for p in phases if p.startswith("after learning")]
    if not variants:
        return
    for variant, stores in report["learning"].items():
        words = {name: sum(len(w) for w in info["learned"].values()) for name, info in stores.items()}
        print(f"\n[learning: {variant}] learned words per store: "
              + ", ".join(f"{name} {n} ({stores[name]['turns']} turns, {stores[name]['loads']} loads)"
                          for name, n in words.items()))
    columns = ["overlap", "day one", *(v[len("after learning ("):-1] for v in variants)]
    print("\n[day one vs after learning] hit@5 (on-topic) or injecting (off-topic), through the handler; "
          "plain overlap beside")
    for label in phases["day one"]:
        print(f"\n  {label}")
        print(f"  {'slice':<14} {'n':>4} " + " ".join(f"{c:>9}" for c in columns))
        rows = [(slice_, "hit_at_5") for slice_ in ON_TOPIC] + [("overall", "hit_at_5"), ("overall", "silent")] + [
            (slice_, "off_topic_injecting") for slice_ in OFF_TOPIC]
        for slice_, key in rows:
            cells = [phases["day one"][label]["overlap"][slice_]]
            cells += [phases[p][label]["index"][slice_] for p in ["day one", *variants]]
            n = cells[0].get("n_off_topic" if key == "off_topic_injecting" else "n", "-")
            shown = slice_ if key != "silent" else "silent"
            print(f"  {shown:<14} {n:>4} " + " ".join(f"{_num(c, key, key != 'hit_at_5'):>9}" for c in cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="append", metavar="NAME",
                        help="report only this store (repeatable); every store not held out by default")
    parser.add_argument("--heldout", action="store_true",
                        help="include the held-out store (heldout/beleza.json): read once, at the end of the recall work")
    parser.add_argument("--misses", action="store_true", help="print the index's misses and off-topic injections")
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--vocabulary", metavar="FILE", help="a vocabulary.yaml every store's agent is given")
    given.add_argument("--starter", metavar="NAME", help="a shipped starter vocabulary every store's agent copies")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--learn", choices=("all", "none", *VARIANTS), default="all",
                        help="the after-learning phases: every signal alone and both (all), none, or one variant")
    args = parser.parse_args()
    vocabulary = None
    if args.vocabulary:
        vocabulary = Path(args.vocabulary).read_text(encoding="utf-8")
    elif args.starter:
        from knowledge.format.vocabulary import starter_text

        vocabulary = starter_text(args.starter)
    paths = store_paths(args.heldout)
    unknown = [name for name in args.store or [] if name not in paths]
    if unknown:
        held = " (held out: add --heldout)" if set(unknown) & set(HELDOUT) else ""
        parser.error(f"unknown store {', '.join(unknown)}{held}; stores: {', '.join(paths)}")
    chosen = {name: load_store(paths[name]) for name in (args.store or paths)}
    variants = tuple(VARIANTS) if args.learn == "all" else () if args.learn == "none" else (args.learn,)
    report = evaluate(chosen, variants=variants, vocabulary=vocabulary)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        print_report(report, args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
