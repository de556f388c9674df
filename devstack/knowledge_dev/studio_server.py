"""The studio on 127.0.0.1: an HTTP adapter doing what API Gateway's JWT authorizer and HTTP API
integration do in front of the real StudioApiFunction (and FactsApiFunction) handler, serving the
built pages with their config.json, and signing the dev operator in as Cognito's hosted UI does
(authorization code with PKCE), so the page runs the same sign-in code locally and deployed.
docs/local-stack.md, "The studio, locally"."""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import re
import secrets
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, quote, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from .template import ROOT

AUDIENCE = "knowledge-studio-local"  # the local app client id, as the token's audience
CODE_TTL_SECONDS = 120
DEV_OPERATOR = {"sub": "dev-operator", "email": "dev@localhost", "cognito:groups": ["default"]}
PAGE_DIR = ROOT / "studio_web" / "dist"
API_PREFIX = "/api"
# The pages, as publish.py puts them under studio/: each is also a sign-in callback.
PAGES = {"/knowledge": "index.html", "/facts": "facts.html"}
# template.yaml's FactsApiFunction route: /tenants/{tenant}/agents/{agent}/facts/{proxy+}.
FACTS_ROUTE = re.compile(r"/tenants/[^/]+/agents/[^/]+/facts/.+")
# template.yaml's CloudFront policy for the page, with the API and sign-in on the page's own origin
# here: the page must work under exactly what it gets on AWS.
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; "
            "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")


class LocalAuthorizer:
    """Signs dev tokens and verifies bearer tokens like the HTTP API's JWT authorizer."""

    def __init__(self, issuer: str, key: Optional[rsa.RSAPrivateKey] = None):
        """`key`: the RSA key tokens are signed with (a new one when not given)."""
        self.issuer = issuer
        self._key = key or rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def token(self, claims: Optional[dict[str, Any]] = None, ttl_seconds: int = 12 * 3600) -> str:
        now = int(time.time())
        payload = {**DEV_OPERATOR, **(claims or {}), "iss": self.issuer, "aud": AUDIENCE, "iat": now,
                   "exp": now + ttl_seconds, "token_use": "id", "jti": uuid.uuid4().hex}
        return jwt.encode(payload, self._key, algorithm="RS256")

    def verify(self, authorization: Optional[str]) -> Optional[dict[str, Any]]:
        """The token's claims, or None when the request must be refused with 401."""
        if not authorization or not authorization.startswith("Bearer "):
            return None
        try:
            return jwt.decode(authorization[7:], self._key.public_key(), algorithms=["RS256"], audience=AUDIENCE,
                              issuer=self.issuer, options={"require": ["exp", "iss", "aud", "sub"]})
        except jwt.PyJWTError:
            return None


def http_api_event(method: str, path: str, query: str, headers: dict[str, str], body: Optional[bytes | str],
                   claims: Optional[dict[str, Any]], source_ip: str) -> dict[str, Any]:
    """The payload 2.0 event API Gateway's HTTP API hands a Lambda integration; a body that is
    not UTF-8 text travels base64-encoded, as API Gateway sends binary bodies."""
    params = {key: ",".join(values) for key, values in parse_qs(query, keep_blank_values=True).items()}
    context: dict[str, Any] = {
        "accountId": "123456789012", "apiId": "local", "domainName": "127.0.0.1", "domainPrefix": "local",
        "requestId": uuid.uuid4().hex, "routeKey": "$default", "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()), "timeEpoch": int(time.time() * 1000),
        "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip,
                 "userAgent": headers.get("user-agent", "")},
    }
    if claims is not None:
        # The authorizer passes claims as strings; a list becomes "[a b]".
        flat = {k: (f"[{' '.join(map(str, v))}]" if isinstance(v, list) else str(v)) for k, v in claims.items()}
        context["authorizer"] = {"jwt": {"claims": flat, "scopes": None}}
    event: dict[str, Any] = {"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
                             "headers": headers, "requestContext": context, "isBase64Encoded": False}
    if params:
        event["queryStringParameters"] = params
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode("ascii"), True
            return event
    if body is not None:
        event["body"] = body
    return event


