"""StudioApiFunction: the studio's HTTP API (API Gateway HTTP API, JWT authorizer).

Routes are wiring: the operator comes from the verified token's claims, the work is done by
knowledge.curation.studio, and every domain error is mapped to HTTP once, below.

Over 500 lines because every route's parameters and answer models are declared here, next to the
route, and the published OpenAPI document (studio_web/openapi.json) is generated from them.
"""

import json
import os
import string
from typing import Annotated, Any, Literal, Optional, Union

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, CORSConfig, Response, content_types
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from pydantic import BaseModel, Field

from knowledge import wiring
from knowledge.errors import (
    ArchiveNotConfigured,
    InvalidCursor,
    InvalidReviewed,
    InvalidSeenAt,
    InvalidVocabulary,
    NameDeleted,
    NameTaken,
    NothingToUndo,
    PreconditionRequired,
)
from shared import deadline
from shared.errors import Conflict, InvalidConcept, InvalidConfig, InvalidName, KnowledgeError, NotFound, field_errors
from shared.httpapi import (
    Forbidden,
    Unauthorized,
    answer_alike,
    check_path,
    error_body,
    operator_from_claims,
    plain_path,
)

logger = Logger()
studio, reviews, policy_reviews, vocabularies, importing, config_checks, recreation, sharing = \
    wiring.studio_api_from_env()
LIMITS = wiring.studio_limits()
ImportBody, ImportAnswer, InvalidImport = wiring.studio_import_api()
# Only the studio's own origin may call the API from a browser.
app = APIGatewayHttpResolver(enable_validation=True,
                             cors=CORSConfig(allow_origin=os.environ.get("STUDIO_ORIGIN", "http://127.0.0.1:8080"),
                                             allow_headers=["Authorization", "Content-Type", "If-Match"],
                                             expose_headers=["ETag"], max_age=600, allow_credentials=False))
BASE = "/tenants/<tenant>/agents/<agent>"
# Path segments as the document states them; one that breaks its pattern is 400 invalid_name.
Slug = Annotated[str, Path(pattern=LIMITS.slug_pattern, max_length=LIMITS.slug_max)]
# An agent, or `_shared`: the tenant's shared concepts, which every agent that opts in recalls (not a
# slug, so no agent is named so). The routes of concepts, history, deletions, import and review take it.
SHARED = LIMITS.shared_scope
Scope = Annotated[str, Path(pattern=f"^({SHARED}|{LIMITS.slug_pattern.strip('^$')})$", max_length=LIMITS.slug_max,
                            description=f"The agent, or {SHARED}: the tenant's shared concepts.")]
VersionId = Annotated[str, Path(pattern=r"^[A-Za-z0-9._+=-]+$", max_length=1024)]


def refuse_control_characters(app, next_middleware):
    check_path(app.current_event.raw_path)
    return next_middleware(app)


app.use(middlewares=[refuse_control_characters])


class Markdown(BaseModel):
    markdown: str = Field(max_length=LIMITS.markdown_max_bytes, description="The whole concept document.")


class ConfigText(BaseModel):
    yaml: str = Field(max_length=32 * 1024, description="knowledge.yaml, with its `knowledge:` key.")


