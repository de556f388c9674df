#!/usr/bin/env python3
"""Each model fault against the real clients, timed against the deadline ExtractFunction gives a call,
and what each fault makes of a sighting the consolidation judge is asked about.

    ./run script reports.model_faults [--quick | --smoke | --scale 0.1] [--json]

The deadline is derived as the handler derives it: the function's timeout (read from
template.yaml) less shared.deadline's reserve. The OpenAI-compatible rows run the real
httpx client against the scripted model server misbehaving; the Bedrock row runs a real
boto3 client, configured as aws.py configures it, against an endpoint that accepts and
never answers. A full run takes about three minutes; --quick scales every duration (the
function's timeout, the reserve, the per-attempt cap, Retry-After, the trickle's pace) by
1/20 and runs in a minute (--smoke: --quick on the first two faults of each table). The client's
own backoff (0.25 s to 1 s) is not scaled. The report ends with the faults whose call ended within its deadline (a second's slack).

The judge table runs the real ConsolidateFunction handler (moto for S3, SQS and EventBridge) on a
sighting whose claim differs from the recorded one, once per fault, and again when the fault
gives way to a good answer: a fault must fail the record (the queue brings it back), never write
`## Contradiction` or publish `knowledge_conflict`. The last row is no fault: a complete answer
whose content is no verdict, which takes the conservative outcome (contradicting). The last table
delivers a turn whose model answers a 200 that is no JSON array every time, through the real
ExtractFunction handler: failed (the queue asks again) until its third delivery, then closed.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable

import boto3

from knowledge_dev.scripted_model import (
    ScriptedModel,
    completion,
    hang,
    reset,
    server_error,
    silent_endpoint,
    throttled,
    trickle,
    truncated,
)
from knowledge_dev.template import load_template
from scripts.lib.harness import did_work, moto, parser
from shared import deadline
from shared.errors import ModelError
from shared.model import Bedrock, DEFAULT_TIMEOUT, OpenAICompatible

PROMPT = ("Extraia conceitos duráveis desta conversa.",
          "cliente: oi, meu pedido 48213 pra CEP 13083-970 chega quando?\n"
          "assistente: Pedidos para CEPs de 13000 a 13999 saem do CD de Campinas em 1 a 2 dias úteis.")


def LambdaContext(seconds: float) -> Any:  # noqa: N802 - reads like the class it builds
    from knowledge_dev.poller import LambdaContext as Context

    return Context("extract", timeout_ms=int(seconds * 1000))


def faults(scale: float) -> list[tuple[str, list]]:
    """(label, the replies in order; the last one repeats) per fault."""
    return [
        ("hang (accepts, never answers)", [hang()]),
        (f"trickle (1 byte every {1.0 * scale:g} s, forever)", [trickle(every=1.0 * scale)]),
        (f"429 Retry-After {30 * scale:g} (every time)", [throttled(retry_after=round(30 * scale, 3))]),
        ("503 x3, then an answer", [server_error(503)] * 3 + ["[]"]),
        ("truncated JSON (200)", [truncated('[{"name": "frete-gratis"}]')]),
        ("connection reset x3, then an answer", [reset()] * 3 + ["[]"]),
    ]


def replay(replies: list) -> Callable[[dict], Any]:
    queue = list(replies)
    return lambda request: queue.pop(0) if len(queue) > 1 else queue[0]


def timed_call(llm: Any, function_timeout: float, reserve: float) -> dict:
    """One model call inside an invocation's deadline, as the handler runs it."""
    started = time.monotonic()
    with deadline.until(deadline.at_the_latest(LambdaContext(function_timeout), reserve)):
        budget = deadline.remaining()
        try:
            llm.complete(*PROMPT)
            outcome = "answered"
        except ModelError as exc:
            outcome = f"{type(exc).__name__} ({exc.code})"
    took = time.monotonic() - started
    return {"outcome": outcome, "took_s": round(took, 2), "deadline_s": round(budget, 2),
            "over_deadline_s": round(max(0.0, took - budget), 2), "left_of_timeout_s": round(function_timeout - took, 2)}


