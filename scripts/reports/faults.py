"""Counts under S3 faults: 50 sightings of one concept in FIFO order, then a full redelivery,
through the real ConsolidateFunction with S3 behind the fault proxy, over several seeds.

Targets: occurrences and sources exactly equal to the sightings, 0 dead-lettered, 0 escaped.
Uses the template's own batch size, function timeout and MaxReceiveCount.

    ./run script reports.faults [--sightings 50] [--seeds 1,2,3,4,5] [--brownout] [--json] [--smoke]

It ends with the sightings counted in the concept's occurrences, over every run (a run not exact
fails the report).
"""

from __future__ import annotations

import json
import logging
import os
import sys

from scripts.lib.harness import Column, did_work, moto, parser, print_table

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


COLUMNS = [Column("mix", 10, lambda r: r[0], left=True)] + [
    Column(header, len(header), lambda r, cell=cell: cell(r[1])) for header, cell in (
        ("seed", lambda r: str(r.seed)), ("occurrences", lambda r: str(r.occurrences)),
        ("sources", lambda r: str(r.sources)), ("dead-lettered", lambda r: str(r.dead_lettered)),
        ("max receives", lambda r: str(r.max_receives)), ("escaped", lambda r: str(r.escaped)),
        ("invocations", lambda r: str(r.invocations)), ("S3 requests", lambda r: str(r.s3_requests)),
        ("faults injected", lambda r: str(sum(r.faults.values()))), ("back-off s", lambda r: str(r.backoff_seconds)),
        ("wall s", lambda r: f"{r.seconds:.1f}"))]


def main() -> int:
    from knowledge_dev import fault_run
    from knowledge_dev.faults import FaultMix

    parser_ = parser(__doc__)
    parser_.add_argument("--sightings", type=int, default=50)
    parser_.add_argument("--seeds", default="1,2,3,4,5")
    parser_.add_argument("--brownout", action="store_true",
                         help="also a mix twice as bad, with a 10 s timeout (records then fail whole deliveries)")
    args = parser_.parse_args()
    if args.smoke:
        args.sightings, args.seeds = 5, "1"
    limits = template_limits()
    mixes = {"issue mix": fault_run.DEFAULT_MIX}
    if args.brownout:
        mixes["brownout"] = FaultMix(slowdown=0.25, internal=0.10, reset=0.10, conflict_on_conditional=0.10)
    rows = []
    with moto("local") as endpoint:
        for label, mix in mixes.items():
            for seed in [int(s) for s in args.seeds.split(",")]:
                timeout = limits["timeout_seconds"] if label == "issue mix" else 10.0
                result = fault_run.run(seed, args.sightings, moto_endpoint=endpoint, mix=mix,
                                       batch_size=limits["batch_size"], max_receives=limits["max_receives"],
                                       timeout_seconds=timeout)
                rows.append((label, result))
    counted = sum(r.occurrences for _, r in rows), args.sightings * len(rows)
    if args.json:
        print(json.dumps([{"mix": label, **vars(r), "exact": r.exact} for label, r in rows]))
        did_work("sightings counted in the concept's occurrences", *counted, as_json=True)
        return 0 if all(r.exact for _, r in rows) else 1
    print(f"template: batch {limits['batch_size']}, timeout {limits['timeout_seconds']:.0f} s, "
          f"maxReceiveCount {limits['max_receives']}, visibility {limits['visibility_seconds']} s")
    print(f"{args.sightings} sightings of one concept in FIFO order, then a full redelivery "
          f"(target: occurrences = sources = {args.sightings}, 0 dead-lettered, 0 escaped)\n")
    print_table(COLUMNS, rows)
    print()
    print("exact on every run" if all(r.exact for _, r in rows) else "NOT EXACT on some run")
    did_work("sightings counted in the concept's occurrences", *counted)
    return 0 if all(r.exact for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
