"""A fault-injecting reverse proxy in front of moto's server: the bad days of S3, on demand.

moto never throttles, never answers 409 and never drops a connection; real S3 does all three.
Point boto3 at `FaultProxy(...).url` instead of moto's endpoint and every request is forwarded
byte-for-byte, except the ones a seeded `FaultMix` or a deterministic `Rule` picks: those get
503 SlowDown, 500 InternalError, 409 ConditionalRequestConflict (S3's own XML bodies and
headers), a connection reset before forwarding (S3 never saw it) or after it (S3 applied it,
the client never hears so), and optionally a delay before the answer.

    with FaultProxy(moto_endpoint, mix=FaultMix(slowdown=0.1, reset=0.05), seed=7) as proxy:
        with proxy.quiet():
            set_up_data(boto3.client("s3", endpoint_url=proxy.url))
        run_the_code_under_test(proxy.url)
        print(proxy.counters)
"""

from __future__ import annotations

import base64
import contextlib
import random
import re
import select
import socket
import socketserver
import struct
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any, Collection, Iterator, Mapping, Optional, Union
from urllib.parse import parse_qs, unquote, urlsplit

SLOWDOWN = "slowdown"
INTERNAL = "internal"
RESET_BEFORE = "reset_before"
RESET_AFTER = "reset_after"
CONFLICT = "conflict"
FAULTS = (SLOWDOWN, INTERNAL, RESET_BEFORE, RESET_AFTER, CONFLICT)
CONDITIONAL = ("If-Match", "If-None-Match")

_MAX_LINE = 65536
_MAX_HEADERS = 200
_UPSTREAM_TIMEOUT = 60.0
_TARGET_SERVICES = {"amazonsqs": "sqs", "awsevents": "events"}


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
class _RuleState:
    rule: Rule
    matched: int = 0


@dataclass
class _Stats:
    seen: int = 0
    forwarded: int = 0
    delayed: int = 0
    upstream_errors: int = 0
    faults: dict = field(default_factory=lambda: dict.fromkeys(FAULTS, 0))
    seen_by_service: dict = field(default_factory=dict)


