"""Adapters: the S3, SQS and store-backed pieces the write path talks through.

The domain modules (extract, consolidate) receive these in their constructors; tests can
hand them the real thing on moto's server or a fake.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator, Optional, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from shared import awscall
from .config import AgentConfig, KnowledgeConfig
from .evidence import STAMP
from shared.errors import Conflict, InvalidName, KnowledgeError, NotFound, NotModified
from shared.names import check_slug, is_session_id
from .sighting import Sighting
from .store import ConceptStore
from .turn import Turn, parse_turn

SQS_BATCH = 10


class ConfigCache:
    """Each agent's config file (`knowledge:` and `distill:`), kept per container and re-read only
    when its ETag changes."""

    def __init__(self, store: ConceptStore):
        self._store = store
        self._entries: dict[tuple[str, str], tuple[str, AgentConfig]] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str, agent: str) -> Optional[KnowledgeConfig]:
        """The `knowledge:` block, None when it is absent (learning and retrieval off)."""
        return self.both(tenant, agent).knowledge

    def both(self, tenant: str, agent: str) -> AgentConfig:
        key = (tenant, agent)
        cached = self._entries.get(key)
        try:
            stored = self._store.get_config(tenant, agent, unless_etag=cached[0] if cached else None)
        except NotModified:
            return cached[1]  # type: ignore[index]
        with self._lock:
            if stored is None:
                self._entries.pop(key, None)
                return AgentConfig()
            self._entries[key] = (stored.etag, AgentConfig(stored.config, stored.distill))
        return self._entries[key][1]


class TurnArchive:
    """Archived turns in SESSIONS_BUCKET, one object per turn, written once.

    Key: {tenant}/{agent}/turns/{completed_at as YYYYMMDDTHHMMSS.ffffffZ}/{session_id}/{turn_id}.json,
    so a listing is in time order and `since`/`until` need no reads.
    """

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    @staticmethod
    def prefix(tenant: str, agent: str) -> str:
        return f"{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/turns/"

    @staticmethod
    def stamp(moment: datetime) -> str:
        return moment.astimezone(timezone.utc).strftime(STAMP)

    def key(self, turn: Turn) -> str:
        return self.key_for(turn.tenant, turn.agent, turn.completed_at, turn.session_id, turn.turn_id)

    @classmethod
    def key_for(cls, tenant: str, agent: str, completed_at: datetime, session_id: str, turn_id: str) -> str:
        if not (is_session_id(session_id) and is_session_id(turn_id)):
            raise InvalidName("session_id", "letters, digits, '.', '_', ':', '-'; at most 128")
        return f"{cls.prefix(tenant, agent)}{cls.stamp(completed_at)}/{session_id}/{turn_id}.json"

    def put(self, turn: Turn) -> bool:
        """Archive a turn; False when it was already archived (a redelivery, or our own write
        whose answer was lost). Only a 412 means "there already": a 409 is retried."""
        return awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket, Key=self.key(turn),
                                Body=turn.model_dump_json().encode(), ContentType="application/json",
                                IfNoneMatch="*")

    def keys(self, tenant: str, agent: str, since: datetime, until: Optional[datetime] = None,
             start_after: Optional[str] = None) -> Iterator[str]:
        """Archived turn keys with since <= completed_at < until, oldest first."""
        prefix = self.prefix(tenant, agent)
        first = max(prefix + self.stamp(since), start_after or "")
        last = prefix + self.stamp(until) if until else None
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix,
                                  StartAfter=_before(first)):
            for item in page.get("Contents", []):
                if item["Key"] <= (start_after or ""):
                    continue
                if last is not None and item["Key"] >= last:
                    return
                yield item["Key"]

    def get(self, key: str) -> Turn:
        body = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key, read_body=True)["Body"]
        return parse_turn(body)


class ExtractionLedger:
    """Which turns the model has already read: {tenant}/{agent}/extracted/{session_id}/{turn_id} in
    SESSIONS_BUCKET, written once the turn's sightings are on the queue. A redelivered turn that
    finds its marker is not sent to the model again (backfill re-reads on purpose and skips this)."""

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    @staticmethod
    def key(turn: Turn) -> str:
        return f"{check_slug('tenant', turn.tenant)}/{check_slug('agent', turn.agent)}/extracted/" \
               f"{turn.session_id}/{turn.turn_id}"

    def done(self, turn: Turn) -> bool:
        return awscall.succeeds(NotFound, self._s3, "head_object", Bucket=self.bucket, Key=self.key(turn))

    def mark(self, turn: Turn) -> None:
        awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=self.key(turn), Body=b"")


def _before(key: str) -> str:
    """A StartAfter value that still includes `key` itself."""
    return key[:-1] + chr(ord(key[-1]) - 1) if key else key


class CandidateSink(Protocol):
    def send(self, sightings: list[Sighting]) -> None: ...


class CandidateSendError(KnowledgeError):
    code = "candidate_send_failed"


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


def sighting_id(sighting: Sighting) -> str:
    """A sighting's identity: one concept seen in one turn."""
    key = f"{sighting.tenant}/{sighting.agent}/{sighting.name}/{sighting.session_id}/{sighting.turn_id}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LedgerEntry:
    """What the ledger knows of one sighting.

    `new`: this delivery is the first to begin it. `pending`: an earlier delivery began it and
    did not finish, so it may or may not have written its concept version; every version
    written after `base` (the concept's version when it began; None = it had none) must be
    looked at. `applied`: done.
    """

    state: str  # new | pending | applied
    base: Optional[str] = None


