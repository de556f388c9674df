"""FactsApiFunction: the Facts page's HTTP API (the studio's HTTP API and JWT authorizer, routes
under /tenants/{tenant}/agents/{agent}/facts/).

Wiring only: the operator comes from the verified token's claims (the knowledge studio's check),
the work is done by facts.studio, and every domain error is mapped to HTTP once, below; the
requests and answers the routes declare live in facts.api_models. Every answer may hold customer
data: none is cached on the way, and none is logged.
"""

import os
import string
from typing import Annotated, Optional
from urllib.parse import unquote

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, CORSConfig, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

from facts import wiring
from facts.api_models import (
    CUSTOMER_ID_MAX,
    BULK_MAX,
    NAME_MAX,
    PAGE_MAX,
    SLUG_MAX,
    SLUG_PATTERN,
    BulkAnswer,
    BulkDecision,
    FactEdit,
    FactRemoval,
    FactView,
    MemoryCell,
    ProposalList,
    ProposalView,
    Reject,
    Reset,
    Trimmed,
    answers,
)
from facts.errors import (
    Busy,
    CannotUndo,
    CellReadable,
    CellUnreadable,
    FactChanged,
    Gone,
    InvalidFact,
    NothingToRestore,
    NotPending,
    PersonalData,
    ProposalWentStale,
)
from shared.errors import (
    Conflict,
    Forbidden,
    InvalidCursor,
    InvalidName,
    InvalidRequest,
    KnowledgeError,
    NotFound,
    Unauthorized,
)
from shared.httpapi import answer_alike, check_path, error_body, openapi_document as api_document, \
    operator_from_claims, plain_path

logger = Logger()
facts = wiring.studio_from_env()
# Only the studio's own origin may call the API from a browser.
app = APIGatewayHttpResolver(enable_validation=True,
                             cors=CORSConfig(allow_origin=os.environ.get("STUDIO_ORIGIN", "http://127.0.0.1:8080"),
                                             allow_headers=["Authorization", "Content-Type"],
                                             max_age=600, allow_credentials=False))
BASE = "/tenants/<tenant>/agents/<agent>/facts"
Slug = Annotated[str, Path(pattern=SLUG_PATTERN, max_length=SLUG_MAX)]
CustomerId = Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$", max_length=CUSTOMER_ID_MAX)]
ProposalId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]
# A fact name is checked by the core, which says what one may be in words (a pattern here would answer a
# regex); it arrives as the page encoded it (a valid one has nothing to decode), so it is decoded first.
FactName = Annotated[str, Path(min_length=1, max_length=4 * NAME_MAX)]


def refuse_control_characters(app, next_middleware):
    check_path(app.current_event.raw_path)
    return next_middleware(app)


app.use(middlewares=[refuse_control_characters])


def operator():
    return operator_from_claims(app.current_event.request_context.authorizer.jwt_claim)


def _json(status: int, body: dict) -> Response:
    # Customer facts and words: never kept by a browser or a proxy.
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body,
                    headers={"Cache-Control": "no-store"})


def _error(status: int, exc: KnowledgeError, **extra) -> Response:
    return _json(status, error_body(exc, **extra))


# ------------------------------------------------------------------ proposals
@app.get(f"{BASE}/proposals", summary="One page of proposals: pending oldest first, stale, or recent decisions "
                                      "newest first", responses=answers(ProposalList))
def list_proposals(tenant: Slug, agent: Slug,
                   state: Annotated[str, Query(pattern="^(pending|stale|recent)$")] = "pending",
                   limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 20,
                   cursor: Annotated[Optional[str], Query(pattern="^[0-9]{1,9}$")] = None,
                   name: Annotated[Optional[str], Query(min_length=1, max_length=NAME_MAX)] = None,
                   customer: Annotated[Optional[str], Query(min_length=1, max_length=CUSTOMER_ID_MAX)] = None,
                   ) -> Response[ProposalList]:
    return _json(200, facts.proposals(operator(), tenant, agent, state, limit=limit, cursor=cursor, name=name,
                                      customer=customer))


