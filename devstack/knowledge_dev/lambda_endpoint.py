"""Lambda's Invoke API on 127.0.0.1, routed to the real handlers of the directly invoked functions.

`POST /2015-03-31/functions/{name}/invocations`, as boto3's Lambda client sends it, runs
functions/<dir>/app.py's handler in this process with a Lambda context (the template's timeout)
and answers as Lambda does: 200 and the handler's JSON; a handler that raises answers 200 with
`X-Amz-Function-Error: Unhandled` and `{"errorMessage", "errorType"}`; an unknown function 404
`ResourceNotFoundException`. `{name}` is the template's logical id (RetrieveFunction), the
function's folder (retrieve), or an ARN ending in either. So a client changes only its
`endpoint_url` between this and AWS. Signatures are not checked: it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional
from urllib.parse import unquote

from .poller import LambdaContext

# The directly invoked functions: logical id -> functions/<folder>.
DIRECT = {"RetrieveFunction": "retrieve", "MemoryFunction": "memory"}
_PATH = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")
logger = logging.getLogger("knowledge_dev.lambda")

Handler = Callable[[Any, Any], Any]


class LambdaEndpoint:
    def __init__(self, handlers: dict[str, tuple[Handler, int]], port: int = 0):
        """`handlers`: function folder -> (lambda_handler, timeout in ms)."""
        self._handlers = handlers
        endpoint = self

        class Request(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                endpoint.answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Request)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> "LambdaEndpoint":
        threading.Thread(target=self._server.serve_forever, name="lambda-endpoint", daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def function(self, name: str) -> Optional[str]:
        """The folder of the function `name` (a logical id, a folder, or an ARN ending in either)."""
        name = unquote(name).rsplit(":function:", 1)[-1].split(":", 1)[0]
        folder = DIRECT.get(name, name)
        return folder if folder in self._handlers else None

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        request_id = str(uuid.uuid4())
        path = request.path.split("?", 1)[0]
        match = _PATH.match(path)
        folder = self.function(match.group(1)) if match else None
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        if folder is None:
            name = match.group(1) if match else path
            self._send(request, 404, {"Type": "User", "message": f"Function not found: {unquote(name)[:140]}"},
                       {"x-amzn-ErrorType": "ResourceNotFoundException", "x-amzn-RequestId": request_id})
            return
        if request.headers.get("X-Amz-Invocation-Type", "RequestResponse") != "RequestResponse":
            self._send(request, 400, {"Type": "User", "message": "only RequestResponse is served locally"},
                       {"x-amzn-ErrorType": "InvalidParameterValueException", "x-amzn-RequestId": request_id})
            return
        try:
            event = json.loads(body) if body else {}
        except ValueError:
            self._send(request, 400, {"Type": "User", "message": "Could not parse request body into json"},
                       {"x-amzn-ErrorType": "InvalidRequestContentException", "x-amzn-RequestId": request_id})
            return
        handler, timeout_ms = self._handlers[folder]
        context = LambdaContext(folder, aws_request_id=request_id, timeout_ms=timeout_ms)
        headers = {"x-amzn-RequestId": request_id, "X-Amz-Executed-Version": "$LATEST"}
        try:
            result = handler(event, context)
        except Exception as exc:  # noqa: BLE001 - Lambda answers any unhandled error this way
            logger.warning("%s invocation failed: %s", folder, type(exc).__name__)
            self._send(request, 200, {"errorMessage": str(exc)[:500], "errorType": type(exc).__name__},
                       {**headers, "X-Amz-Function-Error": "Unhandled"})
            return
        self._send(request, 200, result, headers)

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode("utf-8")
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            request.send_header(key, value)
        request.end_headers()
        request.wfile.write(data)


def direct_endpoint(port: int = 0) -> LambdaEndpoint:
    """The endpoint for RetrieveFunction and MemoryFunction, their real handlers loaded now (the
    environment must already be set)."""
    from .handlers import function_timeout_ms, load_handler

    handlers = {folder: (load_handler(folder).lambda_handler, function_timeout_ms(folder))
                for folder in DIRECT.values()}
    return LambdaEndpoint(handlers, port)