def run(scale: float, only: int | None = None) -> tuple[float, list[dict]]:
    function_timeout = float(load_template()["Resources"]["ExtractFunction"]["Properties"]["Timeout"]) * scale
    reserve, attempt_cap = deadline.RESERVE_SECONDS * scale, DEFAULT_TIMEOUT * scale
    rows = []
    for label, replies in faults(scale)[:only]:
        with ScriptedModel(replay(replies)) as server:
            llm = OpenAICompatible("utility", server.base_url, None, timeout=attempt_cap)
            row = timed_call(llm, function_timeout, reserve)
            rows.append({"fault": label, "client": "openai (httpx)", "requests": len(server.requests), **row})
    with silent_endpoint() as endpoint:
        from shared.aws import SERVICE_CONFIG

        runtime = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=endpoint,
                               aws_access_key_id="x", aws_secret_access_key="x",
                               config=SERVICE_CONFIG["bedrock-runtime"])
        row = timed_call(Bedrock("anthropic.claude-3-haiku", runtime, timeout=attempt_cap), function_timeout, reserve)
        rows.append({"fault": "hang (accepts, never answers)", "client": "bedrock (boto3)", "requests": None, **row})
    return function_timeout, rows


def handler_rows(scale: float, only: int | None = None) -> list[dict]:
    """Each fault through the real ExtractFunction handler (moto for S3 and SQS), one turn per
    invocation with the template's timeout: how long the invocation took against that timeout."""
    import logging
    import os
    import uuid

    from knowledge_dev.handlers import load_handler
    from knowledge_dev.template import ROOT

    logging.disable(logging.CRITICAL)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ["POWERTOOLS_LOG_LEVEL"] = "CRITICAL"
    function_timeout = float(load_template()["Resources"]["ExtractFunction"]["Properties"]["Timeout"]) * scale
    event = json.loads((ROOT / "events" / "turn-complete.json").read_text())
    config = (ROOT / "devstack" / "knowledge_dev" / "demo" / "knowledge.yaml").read_text()
    rows = []
    with moto("local") as endpoint:
        s3, sqs = boto3.client("s3", endpoint_url=endpoint), boto3.client("sqs", endpoint_url=endpoint)
        knowledge, sessions = f"k-{uuid.uuid4().hex[:10]}", f"s-{uuid.uuid4().hex[:10]}"
        for bucket in (knowledge, sessions):
            s3.create_bucket(Bucket=bucket)
        body = json.loads(event["Records"][0]["body"])
        s3.put_object(Bucket=knowledge, Key=f"agents/{body['tenant']}/{body['agent']}/knowledge.yaml", Body=config)
        queue = sqs.create_queue(QueueName=f"c-{uuid.uuid4().hex[:8]}.fifo",
                                 Attributes={"FifoQueue": "true"})["QueueUrl"]
        for label, replies in faults(scale)[:only]:
            if "x3" in label or "truncated" in label:
                continue  # answered or refused at once: nothing to time against the timeout
            with ScriptedModel(replay(replies)) as server:
                os.environ.update(KNOWLEDGE_BUCKET=knowledge, SESSIONS_BUCKET=sessions, CANDIDATES_QUEUE_URL=queue,
                                  UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=server.base_url)
                handler = load_handler("extract", module_name=f"faults_extract_{uuid.uuid4().hex[:6]}")
                started = time.monotonic()
                answer = handler.lambda_handler(event, LambdaContext(function_timeout))
                took = time.monotonic() - started
                rows.append({"fault": label, "failed_records": len(answer["batchItemFailures"]),
                             "took_s": round(took, 2), "timeout_s": function_timeout,
                             "left_of_timeout_s": round(function_timeout - took, 2)})
    return rows


GOOD_VERDICT = '{"verdict": "same"}'
PROSE = "I think they are basically the same, merge them!"


