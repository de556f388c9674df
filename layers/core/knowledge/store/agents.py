"""Whether an agent exists: the rule the studio pages answer a mistyped `?agent=` by.

An agent exists once it has a knowledge.yaml or any concept, current or deleted (a deleted one's
versions are still there). Two listings of at most one key under the agent's prefix; nothing is read.
The Knowledge studio asks it through ConceptStore.agent_exists, the Facts page directly.
"""

from __future__ import annotations

from typing import Any

from shared import awscall
from shared.errors import UnknownAgent

from .keys import SHARED, agent_prefix


def agent_exists(s3: Any, bucket: str, tenant: str, agent: str, *, current_only: bool = False) -> bool:
    """A tenant's shared scope (SHARED) exists once the tenant has any agent, or anything shared.
    `current_only`: a knowledge.yaml or a current concept only (one listing; what RetrieveFunction,
    which may not list versions, answers `unknown_agent` by)."""
    if agent == SHARED:
        tenant_agents = f"agents/{agent_prefix(tenant, agent).split('/')[1]}/"  # the tenant, validated
        answer = awscall.call(s3, "list_objects_v2", Bucket=bucket, Prefix=tenant_agents, MaxKeys=1)
        if answer.get("KeyCount", 0):
            return True
    prefix = agent_prefix(tenant, agent)
    answer = awscall.call(s3, "list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=1)
    if answer.get("KeyCount", 0) or current_only:
        return bool(answer.get("KeyCount", 0))
    answer = awscall.call(s3, "list_object_versions", Bucket=bucket, Prefix=prefix, MaxKeys=1)
    return bool(answer.get("Versions") or answer.get("DeleteMarkers"))


def unknown_agent(tenant: str, agent: str, check: str) -> UnknownAgent:
    """What to say of an agent that does not exist; `check`: what the operator should look at."""
    return UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml nor any "
                        f"concept ({check})")
