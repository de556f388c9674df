"""Counts under S3 faults: 50 sightings of one concept in FIFO order, then a full redelivery,
through the real ConsolidateFunction with S3 behind the fault proxy, over several seeds.

Targets: occurrences and sources exactly equal to the sightings, 0 dead-lettered, 0 escaped.
Uses the template's own batch size, function timeout and MaxReceiveCount.

    .venv/bin/python scripts/fault_report.py [--sightings 50] [--seeds 1,2,3,4,5] [--brownout]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")
logging.disable(logging.CRITICAL)


def template_limits() -> dict:
    from knowledge_dev.template import load_template, queue_specs

    template = load_template()
    function = template["Resources"]["ConsolidateFunction"]["Properties"]
    queue = next(spec for spec in queue_specs(template) if spec.logical_id == "CandidatesQueue")
    return {"batch_size": int(function["Events"]["Sightings"]["Properties"]["BatchSize"]),
            "timeout_seconds": float(function["Timeout"]),
            "max_receives": queue.max_receive_count,
            "visibility_seconds": int(queue.attributes["VisibilityTimeout"])}


def main() -> int:
    from knowledge_dev import fault_run
    from knowledge_dev.faults import FaultMix
    from knowledge_dev.local_aws import moto_server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sightings", type=int, default=50)
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--brownout", action="store_true",
                        help="also a mix twice as bad, with a 10 s timeout (records then fail whole deliveries)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    limits = template_limits()
    mixes = {"issue mix": fault_run.DEFAULT_MIX}
    if args.brownout:
        mixes["brownout"] = FaultMix(slowdown=0.25, internal=0.10, reset=0.10, conflict_on_conditional=0.10)
    rows = []
    with moto_server() as endpoint:
        for label, mix in mixes.items():
            for seed in [int(s) for s in args.seeds.split(",")]:
                timeout = limits["timeout_seconds"] if label == "issue mix" else 10.0
                result = fault_run.run(seed, args.sightings, moto_endpoint=endpoint, mix=mix,
                                       batch_size=limits["batch_size"], max_receives=limits["max_receives"],
                                       timeout_seconds=timeout)
                rows.append((label, result))
    if args.json:
        print(json.dumps([{"mix": label, **vars(r), "exact": r.exact} for label, r in rows]))
        return 0 if all(r.exact for _, r in rows) else 1
    print(f"template: batch {limits['batch_size']}, timeout {limits['timeout_seconds']:.0f} s, "
          f"maxReceiveCount {limits['max_receives']}, visibility {limits['visibility_seconds']} s")
    print(f"{args.sightings} sightings of one concept in FIFO order, then a full redelivery "
          f"(target: occurrences = sources = {args.sightings}, 0 dead-lettered, 0 escaped)\n")
    header = (f"{'mix':<10} {'seed':>4} {'occurrences':>11} {'sources':>7} {'dead-lettered':>13} {'max receives':>12} "
              f"{'escaped':>7} {'invocations':>11} {'S3 requests':>11} {'faults injected':>15} {'back-off s':>10} "
              f"{'wall s':>6}")
    print(header)
    print("-" * len(header))
    for label, r in rows:
        print(f"{label:<10} {r.seed:>4} {r.occurrences:>11} {r.sources:>7} {r.dead_lettered:>13} {r.max_receives:>12} "
              f"{r.escaped:>7} {r.invocations:>11} {r.s3_requests:>11} {sum(r.faults.values()):>15} "
              f"{r.backoff_seconds:>10} {r.seconds:>6.1f}")
    print()
    print("exact on every run" if all(r.exact for _, r in rows) else "NOT EXACT on some run")
    return 0 if all(r.exact for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
