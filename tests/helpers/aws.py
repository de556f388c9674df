"""Buckets and queues of their own for a test, on the session's moto server, and reading a queue dry."""

from __future__ import annotations

import uuid


def new_bucket(s3, versioned: bool = True) -> str:
    name = f"test-{uuid.uuid4().hex[:20]}"
    s3.create_bucket(Bucket=name)
    if versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def new_queue(sqs, fifo: bool = False, **attributes: str) -> str:
    name = f"test-{uuid.uuid4().hex[:16]}" + (".fifo" if fifo else "")
    attrs = {"FifoQueue": "true", "ContentBasedDeduplication": "false"} if fifo else {}
    attrs.update(attributes)
    return sqs.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]


def drain(sqs, queue_url: str) -> list[dict]:
    """Every message on a queue (received and deleted)."""
    out = []
    while True:
        answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                     AttributeNames=["All"])
        messages = answer.get("Messages", [])
        if not messages:
            return out
        out.extend(messages)
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])


def sqs_event(*bodies: str, receive: int = 1) -> dict:
    """An SQS event as Lambda delivers it, one record per body, on its `receive`-th delivery."""
    return {"Records": [{"messageId": f"m{i}", "receiptHandle": f"r{i}", "body": body, "attributes": {
        "ApproximateReceiveCount": str(receive), "SentTimestamp": "0", "SenderId": "x",
        "ApproximateFirstReceiveTimestamp": "0"}, "messageAttributes": {}, "md5OfBody": "0",
        "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:policy-review",
        "awsRegion": "us-east-1"} for i, body in enumerate(bodies)]}
