"""A part built once per container, on first use: what a handler's cold start defers."""

from __future__ import annotations

import os
import threading
from typing import Callable, Generic, Mapping, Optional, TypeVar

T = TypeVar("T")

# Lambda's documented values of AWS_LAMBDA_INITIALIZATION_TYPE for which the init phase runs
# before, and apart from, any request.
AHEAD_OF_REQUESTS = frozenset({"provisioned-concurrency", "snap-start"})


class Deferred(Generic[T]):
    """A part built once per container, on first use, thread-safe.

    An on-demand cold start then imports only the handler's wiring, and the first call pays
    for the rest (settings, boto3, numpy, the clients): the cost moves, it does not go away.
    When initialisation runs ahead of requests (provisioned concurrency, SnapStart), nothing
    is gained by waiting, so `build_now_if_init_is_ahead` builds it during init.
    """

    def __init__(self, build: Callable[[], T]):
        self._build = build
        self._value: Optional[T] = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
        return self._value

    def build_now_if_init_is_ahead(self, environ: Optional[Mapping[str, str]] = None) -> "Deferred[T]":
        environ = os.environ if environ is None else environ
        if environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") in AHEAD_OF_REQUESTS:
            self.get()
        return self