def judge_faults(scale: float) -> list[tuple[str, list, bool]]:
    """(label, the replies in order (the last one repeats), whether it is a fault) for the judge."""
    html = "<!DOCTYPE html><html><body><h1>Sign in to continue</h1></body></html>"
    huge = completion('{"verdict": "same", "note": "' + "x" * (10 * 1024 * 1024) + '"}')
    return [
        ("hang (accepts, never answers)", [hang()], True),
        (f"trickle (1 byte every {1.0 * scale:g} s, forever)", [trickle(every=1.0 * scale)], True),
        (f"429 Retry-After {30 * scale:g} (every time)", [throttled(retry_after=round(30 * scale, 3))], True),
        ("500 (every time)", [server_error(500)], True),
        ("503 x3, then a verdict", [server_error(503)] * 3 + [GOOD_VERDICT], True),
        ("connection reset x3, then a verdict", [reset()] * 3 + [GOOD_VERDICT], True),
        ("connection reset (every time)", [reset()], True),
        ("400 (every time)", [(400, {"error": {"message": "bad request"}})], True),
        ("401 (every time)", [(401, {"error": {"message": "invalid api key"}})], True),
        ("403 (every time)", [(403, {"error": {"message": "forbidden"}})], True),
        ("404 (every time)", [(404, {"error": {"message": "no such model"}})], True),
        ("200 with an HTML error page", [(200, html)], True),
        ("truncated envelope (every time)", [truncated(GOOD_VERDICT)], True),
        ("truncated envelope, then a verdict", [truncated(GOOD_VERDICT), GOOD_VERDICT], True),
        ("200 with empty content", [""], True),
        ("200 with a 10 MB answer", [(200, huge)], True),
        ("200 with a garbage body (no JSON)", [(200, "\x00\x13garbage\ufffd{{{")], True),
        ("complete answer, prose instead of a verdict", [PROSE], False),
    ]


