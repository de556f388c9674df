#!/usr/bin/env python3
"""Cost of consolidating one sighting that needs no model call, against moto's server.

    ./run script bench.consolidate [--n 100] [--json] [--smoke]

Scenarios: a new name (created), a repeat of the same claim (confirmed) and a sighting
already applied (replayed). Prints S3 requests per sighting (target: at most 5 without a
model call), p50/p95 time, and the ratio to one plain conditional PUT measured in the same
run (the floor any write pays).

The five requests of a new sighting: read the concept; create its ledger marker "pending"
(what makes the count exact however long ago a crash was); write the concept; add the change
journal's entry (what lets every warm reader refresh in one request); mark the sighting
applied. A replay costs three: read the concept, the refused create, read the marker. Each
timed sighting's outcome is checked: created, confirmed, replayed as its scenario says.
"""

from __future__ import annotations

TARGET = 5

import statistics
import sys
import time
from collections import Counter
from datetime import datetime, timezone

import boto3

from scripts.lib.harness import did_work, emit, moto, parser, percentile

EXPECTED = {"new name": "created", "same claim": "confirmed", "replayed": "replayed"}


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--n", type=int, default=100)
    args = args_parser.parse_args()
    if args.smoke:
        args.n = 5

    with moto("bench"):
        from knowledge.format.concept import Concept
        from knowledge.format.sighting import Sighting
        from knowledge.learning.consolidate import Consolidator
        from knowledge.store.concepts import ConceptStore
        from knowledge.store.config_cache import ConfigCache
        from knowledge.store.ledgers import SightingLedger
        from shared.events import EventBridgeEvents
        from shared.model import ModelCache

        s3 = boto3.client("s3")
        calls: Counter = Counter()
        s3.meta.events.register("before-send.s3", lambda **kw: calls.update(["s3"]))
        events_client = boto3.client("events")
        s3.create_bucket(Bucket="bench-knowledge")
        s3.put_bucket_versioning(Bucket="bench-knowledge", VersioningConfiguration={"Status": "Enabled"})
        s3.create_bucket(Bucket="bench-sessions")
        events_client.create_event_bus(Name="bench")
        store = ConceptStore(s3, "bench-knowledge")
        store.put_config("default", "bench", "knowledge: {}\n", actor="engine")
        consolidator = Consolidator(store, SightingLedger(s3, "bench-sessions"), EventBridgeEvents(lambda: events_client, "bench"),
                                    ConfigCache(store), ModelCache({}), utility_model=None)
        moment = datetime(2026, 11, 20, tzinfo=timezone.utc)

        def sighting(name: str, session: str) -> Sighting:
            concept = Concept(name=name, description="Free shipping above R$199 in the Southeast.", type="fact",
                              provenance="observed", confidence=0.6, sources=(session,), occurrences=1,
                              created_at=moment, updated_at=moment, body="Orders above R$199 ship free.")
            return Sighting.of("default", "bench", session, "t1", concept)

        def measure(label: str, items: list) -> dict:
            times, requests, as_expected = [], [], 0
            for item in items:
                before = calls["s3"]
                start = time.perf_counter()
                outcome = consolidator.apply(item)
                times.append((time.perf_counter() - start) * 1000)
                requests.append(calls["s3"] - before)
                as_expected += outcome.kind == EXPECTED[label]
            return {"scenario": label, "outcome": outcome.kind, "as_expected": as_expected,
                    "s3_requests_mean": statistics.mean(requests),
                    "s3_requests_max": max(requests), "p50_ms": statistics.median(times), "p95_ms": percentile(times, 0.95)}

        baseline_times = []
        for i in range(args.n):
            start = time.perf_counter()
            s3.put_object(Bucket="bench-knowledge", Key=f"baseline/{i}.md", Body=b"x" * 400, IfNoneMatch="*")
            baseline_times.append((time.perf_counter() - start) * 1000)
        baseline = statistics.median(baseline_times)

        created = [sighting(f"concept-{i}", "sess_0") for i in range(args.n)]
        confirmed = [sighting("concept-0", f"sess_{i + 1}") for i in range(args.n)]
        rows = [measure("new name", created), measure("same claim", confirmed), measure("replayed", confirmed)]
        for row in rows:
            row["ratio_to_one_put"] = row["p50_ms"] / baseline

    result = {"n": args.n, "baseline_put_p50_ms": baseline, "rows": rows, "target_s3_requests": TARGET,
              "meets_target": all(r["s3_requests_max"] <= TARGET for r in rows)}
    emit(result, args.json, lambda: print_report(result))
    did_work("timed sightings ended as their scenario says (created, confirmed, replayed)",
             sum(r["as_expected"] for r in rows), 3 * args.n, as_json=args.json)
    return 0


def print_report(result: dict) -> None:
    rows, baseline = result["rows"], result["baseline_put_p50_ms"]
    print(f"consolidating one sighting with no model call, moto server, n={result['n']} per scenario")
    print(f"baseline: one conditional PUT, p50 {baseline:.2f} ms\n")
    print(f"{'scenario':<12} {'outcome':<10} {'S3 req (mean/max)':>18} {'p50 ms':>8} {'p95 ms':>8} {'x one PUT':>10}")
    for r in rows:
        print(f"{r['scenario']:<12} {r['outcome']:<10} {r['s3_requests_mean']:>12.2f} / {r['s3_requests_max']:<3} "
              f"{r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} {r['ratio_to_one_put']:>10.1f}")
    print(f"\ntarget: at most {TARGET} S3 requests per sighting -> {'met' if result['meets_target'] else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(main())
