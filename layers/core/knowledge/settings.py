"""Environment settings, validated once at cold start so a misconfigured function fails fast."""

from __future__ import annotations

import os
import re
from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import KnowledgeError

# S3 bucket naming rules (the general-purpose subset).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


class SettingsError(KnowledgeError):
    code = "settings_error"


class Settings(BaseModel):
    """What every function reads from its environment (SPEC §9 names)."""

    model_config = ConfigDict(frozen=True)

    knowledge_bucket: str = Field(alias="KNOWLEDGE_BUCKET")
    sessions_bucket: Optional[str] = Field(default=None, alias="SESSIONS_BUCKET")

    @field_validator("knowledge_bucket", "sessions_bucket")
    @classmethod
    def _bucket(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _BUCKET.fullmatch(value):
            raise ValueError("is not a valid S3 bucket name")
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, require: tuple[str, ...] = ()) -> "Settings":
        environ = os.environ if environ is None else environ
        wanted = {name: environ[name] for name in ("KNOWLEDGE_BUCKET", "SESSIONS_BUCKET") if environ.get(name)}
        missing = [name for name in ("KNOWLEDGE_BUCKET", *require) if not environ.get(name)]
        if missing:
            raise SettingsError(f"missing environment variable(s): {', '.join(missing)}")
        try:
            return cls.model_validate(wanted)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise SettingsError(f"bad environment: {problems}") from None