class StudioServer:
    def __init__(self, handler: Callable[[dict, Any], dict], authorizer: LocalAuthorizer, port: int = 0,
                 host: str = "127.0.0.1", context_factory: Callable[[], Any] = lambda: None,
                 facts_handler: Optional[Callable[[dict, Any], dict]] = None):
        # One request at a time reaches each handler, as one Lambda container serves one at a time.
        invoke_locks = {id(handler): threading.Lock(), id(facts_handler): threading.Lock()}
        codes: dict[str, tuple[str, str, float]] = {}  # one-time code -> (challenge, redirect_uri, expiry)

        def redirect_uri() -> str:
            return f"{self.url}/studio/knowledge"

        def callbacks() -> set[str]:
            """The app client's callback URLs (template.yaml): every studio page."""
            return {f"{self.url}/studio{page}" for page in PAGES}

        def handler_for(path: str) -> Callable[[dict, Any], dict]:
            return facts_handler if facts_handler is not None and FACTS_ROUTE.fullmatch(path) else handler

        def page_config() -> dict[str, Any]:
            return {"apiBase": API_PREFIX, "signIn": {
                "authorizeUrl": f"{self.url}/oauth2/authorize", "tokenUrl": f"{self.url}/oauth2/token",
                "clientId": AUDIENCE, "redirectUri": redirect_uri(), "scope": "openid email"}}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # no access log: paths name concepts
                pass

            def _api(self) -> None:
                parts = urlsplit(self.path)
                headers = {k.lower(): v for k, v in self.headers.items()}
                length = int(headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                claims = None
                if self.command != "OPTIONS":
                    claims = authorizer.verify(headers.get("authorization"))
                    if claims is None:
                        return self._send(401, {"content-type": "application/json"}, b'{"message":"Unauthorized"}')
                path = parts.path[len(API_PREFIX):] or "/"
                method = "GET" if self.command == "HEAD" else self.command  # HEAD: GET's answer without its body
                event = http_api_event(method, path, parts.query, headers, body, claims, self.client_address[0])
                target = handler_for(path)
                with invoke_locks[id(target)]:
                    answer = target(event, context_factory())
                out = dict(answer.get("headers") or {})
                for key, values in (answer.get("multiValueHeaders") or {}).items():
                    out[key] = ", ".join(values)
                self._send(answer.get("statusCode", 200), out, (answer.get("body") or "").encode("utf-8"))

            def _static(self) -> None:
                parts = urlsplit(self.path)
                path = parts.path
                if path == "/oauth2/authorize":
                    return self._authorize(parts.query)
                if path in ("/config.json", "/studio/config.json"):
                    return self._send(200, {"content-type": "application/json"}, json.dumps(page_config()).encode())
                if path.startswith("/studio/"):
                    path = path[len("/studio"):]
                if path.rstrip("/") in PAGES:
                    path = "/" + PAGES[path.rstrip("/")]
                target = (PAGE_DIR / path.lstrip("/")).resolve()
                if PAGE_DIR.resolve() not in target.parents or not target.is_file():
                    message = (b"not found" if (PAGE_DIR / "index.html").exists()
                               else b"the studio page is not built yet; the API is served under /api")
                    return self._send(404, {"content-type": "text/plain; charset=utf-8"}, message)
                kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
                self._send(200, {"content-type": kind, "content-security-policy": PAGE_CSP}, target.read_bytes())

            def _authorize(self, query: str) -> None:
                """Cognito's /oauth2/authorize, for the dev operator: checks the client, the
                redirect and the PKCE challenge, then redirects back with a one-time code."""
                ask = {k: v[0] for k, v in parse_qs(query).items()}
                redirect = ask.get("redirect_uri", "")
                if (ask.get("client_id") != AUDIENCE or redirect not in callbacks() or ask.get("response_type") != "code"
                        or ask.get("code_challenge_method") != "S256" or not ask.get("code_challenge")):
                    return self._send(400, {"content-type": "text/plain"}, b"invalid_request")
                code = secrets.token_urlsafe(24)
                codes[code] = (ask["code_challenge"], redirect, time.time() + CODE_TTL_SECONDS)
                state = f"&state={quote(ask['state'])}" if ask.get("state") else ""
                self._send(302, {"location": f"{redirect}?code={code}{state}"}, b"")

            def _token(self) -> None:
                """Cognito's /oauth2/token for the authorization_code grant with a PKCE verifier."""
                length = int(self.headers.get("content-length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                entry = codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if (entry is None or entry[2] < time.time() or form.get("grant_type") != "authorization_code"
                        or form.get("client_id") != AUDIENCE or form.get("redirect_uri") != entry[1]
                        or challenge != entry[0]):
                    return self._send(400, {"content-type": "application/json"}, b'{"error":"invalid_grant"}')
                token = authorizer.token()
                body = {"id_token": token, "access_token": token, "token_type": "Bearer", "expires_in": 12 * 3600}
                self._send(200, {"content-type": "application/json", "cache-control": "no-store"},
                           json.dumps(body).encode())

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if self.command == "HEAD":  # GET's status and headers (its length too), never a body
                    return
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the browser went away (a test closing its page): nothing to answer

            def _route(self) -> None:
                if self.path.startswith(API_PREFIX + "/"):
                    self._api()
                elif self.command == "POST" and urlsplit(self.path).path == "/oauth2/token":
                    self._token()
                elif self.command in ("GET", "HEAD"):
                    self._static()
                else:
                    self._send(405, {}, b"")

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = _route  # noqa: N815 - http.server's naming

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="studio", daemon=True)

    def start(self) -> "StudioServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


