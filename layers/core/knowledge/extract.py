"""Extraction: one completed turn in, gated and redacted sightings out.

Per turn: read the agent's `knowledge:` block (cached, re-read only when its ETag
changes), archive the turn for backfill, ask the model, gate its answer, stamp the
survivors, and send them to the CandidatesQueue. Backfill replays archived turns through
exactly the same code.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator, Optional, Protocol

from botocore.exceptions import ClientError

from .concept import FIRST_SIGHTING_CONFIDENCE, Concept
from .config import KnowledgeConfig
from .errors import InvalidConcept, KnowledgeError
from .gates import EVIDENCE_ROLES, SCHEMA, Candidate, gate
from .model import ModelCache, ModelConfigError
from .names import check_slug
from .prompt import extraction_prompt
from .sighting import Sighting
from .store import ConceptStore, NotModified
from .telemetry import Counters
from .turn import Turn, parse_turn

SQS_BATCH = 10


# ------------------------------------------------------------------ adapters


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
        try:
            self._s3.put_object(Bucket=self.bucket, Key=self.key(turn), Body=turn.model_dump_json().encode(),
                                ContentType="application/json", IfNoneMatch="*")
        except ClientError as error:
            if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (409, 412):
                return False
            raise
        return True

    def keys(self, tenant: str, agent: str, since: datetime, until: Optional[datetime] = None,
             start_after: Optional[str] = None) -> Iterator[str]:
        """Archived turn keys with since <= completed_at < until, oldest first."""
        prefix = self.prefix(tenant, agent)
        first = max(prefix + self.stamp(since), start_after or "")
        last = prefix + self.stamp(until) if until else None
        paginator = self._s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix, StartAfter=_before(first)):
            for item in page.get("Contents", []):
                if item["Key"] <= (start_after or ""):
                    continue
                if last is not None and item["Key"] >= last:
                    return
                yield item["Key"]

    def get(self, key: str) -> Turn:
        return parse_turn(self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())


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


# ------------------------------------------------------------------ the work


@dataclass
class TurnOutcome:
    status: str  # processed | no_config | extract_off
    archived: bool = False
    sightings: list[Sighting] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    redacted: Counter = field(default_factory=Counter)

    def log_fields(self) -> dict[str, Any]:
        """Counts only: safe to log."""
        return {"status": self.status, "archived": self.archived, "sent": len(self.sightings),
                "rejected": dict(self.rejected), "redacted": dict(self.redacted)}


def stamp(candidate: Candidate, turn: Turn) -> Concept:
    """A candidate as a first sighting: everything but name/description/type/body is the engine's."""
    moment = turn.completed_at.replace(microsecond=0)
    return Concept(name=candidate.name, description=candidate.description, type=candidate.type,
                   provenance="observed", confidence=FIRST_SIGHTING_CONFIDENCE, sources=(turn.session_id,),
                   occurrences=1, created_at=moment, updated_at=moment, body=candidate.body)


class Extractor:
    def __init__(self, configs: ConfigCache, archive: Optional[TurnArchive], candidates: CandidateSink,
                 models: ModelCache, utility_model: Optional[str], counters: Optional[Counters] = None):
        self._configs, self._archive, self._candidates = configs, archive, candidates
        self._models, self._utility_model = models, utility_model
        self.counters = counters or Counters()

    def process(self, turn: Turn, *, archive: bool = True, send: bool = True) -> TurnOutcome:
        """Extract one turn. Raises (so the queue retries) when the model or a send keeps failing."""
        config = self._configs.get(turn.tenant, turn.agent)
        if config is None or not config.extract:
            outcome = TurnOutcome("no_config" if config is None else "extract_off")
            self.counters.count("TurnSkipped", reason=outcome.status)
            return outcome
        outcome = TurnOutcome("processed")
        if archive and self._archive is not None:
            outcome.archived = self._archive.put(turn)
        ref = config.model or self._utility_model
        if not ref:
            raise ModelConfigError("no model: set the agent's knowledge.model or UTILITY_MODEL")
        system, user = extraction_prompt(turn, config.types, config.prompt)
        answer = self._models.get(ref).complete(system, user)
        report = gate(answer, turn.text_of(*EVIDENCE_ROLES), config.types)
        outcome.rejected, outcome.redacted = report.rejected, report.redacted
        for candidate in report.candidates:
            try:
                outcome.sightings.append(Sighting.of(turn.tenant, turn.agent, turn.session_id, turn.turn_id,
                                                     stamp(candidate, turn)))
            except InvalidConcept:
                outcome.rejected[SCHEMA] += 1
        if send and outcome.sightings:
            self._candidates.send(outcome.sightings)
        self.counters.count("TurnProcessed")
        self.counters.count("CandidateAccepted", len(outcome.sightings))
        for reason, n in outcome.rejected.items():
            self.counters.count("CandidateRejected", n, reason=reason)
        for kind, n in outcome.redacted.items():
            self.counters.count("PiiRedacted", n, kind=kind)
        return outcome
