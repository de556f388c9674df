"""A typed Python client for Knowledge (see README.md)."""

from . import errors, models
from .client import KnowledgeClient
from .errors import (
    Busy,
    FunctionFailed,
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

__all__ = ["KnowledgeClient", "KnowledgeClientError", "RequestInvalid", "Refused", "InvalidRequest", "NotFound",
           "InvalidFact", "RecordUnreadable", "Busy", "StoreUnavailable", "FunctionFailed", "Unreachable",
           "errors", "models"]
