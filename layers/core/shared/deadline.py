"""The time a piece of work must be done by, derived from what Lambda says is left.

A handler sets it once per invocation (`until(at_the_latest(context))`); every S3 retry loop
and every model call below reads it, so a record that cannot finish in time fails before the
function's timeout, never by it. It is a context variable: each thread of a pool gets it
through `carry`.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Any, Callable, Iterator, Optional, TypeVar

from .errors import DeadlineExceeded

# Kept free at the end of an invocation so the handler can still answer (partial batch
# failures, the retrieval block) after the last piece of work gives up.
RESERVE_SECONDS = 2.0

_current: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar("knowledge_deadline", default=None)
T = TypeVar("T")


def current() -> Optional[float]:
    """The deadline in force (a time.monotonic() value), or None when there is none."""
    return _current.get()


def remaining(clock: Callable[[], float] = time.monotonic) -> Optional[float]:
    moment = _current.get()
    return None if moment is None else moment - clock()


def check(needed: float = 0.0, what: str = "work") -> None:
    """Raise DeadlineExceeded when less than `needed` seconds are left."""
    left = remaining()
    if left is not None and left < needed:
        raise DeadlineExceeded(f"{what}: {max(left, 0.0):.1f} s left, not enough to start")


def at_the_latest(context: Any, reserve: float = RESERVE_SECONDS) -> Optional[float]:
    """The deadline for an invocation: Lambda's remaining time less `reserve`."""
    get = getattr(context, "get_remaining_time_in_millis", None)
    if get is None:
        return None
    return time.monotonic() + max(0.0, get() / 1000.0 - reserve)


@contextlib.contextmanager
def until(moment: Optional[float]) -> Iterator[None]:
    """Work inside the block must be done by `moment` (the earlier of it and any outer deadline)."""
    outer = _current.get()
    if moment is None or (outer is not None and outer < moment):
        moment = outer
    token = _current.set(moment)
    try:
        yield
    finally:
        _current.reset(token)


def carry(function: Callable[..., T]) -> Callable[..., T]:
    """`function` bound to the caller's deadline, for a worker thread (threads start without it)."""
    moment = _current.get()

    def run(*args: Any, **kwargs: Any) -> T:
        token = _current.set(moment)
        try:
            return function(*args, **kwargs)
        finally:
            _current.reset(token)

    return run