class SearchMatch(BaseModel):
    source: Literal["description", "body"] = Field(description="Where the snippet comes from: the description, "
                                                              "or the body when only the body holds the words "
                                                              "and the API holds its text.")
    snippet: str = Field(description="At most 160 characters around the first matched word.")
    marks: list[list[int]] = Field(description="[start, end) character ranges of the matched words in snippet.")
    name_marks: list[list[int]] = Field(description="[start, end) ranges of the name's words the query begins.")


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
    description: Optional[str]
    written_at: Optional[str] = Field(description="When the current version was written (S3), whoever wrote it; "
                                                  "updated_at is the time of what it says.")
    written_by: Optional[str] = Field(description="Who wrote the current version: engine or operator:<id> "
                                                  "(null when its writer is not recorded).")
    reason: Optional[str] = Field(description="Why the current version was written: created, confirmed, merged, "
                                              "kept_beside, contradiction, retired, edit, restore or purged (null when not "
                                              "recorded).")
    new: bool = Field(description="New to this operator (GET /review): written since the operator last looked by "
                                  "the engine or another operator, and not marked reviewed at this version.")
    valid_from: Optional[str] = Field(default=None, description="The first day its claim is true (YYYY-MM-DD, the "
                                                                "store's local date), when stated.")
    valid_until: Optional[str] = Field(default=None, description="The last day its claim is true (YYYY-MM-DD), "
                                                                 "when stated.")
    retired_by: Optional[str] = Field(default=None, description="The policy concept whose text retired this "
                                                                "observed one from recall (restore its previous "
                                                                "version to bring it back).")
    recall: Optional[Literal["expired", "not_started", "stale", "retired"]] = Field(
        default=None, description="Why retrieval leaves it out now, kept: past valid_until, before valid_from, "
                                  "observed and unseen for stale_after_days, or retired by a policy; null: recalled.")
    match: Optional[SearchMatch] = Field(default=None, description="With `q`: what matched in this row.")
    scope: Literal["agent", "shared"] = Field(default="agent", description="Whose concept this is: the agent's own, "
                                                                           "or the tenant's shared knowledge.")
    shadows_shared: bool = Field(default=False, description="An agent's concept whose name is also a shared "
                                                            "concept's: the agent recalls this one, not the "
                                                            "shared one (it opts in to shared knowledge).")


class ConfigProblem(BaseModel):
    message: str = Field(description="Why knowledge.yaml does not parse: the agent's retrieval and extraction are "
                                     "off until it does.")
    line: Optional[int] = Field(description="The file's line to look at, when one is known.")


class ConceptList(BaseModel):
    concepts: list[ConceptSummary]
    total: int = Field(description="Rows matching the filters (and `q`: every word of it), over all pages.")
    next: Optional[str] = Field(description="The cursor of the next page; null on the last.")
    new: int = Field(description="Concepts of the whole agent (not only this page or filter) new to this operator: "
                                 "written since the operator last looked by the engine or another operator.")
    since: str = Field(description="What `new` counts from (see GET /review).")
    as_of: str = Field(description="When this page was listed: PUT it to /review as seen_at to mark what was "
                                   "shown seen.")
    catching_up: int = Field(description="Changes this answer has not read yet (0: the list is current): "
                                         "their rows are as last known and a new concept is missing until "
                                         "a later request reads them.")
    config_problem: Optional[ConfigProblem] = Field(None, description="Set while the agent's knowledge.yaml does "
                                                                      "not parse (checked every 10 s).")
    shared_recalled: Optional[int] = Field(None, description="How many of the tenant's shared concepts the agent "
                                                             "has beside these (those its own do not shadow; each "
                                                             "recalled unless out of recall by its rules); null "
                                                             "when it does not opt in (`shared: true`) and in the "
                                                             "shared scope itself.")


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


class Kept(BaseModel):
    newest: int = Field(description="Past versions always kept, newest first.")
    days: int = Field(description="Any other past version is kept this many days, then expired by the lifecycle rule.")


class VersionList(BaseModel):
    versions: list[Version] = Field(description="One page, newest first.")
    next: Optional[str] = Field(description="The cursor of the page of older versions; null on the last.")
    kept: Kept = Field(description="How long the history lasts: older versions are gone.")


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


class AgentSummary(BaseModel):
    name: str
    concepts: int = Field(description="Current concepts (deleted ones not counted).")
    conflicts: int = Field(description="Concepts holding a `## Contradiction` for a human to resolve.")
    related: int = Field(description="Concepts with related claims waiting to be folded in.")
    new: int = Field(description="Concepts new to this operator (as the list's `new` counts them).")
    catching_up: int = Field(description="Changes not read yet: the counts are as last known (0: current).")
    config_problem: Optional[ConfigProblem] = Field(None, description="Set while its knowledge.yaml does not parse.")


class AgentList(BaseModel):
    agents: list[AgentSummary]
    shared: AgentSummary = Field(description=f"The tenant's shared concepts (name {SHARED}), counted as an agent's: "
                                             "what every agent that opts in recalls as its own.")


class ShareRequest(BaseModel):
    move: bool = Field(False, description="Also delete the agent's concept (restorable), so that the agents that "
                                          "opt in recall the shared one.")