def judge_rows(scale: float, only: int | None = None) -> list[dict]:
    """Each judge fault through the real ConsolidateFunction handler: a recorded claim, then a
    different one that needs the judge; delivered again (as the queue would) when the first
    delivery failed and a later reply differs."""
    import logging
    import os
    import uuid
    from datetime import UTC, datetime

    from knowledge.format.concept import Concept
    from knowledge.format.sighting import Sighting
    from knowledge.store.concepts import ConceptStore
    from knowledge_dev.handlers import load_handler

    logging.disable(logging.CRITICAL)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ["POWERTOOLS_LOG_LEVEL"] = "CRITICAL"
    function_timeout = float(load_template()["Resources"]["ConsolidateFunction"]["Properties"]["Timeout"]) * scale
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=UTC)
    tenant, agent, name = "default", "store-support", "frete-gratis"

    def sighting(session: str, description: str, body: str) -> Sighting:
        concept = Concept(name=name, description=description, type="fact", provenance="observed", confidence=0.6,
                          sources=(session,), occurrences=1, created_at=moment, updated_at=moment, body=body)
        return Sighting.of(tenant, agent, session, "t1", concept)

    def event(s: Sighting, receives: int) -> dict:
        return {"Records": [{
            "messageId": "m0", "receiptHandle": "r0", "body": s.body(), "md5OfBody": "0", "eventSource": "aws:sqs",
            "attributes": {"MessageGroupId": s.group_id(), "MessageDeduplicationId": s.dedup_id(),
                           "ApproximateReceiveCount": str(receives), "SentTimestamp": "0", "SenderId": "x",
                           "ApproximateFirstReceiveTimestamp": "0", "SequenceNumber": "1"},
            "messageAttributes": {}, "awsRegion": "us-east-1",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo"}]}

    first = sighting("sess_1", "Free shipping above R$199 in the Southeast.",
                     "Orders above R$199 ship free to the South and Southeast regions.")
    different = sighting("sess_2", "Free shipping above R$299.", "Orders above R$299 ship free.")
    rows = []
    with moto("local") as endpoint:
        s3, sqs = boto3.client("s3", endpoint_url=endpoint), boto3.client("sqs", endpoint_url=endpoint)
        events = boto3.client("events", endpoint_url=endpoint)
        for label, replies, fault in judge_faults(scale)[:only]:
            knowledge, sessions = f"k-{uuid.uuid4().hex[:10]}", f"s-{uuid.uuid4().hex[:10]}"
            s3.create_bucket(Bucket=knowledge)
            s3.put_bucket_versioning(Bucket=knowledge, VersioningConfiguration={"Status": "Enabled"})
            s3.create_bucket(Bucket=sessions)
            bus, queue = f"b-{uuid.uuid4().hex[:8]}", sqs.create_queue(QueueName=f"e-{uuid.uuid4().hex[:8]}")["QueueUrl"]
            events.create_event_bus(Name=bus)
            arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            events.put_rule(Name="all", EventBusName=bus, EventPattern=json.dumps({"source": ["knowledge"]}))
            events.put_targets(Rule="all", EventBusName=bus, Targets=[{"Id": "q", "Arn": arn}])
            with ScriptedModel(replay(replies)) as server:
                os.environ.update(KNOWLEDGE_BUCKET=knowledge, SESSIONS_BUCKET=sessions, EVENT_BUS_NAME=bus,
                                  UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=server.base_url)
                handler = load_handler("consolidate", module_name=f"faults_consolidate_{uuid.uuid4().hex[:6]}")
                handler.lambda_handler(event(first, 1), LambdaContext(function_timeout))
                deliveries = []
                for receive in (1, 2):
                    answer = handler.lambda_handler(event(different, receive), LambdaContext(function_timeout))
                    deliveries.append("failed" if answer["batchItemFailures"] else "done")
                    if deliveries[-1] == "done" or len(set(map(repr, replies))) == 1:
                        break
                requests = len(server.requests)
            store = ConceptStore(s3, knowledge)
            reasons = [v.reason for v in store.versions(tenant, agent, name)][:-1]  # newest first, less "created"
            published = []
            while batch := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
                published += [json.loads(m["Body"])["detail-type"] for m in batch]
                sqs.delete_message_batch(QueueUrl=queue, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)])
            rows.append({"fault": label, "is_fault": fault, "requests": requests, "deliveries": deliveries,
                         "written": reasons[0] if reasons else "-",
                         "contradiction": store.get(tenant, agent, name).concept.in_conflict,
                         "conflict_event": "knowledge_conflict" in published})
    return rows


def extraction_answer_rows() -> list[dict]:
    """A 200 whose content is no JSON array, every time, through the real ExtractFunction handler:
    the turn delivered again (its ApproximateReceiveCount rising) while the handler fails it."""
    import logging
    import os
    import uuid

    from knowledge_dev.handlers import load_handler
    from knowledge_dev.template import ROOT

    logging.disable(logging.CRITICAL)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    event = json.loads((ROOT / "events" / "turn-complete.json").read_text())
    body = json.loads(event["Records"][0]["body"])
    config = (ROOT / "devstack" / "knowledge_dev" / "demo" / "knowledge.yaml").read_text()
    answers = [("prose instead of JSON", "Sorry, I found nothing durable in this conversation."),
               ("a JSON object, not an array", '{"concepts": []}')]
    rows = []
    with moto("local") as endpoint:
        s3 = boto3.client("s3", endpoint_url=endpoint)
        sqs = boto3.client("sqs", endpoint_url=endpoint)
        for label, content in answers:
            knowledge, sessions = f"k-{uuid.uuid4().hex[:10]}", f"s-{uuid.uuid4().hex[:10]}"
            for bucket in (knowledge, sessions):
                s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=knowledge, Key=f"agents/{body['tenant']}/{body['agent']}/knowledge.yaml",
                          Body=config)
            queue = sqs.create_queue(QueueName=f"c-{uuid.uuid4().hex[:8]}.fifo",
                                     Attributes={"FifoQueue": "true"})["QueueUrl"]
            with ScriptedModel(lambda request, content=content: content) as server:
                os.environ.update(KNOWLEDGE_BUCKET=knowledge, SESSIONS_BUCKET=sessions, CANDIDATES_QUEUE_URL=queue,
                                  UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=server.base_url)
                handler = load_handler("extract", module_name=f"faults_extract_{uuid.uuid4().hex[:6]}")
                deliveries = []
                for receive in range(1, 6):
                    record = {**event["Records"][0], "attributes": {**event["Records"][0]["attributes"],
                                                                   "ApproximateReceiveCount": str(receive)}}
                    answer = handler.lambda_handler({"Records": [record]}, LambdaContext(60.0))
                    deliveries.append("failed" if answer["batchItemFailures"] else "closed")
                    if deliveries[-1] == "closed":
                        break
                rows.append({"answer": label, "deliveries": deliveries, "requests": len(server.requests)})
    return rows


