"""Environment settings, validated once at cold start so a misconfigured function fails fast."""

from __future__ import annotations

import json
import os
import re
from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.errors import SecretUnavailable, SettingsError
from shared.names import MODEL_REF
from shared.validation import describe_errors

# S3 bucket naming rules (the general-purpose subset).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_QUEUE_URL = re.compile(r"https?://\S+/\d{12}/[A-Za-z0-9_-]{1,75}(\.fifo)?")
_SECRET_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}")


class Settings(BaseModel):
    """What the functions read from their environment (docs/contract.md, "Settings (environment)")."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    knowledge_bucket: str = Field(alias="KNOWLEDGE_BUCKET")
    sessions_bucket: Optional[str] = Field(default=None, alias="SESSIONS_BUCKET")
    turn_queue_url: Optional[str] = Field(default=None, alias="TURN_QUEUE_URL")
    candidates_queue_url: Optional[str] = Field(default=None, alias="CANDIDATES_QUEUE_URL")
    turn_dlq_url: Optional[str] = Field(default=None, alias="TURN_DLQ_URL")
    candidates_dlq_url: Optional[str] = Field(default=None, alias="CANDIDATES_DLQ_URL")
    # Where the studio queues a saved policy concept's review (PolicyReviewFunction).
    policy_review_queue_url: Optional[str] = Field(default=None, alias="POLICY_REVIEW_QUEUE_URL")
    event_bus_name: Optional[str] = Field(default=None, alias="EVENT_BUS_NAME")
    utility_model: Optional[str] = Field(default=None, alias="UTILITY_MODEL")
    openai_base_url: Optional[str] = Field(default=None, alias="OPENAI_BASE_URL")
    openai_api_key: Optional[str] = Field(default=None, alias="OPENAI_API_KEY", repr=False)
    # On AWS the key lives in Secrets Manager (template.yaml's OpenAIApiKeySecretArn); OPENAI_API_KEY,
    # when set (locally, in tests), wins and the secret is not read.
    openai_api_key_secret_arn: Optional[str] = Field(default=None, alias="OPENAI_API_KEY_SECRET_ARN")
    refresh_seconds: float = Field(default=5.0, alias="KNOWLEDGE_REFRESH_SECONDS", ge=0, le=3600)
    fetch_budget_seconds: float = Field(default=4.0, alias="KNOWLEDGE_FETCH_BUDGET_SECONDS", gt=0, le=900)
    # save_knowledge's cap per session (a model in a loop must not write a concept per call).
    saves_per_session: int = Field(default=20, alias="KNOWLEDGE_SAVES_PER_SESSION", ge=1, le=1000)
    # How often a running distill pass looks at an agent's `distill:` block again (facts.distill).
    distill_switch_seconds: float = Field(default=5.0, alias="DISTILL_SWITCH_SECONDS", ge=0, le=10)

    @field_validator("knowledge_bucket", "sessions_bucket")
    @classmethod
    def _bucket(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _BUCKET.fullmatch(value):
            raise ValueError("is not a valid S3 bucket name")
        return value

    @field_validator("turn_queue_url", "candidates_queue_url", "turn_dlq_url", "candidates_dlq_url",
                     "policy_review_queue_url")
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

    @field_validator("openai_api_key_secret_arn")
    @classmethod
    def _secret(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _SECRET_ARN.fullmatch(value):
            raise ValueError("is not a Secrets Manager secret ARN")
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
            settings = cls.model_validate({name: environ[name] for name in names if environ.get(name)})
        except ValidationError as exc:
            raise SettingsError(f"bad environment: {'; '.join(describe_errors(exc))}") from None
        if settings.openai_api_key_secret_arn and not settings.openai_api_key:
            # Read once, at cold start: a key that cannot be read fails the function's init loudly.
            settings = settings.model_copy(update={"openai_api_key": read_api_key(settings.openai_api_key_secret_arn)})
        return settings


def read_api_key(arn: str) -> str:
    """The model API key from a Secrets Manager secret: the secret's text, or its
    `api_key` (or `OPENAI_API_KEY`) field when the text is a JSON object."""
    from botocore.exceptions import BotoCoreError, ClientError

    from shared.aws import client

    try:
        text = client("secretsmanager").get_secret_value(SecretId=arn).get("SecretString") or ""
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        raise SecretUnavailable(f"OPENAI_API_KEY_SECRET_ARN: the secret could not be read ({code})") from None
    except BotoCoreError as exc:
        raise SecretUnavailable(f"OPENAI_API_KEY_SECRET_ARN: the secret could not be read ({type(exc).__name__})") from None
    key = text.strip()
    if key.startswith("{"):
        try:
            fields = json.loads(key)
        except ValueError:
            fields = None
        if not isinstance(fields, dict):
            raise SecretUnavailable("OPENAI_API_KEY_SECRET_ARN: the secret is neither a key nor a JSON object")
        key = next((fields[name] for name in ("api_key", "OPENAI_API_KEY") if isinstance(fields.get(name), str)), "")
        key = key.strip()
    if not key:
        raise SecretUnavailable("OPENAI_API_KEY_SECRET_ARN: the secret holds no API key "
                                "(plain text, or a JSON object with an api_key field)")
    return key
