"""Adapters: the S3, SQS and store-backed pieces the write path talks through.

The domain modules (extract, consolidate) receive these in their constructors; tests can
hand them the real thing on moto's server or a fake.
"""

from __future__ import annotations

import hashlib
import threading
from datetime import datetime, timezone
from typing import Any, Iterator, Optional, Protocol

from botocore.exceptions import ClientError

from .config import KnowledgeConfig
from .errors import Conflict, KnowledgeError, NotFound
from .names import check_slug
from .sighting import Sighting
from .store import ConceptStore, NotModified, translate_client_error
from .turn import Turn, parse_turn

SQS_BATCH = 10


class ConfigCache:
    """Each agent's `knowledge:` block, kept per container and re-read only when its ETag changes."""

    def __init__(self, store: ConceptStore):
        self._store = store
        self._entries: dict[tuple[str, str], tuple[str, Optional[KnowledgeConfig]]] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str, agent: str) -> Optional[KnowledgeConfig]:
        key = (tenant, agent)
        cached = self._entries.get(key)
        try:
            stored = self._store.get_config(tenant, agent, unless_etag=cached[0] if cached else None)
        except NotModified:
            return cached[1]  # type: ignore[index]
        with self._lock:
            if stored is None:
                self._entries.pop(key, None)
                return None
            self._entries[key] = (stored.etag, stored.config)
        return stored.config


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
        return moment.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")

    def key(self, turn: Turn) -> str:
        return f"{self.prefix(turn.tenant, turn.agent)}{self.stamp(turn.completed_at)}/{turn.session_id}/{turn.turn_id}.json"

    def put(self, turn: Turn) -> bool:
        """Archive a turn; False when it was already archived (a redelivery)."""
        return _succeeds(Conflict, self._s3.put_object, Bucket=self.bucket, Key=self.key(turn),
                         Body=turn.model_dump_json().encode(), ContentType="application/json", IfNoneMatch="*")

    def keys(self, tenant: str, agent: str, since: datetime, until: Optional[datetime] = None,
             start_after: Optional[str] = None) -> Iterator[str]:
        """Archived turn keys with since <= completed_at < until, oldest first."""
        prefix = self.prefix(tenant, agent)
        first = max(prefix + self.stamp(since), start_after or "")
        last = prefix + self.stamp(until) if until else None
        paginator = self._s3.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix, StartAfter=_before(first)):
                for item in page.get("Contents", []):
                    if item["Key"] <= (start_after or ""):
                        continue
                    if last is not None and item["Key"] >= last:
                        return
                    yield item["Key"]
        except ClientError as error:
            raise translate_client_error(error) from None

    def get(self, key: str) -> Turn:
        try:
            body = self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as error:
            raise translate_client_error(error) from None
        return parse_turn(body)


def _succeeds(expected: type[KnowledgeError], call: Any, **kwargs: Any) -> bool:
    """Make one S3 call: True when it worked, False when it failed in the `expected` way (a
    conflict on a create-only put, a missing key), and any other failure raised typed."""
    try:
        call(**kwargs)
    except ClientError as error:
        translated = translate_client_error(error)
        if isinstance(translated, expected):
            return False
        raise translated from None
    return True


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
            answer = self._sqs.send_message_batch(QueueUrl=self.queue_url, Entries=[
                {"Id": str(i), "MessageBody": s.body(), "MessageGroupId": s.group_id(),
                 "MessageDeduplicationId": s.dedup_id()} for i, s in enumerate(chunk)])
            if answer.get("Failed"):
                codes = sorted({f.get("Code", "?") for f in answer["Failed"]})
                raise CandidateSendError(f"{len(answer['Failed'])} sighting(s) not sent ({', '.join(codes)})")


def sighting_id(sighting: Sighting) -> str:
    """A sighting's identity: one concept seen in one turn."""
    key = f"{sighting.tenant}/{sighting.agent}/{sighting.name}/{sighting.session_id}/{sighting.turn_id}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class SightingLedger:
    """Markers of applied sightings in SESSIONS_BUCKET: {tenant}/{agent}/sightings/{name}/{id}."""

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    def key(self, sighting: Sighting) -> str:
        return f"{sighting.tenant}/{sighting.agent}/sightings/{sighting.name}/{sighting_id(sighting)}"

    def seen(self, sighting: Sighting) -> bool:
        return _succeeds(NotFound, self._s3.head_object, Bucket=self.bucket, Key=self.key(sighting))

    def record(self, sighting: Sighting) -> None:
        # A conflict means the marker is there already: recorded either way.
        _succeeds(Conflict, self._s3.put_object, Bucket=self.bucket, Key=self.key(sighting), Body=b"",
                  IfNoneMatch="*")
