"""Environment settings, validated once at cold start so a misconfigured function fails fast."""

from __future__ import annotations

import os
import re
from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import KnowledgeError
from .model import MODEL_REF
from .validation import describe_errors

# S3 bucket naming rules (the general-purpose subset).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_QUEUE_URL = re.compile(r"https?://\S+/\d{12}/[A-Za-z0-9_-]{1,75}(\.fifo)?")


class SettingsError(KnowledgeError):
    code = "settings_error"


class Settings(BaseModel):
    """What the functions read from their environment (SPEC §9 names)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    knowledge_bucket: str = Field(alias="KNOWLEDGE_BUCKET")
    sessions_bucket: Optional[str] = Field(default=None, alias="SESSIONS_BUCKET")
    turn_queue_url: Optional[str] = Field(default=None, alias="TURN_QUEUE_URL")
    candidates_queue_url: Optional[str] = Field(default=None, alias="CANDIDATES_QUEUE_URL")
    turn_dlq_url: Optional[str] = Field(default=None, alias="TURN_DLQ_URL")
    candidates_dlq_url: Optional[str] = Field(default=None, alias="CANDIDATES_DLQ_URL")
    event_bus_name: Optional[str] = Field(default=None, alias="EVENT_BUS_NAME")
    utility_model: Optional[str] = Field(default=None, alias="UTILITY_MODEL")
    openai_base_url: Optional[str] = Field(default=None, alias="OPENAI_BASE_URL")
    openai_api_key: Optional[str] = Field(default=None, alias="OPENAI_API_KEY", repr=False)
    refresh_seconds: float = Field(default=5.0, alias="KNOWLEDGE_REFRESH_SECONDS", ge=0, le=3600)
    fetch_budget_seconds: float = Field(default=4.0, alias="KNOWLEDGE_FETCH_BUDGET_SECONDS", gt=0, le=900)

    @field_validator("knowledge_bucket", "sessions_bucket")
    @classmethod
    def _bucket(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _BUCKET.fullmatch(value):
            raise ValueError("is not a valid S3 bucket name")
        return value

    @field_validator("turn_queue_url", "candidates_queue_url", "turn_dlq_url", "candidates_dlq_url")
    @classmethod
    def _queue(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _QUEUE_URL.fullmatch(value):
            raise ValueError("is not an SQS queue URL")
        return value

    @field_validator("utility_model")
    @classmethod
    def _model(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not MODEL_REF.fullmatch(value):
            raise ValueError("must be written bedrock:<model-id> or openai:<model-name>")
        return value

    @field_validator("openai_base_url")
    @classmethod
    def _url(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, require: tuple[str, ...] = ()) -> "Settings":
        environ = os.environ if environ is None else environ
        names = [f.alias for f in cls.model_fields.values() if f.alias]
        missing = [name for name in ("KNOWLEDGE_BUCKET", *require) if not environ.get(name)]
        if missing:
            raise SettingsError(f"missing environment variable(s): {', '.join(missing)}")
        try:
            return cls.model_validate({name: environ[name] for name in names if environ.get(name)})
        except ValidationError as exc:
            raise SettingsError(f"bad environment: {'; '.join(describe_errors(exc))}") from None
