"""The turn-complete message the engine drops on the TurnCompleteQueue (SPEC §5).

Rolling deploys: a reader accepts the previous and the next shape of the message. Every
field it knows is validated; a top-level field it does not know (one a newer engine adds)
is ignored rather than refused, and dropped: it is never archived, logged or sent on. Size
limits apply to the whole body, unknown fields included. See docs/contract.md, the engine's contract.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from knowledge.errors import InvalidTurn
from shared.names import SessionId, Slug
from shared.validation import validate_object

MESSAGE_MAX_CHARS = 32_000
MESSAGES_MAX = 200
TURN_MAX_BYTES = 240 * 1024  # under SQS's 256 KiB message limit
# How a reader treats top-level fields it does not know; published in the schemas.
UNKNOWN_FIELDS_NOTE = ("Readers ignore top-level fields they do not know (a newer sender's optional fields, "
                       "during a rolling deploy) and never store or forward them; size limits still apply.")


def utc_moment(value: datetime) -> datetime:
    """`value` in UTC; ValueError when it carries no time zone."""
    if value.tzinfo is None:
        raise ValueError("must carry a time zone (for example 2026-08-24T18:02:11Z)")
    return value.astimezone(timezone.utc)


class Message(BaseModel):
    # Only the message's top level is the extension point: a conversation message's shape is
    # what evidence spans index into, so a field there is refused, not guessed at.
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(min_length=1, max_length=MESSAGE_MAX_CHARS)


class Turn(BaseModel):
    """One completed turn of one session of one agent."""

    model_config = ConfigDict(extra="ignore", frozen=True, title="TurnComplete",
                              json_schema_extra={"additionalProperties": True})

    tenant: Slug = Field(description='A slug; "default" for a single-store deployment.')
    agent: Slug = Field(description="The agent's slug.")
    session_id: SessionId
    turn_id: SessionId
    completed_at: datetime = Field(description="When the turn completed, ISO 8601 with a time zone.")
    messages: tuple[Message, ...] = Field(min_length=1, max_length=MESSAGES_MAX)
    customer_id: Optional[SessionId] = Field(
        default=None, description="The engine's opaque id of the customer, when it knows one (for Facts).")

    @field_validator("completed_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return utc_moment(value)

    @model_serializer(mode="wrap")
    def _previous_shape(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A turn without a customer is written in the previous shape, so a reader one release
        # behind (a rollback, a backfill) still reads what this one archived.
        data = handler(self)
        if isinstance(data, dict) and data.get("customer_id") is None:
            data.pop("customer_id", None)
        return data


def parse_turn(body: str | bytes) -> Turn:
    """Validate a queue message body; InvalidTurn names the problem, never the content."""
    if len(body) > TURN_MAX_BYTES:
        raise InvalidTurn(f"message is larger than {TURN_MAX_BYTES} bytes")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InvalidTurn("message body is not JSON") from None
    return validate_object(Turn, data, InvalidTurn, "the message body")


def turn_schema() -> dict:
    """The published JSON Schema of the turn-complete message."""
    schema = Turn.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["description"] = ("A completed turn, sent by the engine to the TurnCompleteQueue (SQS body, JSON). "
                             + UNKNOWN_FIELDS_NOTE)
    return schema
