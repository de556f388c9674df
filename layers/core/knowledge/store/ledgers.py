"""The write path's ledgers in SESSIONS_BUCKET: which turns were extracted and which sightings were
applied, so a redelivered turn or sighting is done once."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Optional

from knowledge.errors import LedgerUnreadable
from knowledge.format.sighting import Sighting
from knowledge.format.turn import Turn
from shared import awscall
from shared.errors import Conflict, NotFound
from shared.names import check_slug


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
