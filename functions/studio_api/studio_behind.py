"""The studio API's stale-list cue: how many concepts were written behind an open list. Wiring only: the work
is knowledge.curation.behind; errors are mapped to HTTP once, in app.py, which includes this route (`routes`: a
router bound to that app's own Studio)."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from knowledge.curation.api_models import ChangesBehind, answers
from routing import BASE, Scope, Slug, operator_of

Since = Annotated[str, Query(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$", max_length=27,
                             description="The `as_of` of the list shown: what was written after it is counted.")]


def routes(journal: Any) -> APIGatewayHttpRouter:
    """The route over `journal` (knowledge.curation.behind.JournalTail, the one the studio's list reads through)."""
    router = APIGatewayHttpRouter()

    def operator():
        return operator_of(router)

    @router.get(f"{BASE}/changes", summary="How many concepts were written behind an open list since it was "
                                           "listed, from the change journal the list reads (no concept read)",
                responses=answers(200, ChangesBehind))
    def changes_behind(tenant: Slug, agent: Scope, since: Since) -> ChangesBehind:
        return journal.behind(operator(), tenant, agent, since)

    return router