class FaultProxy:
    """A threaded HTTP reverse proxy on 127.0.0.1 (a free port unless `port` is given)."""

    def __init__(self, upstream: str, mix: Optional[FaultMix] = None, seed: int = 0,
                 rules: Collection[Rule] = (), host: str = "127.0.0.1", port: int = 0):
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise InvalidFaultSpec(f"upstream must be http://host:port, not {upstream!r}")
        if mix is not None and not isinstance(mix, FaultMix):
            raise InvalidFaultSpec("mix must be a FaultMix")
        self.upstream = (parts.hostname, parts.port)
        self._mix = mix
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._quiet = 0
        self._rules: list[_RuleState] = []
        self._stats = _Stats()
        self._journal: list[Decision] = []
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        for rule in rules:
            self.add_rule(rule)
        self._server = _Server((host, port), _Handler)
        self._server.proxy = self
        self.host = host
        self.port = self._server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        # A short poll makes stop() quick: shutdown() waits for the accept loop to look up.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fault-proxy",
                                        daemon=True)
        self._started = False

    # -- control -------------------------------------------------------------------------------

    def start(self) -> "FaultProxy":
        self._thread.start()
        self._started = True
        return self

    def stop(self) -> None:
        """Stop accepting, close every open connection and wait for the handler threads."""
        self._stopping.set()
        if self._started:
            self._server.shutdown()
        with self._lock:
            open_sockets = list(self._sockets)
        for sock in open_sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._server.server_close()

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @contextlib.contextmanager
    def quiet(self) -> Iterator["FaultProxy"]:
        """No faults inside the block: rules do not count and the mix draws nothing."""
        with self._lock:
            self._quiet += 1
        try:
            yield self
        finally:
            with self._lock:
                self._quiet -= 1

    @property
    def mix(self) -> Optional[FaultMix]:
        return self._mix

    @mix.setter
    def mix(self, mix: Optional[FaultMix]) -> None:
        if mix is not None and not isinstance(mix, FaultMix):
            raise InvalidFaultSpec("mix must be a FaultMix")
        with self._lock:
            self._mix = mix

    def add_rule(self, rule: Rule) -> int:
        """Add a rule after the existing ones (the first rule that fires wins); returns its index."""
        if not isinstance(rule, Rule):
            raise InvalidFaultSpec("rules must be Rule instances")
        with self._lock:
            self._rules.append(_RuleState(rule))
            return len(self._rules) - 1

    def clear_rules(self) -> None:
        with self._lock:
            self._rules.clear()

    @property
    def counters(self) -> Counters:
        with self._lock:
            s = self._stats
            return Counters(s.seen, s.forwarded, dict(s.faults), s.delayed, s.upstream_errors,
                            dict(s.seen_by_service))

    @property
    def journal(self) -> list[Decision]:
        """Every request's decision so far, in the order they were decided."""
        with self._lock:
            return list(self._journal)

    # -- decisions -----------------------------------------------------------------------------

    def _decide(self, request: Request) -> Decision:
        with self._lock:
            stats = self._stats
            stats.seen += 1
            stats.seen_by_service[request.service] = stats.seen_by_service.get(request.service, 0) + 1
            fault, delay, chosen_by = None, 0.0, None
            if not self._quiet:
                for index, state in enumerate(self._rules):
                    if state.rule.matches(request):
                        state.matched += 1
                        if chosen_by is None and state.rule.fires_on(state.matched):
                            chosen_by, fault, delay = index, state.rule.fault, state.rule.delay
                mix = self._mix
                if mix is not None and request.service in mix.services:
                    # Three draws for every eligible request, whatever fires, so a rule added or
                    # a share changed does not shift the random faults of the other requests.
                    pick, split, slow = self._rng.random(), self._rng.random(), self._rng.random()
                    if chosen_by is None:
                        fault = _pick(mix, pick, split, request.conditional)
                        delay = mix.delay_seconds if slow < mix.delay else 0.0
            if fault is not None:
                stats.faults[fault] += 1
            if delay > 0:
                stats.delayed += 1
            decision = Decision(stats.seen, request.service, request.method, request.path, request.action,
                                fault, delay, chosen_by)
            self._journal.append(decision)
            return decision

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self._stats, name, getattr(self._stats, name) + 1)

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._sockets.add(sock)
            else:
                self._sockets.discard(sock)

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


def _pick(mix: FaultMix, pick: float, split: float, conditional: bool) -> Optional[str]:
    edge = mix.slowdown
    if pick < edge:
        return SLOWDOWN
    edge += mix.internal
    if pick < edge:
        return INTERNAL
    edge += mix.reset
    if pick < edge:
        return RESET_AFTER if split < mix.reset_after_share else RESET_BEFORE
    edge += mix.conflict_on_conditional
    if conditional and pick < edge:
        return CONFLICT
    return None


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


# -- HTTP plumbing -------------------------------------------------------------------------------


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = False  # server_close() joins them: a stopped proxy leaves no thread behind
    block_on_close = True
    allow_reuse_address = True
    request_queue_size = 128  # boto3 opens many connections at once; a full backlog costs a 1 s SYN retry
    proxy: FaultProxy


class _Closed(Exception):
    """The client went away or sent something that is not HTTP; the connection ends."""


@dataclass
class _Message:
    head: bytes  # request or status line and headers, as received, blank line included
    first_line: list[str]
    headers: list[tuple[str, str]]

    def header(self, name: str) -> Optional[str]:
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def has_token(self, name: str, token: str) -> bool:
        value = self.header(name) or ""
        return token in (part.strip().lower() for part in value.split(","))


