"""The studio API's bulk action on the list's selected rows (mark reviewed, delete and its undo,
change type, move to shared). Wiring only: the work is knowledge.curation.bulk; errors are mapped to HTTP once, in
app.py, which includes this route (`routes`: a router bound to that app's own services)."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from knowledge.curation.api_models import SHARED, SLUG_MAX, SLUG_PATTERN, answers
from knowledge.curation.bulk_api import BulkAnswer, BulkRequest
from shared.httpapi import operator_from_claims

BASE = "/tenants/<tenant>/agents/<agent>"
Slug = Annotated[str, Path(pattern=SLUG_PATTERN, max_length=SLUG_MAX)]
Scope = Annotated[str, Path(pattern=f"^({SHARED}|{SLUG_PATTERN.strip('^$')})$", max_length=SLUG_MAX,
                            description=f"The agent, or {SHARED}: the tenant's shared concepts.")]


def routes(bulk: Any) -> APIGatewayHttpRouter:
    """The route over `bulk` (knowledge.curation.bulk.Bulk)."""
    router = APIGatewayHttpRouter()

    def operator():
        return operator_from_claims(router.current_event.request_context.authorizer.jwt_claim)

    @router.post(f"{BASE}/concepts/bulk", summary="One action on many of the list's rows (at most 500): mark "
                                                  "reviewed, delete, undo a delete, change type, move to shared; "
                                                  "each row's outcome",
                 responses=answers(200, BulkAnswer))
    def bulk_action(tenant: Slug, agent: Scope, body: BulkRequest) -> BulkAnswer:
        rows = [row.model_dump(exclude_none=True) for row in body.rows]
        return bulk.act(operator(), tenant, agent, body.action, rows, body.type, body.dry_run)

    return router
