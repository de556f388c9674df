"""Redrive: a dead-letter queue's messages back to their source queue once the cause is fixed, by
receive, send and delete (keeping a FIFO message's group and deduplication ids), each body first
re-validated with its consumer's parser; a dry run summarises by reason, never by content. Also
forget_customer's share of the queues (forget_dead_letters). docs/operating.md, "Redrive";
docs/personal-data.md, "Dead letters of a forgotten customer"."""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ValidationError

from knowledge.errors import InvalidSighting, InvalidTurn, RedriveError
from knowledge.format.sighting import SIGHTING_MAX_BYTES, Sighting, parse_sighting
from knowledge.format.turn import TURN_MAX_BYTES, Turn, parse_turn
from shared import awscall
from shared.errors import InvalidConcept

VALID = "valid"
_QUEUE_URL = re.compile(r"https?://\S+/\d{12}/[A-Za-z0-9_-]{1,75}(\.fifo)?")
# A FIFO queue drops a message whose deduplication id it saw in the last five minutes: a message
# dead-lettered sooner than that after its first send is left for a later run, not lost.
DEDUP_WINDOW_MS = 5 * 60 * 1000 + 30_000
_ATTRIBUTE_KEYS = ("DataType", "StringValue", "BinaryValue")


@dataclass(frozen=True)
class Verdict:
    """What re-validating one body says: `reason` is VALID or `<code> (<fields>)`; `agent` is
    `tenant/agent` for a valid body (slugs, never content)."""

    reason: str
    agent: Optional[str] = None


def _fields(model: type[BaseModel], body: str, max_bytes: int) -> str:
    """The fields a body breaks, by name (list indexes as *): never a value."""
    if len(body.encode("utf-8", "surrogatepass")) > max_bytes:
        return "too large"
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(data, dict):
        return "not an object"
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        locations = {".".join("*" if isinstance(part, int) else str(part) for part in error.get("loc", ())) or "body"
                     for error in exc.errors(include_input=False, include_url=False)}
        return ", ".join(sorted(locations))
    if isinstance(parsed, Sighting):
        try:
            parsed.parsed()
        except InvalidConcept as exc:
            return ", ".join(sorted({f"concept.{error.field}" for error in exc.errors}))
    return "body"


def check_turn(body: str) -> Verdict:
    """A TurnCompleteQueue body, as ExtractFunction reads it."""
    try:
        turn = parse_turn(body)
    except InvalidTurn as exc:
        return Verdict(f"{exc.code} ({_fields(Turn, body, TURN_MAX_BYTES)})")
    return Verdict(VALID, f"{turn.tenant}/{turn.agent}")


def check_sighting(body: str) -> Verdict:
    """A CandidatesQueue body, as ConsolidateFunction reads it."""
    try:
        sighting = parse_sighting(body)
    except InvalidSighting as exc:
        return Verdict(f"{exc.code} ({_fields(Sighting, body, SIGHTING_MAX_BYTES)})")
    return Verdict(VALID, f"{sighting.tenant}/{sighting.agent}")


def check_queue_url(name: str, url: str) -> str:
    if not _QUEUE_URL.fullmatch(url or ""):
        raise RedriveError(f"{name}: not an SQS queue URL")
    return url


