"""StudioApiFunction: the studio's HTTP API (API Gateway HTTP API, JWT authorizer).

Routes are wiring: the operator comes from the verified token's claims, the work is done by
knowledge.curation.studio, and every domain error is mapped to HTTP once, below. The requests and
answers the routes declare live in their room, knowledge.curation.api_models; the published OpenAPI
document (studio_web/openapi.json) is generated from both.
"""

import os
import pathlib
import string
import sys
from typing import Annotated, Optional

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, CORSConfig, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query

from knowledge import wiring
from knowledge.curation.api_models import (
    SHARED,
    SORTS,
    AgentList,
    ConceptList,
    ConfigFile,
    ConfigText,
    DeletedList,
    DeletedPreview,
    Evidence,
    ImportAnswer,
    ImportBody,
    Markdown,
    Removed,
    ReviewState,
    Reviewed,
    SeenAt,
    ShareRequest,
    SharedCopy,
    StoredConcept,
    UndoMark,
    VersionList,
    VersionPair,
    VocabularyFile,
    VocabularyStarter,
    VocabularyText,
    WaitingDismissed,
    WaitingList,
    WordsProposal,
    WordsProposeRequest,
    answers,
)
from knowledge.errors import (
    ArchiveNotConfigured,
    InvalidBulk,
    InvalidImport,
    InvalidRemoval,
    InvalidReviewed,
    InvalidSeenAt,
    InvalidSince,
    InvalidVocabulary,
    NameDeleted,
    NameTaken,
    NothingToUndo,
    PreconditionRequired,
    UnknownOrigin,
    WordsNotConfigured,
)
from shared import deadline
from shared.errors import (
    Conflict,
    DeadlineExceeded,
    Forbidden,
    InvalidConcept,
    InvalidConfig,
    InvalidCursor,
    InvalidName,
    KnowledgeError,
    NotFound,
    Unauthorized,
    field_errors,
)
from shared.httpapi import answer_alike, check_path, error_body, openapi_document as api_document, plain_path

logger = Logger()
studio, reviews, policy_reviews, vocabularies, importing, config_checks, recreation, sharing, words_backfill, \
    words = \
    wiring.studio_api_from_env()
# Only the studio's own origin may call the API from a browser.
app = APIGatewayHttpResolver(enable_validation=True,
                             cors=CORSConfig(allow_origin=os.environ.get("STUDIO_ORIGIN", "http://127.0.0.1:8080"),
                                             allow_headers=["Authorization", "Content-Type", "If-Match"],
                                             expose_headers=["ETag"], max_age=600, allow_credentials=False))
VersionId = Annotated[str, Path(pattern=r"^[A-Za-z0-9._+=-]+$", max_length=1024)]


def refuse_control_characters(app, next_middleware):
    check_path(app.current_event.raw_path)
    return next_middleware(app)


app.use(middlewares=[refuse_control_characters])
# The words page's routes live in their own module beside this one (Lambda's task root is on the path;
# a test or the local stack loads this file by its path, so the directory is put there too).
_HERE = str(pathlib.Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import studio_behind  # noqa: E402 - after the path is set
from routing import BASE, Scope, Slug, operator_of  # noqa: E402 - after the path is set
import studio_bulk  # noqa: E402 - after the path is set
import studio_words  # noqa: E402 - after the path is set

app.include_router(studio_words.routes(*words))
app.include_router(studio_bulk.routes(wiring.bulk_actions(studio, reviews, sharing, policy_reviews)))
app.include_router(studio_behind.routes(studio.journal))


def operator():
    return operator_of(app)


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
                      pattern=f"^({'|'.join((*SORTS, 'relevance'))})$",
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


@app.get(f"{BASE}/concepts/<name>/waiting",
         summary="The pairs no judge decided, waiting beside the concept for the operator (never written into it)",
         responses=answers(200, WaitingList))
def list_waiting(tenant: Slug, agent: Scope, name: Slug) -> Response[WaitingList]:
    # A sighting's claim is a customer's words (redacted): never cached by a browser or a proxy on the way.
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, headers={"Cache-Control": "no-store"},
                    body=studio.waiting(operator(), tenant, agent, name))


@app.delete(f"{BASE}/concepts/<name>/waiting",
            summary="Dismiss what waits beside the concept: the operator has judged it (the concept is not written)",
            responses=answers(200, WaitingDismissed))
def dismiss_waiting(tenant: Slug, agent: Scope, name: Slug) -> WaitingDismissed:
    return studio.dismiss_waiting(operator(), tenant, agent, name)


@app.get(f"{BASE}/concepts/<name>/versions/<version_id>", summary="Read one version",
         responses=answers(200, StoredConcept))
def get_version(tenant: Slug, agent: Scope, name: Slug, version_id: VersionId) -> StoredConcept:
    return studio.version(operator(), tenant, agent, name, version_id)


version_pairs = wiring.version_pairs(studio)  # the history's diffs, two versions in one answer


@app.get(f"{BASE}/concepts/<name>/versions/<version_id>/against/<against>",
         summary="Two versions in one answer, read side by side: what a version changed against the one before "
                 "it, or an old version against the current one",
         responses=answers(200, VersionPair))
def compare_versions(tenant: Slug, agent: Scope, name: Slug, version_id: VersionId, against: VersionId) -> VersionPair:
    return version_pairs.read(operator(), tenant, agent, name, version_id, against)


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


@app.post(f"{BASE}/words/propose", summary="Teach words: the model's customer words for every concept that has "
                                           "none yet, queued ten concepts to a call (a dry run says what it costs)",
          responses=answers(200, WordsProposal))
def propose_words(tenant: Slug, agent: Scope, body: WordsProposeRequest) -> WordsProposal:
    studio.check_agent(operator(), tenant, agent)
    if words_backfill is None:
        raise WordsNotConfigured("no queue for the words jobs is configured here (POLICY_REVIEW_QUEUE_URL)")
    plan = words_backfill(tenant, agent, body.dry_run)
    if plan.queued < plan.concepts and not body.dry_run:
        logger.warning("words jobs not queued", extra={"tenant": tenant, "agent": agent,
                                                       "not_queued": plan.concepts - plan.queued})
    return plan.as_dict()


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
    """This API's OpenAPI document (kept in the repo by scripts/gen/openapi.py)."""
    return api_document(app, "Knowledge studio API")


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
          InvalidImport: 422, ArchiveNotConfigured: 503, WordsNotConfigured: 503, DeadlineExceeded: 503,
          UnknownOrigin: 422, InvalidRemoval: 422, InvalidBulk: 422, InvalidSince: 422}


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


answer_alike(app, _json, STATUS, logger)


# Path segments a client encodes that cannot change the routing (S3 version ids hold + and =).
_PLAIN = frozenset(string.ascii_letters + string.digits + "._~+=-")


@logger.inject_lambda_context
def lambda_handler(event, context):
    if isinstance(event, dict) and "rawPath" in event:
        event = {**event, "rawPath": plain_path(event["rawPath"], _PLAIN)}
    # Every S3 call of a request gives up before API Gateway's 29 s; the list's own catch-up is shorter.
    with deadline.until(deadline.at_the_latest(context)):
        return app.resolve(event, context)