def _read_head(rfile: Any) -> Optional[_Message]:
    """The start line and headers of the next message; None on a clean end of the stream."""
    raw = [rfile.readline(_MAX_LINE + 1)]
    while raw[0] in (b"\r\n", b"\n"):  # tolerated between messages (RFC 9112 2.2)
        raw[0] = rfile.readline(_MAX_LINE + 1)
    if not raw[0]:
        return None
    headers: list[tuple[str, str]] = []
    while True:
        line = rfile.readline(_MAX_LINE + 1)
        if not line or len(line) > _MAX_LINE or len(raw) > _MAX_HEADERS:
            raise _Closed()
        raw.append(line)
        if line in (b"\r\n", b"\n"):
            break
        text = line.decode("latin-1").rstrip("\r\n")
        if text[:1] in (" ", "\t") and headers:  # obsolete line folding
            headers[-1] = (headers[-1][0], headers[-1][1] + " " + text.strip())
        elif ":" in text:
            key, value = text.split(":", 1)
            headers.append((key.strip(), value.strip()))
    first = raw[0].decode("latin-1").strip().split(None, 2)
    if len(first) < 2:
        raise _Closed()
    return _Message(b"".join(raw), first, headers)


def _read_body(rfile: Any, message: _Message, until_close: bool = False) -> bytes:
    """The body exactly as framed on the wire (chunk sizes and trailers kept)."""
    if message.has_token("transfer-encoding", "chunked"):
        parts = []
        while True:
            size_line = rfile.readline(_MAX_LINE + 1)
            if not size_line.endswith(b"\n"):
                raise _Closed()
            parts.append(size_line)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _Closed() from None
            if size == 0:
                while True:
                    trailer = rfile.readline(_MAX_LINE + 1)
                    if not trailer:
                        raise _Closed()
                    parts.append(trailer)
                    if trailer in (b"\r\n", b"\n"):
                        return b"".join(parts)
            parts.append(_read_exactly(rfile, size + 2))
    length = message.header("content-length")
    if length is not None:
        try:
            return _read_exactly(rfile, int(length))
        except ValueError:
            raise _Closed() from None
    return rfile.read() if until_close else b""


def _read_exactly(rfile: Any, size: int) -> bytes:
    if size < 0:
        raise _Closed()
    data = rfile.read(size)
    if len(data) != size:
        raise _Closed()
    return data


def _classify(request: _Message, body: Optional[bytes], proxy_host: str) -> Request:
    method, target = request.first_line[0].upper(), request.first_line[1]
    parts = urlsplit(target)
    path, query = unquote(parts.path or "/"), parts.query
    service = _signed_service(request.header("authorization"), query)
    target_header = request.header("x-amz-target")
    action = target_header.rsplit(".", 1)[-1] if target_header else None
    if service is None and target_header:
        service = _TARGET_SERVICES.get(target_header.split(".", 1)[0].split("_", 1)[0].lower(), "unknown")
    if action is None and method == "POST" and body and "x-www-form-urlencoded" in (
            request.header("content-type") or ""):
        action = (parse_qs(body.decode("latin-1")).get("Action") or [None])[0]
        if service is None and action:
            service = "sqs"  # the only query-protocol service moto stands in for here
    service = service or "s3"
    if service == "s3":
        hostname = (request.header("host") or "").rsplit(":", 1)[0].lower()
        if hostname.endswith(".localhost") and hostname != proxy_host:  # virtual-hosted style
            path = "/" + hostname[: -len(".localhost")] + path
    return Request(method, path, query, service, action, frozenset(k.lower() for k, _ in request.headers))


def _signed_service(authorization: Optional[str], query: str) -> Optional[str]:
    """The service named in the SigV4 credential scope (header, or a presigned URL's query)."""
    credential = None
    if authorization and "Credential=" in authorization:
        credential = authorization.split("Credential=", 1)[1].split(",", 1)[0]
    elif "X-Amz-Credential=" in query:
        credential = (parse_qs(query).get("X-Amz-Credential") or [""])[0]
    scope = (credential or "").strip().split("/")
    return scope[3].lower() if len(scope) >= 5 else None


