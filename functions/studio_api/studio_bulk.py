"""The studio API's bulk action on the list's selected rows (mark reviewed, delete and its undo,
change type, move to shared). Wiring only: the work is knowledge.curation.bulk; errors are mapped to HTTP once, in
app.py, which includes this route (`routes`: a router bound to that app's own services)."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from knowledge.curation.api_models import answers
from knowledge.curation.bulk_api import BulkAnswer, BulkRequest
from routing import BASE, Scope, Slug, operator_of


def routes(bulk: Any) -> APIGatewayHttpRouter:
    """The route over `bulk` (knowledge.curation.bulk.Bulk)."""
    router = APIGatewayHttpRouter()

    def operator():
        return operator_of(router)

    @router.post(f"{BASE}/concepts/bulk", summary="One action on many of the list's rows (at most 500): mark "
                                                  "reviewed, delete, undo a delete, change type, move to shared; "
                                                  "each row's outcome",
                 responses=answers(200, BulkAnswer))
    def bulk_action(tenant: Slug, agent: Scope, body: BulkRequest) -> BulkAnswer:
        rows = [row.model_dump(exclude_none=True) for row in body.rows]
        return bulk.act(operator(), tenant, agent, body.action, rows, body.type, body.dry_run)

    return router
