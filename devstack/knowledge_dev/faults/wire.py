"""HTTP/1.1 on the wire for the fault proxy: a message's head and body as framed, which service and action a
request is, the error answers AWS gives for a fault, and dropped connections."""

from __future__ import annotations

import base64
import contextlib
import socket
import struct
import time
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any, Optional
from urllib.parse import parse_qs, unquote, urlsplit

from .plan import CONFLICT, INTERNAL, SLOWDOWN, Request

_MAX_LINE = 65536
_MAX_HEADERS = 200
_TARGET_SERVICES = {"amazonsqs": "sqs", "awsevents": "events"}


# -- HTTP plumbing -------------------------------------------------------------------------------


class Closed(Exception):
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


def read_head(rfile: Any) -> Optional[_Message]:
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
            raise Closed()
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
        raise Closed()
    return _Message(b"".join(raw), first, headers)


def read_body(rfile: Any, message: _Message, until_close: bool = False) -> bytes:
    """The body exactly as framed on the wire (chunk sizes and trailers kept)."""
    if message.has_token("transfer-encoding", "chunked"):
        parts = []
        while True:
            size_line = rfile.readline(_MAX_LINE + 1)
            if not size_line.endswith(b"\n"):
                raise Closed()
            parts.append(size_line)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise Closed() from None
            if size == 0:
                while True:
                    trailer = rfile.readline(_MAX_LINE + 1)
                    if not trailer:
                        raise Closed()
                    parts.append(trailer)
                    if trailer in (b"\r\n", b"\n"):
                        return b"".join(parts)
            parts.append(_read_exactly(rfile, size + 2))
    length = message.header("content-length")
    if length is not None:
        try:
            return _read_exactly(rfile, int(length))
        except ValueError:
            raise Closed() from None
    return rfile.read() if until_close else b""


def _read_exactly(rfile: Any, size: int) -> bytes:
    if size < 0:
        raise Closed()
    data = rfile.read(size)
    if len(data) != size:
        raise Closed()
    return data


def classify(request: _Message, body: Optional[bytes], proxy_host: str) -> Request:
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


S3_ERRORS = {
    SLOWDOWN: (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
    INTERNAL: (500, "Internal Server Error", "InternalError", "We encountered an internal error. Please try again."),
    CONFLICT: (409, "Conflict", "ConditionalRequestConflict",
               "A conflicting conditional operation is currently in progress against this resource. Try again."),
}
_JSON_CODES = {SLOWDOWN: "ServiceUnavailable", INTERNAL: "InternalFailure", CONFLICT: "ConditionalRequestConflict"}


def error_response(fault: str, request: Request, seq: int, close: bool, json_protocol: bool) -> bytes:
    """The answer AWS gives for this fault: S3's XML error, or the JSON/query shape for SQS and events."""
    status, reason, code, message = S3_ERRORS[fault]
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


def drain_and_close(sock: socket.socket, seconds: float = 2.0) -> None:
    """Half-close, then swallow a body the client sends anyway (it need not wait for a 100), so the
    refusal is read instead of lost to the reset that closing on unread data would send."""
    deadline = time.monotonic() + seconds
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                break


def reset(sock: socket.socket, rfile: Any) -> None:
    """Drop the connection with a TCP RST, as a failing load balancer does."""
    rfile.close()  # the socket's descriptor only closes once its file objects are gone
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
