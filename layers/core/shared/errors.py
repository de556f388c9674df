"""The typed errors both loops and the shared floor raise, each named once here: callers branch on
the type, answers on its `code` (docs/contract.md publishes the codes), never on message text.
Knowledge's own are in knowledge/errors.py, Facts' in facts/errors.py."""

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


class InvalidRequest(KnowledgeError, ValueError):
    """A request or event that breaks its contract (its schema in docs/contract.md: a missing, unknown or
    malformed field); the message names each field, never a customer's text. One refusal for every
    function that parses what it is sent — retrieve and save_knowledge, memory, the purges, repair, the
    snapshot and distill passes, the Facts page's requests — so all of them answer `invalid_request`."""

    code = "invalid_request"


class InvalidCursor(KnowledgeError):
    """A page cursor this code did not hand out (or one for another concept or list)."""

    code = "invalid_cursor"


class Unauthorized(KnowledgeError):
    """An HTTP API request whose verified token names no operator."""

    code = "unauthorized"


class Forbidden(KnowledgeError):
    """An operator asking for a tenant they are not a member of."""

    code = "forbidden"


class DeadlineExceeded(KnowledgeError):
    """Not enough time is left to do this work safely (shared.deadline); the queue will bring it back."""

    code = "deadline_exceeded"


class SettingsError(KnowledgeError):
    """A function's environment without a setting it needs, or with a bad one (a tenant's daily cap,
    the secret that keys Facts' latches): the function is misconfigured, not the request."""

    code = "settings_error"


class SecretUnavailable(SettingsError):
    """The model API key's secret could not be read (or holds no key)."""

    code = "secret_unavailable"


class EventPublishError(KnowledgeError):
    """The event bus refused or dropped an event (shared.events)."""

    code = "event_publish_failed"


class PurgeRefused(KnowledgeError):
    """S3 refused to delete some versions (access, a lock): what it did delete is gone; run again
    once the cause is fixed."""

    code = "purge_refused"


class YamlProblem(ValueError):
    """Text outside the YAML subset the product reads (shared.validation); `line` counts from 0, `path`
    names the value. Not a refusal of its own: each format turns it into its typed error."""

    def __init__(self, message: str, line: Optional[int] = None, path: tuple[str, ...] = ()):
        super().__init__(message)
        self.message, self.line, self.path = message, line, path


# The utility model's calls end in an answer or in one of these (shared.model's docstring says which).
class ModelError(KnowledgeError):
    """The model gave no answer (see shared.model's docstring): the work item fails and is retried."""

    code = "model_error"


class ModelUnavailable(ModelError):
    """The model kept failing (timeouts, throttling, server errors) after bounded retries."""

    code = "model_unavailable"


class ModelTimeout(ModelUnavailable):
    """The call could not be answered by its deadline (raised at the deadline, or at once when a
    wait the model asks for would pass it)."""

    code = "model_timeout"


class ModelRefused(ModelError):
    """The endpoint answered a status other than 200 that is not retried within the call (400,
    401, 403, 404...; Bedrock's AccessDenied, Validation...): a key, a model name or a request to
    fix, which the queue's later deliveries find fixed or dead-letter."""

    code = "model_refused"


class ModelBadAnswer(ModelError):
    """A 200 that is no complete answer: not a JSON envelope (an HTML page, garbage), cut short,
    without text content, with empty content, or over shared.model's MAX_ANSWER_BYTES."""

    code = "model_bad_answer"


class ModelAnswerUnusable(ModelError):
    """A complete answer whose content is not what the caller asked for (its parser says so),
    raised by the caller so the queue asks again: at most shared.model's ANSWER_ATTEMPTS deliveries,
    then the caller's conservative outcome (extraction drops the answer, counted)."""

    code = "model_answer_unusable"


class ModelConfigError(ModelError):
    """A model reference, deadline or client setting the model cannot be called with."""

    code = "model_config"


def field_errors(exc: InvalidConcept) -> list[dict[str, Any]]:
    """An InvalidConcept's problems as an answer lists them: field, message, line."""
    return [{"field": e.field, "message": e.message, "line": e.line} for e in exc.errors]


def refusal(exc: KnowledgeError) -> dict[str, Any]:
    """The answer a directly invoked function gives for a typed error: {"error": {code, message}},
    as shared.refusal's model publishes it (imported here, late: a handler's import stays free of pydantic)."""
    from shared.refusal import Refusal, Refused

    return Refusal(error=Refused(code=exc.code, message=str(exc))).model_dump(mode="json")
