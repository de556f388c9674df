"""Typed domain errors: callers branch on the type, never on message text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


class KnowledgeError(Exception):
    """Base of every error this package raises on purpose."""

    code = "knowledge_error"


class InvalidName(KnowledgeError, ValueError):
    """A tenant, agent or concept name that may not become part of an object key."""

    code = "invalid_name"

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class FieldError:
    """One problem in a concept document: the field it concerns and, when known, the line."""

    field: str
    message: str
    line: Optional[int] = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.field}{where}: {self.message}"


class InvalidConcept(KnowledgeError, ValueError):
    """A concept document that does not follow the concept format."""

    code = "invalid_concept"

    def __init__(self, errors: list[FieldError]):
        self.errors = list(errors)
        super().__init__("; ".join(str(e) for e in self.errors))


class InvalidConfig(KnowledgeError, ValueError):
    """An agent's `knowledge:` block with unknown keys or bad values."""

    code = "invalid_config"


class NotFound(KnowledgeError, LookupError):
    """The concept (or version) asked for does not exist."""

    code = "not_found"


class UnknownAgent(NotFound):
    """An agent with neither a knowledge.yaml nor any concept: most often a typo in ?agent=
    (knowledge.store.agents holds the rule; the Facts page answers it, the Knowledge studio may too)."""

    code = "unknown_agent"


class Conflict(KnowledgeError):
    """A conditional write lost a race; `current` is what is stored now (None when deleted): for a
    concept, knowledge.store.concepts's StoredConcept."""

    code = "conflict"

    def __init__(self, message: str, current: Optional[Any] = None):
        super().__init__(message)
        self.current = current


class StoreUnavailable(KnowledgeError):
    """The store kept answering with throttling, server errors or dropped connections until
    the attempts or the time ran out; the work can be tried again later."""

    code = "store_unavailable"


class NotModified(KnowledgeError):
    """A conditional read found the object unchanged."""

    code = "not_modified"


class AccessDenied(KnowledgeError):
    """S3 refused the request (403). Without s3:ListBucket, which least privilege leaves out
    where it is not needed, this is also how S3 answers a key that does not exist."""

    code = "access_denied"


class InvalidPurge(KnowledgeError, ValueError):
    """A purge request that breaks the contract (a missing or malformed field)."""

    code = "invalid_request"


def field_errors(exc: InvalidConcept) -> list[dict[str, Any]]:
    """An InvalidConcept's problems as an answer lists them: field, message, line."""
    return [{"field": e.field, "message": e.message, "line": e.line} for e in exc.errors]


def refusal(exc: KnowledgeError) -> dict[str, Any]:
    """The answer a directly invoked function gives for a typed error: {"error": {code, message}},
    as shared.refusal's model publishes it (imported here, late: a handler's import stays free of pydantic)."""
    from shared.refusal import Refusal, Refused

    return Refusal(error=Refused(code=exc.code, message=str(exc))).model_dump(mode="json")
