#!/usr/bin/env python3
"""A bulk approval of 50 pending facts on the Facts page, through FactsApiFunction's handler, against
moto's server.

    ./run script bench.facts_bulk [--runs 5] [--size 50] [--conflicts 1] [--json] [--smoke]

Each run stores `--size` pending proposals (the issue's shape: customers × the same 4 fact names),
has another operator change `--conflicts` of those facts in memory first (the compare-and-swap each
approval makes must lose there, and only there), then times one `POST …/facts/proposals/bulk`
approving them all. Prints each run's time and S3 requests, the per-fact outcomes of the last run,
and the p50 of the whole action and per fact. Undoing the same 50 one by one is timed too (the
way back from Recent). Values are synthetic; none is printed. It ends with how many of the timed
approvals' facts were approved (all but the ones another operator changed first).
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone

from scripts.lib.harness import ROOT, did_work, emit, moto, parser, percentile

T, A = "default", "store-support"
NAMES = ("tamanho_calcado", "pagamento_preferido", "cep_entrega", "horario_preferido")
KEY = "bench-" + "k" * 40
CLAIMS = {"sub": "bench-operator", "cognito:groups": f"[{T}]"}


class Context:
    function_name = "bench-facts"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench-facts"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def request(method: str, path: str, body: dict | None = None) -> dict:
    event = json.loads((ROOT / "events" / "studio-list-conflicts.json").read_text())
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["queryStringParameters"] = None
    event["rawQueryString"] = ""
    event["requestContext"]["authorizer"]["jwt"]["claims"] = CLAIMS
    if body is not None:
        event["body"] = json.dumps(body)
    return event


def seed(s3, sessions_bucket: str, knowledge_bucket: str, run: int, size: int, conflicts: int) -> list[dict]:
    from facts.cells import MemoryCells
    from facts.keyed_hashes import FactKeys
    from facts.proposals import EvidenceLink, Proposal, ProposalStore

    keys, store = FactKeys(KEY), ProposalStore(s3, sessions_bucket, retention_days=None)
    now = datetime.now(timezone.utc)
    items = []
    for i in range(size):
        customer, name = f"cust-{run:02d}-{i // len(NAMES):04d}", NAMES[i % len(NAMES)]
        value = f"valor {run}-{i}"
        pid = keys.tuple_id(T, customer, name, value)
        store.create(Proposal(id=pid, tenant=T, agent=A, session_id=f"sess_{run:02d}_{i:04d}", customer_id=customer,
                              name=name, value=value, confidence=0.8, proposed_at=now - timedelta(hours=7),
                              evidence=(EvidenceLink(turn_id="turn_0000", completed_at=now - timedelta(hours=8),
                                                     message=0),)))
        items.append({"customer_id": customer, "id": pid})
    for item, name in list(zip(items, [NAMES[i % len(NAMES)] for i in range(size)]))[:conflicts]:
        MemoryCells(s3, knowledge_bucket).write_fact(T, item["customer_id"], name, "set by an operator", "operator")
    return items


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--runs", type=int, default=5)
    args_parser.add_argument("--size", type=int, default=50)
    args_parser.add_argument("--conflicts", type=int, default=1)
    args = args_parser.parse_args()
    if args.smoke:
        args.runs, args.size = 1, 8

    with moto("bench"):
        import os

        from knowledge_dev.handlers import load_handler
        from shared.aws import client

        s3 = client("s3")
        knowledge_bucket, sessions_bucket = "bench-knowledge", "bench-sessions"
        s3.create_bucket(Bucket=knowledge_bucket)
        s3.put_bucket_versioning(Bucket=knowledge_bucket, VersioningConfiguration={"Status": "Enabled"})
        s3.create_bucket(Bucket=sessions_bucket)
        s3.put_object(Bucket=knowledge_bucket, Key=f"agents/{T}/{A}/knowledge.yaml", Body=b"distill: {}\n")
        client("events").create_event_bus(Name="bench-bus")
        os.environ.update(KNOWLEDGE_BUCKET=knowledge_bucket, SESSIONS_BUCKET=sessions_bucket, FACTS_KEY=KEY,
                          EVENT_BUS_NAME="bench-bus", STUDIO_ORIGIN="http://127.0.0.1:8080",
                          POWERTOOLS_SERVICE_NAME=f"bench-facts-{uuid.uuid4().hex[:6]}",
                          POWERTOOLS_LOG_LEVEL="WARNING", POWERTOOLS_METRICS_NAMESPACE="Bench")
        handler = load_handler("facts_api", template_settings=False)
        quiet = contextlib.redirect_stdout(io.StringIO())  # the handler's metric lines (EMF), not this report
        quiet.__enter__()
        calls = [0]
        s3.meta.events.register("before-send.s3", lambda **kwargs: calls.__setitem__(0, calls[0] + 1))
        base = f"/tenants/{T}/agents/{A}/facts/proposals"
        runs, undos = [], []
        answer: dict = {}
        for run in range(args.runs):
            items = seed(s3, sessions_bucket, knowledge_bucket, run, args.size, args.conflicts)
            calls[0] = 0
            start = time.perf_counter()
            raw = handler.lambda_handler(request("POST", f"{base}/bulk", {"action": "approve", "items": items}),
                                         Context())
            took = (time.perf_counter() - start) * 1000
            if raw["statusCode"] != 200:
                raise SystemExit(f"unexpected answer {raw['statusCode']}: {raw.get('body', '')[:300]}")
            answer = json.loads(raw["body"])
            runs.append({"ms": took, "s3_requests": calls[0], "counts": answer["counts"]})
            approved = [o for o in answer["outcomes"] if o["ok"]]
            runs[-1]["approved"] = len(approved)
            start = time.perf_counter()
            for o in approved[:10]:  # undo from Recent, one by one
                one = time.perf_counter()
                back = handler.lambda_handler(request("POST", f"{base}/{o['customer_id']}/{o['id']}/undo"), Context())
                if back["statusCode"] != 200:
                    raise SystemExit(f"undo answered {back['statusCode']}: {back.get('body', '')[:300]}")
                undos.append((time.perf_counter() - one) * 1000)
        p50 = statistics.median(r["ms"] for r in runs)
        report = {"size": args.size, "conflicts": args.conflicts, "runs": runs, "bulk_p50_ms": p50,
                  "bulk_p90_ms": percentile([r["ms"] for r in runs], 0.9), "per_fact_p50_ms": p50 / args.size,
                  "undo_p50_ms": statistics.median(undos) if undos else None,
                  "last_outcomes": [{"customer": o["customer_id"], "name": o["name"], "outcome": o["outcome"]}
                                    for o in answer.get("outcomes", [])]}
        quiet.__exit__(None, None, None)
    emit(report, args.json, lambda: print_report(report, args.runs))
    did_work("timed bulk approvals' facts approved", sum(r["approved"] for r in runs), args.size * args.runs,
             as_json=args.json)
    return 0


def print_report(report: dict, n_runs: int) -> None:
    runs, p50 = report["runs"], report["bulk_p50_ms"]
    print(f"bulk approve of {report['size']} facts ({report['conflicts']} changed by another operator first), "
          f"{n_runs} runs, moto server:")
    for i, r in enumerate(runs):
        print(f"  run {i}: {r['ms']:7.0f} ms  {r['s3_requests']:4d} S3 requests  outcomes {dict(r['counts'])}")
    print("per-fact outcomes of the last run:")
    for o in report["last_outcomes"]:
        print(f"  {o['customer']:<16} {o['name']:<20} {o['outcome']}")
    tally = Counter(o["outcome"] for o in report["last_outcomes"])
    print(f"  = {dict(tally)}")
    print(f"p50 {p50:.0f} ms for {report['size']} ({report['per_fact_p50_ms']:.1f} ms a fact), "
          f"p90 {report['bulk_p90_ms']:.0f} ms; one undo from Recent p50 {report['undo_p50_ms']:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
