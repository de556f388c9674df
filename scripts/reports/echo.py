#!/usr/bin/env python3
"""The echo guard on the labelled echo set: does a concept's confidence stay put when the
assistant repeats what its session was shown, and climb as SPEC's formula says when a session
confirms it independently?

    ./run script reports.echo [--concepts N] [--json] [--smoke]

Every session of tests/data/truth/echo_sessions.json (22 concepts; 2 `echo` sessions each,
where the agent was shown the concept and the assistant restates it, and 2 `independent` ones:
the customer states it, staff are quoted, or the assistant states it where it was not shown)
goes through the real ExtractFunction and ConsolidateFunction handlers (functions/*/app.py)
on moto's S3 and SQS (started here) and a scripted model (a real local HTTP server) that
answers each turn with the concept as its candidate and, as evidence, the message that states
it: the assistant's for `echo` and `assistant_unshown`, the customer's for `customer` and
`staff_quoted`.

Per concept, in order: a first sighting (a session where the assistant stated it and was shown
nothing) creates it at 0.6; then its two echo sessions, sent with `shown: {"retrieved":
[concept]}`; then its two independent ones — `assistant_unshown` with a record that does not
name it, `customer` and `staff_quoted` with the concept in `shown` (the stricter case: a
customer's words count even where the concept was shown). Expected: unchanged after the echo
sessions; after the independent ones min(0.95, 0.5 + 0.1 × distinct sources), counting the first
sighting and each independent sighting the gates let through (without the record, each echo too).

Each set runs four ways: with the `shown` record and without it (an engine that keeps none:
no guard, the behaviour before it), and with the concepts as `fact` (a store claim: a customer's
words are no evidence for one, so the gates refuse the customer and staff sessions) and as
`objection` (where a customer's words are evidence). The report ends with the concepts the echo
sessions left unchanged, with the record. --smoke: the first two concepts.
"""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.lib.harness import ROOT, did_work, emit, parser

DATA = ROOT / "tests" / "data" / "truth" / "echo_sessions.json"
TENANT = "default"
CONFIG = "knowledge:\n  types: [fact, entity, procedure, policy, objection]\n"
COMPLETED_AT = "2026-11-20T14:05:31Z"
KINDS = ("echo", "customer", "staff_quoted", "assistant_unshown")
def expected_confidence(sources: int) -> float:
    """SPEC's repeat formula (the first sighting's 0.6 is the same formula at one source)."""
    return round(min(0.95, 0.5 + 0.1 * sources), 2)


def load_set(path: Path = DATA) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def kind_of(session: dict) -> str:
    return "echo" if session["kind"] == "echo" else session["source"]


# ------------------------------------------------------------------ the local AWS and the handlers


@dataclass
class Loop:
    """ExtractFunction -> CandidatesQueue -> ConsolidateFunction on the local AWS."""

    extract: Any
    consolidate: Any
    sqs: Any
    queue: str
    store: Any
    model: Any  # the ScriptedModel
    reply: list  # the scripted model's next answer, set before each turn

    def turn(self, body: dict, answer: list[dict]) -> list[dict]:
        """One turn through both handlers; the sightings that reached the queue."""
        from knowledge_dev.poller import LambdaContext

        self.reply[:] = [json.dumps(answer, ensure_ascii=False)]
        record = {"messageId": uuid.uuid4().hex, "receiptHandle": "r", "body": json.dumps(body, ensure_ascii=False),
                  "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                                 "ApproximateFirstReceiveTimestamp": "0"},
                  "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
                  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:turns", "awsRegion": "us-east-1"}
        answered = self.extract.lambda_handler({"Records": [record]}, LambdaContext("extract"))
        if answered != {"batchItemFailures": []}:
            raise RuntimeError(f"extract failed a turn of {body['session_id']}")
        messages = self._drain()
        records = [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                    "attributes": {**m["Attributes"], "ApproximateReceiveCount": "1"}, "messageAttributes": {},
                    "md5OfBody": "0", "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo",
                    "awsRegion": "us-east-1"} for m in messages]
        if records and self.consolidate.lambda_handler({"Records": records}, LambdaContext("consolidate")) != {
                "batchItemFailures": []}:
            raise RuntimeError(f"consolidate failed a sighting of {body['session_id']}")
        return [json.loads(m["Body"]) for m in messages]

    def _drain(self) -> list[dict]:
        out = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, AttributeNames=["All"],
                                           WaitTimeSeconds=0).get("Messages", [])
            if not got:
                return out
            for message in got:
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
            out.extend(got)


