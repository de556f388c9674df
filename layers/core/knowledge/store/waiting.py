"""Pairs waiting for a judgment, beside a concept and never in it (docs/contract.md, "Waiting pairs").

A policy review or a sighting beside a human's text that got no usable verdict writes nothing into
the concept: the pair is kept here, one object per pair, at
`{agent prefix}waiting/{concept}/{pair}.json` in KNOWLEDGE_BUCKET, for the operator to judge. Its
key is the pair's identity, so a pair recorded twice is one object; a listing of the agent's prefix
counts each concept's pairs without reading them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Optional

from knowledge.store.keys import agent_prefix
from shared import awscall
from shared.errors import NotFound
from shared.names import check_slug

POLICY, SIGHTING, CONFLICT = "policy", "sighting", "conflict"
KINDS = (POLICY, SIGHTING, CONFLICT)
_LIST_PAGE = 1000


@dataclass(frozen=True)
class WaitingPair:
    """One pair beside `concept` for the operator: no judge decided it — the `policy` it was reviewed against,
    or a sighting's claim (`description`, `body`: redacted as every sighting is) from `session_id`'s turn
    `turn_id` — or (`conflict`) the `policy` a judge found contradicting it, both policies kept."""

    concept: str
    kind: str  # policy (no verdict) | sighting (no verdict) | conflict (judged: two policies contradict)
    why: str  # no_model | unusable | not_judged | contradicting
    since: str  # YYYY-MM-DD, the day it was set aside
    policy: Optional[str] = None  # the policy it was reviewed against, or the one it contradicts
    description: Optional[str] = None
    body: Optional[str] = None
    session_id: Optional[str] = None
    turn_id: Optional[str] = None
    shared: bool = False  # the concept is the tenant's shared one, recalled by this agent
    evidence: Optional[str] = None  # the sighting's EvidenceLink, encoded (where its quote is)

    @property
    def pair_id(self) -> str:
        if self.kind in (POLICY, CONFLICT):
            return f"{self.kind}-{self.policy}"
        # The session's own tag first: forget_customer finds a customer's pairs by key, never reading one.
        turn = hashlib.sha256(f"{self.session_id}/{self.turn_id}".encode()).hexdigest()[:12]
        return f"{SIGHTING}-{session_tag(str(self.session_id))}-{turn}"

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None and v is not False}


def session_tag(session_id: str) -> str:
    """A session's tag in its pairs' keys (a hash: a key names no session)."""
    return hashlib.sha256(f"session/{session_id}".encode()).hexdigest()[:12]


def waiting_prefix(tenant: str, agent: str) -> str:
    return f"{agent_prefix(tenant, agent)}waiting/"


def waiting_key(tenant: str, agent: str, concept: str, pair_id: str) -> str:
    return f"{waiting_prefix(tenant, agent)}{check_slug('name', concept)}/{pair_id}.json"


class WaitingPairs:
    """The agent's waiting pairs in KNOWLEDGE_BUCKET."""

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    def put(self, tenant: str, agent: str, pair: WaitingPair) -> None:
        awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=waiting_key(tenant, agent, pair.concept, pair.pair_id),
                     Body=json.dumps(pair.to_json(), ensure_ascii=False).encode(), ContentType="application/json")

    def keys(self, tenant: str, agent: str, concept: Optional[str] = None) -> Iterator[str]:
        prefix = waiting_prefix(tenant, agent) + (f"{check_slug('name', concept)}/" if concept else "")
        token: Optional[str] = None
        while True:
            page = awscall.call(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix, MaxKeys=_LIST_PAGE,
                                **({"ContinuationToken": token} if token else {}))
            for item in page.get("Contents", []):
                if item["Key"].endswith(".json"):
                    yield item["Key"]
            token = page.get("NextContinuationToken")
            if not token:
                return

    def counts(self, tenant: str, agent: str) -> dict[str, int]:
        """Pairs waiting per concept, from one listing (no object read)."""
        return {concept: sum(kinds.values()) for concept, kinds in self.kinds(tenant, agent).items()}

    def kinds(self, tenant: str, agent: str) -> dict[str, dict[str, int]]:
        """Per concept, its pairs by kind, from one listing (the kind opens each pair's key)."""
        prefix, counted = waiting_prefix(tenant, agent), {}
        for key in self.keys(tenant, agent):
            concept, _, pair = key[len(prefix):].partition("/")
            kind = pair.split("-", 1)[0]
            if kind in KINDS:
                counted.setdefault(concept, {}).setdefault(kind, 0)
                counted[concept][kind] += 1
        return counted

    def keys_of_sessions(self, tenant: str, agent: str, sessions: "frozenset[str]") -> list[str]:
        """Every key, current or deleted, of a pair whose claim came from one of `sessions` (one listing of
        the versions under the agent's prefix; no object read)."""
        tags = {f"/{SIGHTING}-{session_tag(s)}-" for s in sessions}
        found: set[str] = set()
        marker: dict[str, str] = {}
        while True:
            page = awscall.call(self._s3, "list_object_versions", Bucket=self.bucket,
                                Prefix=waiting_prefix(tenant, agent), **marker)
            for entry in page.get("Versions", []) + page.get("DeleteMarkers", []):
                if any(tag in entry["Key"] for tag in tags):
                    found.add(entry["Key"])
            if not page.get("IsTruncated"):
                return sorted(found)
            marker = {"KeyMarker": page["NextKeyMarker"], "VersionIdMarker": page["NextVersionIdMarker"]}

    def of(self, tenant: str, agent: str, concept: str) -> list[WaitingPair]:
        """The pairs waiting beside `concept`, oldest first; an object that does not read is left out."""
        pairs = []
        for key in self.keys(tenant, agent, concept):
            pair = self.read(key)
            if pair is not None:
                pairs.append(pair)
        return sorted(pairs, key=lambda p: (p.since, p.pair_id))

    def read(self, key: str) -> Optional[WaitingPair]:
        try:
            body = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key, read_body=True)["Body"]
        except NotFound:
            return None
        try:
            data = json.loads(body)
            return WaitingPair(**{k: v for k, v in data.items() if k in WaitingPair.__dataclass_fields__})
        except (ValueError, TypeError):
            return None

    def delete(self, key: str) -> None:
        awscall.call(self._s3, "delete_object", Bucket=self.bucket, Key=key)

    def has(self, tenant: str, agent: str, concept: str, kind: str, policy: str) -> bool:
        """Whether the pair of `kind` between `concept` and the policy `policy` waits (one HEAD)."""
        key = waiting_key(tenant, agent, concept, f"{kind}-{policy}")
        return awscall.succeeds(NotFound, self._s3, "head_object", Bucket=self.bucket, Key=key)

    def dismiss_pair(self, tenant: str, agent: str, concept: str, kind: str, policy: str) -> None:
        """The pair of `kind` between `concept` and the policy `policy`, lifted once judged (none: nothing)."""
        if self.has(tenant, agent, concept, kind, policy):
            self.delete(waiting_key(tenant, agent, concept, f"{kind}-{policy}"))

    def dismiss(self, tenant: str, agent: str, concept: str, kind: Optional[str] = None) -> int:
        """The concept's pairs (of `kind`, or all) taken out of the waiting list; how many. Their versions stay
        until the lifecycle or a purge takes them (forget_customer finds them by key)."""
        gone = 0
        for key in list(self.keys(tenant, agent, concept)):
            if kind is None or key.rsplit("/", 1)[1].startswith(f"{kind}-"):
                self.delete(key)
                gone += 1
        return gone
