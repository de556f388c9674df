"""Per-operator review state: when an operator last looked at an agent's concepts.

One small JSON object per operator and agent in KNOWLEDGE_BUCKET (docs/contract.md, "Storage layout"):
    agents/{tenant}/{agent}/reviews/{operator_key}.json     {"seen_at": "<UTC, microseconds>"}
`operator_key` is the first 32 hex characters of sha256(operator id), so the key names no
person. It is kept server-side so "new since I last looked" follows the operator between
browsers; it only moves forward, by compare-and-swap on the object's ETag.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional, Protocol

from knowledge.errors import InvalidSeenAt
from knowledge.store.keys import agent_prefix
from shared import awscall
from shared.errors import Conflict, NotFound, StoreUnavailable
from shared.httpapi import OPERATOR_ID

# Never looked (no state yet): what the engine wrote in the last day counts as new, not the
# agent's whole history, so a first visit shows a short queue instead of every concept.
NEVER_LOOKED = timedelta(hours=24)
# A seen_at a little ahead of this container's clock (another container answered `as_of`) is
# taken as now; further ahead is refused.
CLOCK_SKEW = timedelta(seconds=60)
CAS_ROUNDS = 5  # writers racing on one operator's state: each lost round re-reads and compares
CONTENT_TYPE = "application/json"
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z")


def operator_key(operator_id: str) -> str:
    """The operator's part of the key: no operator id (an e-mail, a sub) ever appears in a key."""
    if not isinstance(operator_id, str) or not OPERATOR_ID.fullmatch(operator_id):
        raise InvalidSeenAt("the operator id is not one a verified token carries")
    return hashlib.sha256(operator_id.encode("utf-8")).hexdigest()[:32]


def review_key(tenant: str, agent: str, operator_id: str) -> str:
    return f"{agent_prefix(tenant, agent)}reviews/{operator_key(operator_id)}.json"


def reviews_prefix(tenant: str, agent: str) -> str:
    """Every operator's review state of an agent (a tenant purge removes it with the agent)."""
    return f"{agent_prefix(tenant, agent)}reviews/"


def format_seen_at(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_seen_at(text: Any) -> datetime:
    """A UTC time as the API writes it (`2026-11-29T21:05:03.123456Z`, fraction optional)."""
    if not isinstance(text, str) or not _STAMP.fullmatch(text):
        raise InvalidSeenAt("seen_at must be a UTC time such as 2026-11-29T21:05:03.123456Z")
    try:
        moment = datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc)
    except ValueError:
        raise InvalidSeenAt("seen_at is not a date and time that exists") from None
    if moment.year < 2000:
        raise InvalidSeenAt("seen_at must be after the year 2000")
    return moment


def baseline(seen_at: Optional[datetime], now: datetime) -> datetime:
    """The time "new" is counted from: the operator's last look, or NEVER_LOOKED ago."""
    return seen_at if seen_at is not None else now - NEVER_LOOKED


@dataclass(frozen=True)
class Review:
    seen_at: Optional[datetime]  # None: never looked (or the stored state did not parse)
    etag: Optional[str]  # of the stored object; None when there is none


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class ReviewStore:
    """Reads and moves forward an operator's seen_at; S3 calls go through shared.awscall."""

    def __init__(self, s3: Any, bucket: str, *, clock: Callable[[], datetime] = _utc_now):
        self._s3 = s3
        self.bucket = bucket
        self.now = clock

    def get(self, tenant: str, agent: str, operator_id: str) -> Review:
        key = review_key(tenant, agent, operator_id)
        try:
            answer = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key, read_body=True)
        except NotFound:
            return Review(None, None)
        return Review(_decode(answer["Body"]), answer["ETag"])

    def mark_seen(self, tenant: str, agent: str, operator_id: str, seen_at: datetime) -> datetime:
        """Move the operator's seen_at forward to `seen_at` (an earlier one changes nothing);
        returns what is stored after. A time ahead of now by more than CLOCK_SKEW is refused."""
        now = self.now()
        if seen_at > now + CLOCK_SKEW:
            raise InvalidSeenAt("seen_at must not be in the future")
        wanted = min(seen_at, now)
        key = review_key(tenant, agent, operator_id)
        body = json.dumps({"seen_at": format_seen_at(wanted)}).encode("utf-8")
        for _ in range(CAS_ROUNDS):
            stored = self.get(tenant, agent, operator_id)
            if stored.seen_at is not None and stored.seen_at >= wanted:
                return stored.seen_at  # forward only: another browser already looked later
            condition = {"IfMatch": stored.etag} if stored.etag else {"IfNoneMatch": "*"}
            try:
                awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=key, Body=body,
                             ContentType=CONTENT_TYPE, **condition)
            except (Conflict, NotFound):
                continue  # another writer came first: compare with what it wrote
            return wanted
        raise StoreUnavailable("the review state kept changing while it was written; try again")


