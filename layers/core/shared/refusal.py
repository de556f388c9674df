"""The refusal a directly invoked function answers (schemas/refusal.schema.json is written from it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Refused(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str = Field(description="the refusal's type (invalid_request, not_found, ...): branch on it, "
                                  "never on the message")
    message: str = Field(description="what was wrong, naming the field; never quotes a customer's text")


class Refusal(BaseModel):
    """How a directly invoked function (RetrieveFunction, MemoryFunction) answers a refusal."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    error: Refused