def queue_name(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class RedriveReport:
    seen: int = 0
    moved: int = 0
    failed: int = 0  # valid, but the send or the delete was refused: still in the dead-letter queue
    too_recent: int = 0  # FIFO: inside the source's deduplication window; run again in a few minutes
    reasons: Counter = field(default_factory=Counter)
    agents: Counter = field(default_factory=Counter)
    ids: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    approximate: Optional[int] = None  # what the queue said it held before the run

    @property
    def left(self) -> int:
        return self.seen - self.moved

    def as_dict(self) -> dict[str, Any]:
        return {"seen": self.seen, "moved": self.moved, "left": self.left, "failed": self.failed,
                "too_recent": self.too_recent, "reasons": dict(self.reasons), "agents": dict(self.agents),
                "ids": {reason: list(ids) for reason, ids in self.ids.items()}, "approximate": self.approximate}


class Redrive:
    """Moves one dead-letter queue's messages back to its source queue."""

    def __init__(self, sqs: Any, dead_letter_url: str, source_url: str, check: Callable[[str], Verdict], *,
                 visibility_seconds: int = 300, clock: Callable[[], float] = time.time):
        self._sqs, self._check = sqs, check
        self.dead_letter_url = check_queue_url("dead-letter queue", dead_letter_url)
        self.source_url = check_queue_url("source queue", source_url)
        self.fifo = dead_letter_url.endswith(".fifo")
        if self.fifo != source_url.endswith(".fifo"):
            raise RedriveError("the dead-letter queue and its source must both be FIFO or both standard")
        self._visibility, self._clock = visibility_seconds, clock

    def run(self, *, dry_run: bool = False, limit: Optional[int] = None,
            progress: Optional[Callable[[int, int], None]] = None) -> RedriveReport:
        """Move every valid message (none with `dry_run`); the rest stay where they are, visible again
        when the run ends."""
        report = RedriveReport(approximate=self._approximate())
        held: list[str] = []  # receipt handles kept invisible until the end, so each message is seen once
        seen: set[str] = set()
        empty = 0
        try:
            while limit is None or report.seen < limit:
                want = 10 if limit is None else min(10, limit - report.seen)
                messages = [m for m in self._receive(want, wait=1 if empty else 0) if m["MessageId"] not in seen]
                if not messages:
                    empty += 1
                    if empty >= 2:  # a short poll samples some servers only: ask once more, waiting
                        break
                    continue
                empty = 0
                movable = []
                for message in messages:
                    seen.add(message["MessageId"])
                    verdict = self._check(message.get("Body", ""))
                    report.seen += 1
                    report.reasons[verdict.reason] += 1
                    report.ids[verdict.reason].append(message["MessageId"])
                    if verdict.agent:
                        report.agents[verdict.agent] += 1
                    if verdict.reason != VALID:
                        held.append(message["ReceiptHandle"])
                    elif self.fifo and self._too_recent(message):
                        report.too_recent += 1
                        held.append(message["ReceiptHandle"])
                    elif dry_run:
                        held.append(message["ReceiptHandle"])
                    else:
                        movable.append(message)
                moved = self._move(movable)
                report.moved += len(moved)
                report.failed += len(movable) - len(moved)
                held.extend(m["ReceiptHandle"] for m in movable if m["MessageId"] not in moved)
                if progress:
                    progress(report.seen, max(report.seen, report.approximate or 0))
        finally:
            self._release(held)
        return report

    # ------------------------------------------------------------------ SQS

    def _approximate(self) -> Optional[int]:
        try:
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=self.dead_letter_url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
            return int(attributes["ApproximateNumberOfMessages"])
        except (ClientError, BotoCoreError) as error:
            raise awscall.translate(error) from None
        except (KeyError, ValueError):
            return None

    def _receive(self, count: int, wait: int) -> list[dict]:
        try:
            return self._sqs.receive_message(
                QueueUrl=self.dead_letter_url, MaxNumberOfMessages=count, WaitTimeSeconds=wait,
                VisibilityTimeout=self._visibility, AttributeNames=["All"],
                MessageAttributeNames=["All"]).get("Messages", [])
        except (ClientError, BotoCoreError) as error:
            raise awscall.translate(error) from None

    def _too_recent(self, message: dict) -> bool:
        sent = message.get("Attributes", {}).get("SentTimestamp")
        return sent is not None and sent.isdigit() and self._clock() * 1000 - int(sent) < DEDUP_WINDOW_MS

    def _move(self, messages: list[dict]) -> set[str]:
        """Send, then delete what was sent; the ids of the messages that were both."""
        if not messages:
            return set()
        entries = []
        for index, message in enumerate(messages):
            entry: dict[str, Any] = {"Id": str(index), "MessageBody": message["Body"]}
            attributes = {name: {key: value[key] for key in _ATTRIBUTE_KEYS if key in value}
                          for name, value in message.get("MessageAttributes", {}).items()}
            if attributes:
                entry["MessageAttributes"] = attributes
            if self.fifo:
                entry["MessageGroupId"] = message["Attributes"]["MessageGroupId"]
                entry["MessageDeduplicationId"] = message["Attributes"].get("MessageDeduplicationId") or \
                    message["MessageId"]
            entries.append(entry)
        try:
            answer = self._sqs.send_message_batch(QueueUrl=self.source_url, Entries=entries)
        except (ClientError, BotoCoreError):
            return set()
        sent = [messages[int(item["Id"])] for item in answer.get("Successful", [])]
        if not sent:
            return set()
        try:
            deleted = self._sqs.delete_message_batch(QueueUrl=self.dead_letter_url, Entries=[
                {"Id": str(index), "ReceiptHandle": m["ReceiptHandle"]} for index, m in enumerate(sent)])
        except (ClientError, BotoCoreError):
            # Sent and not deleted: the next run sends it again, and the consumers count a turn or
            # a sighting once however often it arrives.
            return set()
        return {sent[int(item["Id"])]["MessageId"] for item in deleted.get("Successful", [])}

    def _release(self, receipts: list[str]) -> None:
        _release(self._sqs, self.dead_letter_url, receipts)


def logs_query(ids: list[str]) -> str:
    """A CloudWatch Logs Insights query that finds the handlers' reason for these messages."""
    quoted = ", ".join(json.dumps(message_id) for message_id in ids)
    return f"fields @timestamp, message, error_code, message_id | filter message_id in [{quoted}]"


# ------------------------------------------------------------------ forgetting a customer's dead letters


def forget_dead_letters(sqs: Any, dead_letter_url: str, of_customer: Callable[[dict], bool], *, dry_run: bool,
                        checkpoint: Callable[[], None], visibility_seconds: int = 120) -> int:
    """Delete (or, `dry_run`, count) every message of a dead-letter queue whose JSON body `of_customer`
    claims; every other message is seen once and made visible again at the end. A body that is not a
    JSON object cannot name a customer and stays. Returns how many were (or would be) deleted."""
    check_queue_url("dead-letter queue", dead_letter_url)
    held: list[str] = []
    seen: set[str] = set()
    removed = empty = 0
    try:
        while True:
            checkpoint()
            try:
                messages = sqs.receive_message(
                    QueueUrl=dead_letter_url, MaxNumberOfMessages=10, WaitTimeSeconds=1 if empty else 0,
                    VisibilityTimeout=visibility_seconds).get("Messages", [])
            except (ClientError, BotoCoreError) as error:
                raise awscall.translate(error) from None
            messages = [m for m in messages if m["MessageId"] not in seen]
            if not messages:
                empty += 1
                if empty >= 2:
                    return removed
                continue
            empty = 0
            doomed = []
            for message in messages:
                seen.add(message["MessageId"])
                (doomed if _claims(of_customer, message.get("Body", "")) else held).append(message)
            if dry_run:
                held.extend(doomed)
                removed += len(doomed)
                continue
            for start in range(0, len(doomed), 10):
                chunk = doomed[start:start + 10]
                try:
                    answer = sqs.delete_message_batch(QueueUrl=dead_letter_url, Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)])
                except (ClientError, BotoCoreError) as error:
                    raise awscall.translate(error) from None
                removed += len(answer.get("Successful", []))
                if answer.get("Failed"):
                    raise RedriveError(f"SQS refused to delete {len(answer['Failed'])} dead letter(s); run again")
    finally:
        _release(sqs, dead_letter_url, [m["ReceiptHandle"] for m in held])


def _claims(of_customer: Callable[[dict], bool], body: str) -> bool:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and of_customer(data)


def _release(sqs: Any, queue_url: str, receipts: list[str]) -> None:
    for start in range(0, len(receipts), 10):
        chunk = receipts[start:start + 10]
        try:
            sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(index), "ReceiptHandle": receipt, "VisibilityTimeout": 0}
                for index, receipt in enumerate(chunk)])
        except (ClientError, BotoCoreError):
            continue  # they come back by themselves when the visibility timeout ends
