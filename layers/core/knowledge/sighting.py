"""The CandidatesQueue message: one candidate concept seen in one turn (extract -> consolidate)."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .concept import Concept, parse
from .errors import InvalidConcept, KnowledgeError
from .names import SessionId, Slug
from .validation import describe_errors

SIGHTING_MAX_BYTES = 64 * 1024


class InvalidSighting(KnowledgeError, ValueError):
    code = "invalid_sighting"


class Sighting(BaseModel):
    """A stamped candidate, as sent to the CandidatesQueue (FIFO)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    tenant: Slug
    agent: Slug
    session_id: SessionId
    turn_id: SessionId
    concept: str = Field(description="The stamped candidate in the concept format (canonical markdown).")


    @classmethod
    def of(cls, tenant: str, agent: str, session_id: str, turn_id: str, concept: Concept) -> "Sighting":
        return cls(tenant=tenant, agent=agent, session_id=session_id, turn_id=turn_id, concept=concept.render())

    def parsed(self) -> Concept:
        return parse(self.concept)

    @property
    def name(self) -> str:
        return self.parsed().name

    def body(self) -> str:
        return self.model_dump_json()

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
    except (ValueError, UnicodeDecodeError):
        raise InvalidSighting("sighting body is not JSON") from None
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
                             "sha256(tenant/agent/session_id/turn_id/name)).")
    return schema