_S3_ERRORS = {
    SLOWDOWN: (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
    INTERNAL: (500, "Internal Server Error", "InternalError", "We encountered an internal error. Please try again."),
    CONFLICT: (409, "Conflict", "ConditionalRequestConflict",
               "A conflicting conditional operation is currently in progress against this resource. Try again."),
}
_JSON_CODES = {SLOWDOWN: "ServiceUnavailable", INTERNAL: "InternalFailure", CONFLICT: "ConditionalRequestConflict"}


def _error_response(fault: str, request: Request, seq: int, close: bool, json_protocol: bool) -> bytes:
    """The answer AWS gives for this fault: S3's XML error, or the JSON/query shape for SQS and events."""
    status, reason, code, message = _S3_ERRORS[fault]
    request_id = f"{seq:016X}"
    host_id = base64.b64encode(f"fault-proxy/{seq}".encode()).decode()
    headers = [("x-amz-request-id", request_id), ("x-amz-id-2", host_id),
               ("Date", formatdate(usegmt=True)), ("Server", "AmazonS3")]
    if request.service == "s3":
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                f"<Error><Code>{code}</Code><Message>{message}</Message>"
                f"<RequestId>{request_id}</RequestId><HostId>{host_id}</HostId></Error>").encode()
        headers.append(("Content-Type", "application/xml"))
    elif json_protocol:
        code = _JSON_CODES[fault]
        body = f'{{"__type":"{code}","message":"{message}"}}'.encode()
        headers = [("x-amzn-RequestId", request_id), ("Date", formatdate(usegmt=True)),
                   ("Content-Type", "application/x-amz-json-1.0")]
        if request.service == "sqs":  # SQS's JSON protocol still names its errors as the query one did
            headers.append(("x-amzn-query-error", f"{code};Receiver"))
    else:
        code = _JSON_CODES[fault]
        body = (f"<ErrorResponse><Error><Type>Receiver</Type><Code>{code}</Code><Message>{message}</Message>"
                f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>").encode()
        headers = [("x-amzn-RequestId", request_id), ("Date", formatdate(usegmt=True)),
                   ("Content-Type", "text/xml")]
    if request.method == "HEAD":  # S3 answers a failed HEAD with the status and no body
        body = b""
    headers.append(("Content-Length", str(len(body))))
    if close:
        headers.append(("Connection", "close"))
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


class _Upstream:
    """One connection to the upstream server, reused while it stays open (as a client's pool would)."""

    def __init__(self, proxy: FaultProxy):
        self.proxy = proxy
        self.sock: Optional[socket.socket] = None
        self.rfile: Any = None

    def exchange(self, method: str, data: bytes) -> tuple[bytes, bool]:
        """Send one request; answer (the raw response, whether the connection may be reused)."""
        reused = self.sock is not None and self._still_open()
        if not reused:
            self.close()
            self._connect()
        try:
            return self._exchange(method, data)
        except _Closed:
            self.close()
            if not reused:
                raise
        # A kept-alive connection the server had closed before reading anything: a fresh one.
        self._connect()
        try:
            return self._exchange(method, data)
        except _Closed:
            self.close()
            raise

    def _exchange(self, method: str, data: bytes) -> tuple[bytes, bool]:
        try:
            self.sock.sendall(data)  # type: ignore[union-attr]
            while True:
                head = _read_head(self.rfile)
                if head is None:
                    raise _Closed()
                status = int(head.first_line[1]) if head.first_line[1].isdigit() else 0
                if 100 <= status < 200 and status != 101:
                    continue  # the interim 100 Continue answers our own Expect; the client had its own
                break
            if method == "HEAD" or status in (204, 304):
                body = b""
            else:
                framed = head.has_token("transfer-encoding", "chunked") or head.header("content-length") is not None
                body = _read_body(self.rfile, head, until_close=not framed)
                if not framed:
                    self.close()
                    return head.head + body, False
        except (OSError, ValueError):
            raise _Closed() from None
        reusable = not head.has_token("connection", "close") and head.first_line[0] == "HTTP/1.1"
        if not reusable:
            self.close()
        return head.head + body, reusable

    def _connect(self) -> None:
        try:
            sock = socket.create_connection(self.proxy.upstream, timeout=_UPSTREAM_TIMEOUT)
        except OSError:
            raise _Closed() from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.rfile = sock, sock.makefile("rb")
        self.proxy._track(sock, True)

    def _still_open(self) -> bool:
        # An idle kept-alive socket that is readable has been closed (or spoke out of turn).
        readable, _, _ = select.select([self.sock], [], [], 0)
        return not readable

    def close(self) -> None:
        if self.sock is not None:
            self.proxy._track(self.sock, False)
            with contextlib.suppress(OSError):
                self.rfile.close()
                self.sock.close()
        self.sock = self.rfile = None


class _Handler(socketserver.BaseRequestHandler):
    """One client connection: requests in order, kept alive as long as both sides allow."""

    server: _Server

    def handle(self) -> None:
        proxy = self.server.proxy
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        proxy._track(sock, True)
        rfile = sock.makefile("rb")
        upstream = _Upstream(proxy)
        try:
            while not proxy._stopping.is_set():
                if not self._serve_one(proxy, sock, rfile, upstream):
                    break
        except (_Closed, OSError, ValueError):
            pass
        finally:
            upstream.close()
            proxy._track(sock, False)
            with contextlib.suppress(OSError):
                rfile.close()

    def _serve_one(self, proxy: FaultProxy, sock: socket.socket, rfile: Any, upstream: _Upstream) -> bool:
        """Serve one request; False when the connection must end."""
        message = _read_head(rfile)
        if message is None:
            return False
        version = message.first_line[2] if len(message.first_line) > 2 else "HTTP/1.0"
        keep_alive = (not message.has_token("connection", "close") if version == "HTTP/1.1"
                      else message.has_token("connection", "keep-alive"))
        # Like S3, decide before the body of an Expect: 100-continue request: a refusal is sent
        # instead of the 100, and the body never crosses the wire.
        expects = version == "HTTP/1.1" and message.has_token("expect", "100-continue")
        body = None if expects else _read_body(rfile, message)
        request = _classify(message, body, proxy.host)
        decision = proxy._decide(request)
        fault = decision.fault
        if fault == RESET_BEFORE:
            proxy._wait(decision.delay)  # a hang, then the drop
            _reset(sock, rfile)
            return False
        if fault in _S3_ERRORS:
            proxy._wait(decision.delay)
            close = expects or not keep_alive
            answer = _error_response(fault, request, decision.seq, close,
                                     json_protocol=message.header("x-amz-target") is not None)
            sock.sendall(answer)
            if expects:
                _drain_and_close(sock)
            return not close
        if expects:
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = _read_body(rfile, message)
        try:
            answer, reusable = upstream.exchange(request.method, message.head + (body or b""))
        except _Closed:
            proxy._count("upstream_errors")
            sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return False
        proxy._count("forwarded")
        proxy._wait(decision.delay)
        if fault == RESET_AFTER:
            _reset(sock, rfile)
            return False
        sock.sendall(answer)
        # An answer framed by the end of the stream (or marked close) ends this connection too.
        return keep_alive and reusable


def _drain_and_close(sock: socket.socket, seconds: float = 2.0) -> None:
    """Half-close, then swallow a body the client sends anyway (it need not wait for a 100), so the
    refusal is read instead of lost to the reset that closing on unread data would send."""
    deadline = time.monotonic() + seconds
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                break


def _reset(sock: socket.socket, rfile: Any) -> None:
    """Drop the connection with a TCP RST, as a failing load balancer does."""
    rfile.close()  # the socket's descriptor only closes once its file objects are gone
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
