"""The CandidatesQueue message: one candidate concept seen in one turn (extract -> consolidate).

Rolling deploys: a reader accepts its own version of the message (`v`) and the next one.
The next version may only add optional fields; a reader ignores top-level fields it does
not know and never stores or forwards them. A change an older reader could misread is a
new message, not a new `v`.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from knowledge.errors import InvalidSighting
from knowledge.format.concept import (
    DATE_PATTERN,
    EARLIEST_DATE,
    FIRST_SIGHTING_CONFIDENCE,
    LATEST_DATE,
    Concept,
    first_sighting,
    parse,
    utc_now,
)
from knowledge.format.turn import MESSAGE_MAX_CHARS, MESSAGES_MAX, UNKNOWN_FIELDS_NOTE, moment_schema, turn_moment
from shared.errors import InvalidConcept
from shared.names import SessionId, Slug
from shared.validation import describe_errors

SIGHTING_MAX_BYTES = 64 * 1024
SIGHTING_VERSION = 1
# This release writes SIGHTING_VERSION and reads it and the next: a reader one deploy behind
# must not dead-letter what a newer extractor sends while a deploy rolls.
READABLE_VERSIONS = (SIGHTING_VERSION, SIGHTING_VERSION + 1)


class EvidenceRef(BaseModel):
    """Where a sighting's evidence is, never the quote itself: a span of one message of the archived turn.

    The turn is the sighting's (tenant, agent, session_id, turn_id), archived under `completed_at`;
    the quote is `turn.messages[message].content[start:end]` (Python string indices: code points).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    completed_at: datetime = Field(json_schema_extra=moment_schema(
        "The turn's completed_at (UTC, microseconds kept): part of the archived turn's key."))
    message: int = Field(ge=0, lt=MESSAGES_MAX, strict=True, description="Index in the turn's messages.")
    start: int = Field(ge=0, lt=MESSAGE_MAX_CHARS, strict=True,
                       description="First character of the quote in the message's original content.")
    end: int = Field(gt=0, le=MESSAGE_MAX_CHARS, strict=True,
                     description="One past the quote's last character (the span is [start, end)).")

    @field_validator("completed_at", mode="before")
    @classmethod
    def _moment(cls, value: Any) -> datetime:
        return turn_moment(value)

    @model_validator(mode="after")
    def _ordered(self) -> "EvidenceRef":
        if self.end <= self.start:
            raise ValueError("end must be greater than start")
        return self


