"""The write path's queues: candidates sent on to consolidation, and redelivery (back-off, the next
UTC day, straight to the dead-letter queue)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Optional, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.errors import CandidateSendError
from knowledge.format.sighting import Sighting
from shared import awscall

SQS_BATCH = 10


class CandidateSink(Protocol):
    def send(self, sightings: list[Sighting]) -> None: ...


class SqsCandidates:
    """The CandidatesQueue (FIFO): grouped per concept, deduplicated per turn and concept."""

    def __init__(self, sqs: Any, queue_url: str):
        self._sqs, self.queue_url = sqs, queue_url

    def send(self, sightings: list[Sighting]) -> None:
        for start in range(0, len(sightings), SQS_BATCH):
            chunk = sightings[start:start + SQS_BATCH]
            try:
                answer = self._sqs.send_message_batch(QueueUrl=self.queue_url, Entries=[
                    {"Id": str(i), "MessageBody": s.body(), "MessageGroupId": s.group_id(),
                     "MessageDeduplicationId": s.dedup_id()} for i, s in enumerate(chunk)])
            except (ClientError, BotoCoreError) as error:
                raise CandidateSendError(f"sightings not sent ({awscall.translate(error).code})") from None
            if answer.get("Failed"):
                codes = sorted({f.get("Code", "?") for f in answer["Failed"]})
                raise CandidateSendError(f"{len(answer['Failed'])} sighting(s) not sent ({', '.join(codes)})")


BACKOFF_FIRST_SECONDS = 60
BACKOFF_MAX_SECONDS = 900


VISIBILITY_MAX_SECONDS = 12 * 3600  # SQS's own limit


def backoff_seconds(receive_count: int) -> int:
    return min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** max(0, receive_count - 1))


def seconds_to_next_utc_day(now: Optional[datetime] = None) -> int:
    """How long until 00:00 UTC (a minute after, at most SQS's 12 hours): when a daily cap resets."""
    now = now or datetime.now(timezone.utc)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return min(VISIBILITY_MAX_SECONDS, int((midnight - now).total_seconds()) + 60)


class Redelivery:
    """What happens to a queue record that did not succeed.

    A record that failed for a reason that may pass (S3 or the model down, a lost race, the
    deadline) comes back later: its visibility grows with each receive, so an outage spends
    time, not the receive budget. A record that can never succeed (its body is not a valid
    message) goes to the dead-letter queue at once, on first sight.
    """

    def __init__(self, sqs: Any, dead_letter_url: Optional[str]):
        self._sqs, self._dead_letter_url = sqs, dead_letter_url
        self._urls: dict[str, str] = {}
        self._hopeless: set[str] = set()  # invalid records left to the queue's redrive: no back-off
        self._until: dict[str, int] = {}  # message id -> seconds it must wait instead of the back-off

    def back_off_failures(self, event: dict, response: dict) -> None:
        """`later` for the records a partial batch response lists as failed."""
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])} - self._hopeless
        self._hopeless.clear()
        try:
            self.later([record for record in event.get("Records", []) if record.get("messageId") in failed])
        finally:
            self._until.clear()

    def hold(self, record: dict, seconds: int) -> None:
        """This record cannot succeed for `seconds` (a daily cap, until the next UTC day): it waits that
        long (at most SQS's 12 hours at a time) rather than spending its receives on the back-off."""
        self._until[record.get("messageId", "")] = min(VISIBILITY_MAX_SECONDS, seconds)

    def later(self, records: list[dict]) -> None:
        """Push back each failed record by the backoff for its receive count (best effort: if
        this fails, the queue's own visibility timeout applies)."""
        for record in records:
            try:
                count = int(record.get("attributes", {}).get("ApproximateReceiveCount", "1"))
                wait = self._until.get(record.get("messageId", ""), backoff_seconds(count))
                self._sqs.change_message_visibility(QueueUrl=self._queue_url(record["eventSourceARN"]),
                                                    ReceiptHandle=record["receiptHandle"], VisibilityTimeout=wait)
            except (ClientError, BotoCoreError, KeyError, ValueError):
                continue

    def dead_letter(self, record: dict, reason: Optional[str] = None) -> bool:
        """Send the record's body to the dead-letter queue, with its original message id and the
        error code as message attributes (so the reason and the log line can be found again);
        False when there is none or it failed (then the queue's own redrive moves it)."""
        if not self._dead_letter_url:
            self._hopeless.add(record.get("messageId", ""))
            return False
        attributes = {"source_message_id": record.get("messageId", ""), "error_code": reason or ""}
        message: dict[str, Any] = {"QueueUrl": self._dead_letter_url, "MessageBody": record["body"],
                                   "MessageAttributes": {key: {"DataType": "String", "StringValue": value}
                                                         for key, value in attributes.items() if value}}
        if self._dead_letter_url.endswith(".fifo"):
            message["MessageGroupId"] = record.get("attributes", {}).get("MessageGroupId") or "invalid"
            message["MessageDeduplicationId"] = record["messageId"]
        try:
            self._sqs.send_message(**message)
        except (ClientError, BotoCoreError):
            self._hopeless.add(record.get("messageId", ""))
            return False
        return True

    def _queue_url(self, arn: str) -> str:
        if arn not in self._urls:
            _, _, _, _, account, name = arn.split(":", 5)
            self._urls[arn] = self._sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        return self._urls[arn]
