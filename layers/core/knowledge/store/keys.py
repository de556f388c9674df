"""The concept store's key layout: where an agent's concepts, config, vocabulary, snapshot and journal live,
and the tenant, agent and concept names read back out of keys.

A tenant's shared knowledge (the concepts every agent that opts in with `knowledge: shared: true`
recalls) is stored by the same code under the scope SHARED, which stands where an agent's name
would: SHARED is not a slug, so no agent can spell it, and its keys live under `tenants/`, a
top-level prefix no agent key starts with (`agents/`), with its own journal prefix
`journal/{tenant}/_shared/` (under `journal/`, so the journal's lifecycle rule expires it too)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

from shared.errors import InvalidName
from shared.names import check_slug

# The tenant's shared scope, in an agent's place: not a slug, so never an agent's name.
SHARED = "_shared"


def check_scope(agent: str) -> str:
    """An agent's name (a slug), or the tenant's shared scope; InvalidName otherwise."""
    return agent if agent == SHARED else check_slug("agent", agent)


def agent_prefix(tenant: str, agent: str) -> str:
    if agent == SHARED:
        return f"tenants/{check_slug('tenant', tenant)}/shared/"
    return f"agents/{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/"


def concept_key(tenant: str, agent: str, name: str) -> str:
    return f"{agent_prefix(tenant, agent)}concepts/{check_slug('name', name)}.md"


def deletion_key(tenant: str, agent: str, name: str, marker: str) -> str:
    """Who deleted a concept and when (JSON), beside the delete marker whose version id it is named by."""
    return f"{agent_prefix(tenant, agent)}deletions/{check_slug('name', name)}/{marker}"


def config_key(tenant: str, agent: str) -> str:
    return f"{agent_prefix(tenant, agent)}knowledge.yaml"


def vocabulary_key(tenant: str, agent: str) -> str:
    return f"{agent_prefix(tenant, agent)}vocabulary.yaml"


def etag_token(etag: str) -> str:
    """An ETag as the journal writes it (no quotes): compare with this, never with the raw ETag."""
    return etag.strip('"')


def snapshot_key(tenant: str, agent: str) -> str:
    return f"{agent_prefix(tenant, agent)}concepts-index/snapshot"


def words_summary_key(tenant: str, agent: str) -> str:
    """Each concept's learned words as the studio's words page last read them (knowledge.store.words_summary)."""
    return f"{agent_prefix(tenant, agent)}concepts-index/words"


def journal_prefix(tenant: str, agent: str) -> str:
    if agent == SHARED:
        return f"journal/{check_slug('tenant', tenant)}/{SHARED}/"
    return f"journal/{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/"


def journal_stamp(epoch: float) -> str:
    """A journal key's time, which sorts as it reads (microseconds, UTC)."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def name_from_key(key: str, prefix: str) -> Optional[str]:
    if not key.startswith(prefix) or not key.endswith(".md"):
        return None
    name = key[len(prefix):-3]
    try:
        return check_slug("name", name)
    except InvalidName:
        return None  # an object someone put there by hand; not a concept


def agent_of(key: str) -> tuple[str, str]:
    """(tenant, agent) of a key under agents/, or (tenant, SHARED) of one under tenants/{tenant}/shared/
    (built by agent_prefix, so already valid)."""
    top, tenant, agent, _ = key.split("/", 3)
    return (tenant, SHARED) if top == "tenants" else (tenant, agent)


def is_agent(text: str) -> bool:
    try:
        check_slug("agent", text)
    except InvalidName:
        return False
    return True


def is_name(text: str) -> bool:
    try:
        check_slug("name", text)
    except InvalidName:
        return False
    return True
