"""A typed Python client for Knowledge (see README.md)."""

from . import errors, models
from .client import KnowledgeClient
from .errors import (
    AccessDenied,
    Busy,
    Disabled,
    FunctionFailed,
    Gated,
    InvalidFact,
    InvalidRequest,
    KnowledgeClientError,
    NotConfigured,
    NotFound,
    RecordUnreadable,
    Refused,
    RequestInvalid,
    SaveLimit,
    StoreUnavailable,
    UnknownAgent,
    Unreachable,
)
from .tools import TOOLS

__all__ = [
    "AccessDenied",
    "NotConfigured",
    "TOOLS",
    "Busy",
    "Disabled",
    "FunctionFailed",
    "Gated",
    "InvalidFact",
    "InvalidRequest",
    "KnowledgeClient",
    "KnowledgeClientError",
    "NotFound",
    "RecordUnreadable",
    "Refused",
    "RequestInvalid",
    "SaveLimit",
    "StoreUnavailable",
    "UnknownAgent",
    "Unreachable",
    "errors",
    "models",
]
