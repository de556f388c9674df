"""What every studio route module states the same way: the agent's base path, its path segments as
the document states them, and the operator a request is made by."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from knowledge.curation.api_models import SHARED, SLUG_MAX, SLUG_PATTERN
from shared.httpapi import operator_from_claims

BASE = "/tenants/<tenant>/agents/<agent>"
# Path segments as the document states them; one that breaks its pattern is 400 invalid_name.
Slug = Annotated[str, Path(pattern=SLUG_PATTERN, max_length=SLUG_MAX)]
# An agent, or `_shared`: the tenant's shared concepts, which every agent that opts in recalls (not a
# slug, so no agent is named so). The routes of concepts, history, deletions, import and review take it.
Scope = Annotated[str, Path(pattern=f"^({SHARED}|{SLUG_PATTERN.strip('^$')})$", max_length=SLUG_MAX,
                            description=f"The agent, or {SHARED}: the tenant's shared concepts.")]


def operator_of(resolver) -> str:
    """The signed-in operator of the request `resolver` (the app or a router) is answering."""
    return operator_from_claims(resolver.current_event.request_context.authorizer.jwt_claim)
