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
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional, Protocol

from knowledge.curation.listing import Unseen
from knowledge.errors import InvalidReviewed, InvalidSeenAt, NothingToUndo
from knowledge.store.keys import SHARED, agent_prefix
from shared import awscall
from shared.errors import Conflict, NotFound, StoreUnavailable
from shared.httpapi import OPERATOR_ID
from shared.names import check_slug

# Never looked (no state yet): what the engine wrote in the last day counts as new, not the
# agent's whole history, so a first visit shows a short queue instead of every concept.
NEVER_LOOKED = timedelta(hours=24)
# A seen_at a little ahead of this container's clock (another container answered `as_of`) is
# taken as now; further ahead is refused.
CLOCK_SKEW = timedelta(seconds=60)
# Concepts marked reviewed one by one since the last "mark all" (the state is read by every list).
REVIEWED_MAX = 1000
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
    reviewed: dict[str, str] = field(default_factory=dict)  # name -> the written_at marked reviewed
    # What the last "mark all as seen" replaced, for its undo: (seen_at, reviewed), or None.
    before: Optional[tuple[Optional[datetime], dict[str, str]]] = None

    def unseen(self, since: datetime, viewer: str) -> Unseen:
        return Unseen(format_seen_at(since), viewer, self.reviewed)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _pruned(reviewed: dict[str, str], seen_at: Optional[datetime]) -> dict[str, str]:
    """A concept marked reviewed at a version the seen_at already covers needs no entry."""
    if seen_at is None:
        return dict(reviewed)
    floor = format_seen_at(seen_at)
    return {name: stamp for name, stamp in reviewed.items() if stamp > floor}


class ReviewStore:
    """Reads and changes an operator's review state; S3 calls go through shared.awscall, every
    write conditional on the ETag read (a lost race reads again and decides again)."""

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
        return _decode(answer["Body"], answer["ETag"])

    def _change(self, tenant: str, agent: str, operator_id: str,
                change: Callable[[Review], Optional[Review]]) -> Review:
        """Write `change(stored)` over the stored state (None: leave it); returns what is stored after."""
        key = review_key(tenant, agent, operator_id)
        for _ in range(CAS_ROUNDS):
            stored = self.get(tenant, agent, operator_id)
            wanted = change(stored)
            if wanted is None:
                return stored
            condition = {"IfMatch": stored.etag} if stored.etag else {"IfNoneMatch": "*"}
            try:
                awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=key, Body=_encode(wanted),
                             ContentType=CONTENT_TYPE, **condition)
            except (Conflict, NotFound):
                continue  # another writer came first: compare with what it wrote
            return wanted
        raise StoreUnavailable("the review state kept changing while it was written; try again")

    def mark_seen(self, tenant: str, agent: str, operator_id: str, seen_at: datetime) -> datetime:
        """Move the operator's seen_at forward to `seen_at` (an earlier one changes nothing);
        returns what is stored after. A time ahead of now by more than CLOCK_SKEW is refused.
        What it replaces is kept for one undo (`undo_mark`)."""
        now = self.now()
        if seen_at > now + CLOCK_SKEW:
            raise InvalidSeenAt("seen_at must not be in the future")
        wanted = min(seen_at, now)

        def forward(stored: Review) -> Optional[Review]:
            if stored.seen_at is not None and stored.seen_at >= wanted:
                return None  # forward only: another browser already looked later
            return Review(wanted, None, _pruned(stored.reviewed, wanted), (stored.seen_at, dict(stored.reviewed)))

        return self._change(tenant, agent, operator_id, forward).seen_at  # type: ignore[return-value]

    def mark_reviewed(self, tenant: str, agent: str, operator_id: str, name: str, written_at: datetime) -> Review:
        """One concept reviewed at the version written at `written_at` (the row the operator saw): a
        later version of it is new again. Time ahead of now is taken as now, as for seen_at."""
        return self.mark_many_reviewed(tenant, agent, operator_id, {name: written_at})

    def mark_many_reviewed(self, tenant: str, agent: str, operator_id: str, rows: dict[str, datetime]) -> Review:
        """Concepts reviewed each at the version its row showed, in one write of the state."""
        now = self.now()
        if any(written_at > now + CLOCK_SKEW for written_at in rows.values()):
            raise InvalidReviewed("written_at must not be in the future")
        stamps = {name: format_seen_at(min(written_at, now)) for name, written_at in rows.items()}

        def mark(stored: Review) -> Optional[Review]:
            seen = format_seen_at(stored.seen_at) if stored.seen_at is not None else ""
            wanted = {name: stamp for name, stamp in stamps.items()
                      if seen < stamp and stored.reviewed.get(name, "") < stamp}
            if not wanted:
                return None  # already covered
            reviewed = _pruned({**stored.reviewed, **wanted}, stored.seen_at)
            if len(reviewed) > REVIEWED_MAX:
                raise InvalidReviewed(f"{REVIEWED_MAX} concepts are marked reviewed one by one already: mark all "
                                      "as seen to start again")
            return Review(stored.seen_at, None, reviewed, stored.before)

        return self._change(tenant, agent, operator_id, mark)

    def undo_mark(self, tenant: str, agent: str, operator_id: str, seen_at: datetime) -> Review:
        """Put back what the "mark all as seen" that stored `seen_at` replaced; NothingToUndo when
        the state is not that mark's any more (undone, or marked again since)."""
        def undo(stored: Review) -> Optional[Review]:
            if stored.before is None or stored.seen_at != seen_at:
                raise NothingToUndo("there is nothing to undo: that mark was undone already, or the concepts were "
                                    "marked seen again since (in this browser or another)")
            previous, reviewed = stored.before
            return Review(previous, None, {**_pruned(stored.reviewed, None), **reviewed}, None)

        return self._change(tenant, agent, operator_id, undo)


