"""Typed errors: one class per refusal code the service answers; branch on the type, never on text."""

from __future__ import annotations

from typing import Optional


class KnowledgeClientError(Exception):
    """Base of every error this client raises."""


class RequestInvalid(KnowledgeClientError, ValueError):
    """The request breaks its schema; raised before anything is sent (or answered `invalid_request`)."""

    code = "invalid_request"


class Refused(KnowledgeClientError):
    """The service refused the call: `code` is the refusal's type, `message` says what was wrong."""

    code = "refused"
    retryable = False

    def __init__(self, message: str, code: Optional[str] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidRequest(Refused, RequestInvalid):
    code = "invalid_request"


class NotFound(Refused):
    """No such concept (or retrieval is off for the agent)."""

    code = "not_found"


class UnknownAgent(NotFound):
    """No such agent in the tenant (neither a knowledge.yaml nor any concept): most often a typo in
    the agent's name. A NotFound, so code that caught one before keeps working."""

    code = "unknown_agent"


class InvalidFact(Refused, ValueError):
    code = "invalid_fact"


class RecordUnreadable(Refused):
    """The customer's memory cell does not follow the format: an operator restores or resets it."""

    code = "record_unreadable"


class Busy(Refused):
    """The memory cell kept changing under a remember; nothing was written."""

    code = "busy"
    retryable = True


class StoreUnavailable(Refused):
    """S3 kept failing until the call's time ran out."""

    code = "store_unavailable"
    retryable = True


class Gated(Refused):
    """save_knowledge: a gate refused the insight (the message names the gate: evidence_not_found,
    evidence_not_from_store, type_not_allowed, pii_in_name...)."""

    code = "gated"


class SaveLimit(Refused):
    """save_knowledge: the session has saved as many insights as one session may (the deployment's
    KNOWLEDGE_SAVES_PER_SESSION); nothing was saved."""

    code = "save_limit"


class Disabled(Refused):
    """save_knowledge: the agent does not learn (no knowledge.yaml, or `extract: false`)."""

    code = "disabled"


class AccessDenied(Refused):
    """S3 refused the function (a permission the deployment lacks)."""

    code = "access_denied"


class NotConfigured(Refused):
    """The function lacks a setting this call needs (save_knowledge: SESSIONS_BUCKET, CANDIDATES_QUEUE_URL)."""

    code = "settings_error"


class FunctionFailed(KnowledgeClientError):
    """The invocation itself failed (a misconfigured function, a crash): not an answer."""


class Unreachable(KnowledgeClientError):
    """The service could not be reached or kept throttling after the retries allowed."""


REFUSALS: dict[str, type[Refused]] = {cls.code: cls for cls in (
    InvalidRequest, NotFound, UnknownAgent, InvalidFact, RecordUnreadable, Busy, StoreUnavailable, Gated, SaveLimit, Disabled,
    AccessDenied, NotConfigured)}


def refused(code: str, message: str) -> Refused:
    """The typed error for a refusal's code (an unknown code: Refused carrying it)."""
    return REFUSALS.get(code, Refused)(message, code)