@app.post(f"{BASE}/proposals/bulk",
          summary=f"Approve, reject or dismiss several proposals (at most {BULK_MAX}) in one action, each by its own "
                  "compare-and-swap, each with its own outcome (404 when one does not exist: nothing decided)",
          responses=answers(BulkAnswer))
def decide_many(tenant: Slug, agent: Slug, body: BulkDecision) -> Response[BulkAnswer]:
    return _json(200, facts.decide_many(operator(), tenant, agent, body.action,
                                        [(item.customer_id, item.id) for item in body.items], body.reason))


@app.get(f"{BASE}/proposals/<customer_id>/<proposal_id>", summary="One proposal, with its evidence read now",
         responses=answers(ProposalView))
def get_proposal(tenant: Slug, agent: Slug, customer_id: CustomerId, proposal_id: ProposalId) -> Response[ProposalView]:
    return _json(200, facts.proposal(operator(), facts.refs(tenant, agent, customer_id, proposal_id)))


@app.post(f"{BASE}/proposals/<customer_id>/<proposal_id>/approve",
          summary="Approve & save to memory (compare-and-swap on the fact; 409 fact_moved when it changed)",
          responses=answers(ProposalView, 409))
def approve(tenant: Slug, agent: Slug, customer_id: CustomerId, proposal_id: ProposalId) -> Response[ProposalView]:
    return _json(200, facts.approve(operator(), facts.refs(tenant, agent, customer_id, proposal_id)))


@app.post(f"{BASE}/proposals/<customer_id>/<proposal_id>/reject", summary="Reject, with an optional reason",
          responses=answers(ProposalView, 409))
def reject(tenant: Slug, agent: Slug, customer_id: CustomerId, proposal_id: ProposalId,
           body: Annotated[Optional[Reject], Body()] = None) -> Response[ProposalView]:
    reason = body.reason if body else None
    return _json(200, facts.reject(operator(), facts.refs(tenant, agent, customer_id, proposal_id), reason))


@app.post(f"{BASE}/proposals/<customer_id>/<proposal_id>/dismiss",
          summary="Dismiss: this value will not be proposed again for the customer (also resolves a stale one)",
          responses=answers(ProposalView, 409))
def dismiss(tenant: Slug, agent: Slug, customer_id: CustomerId, proposal_id: ProposalId) -> Response[ProposalView]:
    return _json(200, facts.dismiss(operator(), facts.refs(tenant, agent, customer_id, proposal_id)))


@app.post(f"{BASE}/proposals/<customer_id>/<proposal_id>/undo",
          summary="Undo a decision: an approval's fact taken back out of memory by compare-and-swap (409 "
                  "cannot_undo when it changed since), or a reject or dismiss reopened; the proposal pending again "
                  "(410 gone after forget-customer)", responses=answers(ProposalView, 409, 410))
def undo(tenant: Slug, agent: Slug, customer_id: CustomerId, proposal_id: ProposalId) -> Response[ProposalView]:
    return _json(200, facts.undo(operator(), facts.refs(tenant, agent, customer_id, proposal_id)))


# ------------------------------------------------------------------ the customer's memory cell
@app.get(f"{BASE}/customers/<customer_id>/memory", summary="A customer's memory cell: the facts a read serves, and a problem when it is over-full (409 "
                                    "record_unreadable when it does not parse)", responses=answers(MemoryCell, 409))
def get_memory(tenant: Slug, agent: Slug, customer_id: CustomerId) -> Response[MemoryCell]:
    return _json(200, facts.memory(operator(), tenant, customer_id))


@app.put(f"{BASE}/customers/<customer_id>/memory/<name>",
         summary="Set a fact (origin operator) if it is still at the revision read (412 otherwise); a value holding "
                 "personal data is refused (422 personal_data) until its kinds are confirmed",
         responses=answers(FactView, 409, 412))
