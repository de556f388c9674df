"""The turn-complete message the engine drops on the TurnCompleteQueue, parsed and validated. Rolling
deploys: a top-level field a reader does not know is ignored and dropped (never archived, logged or
sent on), and size limits apply to the whole body, unknown fields included.
docs/contract.md, "The turn-complete message (TurnCompleteQueue)"."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any, Literal, Optional

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from knowledge.errors import InvalidTurn
from shared.names import SessionId, Slug
from shared.validation import validate_object

MESSAGE_MAX_CHARS = 32_000
MESSAGES_MAX = 200
SHOWN_MAX = 50  # names per list of `shown`
# Whose messages can restate what the session was shown: the assistant, and a tool (the
# load_knowledge answer is a tool message carrying the concept itself).
ECHO_ROLES = frozenset({"assistant", "tool"})
TURN_MAX_BYTES = 240 * 1024  # under SQS's 256 KiB message limit
# How a reader treats top-level fields it does not know; published in the schemas.
UNKNOWN_FIELDS_NOTE = ("Readers ignore top-level fields they do not know (a newer sender's optional fields, "
                       "during a rolling deploy) and never store or forward them; size limits still apply.")


def utc_moment(value: datetime) -> datetime:
    """`value` in UTC; ValueError when it carries no time zone."""
    if value.tzinfo is None:
        raise ValueError("must carry a time zone (for example 2026-08-24T18:02:11Z)")
    return value.astimezone(timezone.utc)


# When a turn may have completed: an ISO 8601 text with its zone, from EARLIEST_TURN to
# TURN_LEEWAY past the reader's clock. A number (Unix seconds?), a moment with no zone, or a
# date outside the window is refused: the archive's keys, the session's idle clock and every
# concept's stamps are built from it.
EARLIEST_TURN = datetime(2000, 1, 1, tzinfo=timezone.utc)
TURN_LEEWAY = timedelta(hours=24)
MOMENT_PATTERN = (r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$")
MOMENT_RULE = ("ISO 8601 with a time zone (Z or an offset such as -03:00), from 2000-01-01T00:00:00Z "
               "to 24 hours after the reader's clock")
_MOMENT = re.compile(MOMENT_PATTERN)
_ZONELESS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?")


def turn_moment(value: Any) -> datetime:
    """A turn's `completed_at` as sent (text, or a datetime from Python code), in UTC; ValueError
    naming the rule when it is not MOMENT_RULE."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and _MOMENT.fullmatch(value):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"is not a real date and time (must be {MOMENT_RULE})") from None
    elif isinstance(value, str) and _ZONELESS.fullmatch(value):
        raise ValueError("must carry a time zone (for example 2026-08-24T18:02:11Z)")
    else:
        raise ValueError(f"must be text in {MOMENT_RULE}, like 2026-08-24T18:02:11Z"
                         + (" (not a number)" if isinstance(value, (int, float)) else ""))
    moment = utc_moment(moment)
    if moment < EARLIEST_TURN:
        raise ValueError(f"is before {EARLIEST_TURN:%Y-%m-%d} (must be {MOMENT_RULE})")
    if moment > datetime.now(timezone.utc) + TURN_LEEWAY:
        raise ValueError(f"is more than 24 hours ahead of now (must be {MOMENT_RULE})")
    return moment


def moment_schema(description: str) -> dict[str, Any]:
    """The JSON Schema of a turn's moment: text in MOMENT_RULE (the window is the reader's to check)."""
    return {"type": "string", "format": "date-time", "pattern": MOMENT_PATTERN,
            "description": f"{description} {MOMENT_RULE[0].upper()}{MOMENT_RULE[1:]}; a number is refused."}


class Message(BaseModel):
    # Only the message's top level is the extension point: a conversation message's shape is
    # what evidence spans index into, so a field there is refused, not guessed at.
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(min_length=1, max_length=MESSAGE_MAX_CHARS)


