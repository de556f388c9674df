"""The demo turn's SQS body, with overrides, and what in its content must never be printed."""

from __future__ import annotations

import json

from helpers.handlers import load_event

SECRET = "ana.souza@example.com"  # in the demo turn's content: must never be printed


def turn_body(**overrides) -> str:
    body = json.loads(load_event("turn-complete.json")["Records"][0]["body"])
    body.update(overrides)
    return json.dumps(body, ensure_ascii=False)


def candidates_event(bodies: list[str]) -> dict:
    """Sighting bodies as the candidates FIFO queue hands them to ConsolidateFunction (its group
    and deduplication ids, one delivery each)."""
    from knowledge.format.sighting import parse_sighting

    records = []
    for index, body in enumerate(bodies):
        s = parse_sighting(body)
        records.append({
            "messageId": f"m{index}", "receiptHandle": f"r{index}", "body": body,
            "attributes": {"MessageGroupId": s.group_id(), "MessageDeduplicationId": s.dedup_id(),
                           "ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                           "ApproximateFirstReceiveTimestamp": "0", "SequenceNumber": str(index)},
            "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo", "awsRegion": "us-east-1"})
    return {"Records": records}
