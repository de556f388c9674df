"""One AWS call, retried within the deadline, its errors translated once.

botocore's own retries are off for S3 (shared.aws): this loop is the only one, so it can
stop at the deadline, and a long-lived container never runs dry of botocore's retry quota.
Transient answers are retried with full-jitter backoff: throttling, 5xx, S3's 409
ConditionalRequestConflict (a concurrent conditional write, never "already done"), and
connections dropped or timed out. A 412 is an answer (the condition failed), not a fault.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Iterator, Optional

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError, ResponseStreamingError
from botocore.exceptions import ConnectionError as BotoConnectionError

from . import deadline
from .errors import AccessDenied, Conflict, KnowledgeError, NotFound, NotModified, StoreUnavailable

# Without a deadline (the CLI, a test), a call gives up after this many attempts.
MAX_ATTEMPTS = 6
BACKOFF_BASE = 0.05
BACKOFF_CAP = 2.0

_NOT_FOUND = {"NoSuchKey", "404", "NotFound", "NoSuchVersion", "NoSuchBucket"}
_PRECONDITION = {"PreconditionFailed", "412"}
_TRANSIENT = {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "ServiceUnavailable",
              "InternalError", "503", "500", "ConditionalRequestConflict", "OperationAborted", "409",
              "RequestTimeTooSkewed", "TooManyRequestsException", "InternalFailure"}
_CONNECTION = (BotoConnectionError, HTTPClientError, ResponseStreamingError)


def translate(error: Exception) -> KnowledgeError:
    """A botocore error as this package's typed errors (the one place that reads botocore's shapes)."""
    if isinstance(error, _CONNECTION):
        return StoreUnavailable(f"store unreachable ({type(error).__name__})")
    if not isinstance(error, ClientError):
        return KnowledgeError(f"store error ({type(error).__name__})")
    code = str(error.response.get("Error", {}).get("Code", ""))
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    if code in ("304", "NotModified") or status == 304:
        return NotModified("not modified")
    if code in _PRECONDITION or status == 412:
        return Conflict(f"conditional write failed ({code or status})")
    if code in _NOT_FOUND or status == 404:
        return NotFound(f"not found ({code or status})")
    if code in ("AccessDenied", "403") or status == 403:
        return AccessDenied(f"access denied ({code or status})")
    if code in _TRANSIENT or status >= 500 or status in (409, 429):
        return StoreUnavailable(f"store unavailable ({code or status})")
    if code == "InvalidArgument" and "version" in str(error).lower():
        return NotFound("no such version")
    return KnowledgeError(f"store error ({code or status})")


def _backoff(attempt: int) -> float:
    return random.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt))


def call(client: Any, operation: str, *, read_body: bool = False, sleep: Callable[[float], None] = time.sleep,
         **kwargs: Any) -> dict:
    """`client.<operation>(**kwargs)`, retried while transient and time allows.

    With `read_body`, the answer's streaming Body is read inside the loop (a connection
    dropped mid-body is retried too) and replaced by its bytes.
    """
    attempt = 0
    while True:
        deadline.check(0.0, f"S3 {operation}")
        try:
            answer = getattr(client, operation)(**kwargs)
            if read_body:
                answer["Body"] = answer["Body"].read()
            return answer
        except (ClientError, BotoCoreError) as error:
            translated = translate(error)
        if not isinstance(translated, StoreUnavailable):
            raise translated from None
        attempt += 1
        pause = _backoff(attempt)
        left = deadline.remaining()
        if (left is None and attempt >= MAX_ATTEMPTS) or (left is not None and left <= pause):
            raise translated from None
        sleep(pause)


def pages(client: Any, operation: str, **kwargs: Any) -> Iterator[dict]:
    """Every page of a list_objects_v2 or list_object_versions, each page retried on its own."""
    marker_fields = {"list_objects_v2": (("NextContinuationToken", "ContinuationToken"),),
                     "list_object_versions": (("NextKeyMarker", "KeyMarker"),
                                              ("NextVersionIdMarker", "VersionIdMarker"))}[operation]
    request = dict(kwargs)
    while True:
        page = call(client, operation, **request)
        yield page
        if not page.get("IsTruncated"):
            return
        for answer_field, request_field in marker_fields:
            value: Optional[str] = page.get(answer_field)
            if value:
                request[request_field] = value
            else:
                request.pop(request_field, None)
        request.pop("StartAfter", None)


def succeeds(expected: type[KnowledgeError], client: Any, operation: str, **kwargs: Any) -> bool:
    """One call: True when it worked, False when it failed in the `expected` way (a create-only
    put that finds the object there, a missing key); any other failure raised typed."""
    try:
        call(client, operation, **kwargs)
    except expected:
        return False
    return True