class SharedCopy(StoredConcept):
    moved: bool = Field(description="Whether the agent's concept was deleted (a move); false for a copy, and for "
                                    "a move whose concept was written since it was copied (it stays).")


class DeletedItem(BaseModel):
    name: str
    deleted_at: str
    deleted_by: Optional[str] = Field(description="operator:<id> or engine; null when the record is gone.")
    version_id: str = Field(description="The delete marker's version id.")


class DeletedList(BaseModel):
    deleted: list[DeletedItem]


class Removed(BaseModel):
    name: str
    version_id: str = Field(description="The delete marker's version id.")


class ConfigFile(BaseModel):
    yaml: Optional[str] = Field(description="knowledge.yaml as stored; null when the agent has none yet.")
    etag: Optional[str]
    config: Optional[dict[str, Any]] = Field(description="The `knowledge:` block as read, with defaults; null when off.")


class VocabularyText(BaseModel):
    yaml: str = Field(max_length=LIMITS.vocabulary_max_bytes, description="vocabulary.yaml: `readings:`, each with "
                                                                   "`customers` (phrases) and `store` (words).")


class VocabularyProblem(BaseModel):
    message: str = Field(description="The rule broken, naming the line and the reading.")
    line: Optional[int] = Field(description="The line (from 1), when the problem has one.")


class VocabularyFile(BaseModel):
    yaml: Optional[str] = Field(description="vocabulary.yaml as stored; null when the agent has none (no readings).")
    etag: Optional[str]
    readings: int = Field(description="Readings recall holds in force (0 when the file does not parse).")
    phrases: int
    in_force: bool = Field(description="Whether retrieval reads the agent's messages through it.")
    problem: Optional[VocabularyProblem] = Field(description="Why a stored file is not in force (written by hand "
                                                             "and not valid): recall runs without it.")
    starters: list[str] = Field(description="The starter vocabularies an operator may copy from.")


class VocabularyStarter(BaseModel):
    name: str
    yaml: str


SEEN_AT_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$"


class ReviewState(BaseModel):
    seen_at: Optional[str] = Field(description="When this operator last marked the agent's concepts seen (UTC); "
                                               "null when never.")
    since: str = Field(description="What `new` counts from: seen_at, or 24 hours before as_of when never looked.")
    new: int = Field(description="Concepts new to this operator since then: written by the engine or another "
                                 "operator, less those marked reviewed one by one.")
    as_of: str = Field(description="When this was counted: PUT it back as seen_at to mark what was shown as seen.")
    undo: bool = Field(description="The last \"mark all as seen\" can be undone (POST /review/undo with this seen_at).")


class SeenAt(BaseModel):
    seen_at: str = Field(pattern=SEEN_AT_PATTERN, max_length=32,
                         description="UTC; only moves forward (an earlier time changes nothing), never ahead of now.")


class UndoMark(BaseModel):
    seen_at: str = Field(pattern=SEEN_AT_PATTERN, max_length=32,
                         description="The seen_at the mark to undo stored (its answer's seen_at).")


class Reviewed(BaseModel):
    written_at: str = Field(pattern=SEEN_AT_PATTERN, max_length=32,
                            description="The row's written_at: the version reviewed (a later one is new again).")


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable, for programs: unknown_agent, not_found, stale, invalid_concept, ...")
    message: str = Field(description="For people.")


class ErrorBody(BaseModel):
    error: ErrorDetail


class GatewayRefusal(BaseModel):
    message: str = Field(description="API Gateway's own answer when the JWT authorizer refuses the token.")


class FieldProblem(BaseModel):
    field: str
    message: str
    line: Optional[int] = Field(description="The document's line to look at, when one is known.")


class Invalid(ErrorBody):
    errors: Optional[list[FieldProblem]] = Field(
        None, description="invalid_concept: each problem with its field and line.")


class StaleVersion(BaseModel):
    markdown: str
    etag: str
    version_id: Optional[str]


class Stale(ErrorBody):
    current: Optional[StaleVersion] = Field(description="What is stored now; null when it was deleted meanwhile.")


