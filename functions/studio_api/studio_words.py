"""The studio API's words page routes: the words recall learned across an agent's concepts, and their
removal from many concepts at once. Wiring only: the work is knowledge.curation.words_page and
knowledge.curation.words_removal; errors are mapped to HTTP once, in app.py, which includes these
routes (`routes`: a router bound to that app's own services)."""

from typing import Annotated, Any, Optional

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from knowledge.curation.api_models import (
    PAGE_MAX,
    SLUG_MAX,
    SLUG_PATTERN,
    WordsPage,
    WordsRemovalBody,
    WordsRemoved,
    answers,
)
from routing import BASE, Scope, Slug, operator_of


def routes(page: Any, removal: Any) -> APIGatewayHttpRouter:
    """The routes over `page` (knowledge.curation.words_page.LearnedWords) and `removal`
    (knowledge.curation.words_removal.WordsRemoval), as knowledge.wiring builds them."""
    router = APIGatewayHttpRouter()

    def operator():
        return operator_of(router)

    @router.get(f"{BASE}/words", summary="The words recall learned across the agent's concepts, newest first, and "
                                         "where each came from (model, traffic, operator)",
                responses=answers(200, WordsPage))
    def list_words(tenant: Slug, agent: Scope,
                   origin: Annotated[Optional[str], Query(max_length=40, description=(
                       "model, traffic (loaded or sighting), operator, loaded or sighting; another is 422 "
                       "unknown_origin."))] = None,
                   concept: Annotated[Optional[str], Query(pattern=SLUG_PATTERN, max_length=SLUG_MAX,
                                                           description="One concept's words.")]
                   = None,
                   limit: Annotated[int, Query(ge=1, le=PAGE_MAX, description="Words per page.")] = 100,
                   cursor: Annotated[Optional[str], Query(max_length=400,
                                                          description="The `next` of the page before.")] = None,
                   ) -> WordsPage:
        return page.page(operator(), tenant, agent, origin=origin, concept=concept, limit=limit, cursor=cursor)

    @router.post(f"{BASE}/words/remove", summary="Remove learned words from many concepts at once: one version per "
                                                "concept, each word kept in its removed_words (never learned again)",
                 responses=answers(200, WordsRemoved))
    def remove_words(tenant: Slug, agent: Scope, body: WordsRemovalBody) -> WordsRemoved:
        return removal.remove(operator(), tenant, agent, [item.model_dump() for item in body.words])

    return router
