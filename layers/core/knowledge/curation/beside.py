"""What waits beside a concept for the operator's judgment (knowledge.store.waiting), as the studio shows it.

An agent's concept: the pairs in that agent's waiting list. A shared concept: the pairs every agent of the
tenant set aside beside it (a sighting of its name in that agent's traffic), each naming its agent.
"""

from __future__ import annotations

from typing import Any

from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED


def pairs_beside(store: ConceptStore, tenant: str, scope: str, name: str) -> list[dict[str, Any]]:
    """The pairs waiting beside `name`, oldest first, each with the agent whose list holds it."""
    waiting = store.waiting()
    agents = store.agents(tenant) if scope == SHARED else [scope]
    found = []
    for agent in agents:
        for pair in waiting.of(tenant, agent, name):
            if pair.shared == (scope == SHARED):
                found.append({"agent": agent, **pair.to_json(), "shared": pair.shared})
    return sorted(found, key=lambda p: (p["since"], p["agent"], p.get("policy") or p.get("session_id") or ""))


def dismiss_beside(store: ConceptStore, tenant: str, scope: str, name: str) -> int:
    """Every pair waiting beside `name` dismissed by an operator (a shared concept's, in every agent)."""
    waiting = store.waiting()
    agents = store.agents(tenant) if scope == SHARED else [scope]
    return sum(waiting.dismiss(tenant, agent, name) for agent in agents)