def _decode(data: bytes) -> Optional[datetime]:
    """The stored seen_at; a body that is not the state this module writes counts as never looked
    (the next mark overwrites it, by its ETag)."""
    try:
        return parse_seen_at(json.loads(data).get("seen_at"))
    except (ValueError, AttributeError, UnicodeDecodeError):
        return None


class StudioReads(Protocol):
    """What the queue asks of knowledge.curation.studio.Studio: the list, which counts the concepts the
    engine wrote after `since`, and the agent's config, read to refuse an agent that does not
    exist (UnknownAgent) before anything is read or written for it."""

    def list(self, op: Any, tenant: str, agent: str, *, limit: Optional[int] = None,
             since: Optional[datetime] = None, **filters: Any) -> dict[str, Any]: ...

    def config(self, op: Any, tenant: str, agent: str) -> dict[str, Any]: ...


class ReviewQueue:
    """"New and changed since I last looked": the operator's review state and what it counts."""

    def __init__(self, store: ReviewStore, studio: StudioReads):
        self._store = store
        self._studio = studio

    def list(self, op: Any, tenant: str, agent: str, **filters: Any) -> dict[str, Any]:
        """The studio's list with each row the engine wrote since the operator's last look marked
        new, the agent's count of them, and `as_of` (PUT it back to mark what was shown seen)."""
        op.check(tenant)
        as_of = self._store.now()  # before the listing: a write after it stays new when marked seen
        since = baseline(self._store.get(tenant, agent, op.id).seen_at, as_of)
        page = self._studio.list(op, tenant, agent, since=since, **filters)
        return {**page, "since": format_seen_at(since), "as_of": format_seen_at(as_of)}

    def state(self, op: Any, tenant: str, agent: str) -> dict[str, Any]:
        self._studio.config(op, tenant, agent)  # Forbidden, UnknownAgent
        as_of = self._store.now()  # before the count: a write after it stays new when marked seen
        seen_at = self._store.get(tenant, agent, op.id).seen_at
        return self._answer(op, tenant, agent, seen_at, as_of)

    def mark_seen(self, op: Any, tenant: str, agent: str, seen_at: Any) -> dict[str, Any]:
        """Move the operator's seen_at forward; an agent that does not exist is refused before
        anything is written (the state's key would make it appear to exist)."""
        op.check(tenant)
        wanted = parse_seen_at(seen_at)
        self._studio.config(op, tenant, agent)  # UnknownAgent
        as_of = self._store.now()
        stored = self._store.mark_seen(tenant, agent, op.id, wanted)
        return self._answer(op, tenant, agent, stored, as_of)

    def _answer(self, op: Any, tenant: str, agent: str, seen_at: Optional[datetime],
                as_of: datetime) -> dict[str, Any]:
        since = baseline(seen_at, as_of)
        counted = self._studio.list(op, tenant, agent, limit=1, since=since)
        return {"seen_at": None if seen_at is None else format_seen_at(seen_at), "since": format_seen_at(since),
                "new": counted["new"], "as_of": format_seen_at(as_of)}
