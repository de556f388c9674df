"""The events the knowledge loop publishes (docs/contract.md, "Consolidation"): which concept, never what it says."""

from __future__ import annotations

from typing import Optional

LEARNED, CONFLICT, RETRIEVED = "knowledge_learned", "knowledge_conflict", "knowledge_retrieved"
# The agent's tools (search_knowledge, save_knowledge): identifiers only, never the query or the insight.
SEARCHED, SAVED = "knowledge_searched", "knowledge_saved"
# What became of a save, once consolidation applied its sighting (detail: identifiers, save_id, outcome).
SAVE_SETTLED = "knowledge_save_settled"


def detail(tenant: str, agent: str, name: str, type: str, *, outcome: Optional[str] = None,
           session_id: Optional[str] = None, conflicts_with: Optional[str] = None) -> dict[str, str]:
    """The only fields an event carries: identifiers and the outcome (`conflicts_with`: the other policy
    of a conflict of two policies)."""
    out = {"tenant": tenant, "agent": agent, "name": name, "type": type}
    if outcome:
        out["outcome"] = outcome
    if session_id:
        out["session_id"] = session_id
    if conflicts_with:
        out["conflicts_with"] = conflicts_with
    return out


def search_detail(tenant: str, agent: str, session_id: str, names: list[str]) -> dict[str, object]:
    """A search's event: who searched and which concepts it answered (never the query)."""
    return {"tenant": tenant, "agent": agent, "session_id": session_id, "names": list(names)}