def main() -> int:
    parser_ = parser(__doc__, smoke="--quick")
    parser_.add_argument("--scale", type=float, default=1.0, help="multiply every duration by this (default 1)")
    parser_.add_argument("--quick", action="store_const", const=0.05, dest="scale", help="--scale 0.05")
    args = parser_.parse_args()
    if args.smoke:
        args.scale = 0.05
    if args.scale <= 0:
        parser_.error("--scale must be positive")
    only = 2 if args.smoke else None  # the smoke run: the first two faults of each table
    function_timeout, rows = run(args.scale, only)
    handled = handler_rows(args.scale, only)
    judged = judge_rows(args.scale, only)
    closing = extraction_answer_rows()
    wrong = [row for row in judged if row["is_fault"] and (row["contradiction"] or row["conflict_event"])]
    if args.json:
        print(json.dumps({"function_timeout_s": function_timeout, "rows": rows, "handler": handled,
                          "judge": judged, "faults_that_wrote_a_verdict": len(wrong),
                          "extraction_answers": closing}, indent=2))
    else:
        print(f"ExtractFunction timeout {function_timeout:g} s, reserve {deadline.RESERVE_SECONDS * args.scale:g} s, "
              f"per-attempt cap {DEFAULT_TIMEOUT * args.scale:g} s")
        print(f"{'fault':42} {'client':16} {'outcome':36} {'req':>3} {'took':>7} {'deadline':>8} {'over':>5} "
              f"{'left':>6}")
        for row in rows:
            print(f"{row['fault']:42} {row['client']:16} {row['outcome']:36} {row['requests'] or '-':>3} "
                  f"{row['took_s']:>6.2f}s {row['deadline_s']:>7.2f}s {row['over_deadline_s']:>4.2f}s "
                  f"{row['left_of_timeout_s']:>5.2f}s")
        print()
        print("through the real ExtractFunction handler (one turn, the template's timeout):")
        print(f"{'fault':42} {'failed records':>14} {'took':>8} {'timeout':>8} {'left':>7}")
        for row in handled:
            print(f"{row['fault']:42} {row['failed_records']:>14} {row['took_s']:>7.2f}s {row['timeout_s']:>7.2f}s "
                  f"{row['left_of_timeout_s']:>6.2f}s")
        print()
        print("the consolidation judge, through the real ConsolidateFunction handler (a different claim):")
        print(f"{'fault':46} {'req':>3} {'deliveries':16} {'written':14} {'## Contradiction':>16} {'conflict event':>14}")
        for row in judged:
            print(f"{row['fault']:46} {row['requests']:>3} {', '.join(row['deliveries']):16} {row['written']:14} "
                  f"{'yes' if row['contradiction'] else 'no':>16} {'yes' if row['conflict_event'] else 'no':>14}")
        faults_count = sum(row["is_fault"] for row in judged)
        print(f"{len(wrong)} of {faults_count} model faults wrote a verdict (the last row is no fault: "
              "a complete answer that is no verdict is judged contradicting)")
        print()
        print("a 200 whose content is no JSON array, every time, through the real ExtractFunction handler:")
        print(f"{'answer':32} {'deliveries (receive 1, 2, ...)':40} {'model calls':>11}")
        for row in closing:
            print(f"{row['answer']:32} {', '.join(row['deliveries']):40} {row['requests']:>11}")
    did_work("model faults whose call ended within its deadline", sum(row["over_deadline_s"] <= 1.0 for row in rows),
             len(rows), as_json=args.json)
    # Fails (for CI) when any call ran past its deadline by more than a second, or a fault wrote a verdict.
    return 1 if any(row["over_deadline_s"] > 1.0 for row in rows) or any(
        row["left_of_timeout_s"] <= 0 for row in handled) or bool(wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