class Taken(ErrorBody):
    name: str = Field(description="The concept that already has this name (name_taken), or the deleted one's "
                                  "(name_deleted).")
    deleted_at: Optional[str] = Field(None, description="name_deleted: when it was deleted (UTC).")
    deleted_by: Optional[str] = Field(None, description="name_deleted: who deleted it (null when not recorded).")


def answers(status: int, model: Any, *also: int) -> dict[int, dict[str, Any]]:
    """The OpenAPI responses of a route: its success, the errors every route may answer, and `also`."""
    def body(kind: Any) -> dict[str, Any]:
        return {"content": {"application/json": {"model": kind}}}

    errors = {400: ("A tenant, agent or name that is not a slug, or a path with a control character", ErrorBody),
              401: ("No valid token", Union[ErrorBody, GatewayRefusal]),
              403: ("The operator is not a member of the tenant", ErrorBody),
              404: ("No such agent (unknown_agent), concept, version or route", ErrorBody),
              409: ("A concept with this name already exists (name_taken, with `name`), a deleted one has it "
                    "(name_deleted), or there is nothing to undo (nothing_to_undo)", Union[Taken, ErrorBody]),
              412: ("Stale: a newer version exists (If-Match no longer current)", Stale),
              422: ("The request or the document is invalid (a cursor this API did not hand out, "
                    "a seen_at that is not a UTC time or is ahead of now)", Invalid),
              428: ("If-Match is required", ErrorBody),
              503: ("Storage is busy, or the session archive is not configured", ErrorBody)}
    out = {status: {"description": "Success", **body(model)}}
    for code in sorted({400, 401, 403, 404, 422, 503, *also}):
        out[code] = {"description": errors[code][0], **body(errors[code][1])}
    return out


def operator():
    return operator_from_claims(app.current_event.request_context.authorizer.jwt_claim)


def _json(status: int, body: dict) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def _error(status: int, exc: KnowledgeError, **extra) -> Response:
    return _json(status, error_body(exc, **extra))


# ------------------------------------------------------------------ agents
@app.get("/tenants/<tenant>/agents", summary="The tenant's agents, with counts of concepts, conflicts, related "
                                            "claims waiting and concepts new to this operator",
         responses=answers(200, AgentList))
def list_agents(tenant: Slug) -> AgentList:
    rows = reviews.agents(operator(), tenant)
    problems = config_checks.problems(tenant, [row["name"] for row in rows])  # side by side
    return {"agents": [{**row, "config_problem": problem} for row, problem in zip(rows, problems)],
            "shared": reviews.shared(operator(), tenant)}


# ------------------------------------------------------------------ concepts
@app.get(f"{BASE}/concepts", summary="List concepts (a page), last written first unless sorted otherwise",
         responses=answers(200, ConceptList))
def list_concepts(tenant: Slug, agent: Scope,
                  status: Annotated[Optional[str], Query(
                      pattern="^(conflict|related|new|expired|not_started|stale|retired)$",
                      description="new: written by the engine since this operator last looked; expired, "
                                  "not_started, stale, retired: kept but out of recall for that reason.")] = None,
                  type: Annotated[Optional[str], Query(pattern="^(fact|entity|procedure|policy|objection)$")] = None,
                  q: Annotated[Optional[str], Query(max_length=200, description="Words or a prefix, searched in name, "
                                                                               "description and body.")] = None,
                  sort: Annotated[Optional[str], Query(
                      pattern=f"^({'|'.join((*LIMITS.sorts, 'relevance'))})$",
                      description="The column to sort by; absent: relevance with `q` (the exact name, names it "
                                  "starts, the index's ranking, text matches), else written_at.")] = None,
                  order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
                  limit: Annotated[Optional[int], Query(ge=1, le=500, description="Rows per page; all when absent.")] = None,
                  cursor: Annotated[Optional[str], Query(pattern="^[0-9]{1,9}$",
                                                         description="The `next` of the page before.")] = None,
                  ) -> ConceptList:
    return {**reviews.list(operator(), tenant, agent, status=status, type=type, q=q, sort=sort, order=order,
                           limit=limit, cursor=cursor),
            "config_problem": None if agent == SHARED else config_checks.problem(tenant, agent)}


