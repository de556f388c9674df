"""A typed Python client for Knowledge (see README.md)."""

from . import errors, models
from .client import KnowledgeClient
from .errors import (
    Busy,
    Disabled,
    FunctionFailed,
    Gated,
    InvalidFact,
    InvalidRequest,
    KnowledgeClientError,
    NotFound,
    RecordUnreadable,
    Refused,
    RequestInvalid,
    StoreUnavailable,
    Unreachable,
)
from .tools import TOOLS

__all__ = [
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
    "StoreUnavailable",
    "Unreachable",
    "errors",
    "models",
]
