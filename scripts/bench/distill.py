#!/usr/bin/env python3
"""A distillation pass over a large archive, against moto's server and the scripted model.

    ./run script bench.distill [--sessions 10000] [--due 0.01] [--json] [--smoke]

Archives `--sessions` customer-tagged sessions (two turns each, through TurnArchive.put and
facts.sessions.record_turn, as the extraction path does), of which the share `--due` went
idle hours ago and the rest in the last hour; then times one DistillFunction pass. Prints
sessions scanned per second, S3 requests per session scanned (by operation), and what the pass
never did: list the archive (the turns a full listing would have paged through, for scale), and
how many of the due sessions the timed pass distilled.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

from scripts.lib.harness import did_work, emit, moto, parser

T, A = "default", "store-support"
TURNS = [[("user", "oi, quero trocar o tenis do pedido 48213, calço 42"), ("assistant", "Claro! Troco pelo 43?")],
         [("user", "pode ser 43. prefiro pagar no pix"), ("assistant", "Feito, troca para o 43 registrada.")]]


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--sessions", type=int, default=10_000)
    args_parser.add_argument("--due", type=float, default=0.01)
    args_parser.add_argument("--workers", type=int, default=16)
    args = args_parser.parse_args()
    if args.smoke:
        args.sessions, args.due = 40, 0.1

    with moto("bench"):
        from facts.distill import Distiller
        from facts.keyed_hashes import FactKeys
        from facts.sessions import record_turn
        from knowledge.format.turn import Turn
        from knowledge.store.archive import TurnArchive
        from knowledge_dev.scripted_model import ScriptedModel
        from shared.aws import client
        from shared.model import ModelCache

        s3 = client("s3")
        knowledge_bucket, sessions_bucket = "bench-knowledge", "bench-sessions"
        s3.create_bucket(Bucket=knowledge_bucket)
        s3.put_bucket_versioning(Bucket=knowledge_bucket, VersioningConfiguration={"Status": "Enabled"})
        s3.create_bucket(Bucket=sessions_bucket)
        s3.put_object(Bucket=knowledge_bucket, Key=f"agents/{T}/{A}/knowledge.yaml",
                      Body=b"distill:\n  idle_hours: 6\n  min_messages: 3\n")
        now = datetime.now(timezone.utc)
        due = max(1, round(args.sessions * args.due))
        archive = TurnArchive(s3, sessions_bucket)

        def seed(n: int) -> None:
            start = now - (timedelta(hours=9) if n < due else timedelta(minutes=50))
            for i, messages in enumerate(TURNS):
                turn = Turn(tenant=T, agent=A, session_id=f"sess_{n:06d}", turn_id=f"turn_{i}",
                            completed_at=start + timedelta(minutes=i), customer_id=f"cust-{n:06d}",
                            messages=[{"role": r, "content": c} for r, c in messages])
                archive.put(turn)
                record_turn(s3, sessions_bucket, turn)

        began = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(seed, range(args.sessions)))
        seeded = time.perf_counter() - began

        answer = json.dumps([{"name": "tamanho_calcado", "value": "43", "evidence": [2]},
                             {"name": "pagamento_preferido", "value": "Pix", "evidence": [2]}])
        with ScriptedModel(lambda request: answer) as model:
            distiller = Distiller(s3, knowledge_bucket=knowledge_bucket, sessions_bucket=sessions_bucket,
                                  models=ModelCache({"OPENAI_BASE_URL": model.base_url}),
                                  utility_model="openai:bench", keys=FactKeys("b" * 48), events=None)
            calls: Counter = Counter()

            def count(model, **_):
                calls[model.name] += 1

            s3.meta.events.register("before-call.s3", count)
            began = time.perf_counter()
            report = distiller.run()
            elapsed = time.perf_counter() - began
            s3.meta.events.unregister("before-call.s3", count)

        pages = sum(1 for _ in s3.get_paginator("list_objects_v2").paginate(
            Bucket=sessions_bucket, Prefix=f"{T}/{A}/turns/"))
        scanned = report.scanned
        result = {
            "sessions": args.sessions, "due": due, "turns_archived": args.sessions * len(TURNS),
            "seed_seconds": round(seeded, 1), "pass_seconds": round(elapsed, 3),
            "scanned": scanned, "distilled": report.distilled, "proposed": report.proposed,
            "sessions_scanned_per_second": round(scanned / elapsed, 1) if elapsed else None,
            "s3_requests": sum(calls.values()),
            "s3_requests_per_session_scanned": round(sum(calls.values()) / scanned, 2) if scanned else None,
            "by_operation": dict(calls), "model_calls": len(model.requests),
            "archive_list_pages_avoided": pages,
        }
    emit(result, args.json, lambda: [print(f"{key:34} {value}") for key, value in result.items()])
    did_work("due sessions distilled by the timed pass", result["distilled"], due, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