@app.post(f"{BASE}/concepts", summary="Create a concept by hand (provenance policy unless the text says otherwise)",
          responses=answers(201, StoredConcept, 409, 412))
def create_concept(tenant: Slug, agent: Scope, body: Markdown,
                   new_history: Annotated[bool, Query(description="Create it even when a deleted concept has this "
                                                                  "name (else 409 name_deleted: restore that one, "
                                                                  "or ask again with this set).")] = False,
                   ) -> Response[StoredConcept]:
    return _json(201, review_if_policy(tenant, agent, recreation.create(operator(), tenant, agent, body.markdown,
                                                                        new_history=new_history)))


def review_if_policy(tenant: str, agent: str, saved: dict) -> dict:
    """A policy concept just saved is queued for review: the observed concepts it contradicts are
    retired off the request path (PolicyReviewFunction). The save stands whatever the queue says;
    a review that could not be queued is counted (PolicyReviewNotQueued) and logged, names only."""
    if policy_reviews is None:  # a shared policy's review is fanned out to the agents that recall it
        return saved
    try:
        policy_reviews.saved(tenant, agent, saved["markdown"])
    except Exception as exc:  # noqa: BLE001 - the operator's save is written; only its review is lost
        policy_reviews.counters.count("PolicyReviewNotQueued")
        logger.warning("policy review not queued", extra={"tenant": tenant, "agent": agent, "name": saved["name"],
                                                          "error_type": type(exc).__name__})
    finally:
        policy_reviews.counters.flush(service="knowledge-studio")
    return saved


@app.get(f"{BASE}/concepts/<name>", summary="One concept: raw markdown, ETag, version id",
         responses=answers(200, StoredConcept))
def get_concept(tenant: Slug, agent: Scope, name: Slug) -> StoredConcept:
    return studio.get(operator(), tenant, agent, name)


@app.put(f"{BASE}/concepts/<name>", summary="Save an edit (If-Match: the ETag that was read)",
         responses=answers(200, StoredConcept, 412, 428))
def save_concept(tenant: Slug, agent: Scope, name: Slug, body: Markdown,
                 if_match: Annotated[Optional[str], Header(alias="if-match")] = None) -> StoredConcept:
    return review_if_policy(tenant, agent, studio.save(operator(), tenant, agent, name, body.markdown, if_match))


@app.delete(f"{BASE}/concepts/<name>", summary="Delete (a restorable delete marker)",
            responses=answers(200, Removed))
def delete_concept(tenant: Slug, agent: Scope, name: Slug) -> Removed:
    return studio.delete(operator(), tenant, agent, name)


@app.post(f"{BASE}/concepts/<name>/share", summary="Copy (or move) the agent's concept to the tenant's shared "
                                                 "knowledge, which every agent that opts in recalls",
          responses=answers(201, SharedCopy, 409))
def share_concept(tenant: Slug, agent: Slug, name: Slug, body: ShareRequest) -> Response[SharedCopy]:
    # A policy copied there is in force in every agent that recalls shared knowledge: reviewed there.
    return _json(201, review_if_policy(tenant, SHARED, sharing.share(operator(), tenant, agent, name, move=body.move)))


@app.get(f"{BASE}/concepts/<name>/versions",
         summary="Version history, a page at a time: time, actor, reason, size, and the session each sighting "
                 "was learned from",
         responses=answers(200, VersionList))
def list_versions(tenant: Slug, agent: Scope, name: Slug,
                  limit: Annotated[int, Query(ge=1, le=200, description="Versions per page.")] = 50,
                  cursor: Annotated[Optional[str], Query(pattern="^[A-Za-z0-9_-]{1,1400}$",
                                                         description="The `next` of the page before.")] = None,
                  ) -> VersionList:
    return studio.version_page(operator(), tenant, agent, name, limit=limit, cursor=cursor)


@app.get(f"{BASE}/concepts/<name>/versions/<version_id>", summary="Read one version",
         responses=answers(200, StoredConcept))
def get_version(tenant: Slug, agent: Scope, name: Slug, version_id: VersionId) -> StoredConcept:
    return studio.version(operator(), tenant, agent, name, version_id)