class SightingLedger:
    """One marker per sighting in SESSIONS_BUCKET: {tenant}/{agent}/sightings/{name}/{id}.

    The marker is written "pending" (create-only, naming the concept's version at that
    moment) before the concept is written, and "applied" after. Together with the sighting id
    each concept version carries in its metadata, that proves whether a sighting was applied
    however long ago, whatever was written since (edits, deletes, restores): the proof is not
    a window that a burst can overflow. A marker from before this scheme (empty) means applied.
    """

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    def key(self, sighting: Sighting) -> str:
        return f"{sighting.tenant}/{sighting.agent}/sightings/{sighting.name}/{sighting_id(sighting)}"

    def begin(self, sighting: Sighting, base: Optional[str]) -> LedgerEntry:
        """Mark the sighting pending unless a marker exists; answer what the ledger holds."""
        record = json.dumps({"state": "pending", "base": base}).encode()
        if awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket, Key=self.key(sighting),
                            Body=record, ContentType="application/json", IfNoneMatch="*"):
            return LedgerEntry("new", base)
        try:
            body = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=self.key(sighting),
                                read_body=True)["Body"]
        except NotFound:  # removed between the two calls (a purge): begin again next delivery
            raise LedgerUnreadable("sighting marker vanished while it was read") from None
        return _entry(body)

    def applied(self, sighting: Sighting) -> None:
        awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=self.key(sighting),
                     Body=json.dumps({"state": "applied"}).encode(), ContentType="application/json")


class LedgerUnreadable(KnowledgeError):
    code = "ledger_unreadable"


def _entry(body: bytes) -> LedgerEntry:
    if not body.strip():
        return LedgerEntry("applied")
    try:
        data = json.loads(body)
    except ValueError:
        raise LedgerUnreadable("sighting marker is not JSON") from None
    if not isinstance(data, dict) or data.get("state") not in ("pending", "applied"):
        raise LedgerUnreadable("sighting marker has no valid state")
    base = data.get("base")
    if data["state"] == "pending" and base is not None and not isinstance(base, str):
        raise LedgerUnreadable("sighting marker has a bad base version")
    return LedgerEntry(data["state"], base if data["state"] == "pending" else None)


# Seconds a failed record stays invisible after its n-th receive: doubling from one minute to
# fifteen. With the template's MaxReceiveCount (10) a record that keeps failing is retried for
# about 90 minutes (60+120+240+480+900×5 s) before it reaches its dead-letter queue, however
# short the function's own timeout; see template.yaml.
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

    def next_day(self, record: dict) -> None:
        """This record cannot succeed before the next UTC day (a daily cap): it waits until then
        (at most 12 hours at a time) rather than spending its receives on the back-off."""
        self._until[record.get("messageId", "")] = seconds_to_next_utc_day()

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
