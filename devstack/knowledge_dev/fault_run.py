"""A bad day on AWS, replayed: sightings of one concept through the real ConsolidateFunction,
with S3 behind the fault proxy, delivered as the CandidatesQueue would deliver them.

The queue is simulated, not waited for: records go in FIFO order in batches of the
template's size; a failed record and the rest of its group come back in the next round with
their receive count up by one (the visibility timeout, or the handler's back-off, having
passed); a record received more than the template's maxReceiveCount times is dead-lettered.
The clock the back-off would spend is added up, so the run says how long an outage the
same failures would have taken.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import boto3

from .faults import FaultMix, FaultProxy
from .poller import LambdaContext

TENANT, AGENT, NAME = "default", "fault-run", "frete-gratis"
DEFAULT_MIX = FaultMix(slowdown=0.10, internal=0.05, reset=0.05, conflict_on_conditional=0.05)


@dataclass
class RunResult:
    seed: int
    sightings: int
    occurrences: int = 0
    sources: int = 0
    dead_lettered: int = 0
    max_receives: int = 0
    escaped: int = 0
    invocations: int = 0
    backoff_seconds: int = 0
    s3_requests: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def exact(self) -> bool:
        return self.occurrences == self.sources == self.sightings and self.dead_lettered == 0 and self.escaped == 0


def _record(sighting: Any, index: int, receives: int) -> dict:
    return {"messageId": f"m-{index}", "receiptHandle": f"r-{index}-{receives}", "body": sighting.body(),
            "attributes": {"MessageGroupId": sighting.group_id(), "MessageDeduplicationId": sighting.dedup_id(),
                           "ApproximateReceiveCount": str(receives), "SequenceNumber": str(index),
                           "SentTimestamp": "0", "SenderId": "fault-run", "ApproximateFirstReceiveTimestamp": "0"},
            "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:fault-run-candidates.fifo", "awsRegion": "us-east-1"}


def deliver(handler: Any, sightings: list, *, batch_size: int, max_receives: int, timeout_seconds: float,
            result: RunResult, first_index: int = 0) -> None:
    """Deliver `sightings` (one FIFO group) until each succeeded or was dead-lettered."""
    from knowledge.store.queues import backoff_seconds

    pending = [(first_index + i, s) for i, s in enumerate(sightings)]
    receives: dict[int, int] = {}
    while pending:
        batch = pending[:batch_size]
        for index, _ in batch:
            receives[index] = receives.get(index, 0) + 1
        event = {"Records": [_record(s, index, receives[index]) for index, s in batch]}
        result.invocations += 1
        try:
            answer = handler.lambda_handler(event, LambdaContext("consolidate", timeout_ms=int(timeout_seconds * 1000)))
            failed = {item["itemIdentifier"] for item in answer.get("batchItemFailures", [])}
        except Exception:  # noqa: BLE001 - what escapes a handler is an invocation error, counted
            result.escaped += 1
            failed = {f"m-{index}" for index, _ in batch}
        done = [(index, s) for index, s in batch if f"m-{index}" not in failed]
        pending = [item for item in pending if item not in done]
        if failed:
            result.backoff_seconds += backoff_seconds(min(receives[index] for index, _ in batch
                                                          if f"m-{index}" in failed))
        for index, s in list(pending):
            if receives.get(index, 0) >= max_receives:
                pending.remove((index, s))
                result.dead_lettered += 1
    result.max_receives = max([result.max_receives, *receives.values()])


def run(seed: int, count: int, *, moto_endpoint: str, mix: FaultMix = DEFAULT_MIX, batch_size: int = 10,
        max_receives: int = 10, timeout_seconds: float = 60.0) -> RunResult:
    """`count` sightings of one concept, then every one of them again, under `mix`."""
    from knowledge.format.concept import Concept
    from knowledge.format.sighting import Sighting
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    from .handlers import load_handler

    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    events = boto3.client("events", endpoint_url=moto_endpoint, region_name="us-east-1")
    knowledge_bucket, sessions_bucket = f"fault-k-{uuid.uuid4().hex[:12]}", f"fault-s-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=knowledge_bucket)
    s3.put_bucket_versioning(Bucket=knowledge_bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.create_bucket(Bucket=sessions_bucket)
    bus = f"fault-bus-{uuid.uuid4().hex[:8]}"
    events.create_event_bus(Name=bus)

    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    sightings = [Sighting.of(TENANT, AGENT, f"sess_{i:03d}", f"turn_{i:03d}", Concept(
        name=NAME, description="Frete grátis acima de R$ 199 para Sul e Sudeste.", type="fact",
        provenance="observed", confidence=0.6, sources=(f"sess_{i:03d}",), occurrences=1, created_at=moment,
        updated_at=moment, body="Pedidos acima de R$ 199 têm frete grátis para Sul e Sudeste."))
        for i in range(count)]

    result = RunResult(seed, count)
    saved = {key: os.environ.get(key) for key in ("AWS_ENDPOINT_URL", "KNOWLEDGE_BUCKET", "SESSIONS_BUCKET",
                                                  "EVENT_BUS_NAME", "UTILITY_MODEL", "POWERTOOLS_METRICS_DISABLED")}
    started = time.monotonic()
    with FaultProxy(moto_endpoint, mix=mix, seed=seed) as proxy:
        os.environ.update(AWS_ENDPOINT_URL=proxy.url, KNOWLEDGE_BUCKET=knowledge_bucket,
                          SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus, POWERTOOLS_METRICS_DISABLED="true")
        os.environ.pop("UTILITY_MODEL", None)
        client.cache_clear()
        try:
            handler = load_handler("consolidate", module_name=f"fault_run_consolidate_{seed}_{uuid.uuid4().hex[:6]}")
            deliver(handler, sightings, batch_size=batch_size, max_receives=max_receives,
                    timeout_seconds=timeout_seconds, result=result)
            deliver(handler, sightings, batch_size=batch_size, max_receives=max_receives,  # a full redelivery
                    timeout_seconds=timeout_seconds, result=result, first_index=count)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            client.cache_clear()
        counters = proxy.counters
    result.seconds = time.monotonic() - started
    result.s3_requests = counters.seen_by_service.get("s3", 0)
    result.faults = {kind: n for kind, n in counters.faults.items() if n}
    stored = ConceptStore(s3, knowledge_bucket).find(TENANT, AGENT, NAME)
    if stored is not None:
        result.occurrences, result.sources = stored.concept.occurrences, len(stored.concept.sources)
    return result
