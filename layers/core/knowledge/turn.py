"""The turn-complete message the engine drops on the TurnCompleteQueue (SPEC §5)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import KnowledgeError
from .names import SessionId, Slug
from .validation import validate_object

MESSAGE_MAX_CHARS = 32_000
MESSAGES_MAX = 200
TURN_MAX_BYTES = 240 * 1024  # under SQS's 256 KiB message limit


class InvalidTurn(KnowledgeError, ValueError):
    """A turn-complete message that cannot be processed. The text never quotes message content."""

    code = "invalid_turn"


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(min_length=1, max_length=MESSAGE_MAX_CHARS)


class Turn(BaseModel):
    """One completed turn of one session of one agent."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="TurnComplete")

    tenant: Slug = Field(description='A slug; "default" for a single-store deployment.')
    agent: Slug = Field(description="The agent's slug.")
    session_id: SessionId
    turn_id: SessionId
    completed_at: datetime = Field(description="When the turn completed, ISO 8601 with a time zone.")
    messages: tuple[Message, ...] = Field(min_length=1, max_length=MESSAGES_MAX)


    @field_validator("completed_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("must carry a time zone (for example 2026-08-24T18:02:11Z)")
        return value.astimezone(timezone.utc)

    def text_of(self, *roles: str) -> list[str]:
        return [m.content for m in self.messages if not roles or m.role in roles]


def parse_turn(body: str | bytes) -> Turn:
    """Validate a queue message body; InvalidTurn names the problem, never the content."""
    if len(body) > TURN_MAX_BYTES:
        raise InvalidTurn(f"message is larger than {TURN_MAX_BYTES} bytes")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise InvalidTurn("message body is not JSON") from None
    return validate_object(Turn, data, InvalidTurn, "the message body")


def turn_schema() -> dict:
    """The published JSON Schema of the turn-complete message."""
    schema = Turn.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["description"] = "A completed turn, sent by the engine to the TurnCompleteQueue (SQS body, JSON)."
    return schema