def _folded(names: Any) -> Any:
    """A list of names without its repeats, in first-seen order (an engine may send a name per turn)."""
    if isinstance(names, (list, tuple)):
        return tuple(dict.fromkeys(names)) if all(isinstance(n, str) for n in names) else names
    return names


class Shown(BaseModel):
    """What the session was shown and loaded, up to and including this turn: the record the echo
    guard reads (docs/contract.md, the turn-complete message)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    retrieved: tuple[Slug, ...] = Field(default=(), max_length=SHOWN_MAX, description=(
        f"The concept names RetrieveFunction answered in this session (`concepts[].name`), at most {SHOWN_MAX} "
        "after repeats are folded."))
    loaded: tuple[Slug, ...] = Field(default=(), max_length=SHOWN_MAX, description=(
        f"The names of the `load_knowledge` calls made in this session, at most {SHOWN_MAX} after repeats "
        "are folded."))

    @field_validator("retrieved", "loaded", mode="before")
    @classmethod
    def _fold(cls, value: Any) -> Any:
        return _folded(value)

    def includes(self, name: str) -> bool:
        return name in self.retrieved or name in self.loaded


class Turn(BaseModel):
    """One completed turn of one session of one agent."""

    model_config = ConfigDict(extra="ignore", frozen=True, title="TurnComplete",
                              json_schema_extra={"additionalProperties": True})

    tenant: Slug = Field(description='A slug; "default" for a single-store deployment.')
    agent: Slug = Field(description="The agent's slug.")
    session_id: SessionId
    turn_id: SessionId
    completed_at: datetime = Field(json_schema_extra=moment_schema("When the turn completed."))
    messages: tuple[Message, ...] = Field(min_length=1, max_length=MESSAGES_MAX)
    customer_id: Optional[SessionId] = Field(
        default=None, description="The engine's opaque id of the customer, when it knows one (for Facts).")
    shown: Optional[Shown] = Field(
        default=None, description="What this session was shown and loaded so far; absent: the engine keeps no "
                                  "record, and nothing learned from this turn is checked for echoes.")

    # The offset completed_at was written with: the turn's local date (what "até domingo" counts from).
    _offset: timedelta = PrivateAttr(default=timedelta(0))

    @field_validator("completed_at", mode="before")
    @classmethod
    def _moment(cls, value: Any) -> datetime:
        return turn_moment(value)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_offset(cls, data: Any, handler: Any) -> "Turn":
        turn = handler(data)
        sent = data.get("completed_at") if isinstance(data, dict) else getattr(data, "local_moment", None)
        if isinstance(sent, str) and _MOMENT.fullmatch(sent):
            sent = datetime.fromisoformat(sent)
        if isinstance(sent, datetime) and sent.utcoffset() is not None:
            turn._offset = sent.utcoffset()  # type: ignore[assignment]
        return turn

    @property
    def local_moment(self) -> datetime:
        """completed_at in the offset it was sent with."""
        return self.completed_at.astimezone(timezone(self._offset))

    @property
    def local_date(self) -> date:
        return self.local_moment.date()

    @field_serializer("completed_at")
    def _local(self, value: datetime) -> datetime:
        # Archived as sent, so a replay (backfill) reads the same local date.
        return value.astimezone(timezone(self._offset)) if self._offset else value

    @model_serializer(mode="wrap")
    def _previous_shape(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A turn without a customer is written in the previous shape, so a reader one release
        # behind (a rollback, a backfill) still reads what this one archived.
        data = handler(self)
        if isinstance(data, dict):
            for optional in ("customer_id", "shown"):
                if data.get(optional) is None:
                    data.pop(optional, None)
        return data

    def echoes(self, name: str, message: int) -> bool:
        """Whether concept `name`, quoted from `messages[message]`, is the store restating what this
        session was shown or loaded: not an independent source. False without a record."""
        return (self.shown is not None and self.shown.includes(name)
                and 0 <= message < len(self.messages) and self.messages[message].role in ECHO_ROLES)


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
