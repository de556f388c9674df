"""The events the knowledge loop publishes (docs/contract.md, "Consolidation"): which concept, never what it says."""

from __future__ import annotations

from typing import Optional

LEARNED, CONFLICT, RETRIEVED = "knowledge_learned", "knowledge_conflict", "knowledge_retrieved"


def detail(tenant: str, agent: str, name: str, type: str, *, outcome: Optional[str] = None,
           session_id: Optional[str] = None) -> dict[str, str]:
    """The only fields an event carries: identifiers and the outcome."""
    out = {"tenant": tenant, "agent": agent, "name": name, "type": type}
    if outcome:
        out["outcome"] = outcome
    if session_id:
        out["session_id"] = session_id
    return out