@contextlib.contextmanager
def local_loop(endpoint: str | None = None) -> Iterator[Loop]:
    """moto's server (unless `endpoint` names one running: the tests'), the buckets, the
    candidates queue and a bus, the scripted model, and both handlers imported as a cold start
    would; the environment is restored afterwards."""
    with contextlib.ExitStack() as stack:
        if endpoint is None:
            from scripts.lib.harness import moto

            endpoint = stack.enter_context(moto("echo-report"))
        import boto3

        from knowledge.store.concepts import ConceptStore
        from knowledge_dev.handlers import handler_environment, load_handler
        from knowledge_dev.scripted_model import ScriptedModel

        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
        events = boto3.client("events", endpoint_url=endpoint, region_name="us-east-1")
        run = uuid.uuid4().hex[:10]
        bucket, sessions, bus = f"echo-knowledge-{run}", f"echo-sessions-{run}", f"echo-bus-{run}"
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        s3.create_bucket(Bucket=sessions)
        queue = sqs.create_queue(QueueName=f"echo-candidates-{run}.fifo",
                                 Attributes={"FifoQueue": "true", "VisibilityTimeout": "30"})["QueueUrl"]
        events.create_event_bus(Name=bus)
        reply: list = ["[]"]
        model = stack.enter_context(ScriptedModel(lambda request: reply[0]))
        with handler_environment(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions, CANDIDATES_QUEUE_URL=queue,
                                 EVENT_BUS_NAME=bus, UTILITY_MODEL="openai:echo-script", OPENAI_BASE_URL=model.base_url,
                                 POWERTOOLS_METRICS_DISABLED="true", POWERTOOLS_LOG_LEVEL="WARNING"):
            extract = load_handler("extract", module_name=f"echo_report_extract_{run}")
            consolidate = load_handler("consolidate", module_name=f"echo_report_consolidate_{run}")
            yield Loop(extract, consolidate, sqs, queue, ConceptStore(s3, bucket), model, reply)


# ------------------------------------------------------------------ one run


def turn_body(agent: str, session_id: str, messages: list[dict], shown: dict | None) -> dict:
    body = {"tenant": TENANT, "agent": agent, "session_id": session_id, "turn_id": "t1",
            "completed_at": COMPLETED_AT, "messages": messages}
    if shown is not None:
        body["shown"] = shown
    return body


def conversation(session: dict) -> list[dict]:
    messages = []
    for turn in session["turns"]:
        messages += [{"role": "user", "content": turn["customer"]}, {"role": "assistant", "content": turn["assistant"]}]
    return messages


def candidate(concept: dict, type_: str, evidence: str) -> list[dict]:
    return [{"name": concept["name"], "type": type_, "description": concept["description"], "body": concept["body"],
             "evidence": evidence}]


def run_set(loop: Loop, data: dict, type_: str, with_shown: bool, concepts: int | None = None) -> dict:
    """Each concept's first sighting, echo sessions and independent sessions, in that order, on a
    fresh agent; per kind: sessions, sightings sent, flagged as echoes, sources added; per concept:
    the confidence at each step."""
    agent = f"echo-{type_}-{'shown' if with_shown else 'unshown'}-{uuid.uuid4().hex[:6]}"
    loop.store.put_config(TENANT, agent, CONFIG, actor="operator:report")
    chosen = data["concepts"][:concepts] if concepts else data["concepts"]
    by_concept = defaultdict(list)
    for session in data["sessions"]:
        by_concept[session["concept"]].append(session)
    kinds: dict[str, Counter] = {kind: Counter() for kind in KINDS}
    rows = []
    for concept in chosen:
        name = concept["name"]
        # The first sighting: the assistant states the claim, in a session shown nothing.
        first = [{"role": "user", "content": "oi, tudo bem? queria tirar uma dúvida"},
                 {"role": "assistant", "content": concept["body"]}]
        loop.turn(turn_body(agent, f"seed-{name}", first, {} if with_shown else None),
                  candidate(concept, type_, concept["body"]))
        stored = loop.store.find(TENANT, agent, name)
        row = {"concept": name, "first": stored.concept.confidence if stored else None}
        sessions = sorted(by_concept[name], key=lambda s: s["kind"] != "echo")  # the echoes first
        counting = 1  # the sessions that should count as sources: the first, then each independent sighting
        for session in sessions:
            kind = kind_of(session)
            messages = conversation(session)
            states = messages[1] if kind in ("echo", "assistant_unshown") else messages[0]
            shown = None
            if with_shown:
                shown = {"retrieved": [] if kind == "assistant_unshown" else [name]}
            before = loop.store.find(TENANT, agent, name)
            sent = loop.turn(turn_body(agent, session["session"], messages, shown),
                             candidate(concept, type_, states["content"]))
            after = loop.store.find(TENANT, agent, name)
            if sent and (kind != "echo" or not with_shown):
                counting += 1
            counted = kinds[kind]
            counted["sessions"] += 1
            counted["sightings"] += len(sent)
            counted["echo_flagged"] += sum(1 for s in sent if s.get("echo"))
            if before is not None and after is not None:
                counted["sources_added"] += len(after.concept.sources) - len(before.concept.sources)
                counted["occurrences_added"] += after.concept.occurrences - before.concept.occurrences
            if session["kind"] == "echo" and session is sessions[1]:
                row["after_echo"] = after.concept.confidence if after else None
        final = loop.store.find(TENANT, agent, name)
        row["after_independent"] = final.concept.confidence if final else None
        row["sources"] = len(final.concept.sources) if final else 0
        row["expected"] = expected_confidence(counting)
        rows.append(row)
    return {"type": type_, "shown": with_shown, "kinds": {k: dict(v) for k, v in kinds.items()}, "concepts": rows,
            "summary": summary(rows)}