class Sighting(BaseModel):
    """A stamped candidate, as sent to the CandidatesQueue (FIFO)."""

    model_config = ConfigDict(extra="ignore", frozen=True, json_schema_extra={"additionalProperties": True})

    v: Literal[READABLE_VERSIONS] = Field(  # type: ignore[valid-type]
        default=SIGHTING_VERSION, description=f"Message version: this release writes {SIGHTING_VERSION} and "
                                              f"reads {' and '.join(map(str, READABLE_VERSIONS))}.")
    tenant: Slug
    agent: Slug
    session_id: SessionId
    turn_id: SessionId
    concept: str = Field(description=(
        "The stamped candidate in the concept format (canonical markdown). The reader keeps its name, "
        "description, type and body and stamps every other field itself: provenance observed, confidence "
        f"{FIRST_SIGHTING_CONFIDENCE}, sources [session_id], occurrences 1, created_at and updated_at the "
        "evidence's completed_at (without evidence, when the sighting is read), valid_from and valid_until "
        "this message's own."))
    evidence: Optional[EvidenceRef] = Field(default=None, description="Where the evidence is in the archived "
                                                                      "turn; absent from older senders.")
    # Unlike the concept's engine fields, this one is taken from the message as sent: it can only
    # lower what the sighting counts for (an echo adds no source, occurrence or confidence, and
    # creates nothing), so a forged `true` does no more than not sending the message would.
    echo: Optional[bool] = Field(default=None, strict=True, description=(
        "true: the evidence is the store's side restating a concept the session was shown or loaded "
        "(the turn's `shown`), so the sighting is no independent source and is not counted. Absent: "
        "counted as usual (also from older senders)."))

    save_id: Optional[str] = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}~[0-9a-f]{16}[A-Za-z0-9_-]{22}$",
                                   description=(
        "The save_knowledge call this sighting came from (its answer's save_id): consolidation writes the outcome "
        "into that save's record. Absent for extraction's sightings; an older reader ignores it."))

    # Top-level, not in the concept's text, so that a reader one release behind (whose concept
    # format has no such field) ignores them instead of refusing the message.
    valid_from: Optional[date] = Field(default=None, ge=EARLIEST_DATE, le=LATEST_DATE, description=(
        "The first day the claim is true (an inclusive local date), as the evidence states it; absent: none stated."))
    valid_until: Optional[date] = Field(default=None, ge=EARLIEST_DATE, le=LATEST_DATE, description=(
        "The last day the claim is true (an inclusive local date), as the evidence states it; absent: none stated."))

    @field_validator("valid_from", "valid_until", mode="before")
    @classmethod
    def _day(cls, value: Any) -> Any:
        if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
            return value
        if isinstance(value, str) and DATE_PATTERN.fullmatch(value):
            return value
        raise ValueError("must be a date written YYYY-MM-DD")

    @model_validator(mode="after")
    def _dates_in_order(self) -> "Sighting":
        if self.valid_from is not None and self.valid_until is not None and self.valid_from > self.valid_until:
            raise ValueError("valid_until must not be earlier than valid_from")
        return self

    @classmethod
    def of(cls, tenant: str, agent: str, session_id: str, turn_id: str, concept: Concept,
           evidence: Optional[EvidenceRef] = None, echo: bool = False, save_id: Optional[str] = None) -> "Sighting":
        undated = concept.replace(valid_from=None, valid_until=None)
        return cls(tenant=tenant, agent=agent, session_id=session_id, turn_id=turn_id, concept=undated.render(),
                   evidence=evidence, echo=True if echo else None, valid_from=concept.valid_from,
                   valid_until=concept.valid_until, save_id=save_id)

    def parsed(self) -> Concept:
        """The candidate as consolidation takes it. Its name, description, type and body are what
        extraction chose; every engine field (provenance, confidence, sources, occurrences and
        the two stamps) is stamped here as extraction stamps a first sighting, from this
        message's own session and evidence, whatever the concept text says: a message on the
        queue is not trusted to say a claim is policy or seen a thousand times."""
        sent = parse(self.concept)
        moment = self.evidence.completed_at if self.evidence is not None else utc_now()
        return first_sighting(name=sent.name, description=sent.description, type=sent.type, body=sent.body,
                              session_id=self.session_id, moment=moment, valid_from=self.valid_from,
                              valid_until=self.valid_until)

    @property
    def name(self) -> str:
        return self.parsed().name

    def body(self) -> str:
        # Absent rather than null: a reader that predates a field still reads a message without it.
        return self.model_dump_json(exclude_none=True)

    def group_id(self) -> str:
        """FIFO group: one concept's sightings are serialized (≤128 characters, so hashed)."""
        return hashlib.sha256(f"{self.tenant}/{self.agent}/{self.name}".encode()).hexdigest()

    def dedup_id(self) -> str:
        """The same concept from the same turn is one message, however often it is sent."""
        key = f"{self.tenant}/{self.agent}/{self.session_id}/{self.turn_id}/{self.name}"
        return hashlib.sha256(key.encode()).hexdigest()


def parse_sighting(body: str | bytes) -> Sighting:
    if len(body) > SIGHTING_MAX_BYTES:
        raise InvalidSighting(f"sighting is larger than {SIGHTING_MAX_BYTES} bytes")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InvalidSighting("sighting body is not JSON") from None
    if not isinstance(data, dict):
        raise InvalidSighting("the sighting must be a JSON object")
    try:
        sighting = Sighting.model_validate(data)
        sighting.parsed()
    except ValidationError as exc:
        raise InvalidSighting("; ".join(describe_errors(exc))) from None
    except InvalidConcept as exc:
        raise InvalidSighting(f"concept: {exc}") from None
    return sighting


def sighting_schema() -> dict:
    """The published JSON Schema of a CandidatesQueue message."""
    schema = Sighting.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["description"] = ("One candidate concept seen in one turn, sent by extraction to the CandidatesQueue "
                             "(FIFO; MessageGroupId = sha256(tenant/agent/name), MessageDeduplicationId = "
                             "sha256(tenant/agent/session_id/turn_id/name)). " + UNKNOWN_FIELDS_NOTE)
    return schema
