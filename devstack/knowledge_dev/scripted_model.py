"""A scripted model: a real local HTTP server speaking the OpenAI-compatible chat API.

No model can be downloaded here, so the local stack (and the tests) talk to this server
through the product's real httpx client. It answers from a script: either rules matched
against the prompt, or a function of the request. Everything it answers is labelled
SCRIPTED in the local stack's output.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

Reply = Union[str, tuple]  # content, or (status, body) for an error / raw answer
Responder = Callable[[dict], Reply]


def completion(content: str, model: str = "scripted") -> dict:
    return {"id": "scripted", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


def rules_responder(rules: list[dict], default: str = "[]") -> Responder:
    """The first rule whose `contains` text appears in the prompt gives the answer (JSON-encoded
    unless it is already a string)."""

    def respond(request: dict) -> Reply:
        prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        for rule in rules:
            if all(text in prompt for text in _as_list(rule["contains"])):
                answer = rule["answer"]
                return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return default

    return respond


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


class ScriptedModel:
    def __init__(self, responder: Responder, port: int = 0, host: str = "127.0.0.1"):
        self.responder = responder
        self.requests: list[dict] = []
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
                reply = model.responder(request)
                if isinstance(reply, tuple):
                    status, body = reply[0], reply[1]
                    return self._send(status, body, reply[2] if len(reply) > 2 else None)
                return self._send(200, completion(reply, request.get("model", "scripted")))

            def _send(self, status: int, body: Any, headers: dict | None = None) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://{host}:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)

    def start(self) -> "ScriptedModel":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedModel":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
