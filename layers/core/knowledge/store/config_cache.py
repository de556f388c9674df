"""The agent's config, read once per ETag: what a container knows of each agent's knowledge.yaml."""

from __future__ import annotations

import threading
from typing import Optional

from knowledge.format.config import AgentConfig, KnowledgeConfig
from knowledge.store.concepts import ConceptStore
from shared.errors import NotModified


class ConfigCache:
    """Each agent's config file (`knowledge:` and `distill:`), kept per container and re-read only
    when its ETag changes."""

    def __init__(self, store: ConceptStore):
        self._store = store
        self._entries: dict[tuple[str, str], tuple[str, AgentConfig]] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str, agent: str) -> Optional[KnowledgeConfig]:
        """The `knowledge:` block, None when it is absent (learning and retrieval off)."""
        return self.both(tenant, agent).knowledge

    def both(self, tenant: str, agent: str) -> AgentConfig:
        key = (tenant, agent)
        cached = self._entries.get(key)
        try:
            stored = self._store.get_config(tenant, agent, unless_etag=cached[0] if cached else None)
        except NotModified:
            return cached[1]  # type: ignore[index]
        with self._lock:
            if stored is None:
                self._entries.pop(key, None)
                return AgentConfig()
            self._entries[key] = (stored.etag, AgentConfig(stored.config, stored.distill))
        return self._entries[key][1]
