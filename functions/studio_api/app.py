"""StudioApiFunction: the studio's HTTP API (API Gateway HTTP API, JWT authorizer).

Routes are wiring: the operator comes from the verified token's claims, the work is done by
knowledge.studio, and every domain error is mapped to HTTP once, below.
"""

import os
from typing import Annotated, Literal, Optional

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, CORSConfig, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Header, Query
from pydantic import BaseModel, Field

from knowledge import wiring
from knowledge.errors import (Conflict, InvalidConcept, InvalidConfig, InvalidName, KnowledgeError, NotFound,
                              StoreUnavailable)
from knowledge.settings import Settings
from knowledge.studio import (MARKDOWN_MAX_BYTES, ArchiveNotConfigured, Forbidden, NameTaken, PreconditionRequired,
                              Unauthorized, check_path, field_errors, operator_from_claims)

logger = Logger()
studio = wiring.studio(Settings.from_env())
# Only the studio's own origin may call the API from a browser.
app = APIGatewayHttpResolver(enable_validation=True,
                             cors=CORSConfig(allow_origin=os.environ.get("STUDIO_ORIGIN", "http://127.0.0.1:8080"),
                                             allow_headers=["Authorization", "Content-Type", "If-Match"],
                                             expose_headers=["ETag"], max_age=600, allow_credentials=False))
BASE = "/tenants/<tenant>/agents/<agent>"


def refuse_control_characters(app, next_middleware):
    check_path(app.current_event.raw_path)
    return next_middleware(app)


app.use(middlewares=[refuse_control_characters])


class Markdown(BaseModel):
    markdown: str = Field(max_length=MARKDOWN_MAX_BYTES, description="The whole concept document.")


class ConfigText(BaseModel):
    yaml: str = Field(max_length=32 * 1024, description="knowledge.yaml, with its `knowledge:` key.")


class ConceptSummary(BaseModel):
    name: str
    type: Optional[str]
    provenance: Optional[str]
    confidence: Optional[float]
    occurrences: Optional[int]
    updated_at: Optional[str]
    conflict: bool = Field(description="The body holds a `## Contradiction` for a human to resolve.")
    related: int = Field(description="Claims kept under `## Related claims` beside an operator's body, "
                                     "waiting to be folded in.")
    etag: str
    problem: Optional[str] = Field(description="Why the stored file does not parse (the other fields are empty).")


class ConceptList(BaseModel):
    concepts: list[ConceptSummary]


class StoredConcept(BaseModel):
    name: str
    markdown: str = Field(description="The whole document as stored.")
    etag: str
    version_id: Optional[str]
    related: int = Field(description="Claims waiting under `## Related claims`.")


class EvidenceLink(BaseModel):
    session_id: str
    turn_id: str
    completed_at: str = Field(description="When the turn completed (UTC).")


class Version(BaseModel):
    version_id: str
    time: str
    actor: Optional[str] = Field(description="engine, or operator:<id>.")
    reason: Optional[str] = Field(description="created, confirmed, merged, contradiction, edit, restore, delete.")
    size: int
    deleted: bool
    latest: bool
    evidence: Optional[EvidenceLink] = Field(description="Where the sighting that wrote this version was learned: "
                                                         "a link, never the quote.")


class VersionList(BaseModel):
    versions: list[Version]


class Evidence(BaseModel):
    session_id: str
    turn_id: str
    completed_at: str
    status: Literal["available", "expired"] = Field(
        description="expired: the archived turn is gone (retention, purge) or no longer holds the quoted span.")
    excerpt: Optional[str] = Field(description="The quote, read from the archived turn now and redacted; "
                                               "null when expired.")


class DeletedPreview(BaseModel):
    name: str
    deleted_at: str
    deleted_by: Optional[str] = Field(description="operator:<id> or engine; null when the record is gone.")
    version_id: str = Field(description="The version an undelete brings back.")
    markdown: str = Field(description="That version's document.")


def operator():
    return operator_from_claims(app.current_event.request_context.authorizer.jwt_claim)


def _json(status: int, body: dict) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def _error(status: int, exc: KnowledgeError, **extra) -> Response:
    return _json(status, {"error": {"code": exc.code, "message": str(exc)}, **extra})


# ------------------------------------------------------------------ concepts
@app.get(f"{BASE}/concepts", summary="List concepts, newest first")
def list_concepts(tenant: str, agent: str, status: Annotated[Optional[str], Query(pattern="^(conflict|related)$")] = None,
                  type: Annotated[Optional[str], Query(pattern="^(fact|entity|procedure|policy|objection)$")] = None,
                  q: Annotated[Optional[str], Query(max_length=200)] = None) -> ConceptList:
    return {"concepts": studio.list(operator(), tenant, agent, status=status, type=type, q=q)}


@app.post(f"{BASE}/concepts", summary="Create a concept by hand (provenance policy unless the text says otherwise)")
def create_concept(tenant: str, agent: str, body: Markdown) -> Response[StoredConcept]:
    return _json(201, studio.create(operator(), tenant, agent, body.markdown))


@app.get(f"{BASE}/concepts/<name>", summary="One concept: raw markdown, ETag, version id")
def get_concept(tenant: str, agent: str, name: str) -> StoredConcept:
    return studio.get(operator(), tenant, agent, name)


@app.put(f"{BASE}/concepts/<name>", summary="Save an edit (If-Match: the ETag that was read)")
def save_concept(tenant: str, agent: str, name: str, body: Markdown,
                 if_match: Annotated[Optional[str], Header(alias="if-match")] = None) -> StoredConcept:
    return studio.save(operator(), tenant, agent, name, body.markdown, if_match)


