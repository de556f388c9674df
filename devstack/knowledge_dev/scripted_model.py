"""A scripted model: a real local HTTP server speaking the OpenAI-compatible chat API, which the local
stack and the tests reach through the product's real httpx client (no model can be downloaded here).
It answers from rules or a function, labelled SCRIPTED, or with a fault (`hang`, `trickle`,
`truncated`, `reset`, `throttled`, `server_error`) to prove the client's deadlines.
docs/local-stack.md, "The scripted model"."""

from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Optional, Union


@dataclass(frozen=True)
class Fault:
    """A reply that misbehaves below the HTTP status: see hang, trickle, truncated and reset."""

    kind: str
    content: str = "[]"
    seconds: Optional[float] = None  # hang: answer after this long (None: never); trickle: between bytes
    lead: Optional[int] = None  # trickle: spaces sent before the answer (None: endless)


Reply = Union[str, tuple, Fault]  # content, (status, body[, headers]) for an error / raw answer, or a fault
Responder = Callable[[dict], Reply]


def hang(seconds: Optional[float] = None, content: str = "[]") -> Fault:
    """Read the request, then say nothing (for `seconds`, then answer `content`; None: until stopped)."""
    return Fault("hang", content, seconds)


def trickle(every: float = 1.0, content: str = "[]", lead: Optional[int] = None) -> Fault:
    """Send 200 and the headers at once, then one byte every `every` seconds: `lead` spaces (JSON
    allows them; None: endlessly) and then the answer."""
    return Fault("trickle", content, every, lead)


def truncated(content: str = "[]") -> Fault:
    """A complete HTTP 200 whose JSON body is cut in half (its content-length matches the cut)."""
    return Fault("truncated", content)


def reset() -> Fault:
    """Read the request, then drop the connection with a TCP reset."""
    return Fault("reset")


def throttled(retry_after: Union[int, float, str] = 30) -> tuple:
    return 429, {"error": {"message": "rate limited"}}, {"retry-after": str(retry_after)}


def server_error(status: int = 503) -> tuple:
    return status, {"error": {"message": "overloaded"}}


def completion(content: str, model: str = "scripted") -> dict:
    return {"id": "scripted", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


def rules_responder(rules: list[dict], default: str = "[]", hits: Optional[list] = None) -> Responder:
    """The first rule whose `contains` text appears in the prompt gives the answer (JSON-encoded
    unless it is already a string). `hits`, when given, gets one entry per request: the index of
    the rule that answered, or None where `default` did — so a test sees a rule whose prompt
    text changed answer nothing, instead of the product quietly learning nothing."""

    def respond(request: dict) -> Reply:
        prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        for index, rule in enumerate(rules):
            if all(text in prompt for text in _as_list(rule["contains"])):
                if hits is not None:
                    hits.append(index)
                answer = rule["answer"]
                return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        if hits is not None:
            hits.append(None)
        return default

    return respond


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


class ScriptedModel:
    def __init__(self, responder: Responder, port: int = 0, host: str = "127.0.0.1"):
        self.responder = responder
        self.requests: list[dict] = []
        self.authorizations: list[Optional[str]] = []  # each request's Authorization header, in order
        # Set by stop(): every hung or trickling reply ends, so shutdown never waits on a client.
        self._stopping = threading.Event()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # no access log: prompts are customer text
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}})
                length = int(self.headers.get("content-length", 0))
                try:
                    request = json.loads(self.rfile.read(length))
                except ValueError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                model.requests.append(request)
                model.authorizations.append(self.headers.get("authorization"))
                reply = model.responder(request)
                try:
                    if isinstance(reply, Fault):
                        return self._fault(reply, request.get("model", "scripted"))
                    if isinstance(reply, tuple):
                        status, body = reply[0], reply[1]
                        return self._send(status, body, reply[2] if len(reply) > 2 else None)
                    return self._send(200, completion(reply, request.get("model", "scripted")))
                except OSError:  # the client gave up (its deadline): nothing left to answer
                    self.close_connection = True

            def _send(self, status: int, body: Any, headers: dict | None = None) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _fault(self, fault: Fault, name: str) -> None:
                answer = json.dumps(completion(fault.content, name))
                if fault.kind == "hang":
                    if model._stopping.wait(fault.seconds):
                        self.close_connection = True
                        return
                    return self._send(200, answer)
                if fault.kind == "truncated":
                    return self._send(200, answer[: len(answer) // 2])
                if fault.kind == "reset":
                    # SO_LINGER 0: close() sends RST instead of FIN, as a crashed proxy would.
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return
                if fault.kind == "trickle":
                    return self._trickle(fault, answer)
                raise ValueError(f"unknown fault {fault.kind!r}")

            def _trickle(self, fault: Fault, answer: str) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("connection", "close")  # no content-length: the body ends when we close
                self.end_headers()
                self.wfile.flush()
                self.close_connection = True
                lead: Iterator[bytes] = (itertools.repeat(b" ") if fault.lead is None
                                         else iter([b" "] * fault.lead))
                for byte in itertools.chain(lead, (bytes([b]) for b in answer.encode())):
                    if model._stopping.wait(fault.seconds):
                        return
                    self.wfile.write(byte)
                    self.wfile.flush()

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://{host}:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)

    def start(self) -> "ScriptedModel":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedModel":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts connections and never reads or answers them:
    a model endpoint (or any endpoint) that hangs before a byte is exchanged."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    held, stop = [], threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