def edit_fact(tenant: Slug, agent: Slug, customer_id: CustomerId, name: FactName, body: FactEdit) -> Response[FactView]:
    return _json(200, facts.edit_fact(operator(), tenant, customer_id, unquote(name), body.value, body.revision,
                                      tuple(body.personal_data)))


@app.delete(f"{BASE}/customers/<customer_id>/memory/<name>",
            summary="Remove a fact if it is still at the revision read (412 otherwise), recording who and why; the "
                    "cell as it is then", responses=answers(MemoryCell, 409, 412))
def remove_fact(tenant: Slug, agent: Slug, customer_id: CustomerId, name: FactName,
                revision: Annotated[int, Query(ge=1)],
                body: Annotated[Optional[FactRemoval], Body()] = None) -> Response[MemoryCell]:
    return _json(200, facts.remove_fact(operator(), tenant, customer_id, unquote(name), revision,
                                        body.reason if body else None))


@app.post(f"{BASE}/customers/<customer_id>/memory/trim",
          summary="Remove the facts of an over-full cell that no read serves (all but the 200 most recently "
                  "written)", responses=answers(Trimmed, 409))
def trim_memory(tenant: Slug, agent: Slug, customer_id: CustomerId) -> Response[Trimmed]:
    return _json(200, facts.trim(operator(), tenant, customer_id))


@app.post(f"{BASE}/customers/<customer_id>/memory/restore",
          summary="An unreadable cell back at its newest earlier version that reads (409 no_version_to_restore "
                  "when none does, cell_readable when it reads)", responses=answers(MemoryCell, 409))
def restore_memory(tenant: Slug, agent: Slug, customer_id: CustomerId) -> Response[MemoryCell]:
    return _json(200, facts.restore_cell(operator(), tenant, customer_id))


@app.post(f"{BASE}/customers/<customer_id>/memory/reset",
          summary="An unreadable cell replaced by an empty one: confirm repeats the customer id",
          responses=answers(MemoryCell, 409))
def reset_memory(tenant: Slug, agent: Slug, customer_id: CustomerId, body: Reset) -> Response[MemoryCell]:
    return _json(200, facts.reset_cell(operator(), tenant, customer_id, body.confirm))


def openapi_document() -> str:
    """This API's OpenAPI document (kept as studio_web/facts-openapi.json by scripts/gen/openapi.py)."""
    return api_document(app, "Knowledge studio API: Facts")


# ------------------------------------------------------------------ errors, mapped once
# An unreadable cell is not the request's fault, nor the service's: 409 with what to do (restore or reset).
STATUS = {Unauthorized: 401, Forbidden: 403, NotFound: 404, InvalidName: 400, NotPending: 409, Conflict: 409,
          CellUnreadable: 409, CellReadable: 409, NothingToRestore: 409, Gone: 410,
          InvalidRequest: 422, InvalidFact: 422, InvalidCursor: 422, Busy: 503}


@app.exception_handler(ProposalWentStale)
def went_stale(exc: ProposalWentStale) -> Response:
    return _error(409, exc, proposal=exc.proposal)


@app.exception_handler(CannotUndo)
def cannot_undo(exc: CannotUndo) -> Response:
    return _error(409, exc, current=exc.current)


@app.exception_handler(FactChanged)
def fact_changed(exc: FactChanged) -> Response:
    return _error(412, exc, current=exc.current)


@app.exception_handler(PersonalData)
def personal_data(exc: PersonalData) -> Response:
    return _error(422, exc, kinds=exc.kinds, can_confirm=exc.can_confirm)


answer_alike(app, _json, STATUS, logger)


# Path segments a client encodes that cannot change the routing (customer ids hold : and .).
_PLAIN = frozenset(string.ascii_letters + string.digits + "._~:-")


@logger.inject_lambda_context
def lambda_handler(event, context):
    if isinstance(event, dict) and "rawPath" in event:
        event = {**event, "rawPath": plain_path(event["rawPath"], _PLAIN)}
    try:
        return app.resolve(event, context)
    finally:
        facts.counters.flush(service="facts-studio-api")
