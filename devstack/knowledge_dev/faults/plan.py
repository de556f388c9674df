"""The fault plan: the faults, a seeded random FaultMix and deterministic Rules, and what the proxy records of each
request (Request, Decision, Counters)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Optional, Union

SLOWDOWN = "slowdown"
INTERNAL = "internal"
RESET_BEFORE = "reset_before"
RESET_AFTER = "reset_after"
CONFLICT = "conflict"
FAULTS = (SLOWDOWN, INTERNAL, RESET_BEFORE, RESET_AFTER, CONFLICT)
CONDITIONAL = ("If-Match", "If-None-Match")


class InvalidFaultSpec(ValueError):
    """A FaultMix, Rule or FaultProxy argument that cannot describe a fault plan."""

    code = "invalid_fault_spec"


@dataclass(frozen=True)
class FaultMix:
    """Random faults, as shares of the eligible requests (drawn from the proxy's seeded RNG).

    `reset` is split between before and after forwarding by `reset_after_share`;
    `conflict_on_conditional` only applies to requests carrying If-Match or If-None-Match;
    `delay` is an independent share of requests answered `delay_seconds` late.
    """

    slowdown: float = 0.0
    internal: float = 0.0
    reset: float = 0.0
    conflict_on_conditional: float = 0.0
    delay: float = 0.0
    delay_seconds: float = 0.2
    reset_after_share: float = 0.5
    services: Collection[str] = ("s3",)

    def __post_init__(self) -> None:
        for name in ("slowdown", "internal", "reset", "conflict_on_conditional", "delay", "reset_after_share"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
                raise InvalidFaultSpec(f"FaultMix.{name} must be a share between 0 and 1, not {value!r}")
        if self.slowdown + self.internal + self.reset + self.conflict_on_conditional > 1.0 + 1e-9:
            raise InvalidFaultSpec("FaultMix: slowdown + internal + reset + conflict_on_conditional exceed 1")
        _check_delay("FaultMix.delay_seconds", self.delay_seconds)
        object.__setattr__(self, "services", _services("FaultMix.services", self.services))
        if self.services is None:
            raise InvalidFaultSpec("FaultMix.services names at least one service (s3, sqs, events)")


@dataclass(frozen=True)
class Rule:
    """A deterministic fault: on the `nth` request matching every given filter (or on each one).

    Filters: `method` (exact, e.g. "PUT"), `path` (regex searched in the decoded path-style path
    "/bucket/key", virtual-host requests included), `query` (regex searched in the raw query
    string), `header` (a name, or names of which one must be present; `CONDITIONAL` means If-Match
    or If-None-Match), `service` ("s3", "sqs", "events"; None for any) and `action` (regex fully
    matching the SQS/EventBridge operation, e.g. "SendMessage"). `nth` is 1-based: an int, a
    collection of ints, or None for every match. `fault` is one of FAULTS, or None for a slow but
    correct answer; `delay` seconds are waited before answering (or dropping the connection).
    """

    fault: Optional[str] = None
    method: Optional[str] = None
    path: Optional[str] = None
    query: Optional[str] = None
    header: Union[str, Collection[str], None] = None
    service: Union[str, Collection[str], None] = "s3"
    action: Optional[str] = None
    nth: Union[int, Collection[int], None] = None
    delay: float = 0.0
    _path_re: Optional[re.Pattern] = field(default=None, init=False, repr=False, compare=False)
    _query_re: Optional[re.Pattern] = field(default=None, init=False, repr=False, compare=False)
    _action_re: Optional[re.Pattern] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.fault is not None and self.fault not in FAULTS:
            raise InvalidFaultSpec(f"Rule.fault must be one of {', '.join(FAULTS)} or None, not {self.fault!r}")
        _check_delay("Rule.delay", self.delay)
        if self.fault is None and self.delay <= 0:
            raise InvalidFaultSpec("Rule needs a fault, a delay, or both")
        if self.method is not None:
            if not isinstance(self.method, str) or not self.method.isalpha():
                raise InvalidFaultSpec(f"Rule.method must be an HTTP method such as 'PUT', not {self.method!r}")
            object.__setattr__(self, "method", self.method.upper())
        for name in ("path", "query", "action"):
            object.__setattr__(self, f"_{name}_re", _regex(f"Rule.{name}", getattr(self, name)))
        if self.header is not None:
            headers = _several(self.header, str)
            if not headers or not all(isinstance(h, str) and h.strip() for h in headers):
                raise InvalidFaultSpec(f"Rule.header must name one or more headers, not {self.header!r}")
            object.__setattr__(self, "header", tuple(h.strip().lower() for h in headers))
        object.__setattr__(self, "service", _services("Rule.service", self.service))
        if self.nth is not None:
            nth = _several(self.nth, int)
            if not nth or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in nth):
                raise InvalidFaultSpec(f"Rule.nth must be a count from 1 (or several), not {self.nth!r}")
            object.__setattr__(self, "nth", frozenset(nth))

    def matches(self, request: "Request") -> bool:
        if self.service is not None and request.service not in self.service:
            return False
        if self.method is not None and request.method != self.method:
            return False
        if self.header is not None and not any(name in request.header_names for name in self.header):
            return False
        if self._path_re is not None and not self._path_re.search(request.path):
            return False
        if self._query_re is not None and not self._query_re.search(request.query):
            return False
        return self._action_re is None or self._action_re.fullmatch(request.action or "") is not None

    def fires_on(self, count: int) -> bool:
        return self.nth is None or count in self.nth  # type: ignore[operator]


@dataclass(frozen=True)
class Request:
    """What the proxy knows of one request when it decides its fate (no body, no header values)."""

    method: str
    path: str  # decoded, path-style: "/bucket/key"
    query: str
    service: str
    action: Optional[str]
    header_names: frozenset[str]

    @property
    def conditional(self) -> bool:
        return any(name.lower() in self.header_names for name in CONDITIONAL)


@dataclass(frozen=True)
class Decision:
    """One request's fate, in arrival order: `fault` None means forwarded untouched."""

    seq: int
    service: str
    method: str
    path: str
    action: Optional[str]
    fault: Optional[str]
    delay: float
    rule: Optional[int]  # index in the proxy's rules of the rule that chose it, None for the mix


@dataclass(frozen=True)
class Counters:
    """A snapshot: requests seen, forwarded upstream, faults injected by kind."""

    seen: int
    forwarded: int
    faults: Mapping[str, int]
    delayed: int
    upstream_errors: int
    seen_by_service: Mapping[str, int]

    @property
    def injected(self) -> int:
        return sum(self.faults.values())


@dataclass
class RuleState:
    rule: Rule
    matched: int = 0


@dataclass
class Stats:
    seen: int = 0
    forwarded: int = 0
    delayed: int = 0
    upstream_errors: int = 0
    faults: dict = field(default_factory=lambda: dict.fromkeys(FAULTS, 0))
    seen_by_service: dict = field(default_factory=dict)


def _check_delay(name: str, value: Any) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 300.0:
        raise InvalidFaultSpec(f"{name} must be seconds between 0 and 300, not {value!r}")


def _regex(name: str, pattern: Optional[str]) -> Optional[re.Pattern]:
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise InvalidFaultSpec(f"{name} must be a regular expression, not {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidFaultSpec(f"{name} is not a valid regular expression: {exc}") from None


def _several(value: Any, one: type) -> tuple:
    """One value or a collection of them, as a tuple (empty when it is neither)."""
    if isinstance(value, one) or isinstance(value, (str, bytes)):
        return (value,)
    try:
        return tuple(value)
    except TypeError:
        return ()


def _services(name: str, value: Any) -> Optional[frozenset[str]]:
    if value is None:
        return None
    names = frozenset(_several(value, str))
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise InvalidFaultSpec(f"{name} must be a service name or names, not {value!r}")
    return frozenset(n.strip().lower() for n in names)