@app.get(f"{BASE}/concepts/<name>/versions/<version_id>/evidence",
         summary="The quote a version was learned from, read from the archived turn now (redacted), or expired",
         responses=answers(200, Evidence))
def get_evidence(tenant: Slug, agent: Scope, name: Slug, version_id: VersionId) -> Response[Evidence]:
    # Customer words: never cached by a browser or a proxy on the way.
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, headers={"Cache-Control": "no-store"},
                    body=studio.evidence(operator(), tenant, agent, name, version_id))


@app.post(f"{BASE}/concepts/<name>/versions/<version_id>/restore", summary="Restore a version as a new one",
          responses=answers(200, StoredConcept, 412))
def restore_version(tenant: Slug, agent: Scope, name: Slug, version_id: VersionId,
                    if_match: Annotated[Optional[str], Header(alias="if-match")] = None) -> StoredConcept:
    return review_if_policy(tenant, agent, studio.restore(operator(), tenant, agent, name, version_id, if_match))


@app.get(f"{BASE}/deleted", summary="Deleted concepts, newest first", responses=answers(200, DeletedList))
def list_deleted(tenant: Slug, agent: Scope) -> DeletedList:
    return {"deleted": studio.deleted(operator(), tenant, agent)}


@app.get(f"{BASE}/deleted/<name>", summary="A deleted concept as it was, with who deleted it and when",
         responses=answers(200, DeletedPreview))
def get_deleted(tenant: Slug, agent: Scope, name: Slug) -> DeletedPreview:
    return studio.deleted_one(operator(), tenant, agent, name)


@app.post(f"{BASE}/deleted/<name>/restore", summary="Undelete", responses=answers(200, StoredConcept, 412))
def undelete(tenant: Slug, agent: Scope, name: Slug) -> StoredConcept:
    return studio.undelete(operator(), tenant, agent, name)


@app.post(f"{BASE}/import", summary="Import chosen files (.md concepts, an FAQ .csv/.yaml): a dry run reports "
                                   "every concept, a write imports one window of them",
          responses=answers(200, ImportAnswer))
def import_files(tenant: Slug, agent: Scope, body: ImportBody) -> ImportAnswer:
    try:
        return importing.run(operator(), tenant, agent, body)  # each policy written is queued for review
    finally:
        if policy_reviews is not None:
            policy_reviews.counters.flush(service="knowledge-studio")


# ------------------------------------------------------------------ review: new since I last looked
@app.get(f"{BASE}/review", summary="This operator's last look at the agent and how many concepts the engine "
                                   "wrote since", responses=answers(200, ReviewState))
def get_review(tenant: Slug, agent: Scope) -> ReviewState:
    return reviews.state(operator(), tenant, agent)


@app.put(f"{BASE}/review", summary="Mark the agent's concepts seen up to seen_at (forward only)",
         responses=answers(200, ReviewState))
def put_review(tenant: Slug, agent: Scope, body: SeenAt) -> ReviewState:
    return reviews.mark_seen(operator(), tenant, agent, body.seen_at)


@app.post(f"{BASE}/review/undo", summary="Undo the last \"mark all as seen\" (the one that stored seen_at)",
          responses=answers(200, ReviewState, 409))
def undo_review(tenant: Slug, agent: Scope, body: UndoMark) -> ReviewState:
    return reviews.undo_mark(operator(), tenant, agent, body.seen_at)


@app.put(f"{BASE}/review/concepts/<name>", summary="Mark one concept reviewed, at the version written at written_at",
         responses=answers(200, ReviewState))
def put_reviewed(tenant: Slug, agent: Scope, name: Slug, body: Reviewed) -> ReviewState:
    return reviews.mark_reviewed(operator(), tenant, agent, name, body.written_at)


# ------------------------------------------------------------------ the knowledge: block
@app.get(f"{BASE}/config", summary="The agent's knowledge.yaml", responses=answers(200, ConfigFile))
def get_config(tenant: Slug, agent: Slug) -> ConfigFile:
    return studio.config(operator(), tenant, agent)


@app.put(f"{BASE}/config", summary="Save knowledge.yaml (validated; If-Match unless creating)",
         responses=answers(200, ConfigFile, 412))
