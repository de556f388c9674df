"""Feed an SQS queue to a real handler as Lambda's event source mapping would.

Messages are received in batches, handed to the handler as a Lambda-shaped SQS event,
and deleted unless the handler reports them in `batchItemFailures`; a handler that
raises fails the whole batch. Failed messages become visible again after the queue's
visibility timeout, and moto moves them to the dead-letter queue after maxReceiveCount.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class LambdaContext:
    """What Lambda hands a handler; the remaining time counts down from `timeout_ms` as it does there."""

    function_name: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:local"
    aws_request_id: str = ""
    timeout_ms: int = 60_000
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self.timeout_ms - (time.monotonic() - self.started) * 1000))


def sqs_event(messages: list[dict], queue_arn: str) -> dict:
    """The event Lambda passes for a batch of SQS messages."""
    return {"Records": [{
        "messageId": m["MessageId"],
        "receiptHandle": m["ReceiptHandle"],
        "body": m["Body"],
        "attributes": m.get("Attributes", {}),
        "messageAttributes": m.get("MessageAttributes", {}),
        "md5OfBody": m.get("MD5OfBody") or hashlib.md5(m["Body"].encode()).hexdigest(),  # noqa: S324
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": "us-east-1",
    } for m in messages]}


class Poller(threading.Thread):
    def __init__(self, sqs: Any, queue_url: str, handler: Callable[[dict, Any], Any], name: str,
                 batch_size: int = 10, on_batch: Callable[[int, int], None] | None = None):
        super().__init__(name=f"poller-{name}", daemon=True)
        self._sqs, self._url, self._handler, self._function = sqs, queue_url, handler, name
        self._batch = batch_size
        self._on_batch = on_batch
        self._stopping = threading.Event()
        self.arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def stop(self) -> None:
        self._stopping.set()

    def poll_once(self, wait_seconds: int = 1) -> int:
        """One receive-and-invoke round; returns the number of messages handled."""
        answer = self._sqs.receive_message(QueueUrl=self._url, MaxNumberOfMessages=self._batch,
                                           WaitTimeSeconds=wait_seconds, AttributeNames=["All"])
        messages = answer.get("Messages", [])
        if not messages:
            return 0
        context = LambdaContext(self._function, aws_request_id=str(uuid.uuid4()))
        try:
            result = self._handler(sqs_event(messages, self.arn), context) or {}
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        except Exception:  # noqa: BLE001 - a crashed invocation fails the whole batch, as in Lambda
            failed = {m["MessageId"] for m in messages}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(QueueUrl=self._url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)])
        if self._on_batch:
            self._on_batch(len(done), len(failed))
        return len(messages)

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.poll_once()
            except Exception:  # noqa: BLE001 - keep polling through a transient error
                self._stopping.wait(1)


class Schedule(threading.Thread):
    """Invoke a handler with `event` every `every` seconds, as an EventBridge schedule would: one
    invocation at a time (the next waits for the last), with the function's own timeout."""

    def __init__(self, handler: Callable[[dict, Any], Any], name: str, every: float, timeout_ms: int,
                 event: dict | None = None, on_answer: Callable[[Any], None] | None = None):
        super().__init__(name=f"schedule-{name}", daemon=True)
        self._handler, self._function, self._every, self._timeout_ms = handler, name, every, timeout_ms
        self._event = event or {}
        self._on_answer = on_answer
        self._stopping = threading.Event()
        self.invocations = 0

    def stop(self) -> None:
        self._stopping.set()

    def run(self) -> None:
        while not self._stopping.wait(self._every):
            context = LambdaContext(self._function, aws_request_id=str(uuid.uuid4()), timeout_ms=self._timeout_ms)
            try:
                answer = self._handler(dict(self._event), context)
            except Exception:  # noqa: BLE001 - a failed invocation is logged by the handler; the next one runs
                answer = None
            self.invocations += 1
            if self._on_answer:
                self._on_answer(answer)
