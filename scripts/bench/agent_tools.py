#!/usr/bin/env python3
"""The engine's direct calls, measured: each through the real handler in process, and the same
call through the Python client and the local stack's Lambda Invoke endpoint (what the client and
the wire add), on the demo agent over moto's server; then save_knowledge as the agent's archive
grows (the session's turns are found by listing the agent's turns of the last 24 hours).

    ./run script bench.agent_tools [--calls 200] [--json] [--smoke]

Prints p50/p95 in milliseconds and the client's ratio to the handler alone, in one run, and how
many of the handler's timed answers did the work (a block injected, a concept loaded, a search hit,
the customer's memory read, a save queued).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import uuid
from datetime import datetime, timedelta, timezone

from scripts.lib.harness import ROOT, Counted, did_work, emit, moto, parser, percentile, timed_calls

T, A, SESSION = "default", "store-support", "sess_bench_1"
SAID = "Despachamos todo pedido pago até as 14h no mesmo dia útil, de segunda a sexta."


class Context:
    function_name, memory_limit_in_mb, aws_request_id = "bench", 512, "r"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def row(name: str, handler: list[float], client: list[float] | None = None) -> dict:
    result = {"call": name, "handler_p50": percentile(handler, 0.5), "handler_p95": percentile(handler, 0.95)}
    if client:
        result.update(client_p50=percentile(client, 0.5), client_p95=percentile(client, 0.95),
                      ratio=percentile(client, 0.5) / percentile(handler, 0.5))
    return result


def turn(session: str, turn_id: str, moment: datetime, said: str = SAID):
    from knowledge.format.turn import Turn

    return Turn.model_validate({"tenant": T, "agent": A, "session_id": session, "turn_id": turn_id,
                                "completed_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                "messages": [{"role": "user", "content": "Até que horas posso pagar?"},
                                             {"role": "assistant", "content": said}]})


# What each direct call's answer holds when it did the work.
WORKED = {
    "retrieve": lambda answer: bool(answer.get("block")),
    "load_knowledge": lambda answer: bool(answer.get("markdown")),
    "search_knowledge": lambda answer: bool(answer.get("hits")),
    "read_memory": lambda answer: bool(answer.get("block")),
    "save_knowledge": lambda answer: answer.get("status") == "queued",
}


def run(calls: int, grown_to: tuple[int, ...] = (100, 1000, 3000)) -> dict:
    import boto3

    from knowledge.format.concept import parse
    from knowledge.store.archive import TurnArchive
    from knowledge.store.concepts import ConceptStore
    from knowledge_client import KnowledgeClient
    from knowledge_dev.handlers import load_handler
    from knowledge_dev.lambda_endpoint import LambdaEndpoint

    s3, sqs, events = (boto3.client(name) for name in ("s3", "sqs", "events"))
    for bucket, versioned in (("bench-knowledge", True), ("bench-sessions", False)):
        s3.create_bucket(Bucket=bucket)
        if versioned:
            s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    queue = sqs.create_queue(QueueName="bench-candidates.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    events.create_event_bus(Name="bench-bus")
    store = ConceptStore(s3, "bench-knowledge")
    demo = ROOT / "devstack" / "knowledge_dev" / "demo"
    store.put_config(T, A, (demo / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(demo.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    os.environ.update(KNOWLEDGE_BUCKET="bench-knowledge", SESSIONS_BUCKET="bench-sessions",
                      CANDIDATES_QUEUE_URL=queue, EVENT_BUS_NAME="bench-bus", FACTS_KEY="bench-" + "k" * 40,
                      POWERTOOLS_LOG_LEVEL="ERROR", POWERTOOLS_METRICS_NAMESPACE="Bench")
    retrieve, memory = load_handler("retrieve"), load_handler("memory")
    endpoint = LambdaEndpoint({"retrieve": (retrieve.lambda_handler, 10_000),
                               "memory": (memory.lambda_handler, 10_000)}).start()
    client = KnowledgeClient(A, T, endpoint_url=endpoint.url, region_name="us-east-1")
    archive = TurnArchive(s3, "bench-sessions")
    now = datetime.now(timezone.utc)
    archive.put(turn(SESSION, "turn_0001", now - timedelta(minutes=1)))
    memory.lambda_handler({"action": "remember", "tenant": T, "customer_id": "cus-1", "name": "cidade",
                           "value": "Natal"}, Context())
    message = "Moro em Campinas, o frete é grátis?"
    save = {"action": "save_knowledge", "tenant": T, "agent": A, "session_id": SESSION,
            "name": "despacho-mesmo-dia", "description": "Orders paid by 14h ship the same business day.",
            "type": "fact", "body": "Orders paid by 14h (Mon-Fri) ship the same day.",
            "evidence": "pedido pago até as 14h no mesmo dia útil"}
    direct = {
        "retrieve": lambda: retrieve.lambda_handler({"tenant": T, "agent": A, "session_id": "s", "message": message},
                                                    Context()),
        "load_knowledge": lambda: retrieve.lambda_handler({"action": "load_knowledge", "tenant": T, "agent": A,
                                                           "session_id": "s", "name": "cep-sudeste-cd-campinas"},
                                                          Context()),
        "search_knowledge": lambda: retrieve.lambda_handler({"action": "search_knowledge", "tenant": T, "agent": A,
                                                             "session_id": "s", "query": message}, Context()),
        "read_memory": lambda: memory.lambda_handler({"action": "read", "tenant": T, "customer_id": "cus-1"},
                                                     Context()),
        "save_knowledge": lambda: retrieve.lambda_handler(save, Context()),
    }
    through = {
        "retrieve": lambda: client.retrieve("s", message),
        "load_knowledge": lambda: client.load_knowledge("s", "cep-sudeste-cd-campinas"),
        "search_knowledge": lambda: client.search_knowledge("s", message),
        "read_memory": lambda: client.read_memory("cus-1"),
        "save_knowledge": lambda: client.save_knowledge(SESSION, save["name"], save["description"], "fact",
                                                        save["body"], save["evidence"]),
    }
    direct = {name: Counted(call, WORKED[name]) for name, call in direct.items()}
    rows = []
    for name in direct:
        n = calls if name != "save_knowledge" else max(min(20, calls), calls // 10)
        direct[name](), through[name]()  # warm
        rows.append(row(name, timed_calls(direct[name], n), timed_calls(through[name], n)))
    # save_knowledge as the agent's archive of the last day grows: other sessions' turns listed past.
    grown = []
    written = 1
    for turns in grown_to:
        for index in range(written, turns):
            archive.put(turn(f"sess_other_{index}", "t1", now - timedelta(hours=23, seconds=index), said="Olá!"))
        written = turns
        timings = timed_calls(direct["save_knowledge"], 10)
        grown.append({"archived_turns_in_24h": turns, "save_p50": percentile(timings, 0.5),
                      "save_p95": percentile(timings, 0.95)})
    endpoint.stop()
    return {"calls": rows, "save_by_archive": grown,
            "worked": {name: [call.done, call.calls] for name, call in direct.items()}}


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--calls", type=int, default=200)
    args = args_parser.parse_args()
    # The handlers print their metrics (EMF) to stdout: kept out of the table.
    with moto(f"bench-{uuid.uuid4().hex[:6]}"), contextlib.redirect_stdout(io.StringIO()):
        result = run(5 if args.smoke else args.calls, (10, 20) if args.smoke else (100, 1000, 3000))
    emit(result, args.json, lambda: print_report(result))
    done, answered = (sum(call[i] for call in result["worked"].values()) for i in (0, 1))
    did_work("timed answers held what was asked (a block, a concept, hits, a memory, a queued save)", done, answered,
             as_json=args.json)
    return 0


def print_report(result: dict) -> None:
    print("call              handler p50   p95 (ms)   client+Invoke p50   p95 (ms)   client / handler (p50)")
    for r in result["calls"]:
        print(f"{r['call']:<17} {r['handler_p50']:>11.2f} {r['handler_p95']:>7.2f}   "
              f"{r['client_p50']:>17.2f} {r['client_p95']:>8.2f}   {r['ratio']:>10.1f}x")
    print()
    print("save_knowledge: turns archived in 24 h   p50   p95 (ms)")
    for r in result["save_by_archive"]:
        print(f"{r['archived_turns_in_24h']:>38} {r['save_p50']:>6.1f} {r['save_p95']:>7.1f}")


if __name__ == "__main__":
    sys.exit(main())
