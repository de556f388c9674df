"""Proposals: the stored records that ARE Facts' ledger (id: the keyed hash of the tuple, written
create-only), their statuses (pending, approving, approved, rejected, dismissed, stale, expired) and
their age limit, the archive's retention. A rejected or dismissed tuple is also latched beside the
customer's cell (facts.cells). docs/facts.md, "A proposal's life"."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from knowledge.store.archive import expiry_days
from shared import awscall
from shared.errors import AccessDenied, Conflict, NotFound
from shared.names import SessionId, Slug

from . import layout
from .errors import ProposalNotFound, RecordUnreadable
from .fact import NAME_MAX, REASON_MAX, VALUE_MAX, utc_now

logger = logging.getLogger(__name__)

Status = Literal["pending", "approving", "approved", "rejected", "dismissed", "stale", "expired"]
_ID = r"^[0-9a-f]{32}$"
OPERATOR = re.compile(r"[A-Za-z0-9._@+:-]{1,128}")
UNANSWERED = ("pending", "stale")  # what ages out to `expired`; an answer is kept until the rule deletes it
FROM_BUCKET = "bucket"  # ProposalStore's retention: read the bucket's lifecycle rule once, when first needed


class EvidenceLink(BaseModel):
    """Where a supporting message is: its archived turn and its index in that turn (never the text)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn_id: SessionId
    completed_at: datetime
    message: int = Field(ge=0)


class CurrentFact(BaseModel):
    """The fact as it stood when a proposal went stale: what the operator will see beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: str
    origin: str
    revision: int


class Undo(BaseModel):
    """One undo on a proposal's record: an approval undone, or a reject or dismiss reopened."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["undo_approval", "reopen"]
    by: str
    at: datetime


UNDOS_KEPT = 20  # the newest undos a proposal keeps on its record


class Proposal(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    id: str = Field(pattern=_ID)
    tenant: Slug
    agent: Slug
    session_id: SessionId
    customer_id: SessionId
    name: str = Field(max_length=NAME_MAX)
    value: str = Field(max_length=VALUE_MAX)
    confidence: Optional[float] = Field(default=None, ge=0, le=1)
    evidence: tuple[EvidenceLink, ...]
    status: Status = "pending"
    proposed_at: datetime
    # The target fact at distill time: its revision, or None when the customer had no such fact.
    base_revision: Optional[int] = None
    resolved_at: Optional[datetime] = None
    resolved_by: Optional[str] = None
    reason: Optional[str] = Field(default=None, max_length=REASON_MAX)
    current: Optional[CurrentFact] = None
    current_deleted: bool = False
    # An approval's own write, so that it can be undone: the fact it replaced (None: there was none)
    # and the revision it wrote (None: the value was already there, nothing was written).
    previous: Optional[CurrentFact] = None
    applied_revision: Optional[int] = None
    # The bulk decision this one was part of (Recent shows them as one), and the undos, newest first.
    batch: Optional[str] = Field(default=None, pattern=_ID)
    undos: tuple[Undo, ...] = ()

    def body(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


@dataclass(frozen=True)
class ProposalRef:
    """What names one proposal in the review API (and, later, the studio's routes)."""

    tenant: str
    agent: str
    customer_id: str
    id: str

    @property
    def key(self) -> str:
        return layout.proposal_key(self.tenant, self.agent, self.customer_id, self.id)


def ref_of(proposal: Proposal) -> ProposalRef:
    return ProposalRef(proposal.tenant, proposal.agent, proposal.customer_id, proposal.id)


@dataclass(frozen=True)
class StoredProposal:
    proposal: Proposal
    etag: str


def parse_proposal(body: bytes) -> Proposal:
    try:
        return Proposal.model_validate(json.loads(body))
    except (ValueError, ValidationError, RecursionError):
        raise RecordUnreadable("proposal does not follow the format") from None


class ProposalStore:
    def __init__(self, s3: Any, bucket: str, *, retention_days: Union[int, None, str] = FROM_BUCKET,
                 clock: Callable[[], datetime] = utc_now):
        """`retention_days`: when unanswered proposals expire (None: never; FROM_BUCKET: the bucket's
        own expiry, where a function that may not read it counts nothing as expired)."""
        self._s3, self.bucket = s3, bucket
        self._retention, self._clock = retention_days, clock

    def retention_days(self) -> Optional[int]:
        if self._retention == FROM_BUCKET:
            try:
                self._retention = expiry_days(self._s3, self.bucket)
            except AccessDenied:
                logger.warning("proposals do not expire here: s3:GetLifecycleConfiguration is not granted")
                self._retention = None
        return self._retention  # type: ignore[return-value]

    def aged(self, proposal: Proposal) -> Proposal:
        """The proposal as it stands now: `expired` once unanswered beyond the retention."""
        if proposal.status not in UNANSWERED:
            return proposal
        days = self.retention_days()
        expired_at = proposal.proposed_at + timedelta(days=days) if days is not None else None
        if expired_at is None or expired_at > self._clock():
            return proposal
        return proposal.model_copy(update={"status": "expired", "resolved_at": expired_at, "resolved_by": None})

    def create(self, proposal: Proposal) -> bool:
        """Store a new proposal; False when its tuple already has one that is not expired.

        A 412 is not always another proposal: S3 may have stored this very write and lost its
        answer, and the SDK's retry then finds it there. The record read back is this one (same
        session, same content, same moment) only when the write was ours: True then too."""
        key = ref_of(proposal).key
        if awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket, Key=key, Body=proposal.body(),
                            ContentType="application/json", IfNoneMatch="*"):
            return True
        try:
            stored = self.get(ref_of(proposal))
        except ProposalNotFound:  # aged out between the two calls: the next pass proposes it
            return False
        if stored.proposal == proposal:
            return True
        if stored.proposal.status != "expired":
            return False
        try:
            self.swap(stored, proposal)
        except Conflict:
            return self.holds(proposal)
        return True

    def holds(self, proposal: Proposal) -> bool:
        """Whether the record stored for `proposal`'s tuple is exactly `proposal` (a write of ours
        whose answer was lost), read again."""
        try:
            return self.get(ref_of(proposal)).proposal == proposal
        except ProposalNotFound:
            return False

    def get(self, ref: ProposalRef) -> StoredProposal:
        try:
            answer = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=ref.key, read_body=True)
        except NotFound:
            raise ProposalNotFound("no such proposal") from None
        proposal = parse_proposal(answer["Body"])
        if ref_of(proposal) != ref:
            raise RecordUnreadable("proposal is stored under another key")
        return StoredProposal(self.aged(proposal), answer["ETag"])

    def swap(self, stored: StoredProposal, proposal: Proposal) -> StoredProposal:
        """Conflict when the proposal was written since `stored` was read."""
        answer = awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=ref_of(proposal).key,
                              Body=proposal.body(), ContentType="application/json", IfMatch=stored.etag)
        return StoredProposal(proposal, answer["ETag"])

    def list(self, tenant: str, agent: str, customer_id: Optional[str] = None) -> list[StoredProposal]:
        """Every proposal of an agent (or of one customer there), in key order."""
        prefix = layout.proposals_prefix(tenant, agent, customer_id)
        out = []
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                customer, _, name = item["Key"][len(layout.proposals_prefix(tenant, agent)):].partition("/")
                try:
                    out.append(self.get(ProposalRef(tenant, agent, customer, name.removesuffix(".json"))))
                except ProposalNotFound:
                    continue
        return out