def _encode(review: Review) -> bytes:
    def stamp(moment: Optional[datetime]) -> Optional[str]:
        return None if moment is None else format_seen_at(moment)

    before = None if review.before is None else {"seen_at": stamp(review.before[0]), "reviewed": review.before[1]}
    return json.dumps({"seen_at": stamp(review.seen_at), "reviewed": review.reviewed, "before": before},
                      separators=(",", ":")).encode("utf-8")


def _decode(data: bytes, etag: str) -> Review:
    """The stored state; a body that is not the state this module writes counts as never looked
    (the next mark overwrites it, by its ETag), and a part of it that does not parse as absent."""
    try:
        stored = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return Review(None, etag)
    if not isinstance(stored, dict):
        return Review(None, etag)
    before = stored.get("before")
    return Review(_moment(stored.get("seen_at")), etag, _reviewed(stored.get("reviewed")),
                  (_moment(before.get("seen_at")), _reviewed(before.get("reviewed")))
                  if isinstance(before, dict) else None)


def _moment(text: Any) -> Optional[datetime]:
    try:
        return parse_seen_at(text)
    except InvalidSeenAt:
        return None


def _reviewed(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {name: stamp for name, stamp in value.items()
            if isinstance(name, str) and isinstance(stamp, str) and _STAMP.fullmatch(stamp)}


class StudioReads(Protocol):
    """What the queue asks of knowledge.curation.studio.Studio: the list, which counts the concepts
    new to an operator (`unseen`), the tenant's agents, and the agent's config, read to refuse an agent that does not
    exist (UnknownAgent) before anything is read or written for it."""

    def list(self, op: Any, tenant: str, agent: str, *, limit: Optional[int] = None,
             unseen: Optional[Unseen] = None, **filters: Any) -> dict[str, Any]: ...

    def agents(self, op: Any, tenant: str,
               unseen: Optional[Callable[[str], Unseen]] = None) -> list[dict[str, Any]]: ...

    def shared(self, op: Any, tenant: str, unseen: Optional[Unseen] = None) -> dict[str, Any]: ...

    def config(self, op: Any, tenant: str, agent: str) -> dict[str, Any]: ...


class ReviewQueue:
    """"New and changed since I last looked": the operator's review state and what it counts. New
    to an operator is what anyone else wrote (the engine, a colleague) since the operator's last
    look, less the concepts the operator marked reviewed one by one at that version."""

    def __init__(self, store: ReviewStore, studio: StudioReads):
        self._store = store
        self._studio = studio

    @property
    def store(self) -> ReviewStore:
        """Where each operator's look is kept; its `now` is the queue's clock."""
        return self._store

    def list(self, op: Any, tenant: str, agent: str, **filters: Any) -> dict[str, Any]:
        """The studio's list with each row new to this operator marked new, the agent's count of
        them, and `as_of` (PUT it back to mark what was shown seen)."""
        op.check(tenant)
        as_of = self._store.now()  # before the listing: a write after it stays new when marked seen
        review = self._store.get(tenant, agent, op.id)
        since = baseline(review.seen_at, as_of)
        page = self._studio.list(op, tenant, agent, unseen=review.unseen(since, op.actor), **filters)
        return {**page, "since": format_seen_at(since), "as_of": format_seen_at(as_of)}

    def agents(self, op: Any, tenant: str) -> list[dict[str, Any]]:
        """The tenant's agents (the studio's counts), each with how many concepts are new to this
        operator, counted in the studio's one pass (and budget) over the agents."""
        def unseen(agent: str) -> Unseen:
            as_of = self._store.now()
            review = self._store.get(tenant, agent, op.id)
            return review.unseen(baseline(review.seen_at, as_of), op.actor)

        return self._studio.agents(op, tenant, unseen=unseen)

    def shared(self, op: Any, tenant: str) -> dict[str, Any]:
        """The tenant's shared scope counted as `agents` counts an agent, new to this operator included."""
        op.check(tenant)
        as_of = self._store.now()
        review = self._store.get(tenant, SHARED, op.id)
        return self._studio.shared(op, tenant, unseen=review.unseen(baseline(review.seen_at, as_of), op.actor))

    def state(self, op: Any, tenant: str, agent: str) -> dict[str, Any]:
        self._studio.config(op, tenant, agent)  # Forbidden, UnknownAgent
        as_of = self._store.now()  # before the count: a write after it stays new when marked seen
        return self._answer(op, tenant, agent, self._store.get(tenant, agent, op.id), as_of)

    def mark_seen(self, op: Any, tenant: str, agent: str, seen_at: Any) -> dict[str, Any]:
        """Move the operator's seen_at forward; an agent that does not exist is refused before
        anything is written (the state's key would make it appear to exist)."""
        op.check(tenant)
        wanted = parse_seen_at(seen_at)
        self._studio.config(op, tenant, agent)  # UnknownAgent
        as_of = self._store.now()
        self._store.mark_seen(tenant, agent, op.id, wanted)
        return self._answer(op, tenant, agent, self._store.get(tenant, agent, op.id), as_of)

    def mark_reviewed(self, op: Any, tenant: str, agent: str, name: str, written_at: Any) -> dict[str, Any]:
        """One concept reviewed at the version the operator saw (its row's written_at)."""
        op.check(tenant)
        check_slug("name", name)
        try:
            moment = parse_seen_at(written_at)
        except InvalidSeenAt as exc:
            raise InvalidReviewed(str(exc).replace("seen_at", "written_at")) from None
        self._studio.config(op, tenant, agent)  # UnknownAgent
        as_of = self._store.now()
        return self._answer(op, tenant, agent, self._store.mark_reviewed(tenant, agent, op.id, name, moment), as_of)

    def mark_many(self, op: Any, tenant: str, agent: str, rows: dict[str, datetime]) -> tuple[dict[str, Any], set[str]]:
        """Concepts reviewed each at the version its row showed (names checked by the caller), in
        one write; with the names that were covered already (seen, or reviewed at that version)."""
        self._studio.config(op, tenant, agent)  # UnknownAgent
        as_of = self._store.now()
        stored = self._store.get(tenant, agent, op.id)
        seen = format_seen_at(stored.seen_at) if stored.seen_at is not None else ""
        covered = {name for name, at in rows.items()
                   if max(seen, stored.reviewed.get(name, "")) >= format_seen_at(min(at, as_of))}
        review = self._store.mark_many_reviewed(tenant, agent, op.id, rows)
        return self._answer(op, tenant, agent, review, as_of), covered

    def undo_mark(self, op: Any, tenant: str, agent: str, seen_at: Any) -> dict[str, Any]:
        """Undo the "mark all as seen" that stored `seen_at` (the seen_at its answer gave)."""
        op.check(tenant)
        wanted = parse_seen_at(seen_at)
        self._studio.config(op, tenant, agent)  # UnknownAgent
        as_of = self._store.now()
        return self._answer(op, tenant, agent, self._store.undo_mark(tenant, agent, op.id, wanted), as_of)

    def _answer(self, op: Any, tenant: str, agent: str, review: Review, as_of: datetime) -> dict[str, Any]:
        since = baseline(review.seen_at, as_of)
        counted = self._studio.list(op, tenant, agent, limit=1, unseen=review.unseen(since, op.actor))
        return {"seen_at": None if review.seen_at is None else format_seen_at(review.seen_at),
                "since": format_seen_at(since), "new": counted["new"], "as_of": format_seen_at(as_of),
                "undo": review.before is not None}
