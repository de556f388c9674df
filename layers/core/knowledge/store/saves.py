"""What became of each save_knowledge call: one small record per save in SESSIONS_BUCKET beside the
session's turns (so it expires and is forgotten with them), under an id that is unguessable and
answered only within its tenant and agent; identifiers, the concept's name and the outcome, never
the insight's text. docs/retrieval.md, "search_knowledge and save_knowledge"."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import asdict, dataclass, replace
from typing import Any, Optional

from shared import awscall
from shared.errors import NotFound
from shared.names import check_slug, is_session_id

SAVE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}~[0-9a-f]{16}[A-Za-z0-9_-]{22}$"
_SAVE_ID = re.compile(SAVE_ID_PATTERN)
QUEUED = "queued"
NOT_SENT = "not_sent"  # the queue refused it: nothing reaches consolidation; saving it again sends it anew
# What consolidation answers for a sighting (knowledge.learning.consolidate's outcomes).
SETTLED = ("created", "confirmed", "merged", "kept_beside", "waiting", "contradiction", "echoed", "replayed")


@dataclass(frozen=True)
class SaveRecord:
    save_id: str
    name: str
    type: str
    session_id: str
    turn_id: str
    status: str  # queued, then one of SETTLED; not_sent when the queue refused it
    saved_at: str
    settled_at: Optional[str] = None


def sighting_part(name: str, turn_id: str) -> str:
    return hashlib.sha256(f"{name}/{turn_id}".encode()).hexdigest()[:16]


def new_save_id(session_id: str, name: str, turn_id: str) -> str:
    return f"{session_id}~{sighting_part(name, turn_id)}{secrets.token_urlsafe(16)}"


def saves_prefix(tenant: str, agent: str, session_id: str) -> str:
    if not is_session_id(session_id):
        raise NotFound("no such save")
    return f"{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/saves/{session_id}/"


def save_key(tenant: str, agent: str, save_id: str) -> str:
    if not _SAVE_ID.match(save_id):
        raise NotFound("no such save: a save id is what save_knowledge answered")
    session_id, token = save_id.split("~", 1)
    return f"{saves_prefix(tenant, agent, session_id)}{token}.json"


class SaveRecords:
    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    def of_session(self, tenant: str, agent: str, session_id: str) -> list[str]:
        """The ids of the session's saves recorded so far (one listing: at most a cap's worth of keys)."""
        prefix = saves_prefix(tenant, agent, session_id)
        return [f"{session_id}~{item['Key'][len(prefix):-len('.json')]}"
                for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix)
                for item in page.get("Contents", []) if item["Key"].endswith(".json")]

    def put(self, tenant: str, agent: str, record: SaveRecord) -> None:
        awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=save_key(tenant, agent, record.save_id),
                     Body=json.dumps(asdict(record)).encode(), ContentType="application/json")

    def get(self, tenant: str, agent: str, save_id: str) -> SaveRecord:
        """The save's record; NotFound for an id not answered to this tenant and agent (or expired)."""
        try:
            body = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=save_key(tenant, agent, save_id),
                                read_body=True)["Body"]
        except NotFound:
            raise NotFound("no such save in this agent (an id answered elsewhere, expired with the session's "
                           "archive, or removed with the customer's data)") from None
        try:
            return SaveRecord(**json.loads(body))
        except (ValueError, TypeError):
            raise NotFound("no such save: its record does not read") from None

    def settle(self, tenant: str, agent: str, save_id: str, status: str, at: str) -> Optional[SaveRecord]:
        """The consolidation's outcome written into the record; a record settled before keeps its first
        outcome (a redelivered sighting is `replayed`, which says nothing new). None: no record."""
        try:
            record = self.get(tenant, agent, save_id)
        except NotFound:
            return None
        if record.status != QUEUED:
            return record
        settled = replace(record, status=status, settled_at=at)
        self.put(tenant, agent, settled)
        return settled