def summary(rows: list[dict]) -> dict:
    n = len(rows)
    return {"concepts": n,
            "unchanged_by_echo": sum(1 for r in rows if r.get("after_echo") == r["first"]),
            "as_formula_after_independent": sum(1 for r in rows if r["after_independent"] == r["expected"]),
            "confidence_first": _mean(r["first"] for r in rows),
            "confidence_after_echo": _mean(r.get("after_echo") for r in rows),
            "confidence_after_independent": _mean(r["after_independent"] for r in rows),
            "expected_after_independent": _mean(r["expected"] for r in rows)}


def _mean(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 3) if present else None


def measure(concepts: int | None = None, endpoint: str | None = None, types: tuple[str, ...] = ("fact", "objection"),
            data: dict | None = None) -> list[dict]:
    data = data or load_set()
    with local_loop(endpoint) as loop:
        runs = [run_set(loop, data, type_, shown, concepts) for type_ in types for shown in (True, False)]
        judged = len(loop.model.requests) - sum(r["summary"]["concepts"] + sum(k.get("sessions", 0)
                                                                               for k in r["kinds"].values())
                                                 for r in runs)
    for run in runs:
        run["judge_calls_all_runs"] = judged
    return runs


# ------------------------------------------------------------------ the table


def print_report(runs: list[dict]) -> None:
    n = runs[0]["summary"]["concepts"] if runs else 0
    print(f"Echo set: {n} concepts, through ExtractFunction and ConsolidateFunction on moto, scripted model.")
    print("Each concept: first sighting (0.6), its 2 echo sessions, then its 2 independent ones.\n")
    for run in runs:
        s = run["summary"]
        title = f"type {run['type']}, {'with' if run['shown'] else 'WITHOUT'} the shown record"
        print(title)
        print(f"  {'kind':<18}{'sessions':>9}{'sightings':>10}{'echoes':>8}{'sources+':>9}{'occurr.+':>9}")
        for kind in KINDS:
            k = run["kinds"][kind]
            print(f"  {kind:<18}{k.get('sessions', 0):>9}{k.get('sightings', 0):>10}{k.get('echo_flagged', 0):>8}"
                  f"{k.get('sources_added', 0):>9}{k.get('occurrences_added', 0):>9}")
        print(f"  confidence (mean): first {s['confidence_first']}, after the echoes {s['confidence_after_echo']}, "
              f"after the independent sessions {s['confidence_after_independent']}")
        print(f"  unchanged by the echoes: {s['unchanged_by_echo']}/{s['concepts']}; "
              f"as the formula says after the independent ones: {s['as_formula_after_independent']}/{s['concepts']} "
              f"(expected mean {s['expected_after_independent']})\n")
    if runs:
        judged = runs[0]["judge_calls_all_runs"]
        print(f"Judge calls over all runs: {judged}" + (" (every repeat confirmed as the same claim)." if not judged
                                                         else "."))


def main() -> int:
    parser_ = parser(__doc__)
    parser_.add_argument("--concepts", type=int, default=None, help="only the first N concepts")
    args = parser_.parse_args()
    runs = measure(2, types=("objection",)) if args.smoke else measure(args.concepts)
    emit(runs, args.json, lambda: print_report(runs))
    guarded = [run["summary"] for run in runs if run["shown"]]
    did_work("concepts the echo sessions left unchanged (with the shown record)",
             sum(s["unchanged_by_echo"] for s in guarded), sum(s["concepts"] for s in guarded), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