def save_config(tenant: Slug, agent: Slug, body: ConfigText,
                if_match: Annotated[Optional[str], Header(alias="if-match")] = None) -> ConfigFile:
    return studio.save_config(operator(), tenant, agent, body.yaml, if_match)


@app.get("/openapi.json", summary="This API's OpenAPI document", include_in_schema=False)
def openapi() -> Response[str]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_document())


def openapi_document() -> str:
    """The document, with the bearer JWT every route needs and only the schemas it refers to
    (the resolver adds its own validation-error shapes, which this API never answers)."""
    document = json.loads(app.get_openapi_json_schema(
        title="Knowledge studio API", version="1.0.0",
        security_schemes={"jwt": HTTPBearer(bearerFormat="JWT", description="The id token from sign-in "
                                                                           "(Cognito's hosted UI, PKCE).")},
        security=[{"jwt": []}]))
    schemas = document["components"]["schemas"]
    while True:
        text = json.dumps({k: v for k, v in document.items() if k != "components"} | {"schemas": schemas})
        unused = [name for name in schemas if f'"#/components/schemas/{name}"' not in text]
        if not unused:
            break
        for name in unused:
            del schemas[name]
    return json.dumps(document)


# ------------------------------------------------------------------ the vocabulary (vocabulary.yaml)
@app.get(f"{BASE}/vocabulary", summary="The agent's vocabulary.yaml: its customers' words read as the store's",
         responses=answers(200, VocabularyFile))
def get_vocabulary(tenant: Slug, agent: Slug) -> VocabularyFile:
    return vocabularies.get(operator(), tenant, agent)


@app.put(f"{BASE}/vocabulary", summary="Save vocabulary.yaml (validated; If-Match unless creating)",
         responses=answers(200, VocabularyFile, 412))
def save_vocabulary(tenant: Slug, agent: Slug, body: VocabularyText,
                    if_match: Annotated[Optional[str], Header(alias="if-match")] = None) -> VocabularyFile:
    return vocabularies.save(operator(), tenant, agent, body.yaml, if_match)


@app.get("/vocabulary-starters/<name>", summary="A starter vocabulary, to copy into an agent's and edit",
         responses=answers(200, VocabularyStarter))
def get_vocabulary_starter(name: Slug) -> VocabularyStarter:
    return vocabularies.starter(operator(), name)


@app.exception_handler(InvalidVocabulary)
def invalid_vocabulary(exc: InvalidVocabulary) -> Response:
    return _error(422, exc, line=exc.line)


# ------------------------------------------------------------------ errors, mapped once
# Errors answered with their own code and message: the status by type.
STATUS = {Unauthorized: 401, Forbidden: 403, NotFound: 404, InvalidName: 400, InvalidConfig: 422,
          InvalidSeenAt: 422, InvalidReviewed: 422, InvalidCursor: 422, NothingToUndo: 409, PreconditionRequired: 428,
          InvalidImport: 422, ArchiveNotConfigured: 503, deadline.DeadlineExceeded: 503}


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


@app.exception_handler(NameDeleted)
def name_deleted(exc: NameDeleted) -> Response:
    return _error(409, exc, name=exc.name, deleted_at=exc.deleted_at, deleted_by=exc.deleted_by)


@app.exception_handler(InvalidConcept)
def invalid_concept(exc: InvalidConcept) -> Response:
    return _error(422, exc, errors=field_errors(exc))


answer_alike(app, _json, STATUS)


@app.exception_handler(KnowledgeError)
def other(exc: KnowledgeError) -> Response:
    logger.warning("studio request refused", extra={"error_code": exc.code})
    return _error(400, exc)


# Path segments a client encodes that cannot change the routing (S3 version ids hold + and =).
_PLAIN = frozenset(string.ascii_letters + string.digits + "._~+=-")


@logger.inject_lambda_context
def lambda_handler(event, context):
    if isinstance(event, dict) and "rawPath" in event:
        event = {**event, "rawPath": plain_path(event["rawPath"], _PLAIN)}
    # Every S3 call of a request gives up before API Gateway's 29 s; the list's own catch-up is shorter.
    with deadline.until(deadline.at_the_latest(context)):
        return app.resolve(event, context)
