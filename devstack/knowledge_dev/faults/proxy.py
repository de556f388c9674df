"""The fault proxy itself: FaultProxy (control, counters, the journal of decisions) and the threaded server that
forwards each request to the upstream or fails it as its decision says."""

from __future__ import annotations

import contextlib
import random
import select
import socket
import socketserver
import threading
from typing import Any, Collection, Iterator, Optional
from urllib.parse import urlsplit

from .plan import (
    CONFLICT,
    INTERNAL,
    RESET_AFTER,
    RESET_BEFORE,
    SLOWDOWN,
    Counters,
    Decision,
    FaultMix,
    InvalidFaultSpec,
    Request,
    Rule,
    RuleState,
    Stats,
)
from .wire import S3_ERRORS, Closed, classify, drain_and_close, error_response, read_body, read_head, reset

_UPSTREAM_TIMEOUT = 60.0


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
        self._rules: list[RuleState] = []
        self._stats = Stats()
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
            self._rules.append(RuleState(rule))
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


# -- HTTP plumbing -------------------------------------------------------------------------------


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = False  # server_close() joins them: a stopped proxy leaves no thread behind
    block_on_close = True
    allow_reuse_address = True
    request_queue_size = 128  # boto3 opens many connections at once; a full backlog costs a 1 s SYN retry
    proxy: FaultProxy


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
        except Closed:
            self.close()
            if not reused:
                raise
        # A kept-alive connection the server had closed before reading anything: a fresh one.
        self._connect()
        try:
            return self._exchange(method, data)
        except Closed:
            self.close()
            raise

    def _exchange(self, method: str, data: bytes) -> tuple[bytes, bool]:
        try:
            self.sock.sendall(data)  # type: ignore[union-attr]
            while True:
                head = read_head(self.rfile)
                if head is None:
                    raise Closed()
                status = int(head.first_line[1]) if head.first_line[1].isdigit() else 0
                if 100 <= status < 200 and status != 101:
                    continue  # the interim 100 Continue answers our own Expect; the client had its own
                break
            if method == "HEAD" or status in (204, 304):
                body = b""
            else:
                framed = head.has_token("transfer-encoding", "chunked") or head.header("content-length") is not None
                body = read_body(self.rfile, head, until_close=not framed)
                if not framed:
                    self.close()
                    return head.head + body, False
        except (OSError, ValueError):
            raise Closed() from None
        reusable = not head.has_token("connection", "close") and head.first_line[0] == "HTTP/1.1"
        if not reusable:
            self.close()
        return head.head + body, reusable

    def _connect(self) -> None:
        try:
            sock = socket.create_connection(self.proxy.upstream, timeout=_UPSTREAM_TIMEOUT)
        except OSError:
            raise Closed() from None
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
        except (Closed, OSError, ValueError):
            pass
        finally:
            upstream.close()
            proxy._track(sock, False)
            with contextlib.suppress(OSError):
                rfile.close()

    def _serve_one(self, proxy: FaultProxy, sock: socket.socket, rfile: Any, upstream: _Upstream) -> bool:
        """Serve one request; False when the connection must end."""
        message = read_head(rfile)
        if message is None:
            return False
        version = message.first_line[2] if len(message.first_line) > 2 else "HTTP/1.0"
        keep_alive = (not message.has_token("connection", "close") if version == "HTTP/1.1"
                      else message.has_token("connection", "keep-alive"))
        # Like S3, decide before the body of an Expect: 100-continue request: a refusal is sent
        # instead of the 100, and the body never crosses the wire.
        expects = version == "HTTP/1.1" and message.has_token("expect", "100-continue")
        body = None if expects else read_body(rfile, message)
        request = classify(message, body, proxy.host)
        decision = proxy._decide(request)
        fault = decision.fault
        if fault == RESET_BEFORE:
            proxy._wait(decision.delay)  # a hang, then the drop
            reset(sock, rfile)
            return False
        if fault in S3_ERRORS:
            proxy._wait(decision.delay)
            close = expects or not keep_alive
            answer = error_response(fault, request, decision.seq, close,
                                     json_protocol=message.header("x-amz-target") is not None)
            sock.sendall(answer)
            if expects:
                drain_and_close(sock)
            return not close
        if expects:
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = read_body(rfile, message)
        try:
            answer, reusable = upstream.exchange(request.method, message.head + (body or b""))
        except Closed:
            proxy._count("upstream_errors")
            sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return False
        proxy._count("forwarded")
        proxy._wait(decision.delay)
        if fault == RESET_AFTER:
            reset(sock, rfile)
            return False
        sock.sendall(answer)
        # An answer framed by the end of the stream (or marked close) ends this connection too.
        return keep_alive and reusable