@app.delete(f"{BASE}/concepts/<name>", summary="Delete (a restorable delete marker)")
def delete_concept(tenant: str, agent: str, name: str) -> dict:
    return studio.delete(operator(), tenant, agent, name)


@app.get(f"{BASE}/concepts/<name>/versions",
         summary="Version history: time, actor, reason, size, and the session each sighting was learned from")
def list_versions(tenant: str, agent: str, name: str) -> VersionList:
    return {"versions": studio.versions(operator(), tenant, agent, name)}


@app.get(f"{BASE}/concepts/<name>/versions/<version_id>", summary="Read one version")
def get_version(tenant: str, agent: str, name: str, version_id: str) -> StoredConcept:
    return studio.version(operator(), tenant, agent, name, version_id)


@app.get(f"{BASE}/concepts/<name>/versions/<version_id>/evidence",
         summary="The quote a version was learned from, read from the archived turn now (redacted), or expired")
def get_evidence(tenant: str, agent: str, name: str, version_id: str) -> Response[Evidence]:
    # Customer words: never cached by a browser or a proxy on the way.
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, headers={"Cache-Control": "no-store"},
                    body=studio.evidence(operator(), tenant, agent, name, version_id))


@app.post(f"{BASE}/concepts/<name>/versions/<version_id>/restore", summary="Restore a version as a new one")
def restore_version(tenant: str, agent: str, name: str, version_id: str,
                    if_match: Annotated[Optional[str], Header(alias="if-match")] = None) -> StoredConcept:
    return studio.restore(operator(), tenant, agent, name, version_id, if_match)


@app.get(f"{BASE}/deleted", summary="Deleted concepts, newest first")
def list_deleted(tenant: str, agent: str) -> dict:
    return {"deleted": studio.deleted(operator(), tenant, agent)}


@app.get(f"{BASE}/deleted/<name>", summary="A deleted concept as it was, with who deleted it and when")
def get_deleted(tenant: str, agent: str, name: str) -> DeletedPreview:
    return studio.deleted_one(operator(), tenant, agent, name)


@app.post(f"{BASE}/deleted/<name>/restore", summary="Undelete")
def undelete(tenant: str, agent: str, name: str) -> StoredConcept:
    return studio.undelete(operator(), tenant, agent, name)


# ------------------------------------------------------------------ the knowledge: block
@app.get(f"{BASE}/config", summary="The agent's knowledge.yaml")
def get_config(tenant: str, agent: str) -> dict:
    return studio.config(operator(), tenant, agent)


@app.put(f"{BASE}/config", summary="Save knowledge.yaml (validated; If-Match unless creating)")
def save_config(tenant: str, agent: str, body: ConfigText,
                if_match: Annotated[Optional[str], Header(alias="if-match")] = None) -> dict:
    return studio.save_config(operator(), tenant, agent, body.yaml, if_match)


@app.get("/openapi.json", summary="This API's OpenAPI document", include_in_schema=False)
def openapi() -> Response[str]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_document())


def openapi_document() -> str:
    return app.get_openapi_json_schema(title="Knowledge studio API", version="1.0.0")


# ------------------------------------------------------------------ errors, mapped once
# Errors answered with their own code and message: the status by type.
STATUS = {Unauthorized: 401, Forbidden: 403, NotFound: 404, InvalidName: 400, InvalidConfig: 422,
          PreconditionRequired: 428, ArchiveNotConfigured: 503}


@app.exception_handler(list(STATUS))
def plain(exc: KnowledgeError) -> Response:
    return _error(next(STATUS[kind] for kind in type(exc).__mro__ if kind in STATUS), exc)


@app.exception_handler(Conflict)
def conflict(exc: Conflict) -> Response:
    current = exc.current
    return _json(412, {"error": {"code": "stale", "message": "a newer version exists: reload it, or overwrite "
                                                             "knowingly with its ETag"},
                       "current": None if current is None else {"markdown": current.text, "etag": current.etag,
                                                                "version_id": current.version_id}})


@app.exception_handler(NameTaken)
def name_taken(exc: NameTaken) -> Response:
    return _error(409, exc, name=exc.name)


@app.exception_handler(InvalidConcept)
def invalid_concept(exc: InvalidConcept) -> Response:
    return _error(422, exc, errors=field_errors(exc))


@app.exception_handler(RequestValidationError)
def invalid_request(exc: RequestValidationError) -> Response:
    problems = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', 'invalid')}" for e in exc.errors()]
    return _json(422, {"error": {"code": "invalid_request", "message": "; ".join(problems)}})


@app.exception_handler([UnicodeDecodeError, RecursionError])
def unreadable_body(exc: Exception) -> Response:
    # Raised while the body is decoded (not UTF-8) or read as JSON (nested beyond the parser's reach).
    return _json(422, {"error": {"code": "invalid_request", "message": "the body must be a UTF-8 JSON object"}})


@app.not_found
def no_route(exc: Exception) -> Response:
    try:
        check_path(app.current_event.raw_path)
    except InvalidName as refused:
        return _error(400, refused)
    return _json(404, {"error": {"code": "not_found", "message": "no such route"}})


@app.exception_handler(StoreUnavailable)
def unavailable(exc: StoreUnavailable) -> Response:
    return _json(503, {"error": {"code": exc.code, "message": "storage is busy; try again"}})


@app.exception_handler(KnowledgeError)
def other(exc: KnowledgeError) -> Response:
    logger.warning("studio request refused", extra={"error_code": exc.code})
    return _error(400, exc)


@logger.inject_lambda_context
def lambda_handler(event, context):
    return app.resolve(event, context)
