"""What the studio's two HTTP APIs share (StudioApiFunction and FactsApiFunction, one HTTP API
and one JWT authorizer): the operator a verified token names, the paths they refuse, and the
answers every route gives the same way (docs/studio.md, "The studio HTTP API")."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from shared.errors import (
    Forbidden,
    InvalidName,
    InvalidRequest,
    KnowledgeError,
    NotFound,
    StoreUnavailable,
    Unauthorized,
)
from shared.names import check_slug, is_slug

# The claim that lists an operator's tenants (Cognito groups). A group whose name equals a
# tenant slug exactly grants that tenant; other groups are ignored.
TENANTS_CLAIM = "cognito:groups"
OPERATOR_ID = re.compile(r"[A-Za-z0-9._@+:-]{1,128}")
_CONTROL_IN_PATH = re.compile(r"[\x00-\x1f\x7f-\x9f]|%(?:[01][0-9a-fA-F]|7[fF]|[cC]2%[89][0-9a-fA-F])")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


@dataclass(frozen=True)
class Operator:
    id: str
    tenants: frozenset[str]

    @property
    def actor(self) -> str:
        return f"operator:{self.id}"

    def check(self, tenant: str) -> None:
        check_slug("tenant", tenant)
        if tenant not in self.tenants:
            raise Forbidden(f"operator is not a member of tenant {tenant!r}")


def _claim_list(value: Any) -> list[str]:
    """Cognito groups as a JSON array, or as API Gateway's JWT authorizer renders an array
    claim in an HTTP API event: "[a b c]". Anything else grants nothing: a group name is
    never split further, so `support,tenant-b` or `[x]tenant-b` cannot reach tenant-b."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    if isinstance(value, str) and len(value) >= 2 and value[0] == "[" and value[-1] == "]":
        return [part for part in value[1:-1].split(" ") if part]
    return []


def operator_from_claims(claims: Optional[dict[str, Any]]) -> Operator:
    """The operator a verified JWT describes; Unauthorized when there is none."""
    if not claims or not isinstance(claims.get("sub"), str) or not OPERATOR_ID.fullmatch(claims["sub"]):
        raise Unauthorized("sign in: the request carries no valid token")
    tenants = frozenset(group for group in _claim_list(claims.get(TENANTS_CLAIM)) if is_slug(group))
    return Operator(claims["sub"], tenants)


def check_path(path: Any) -> None:
    """Refuse a request path holding a control character, decoded or percent-encoded: such a
    path is never routed (a router's `$` would match before a trailing newline)."""
    if not isinstance(path, str) or _CONTROL_IN_PATH.search(path):
        raise InvalidName("path", "must not contain control characters")


def plain_path(path: Any, plain: frozenset[str]) -> Any:
    """The raw path with the escapes of `plain` characters read as those characters: a client
    encodes each segment, API Gateway hands the raw path, and these cannot change the routing."""
    if not isinstance(path, str) or "%" not in path:
        return path
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if chr(int(m.group(1), 16)) in plain else m.group(0),
                       path)


def validation_problem(errors: list[dict]) -> tuple[int, dict]:
    """A request the route's schema refused: 400 invalid_name when only path segments are at
    fault (the answer the core gives a non-slug), else 422 invalid_request."""
    problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', 'invalid')}" for e in errors)
    if all(tuple(e.get("loc", ()))[:1] == ("path",) for e in errors):
        return 400, {"error": {"code": InvalidName.code, "message": problems}}
    return 422, {"error": {"code": InvalidRequest.code, "message": problems}}


def page_offset(cursor: Optional[str], invalid: type[Exception]) -> int:
    """Where a page starts: a list's `next` is the offset of its first row; anything else is `invalid`."""
    if cursor is None:
        return 0
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 9:
        raise invalid("cursor must be the `next` of an earlier page")
    return int(cursor)


def error_body(exc: KnowledgeError, **extra: Any) -> dict:
    return {"error": {"code": exc.code, "message": str(exc)}, **extra}


def answer_alike(app: Any, respond: Callable[[int, dict], Any], statuses: dict[type, int], logger: Any) -> None:
    """Register the answers both APIs give alike on a Powertools resolver: the errors in
    `statuses` with their own code and message (the status of the nearest type), a schema
    refusal, an unreadable body, no such route (or a path with a control character), S3 busy,
    and 500 for any other typed error (logged by its code on `logger`)."""
    from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

    @app.exception_handler(KnowledgeError)
    def unmapped(exc: KnowledgeError) -> Any:
        # Every refusal a request can earn has its status in `statuses` or its own handler, so an error
        # without one is the service's fault (S3 refused the function, a record that does not parse):
        # 500, in both APIs alike, its code and message in the usual body.
        logger.warning("request failed", extra={"error_code": exc.code})
        return respond(500, error_body(exc))

    @app.exception_handler(list(statuses))
    def plain(exc: KnowledgeError) -> Any:
        return respond(next(statuses[kind] for kind in type(exc).__mro__ if kind in statuses), error_body(exc))

    @app.exception_handler(RequestValidationError)
    def invalid_request(exc: RequestValidationError) -> Any:
        return respond(*validation_problem(exc.errors()))

    @app.exception_handler([UnicodeDecodeError, RecursionError])
    def unreadable_body(exc: Exception) -> Any:
        # Raised while the body is decoded (not UTF-8) or read as JSON (nested beyond the parser's reach).
        return respond(422, {"error": {"code": InvalidRequest.code, "message": "the body must be a UTF-8 JSON object"}})

    @app.not_found
    def no_route(exc: Exception) -> Any:
        try:
            check_path(app.current_event.raw_path)
        except InvalidName as refused:
            return respond(400, error_body(refused))
        return respond(404, {"error": {"code": NotFound.code, "message": "no such route"}})

    @app.exception_handler(StoreUnavailable)
    def unavailable(exc: StoreUnavailable) -> Any:
        return respond(503, {"error": {"code": exc.code, "message": "storage is busy; try again"}})


def openapi_document(app: Any, title: str) -> str:
    """A resolver's OpenAPI document, with the bearer JWT every route needs and only the schemas its
    routes refer to (the resolver adds its own validation-error shapes, which neither API answers)."""
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    document = json.loads(app.get_openapi_json_schema(
        title=title, version="1.0.0",
        security_schemes={"jwt": HTTPBearer(bearerFormat="JWT", description="The id token from sign-in "
                                                                           "(Cognito's hosted UI, PKCE).")},
        security=[{"jwt": []}]))
    schemas = document["components"]["schemas"]
    while True:
        text = json.dumps({k: v for k, v in document.items() if k != "components"} | {"schemas": schemas})
        unused = [name for name in schemas if f'"#/components/schemas/{name}"' not in text]
        if not unused:
            return json.dumps(document)
        for name in unused:
            del schemas[name]
