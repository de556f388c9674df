"""RetrieveFunction's service: retrieval's calls (retrieve, load_knowledge, search_knowledge), the
builders' reads (list_knowledge, knowledge_history: knowledge.recall.reads) and save_knowledge. The
saver (knowledge.learning.save: the gates, PII detection, the queue) and the reader are built on
their first call, so a retrieve's cold start imports neither."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Protocol

from shared.telemetry import Counters


class Handles(Protocol):
    counters: Counters

    def handle(self, event: Any, remaining_seconds: Optional[float] = None) -> dict[str, Any]: ...


SAVES = ("save_knowledge", "save_status")
READS = ("list_knowledge", "knowledge_history")


class AgentTools:
    def __init__(self, retriever: Handles, saver: Callable[[], Handles],
                 reader: Optional[Callable[[], Handles]] = None):
        self.retriever = retriever
        self._make = {"save": saver, "read": reader}
        self._built: dict[str, Handles] = {}
        self.counters = retriever.counters

    def handle(self, event: Any, remaining_seconds: Optional[float] = None) -> dict[str, Any]:
        action = event.get("action") if isinstance(event, dict) else None
        part = "save" if action in SAVES else "read" if action in READS and self._make["read"] else None
        if part is None:
            return self.retriever.handle(event, remaining_seconds=remaining_seconds)
        if part not in self._built:
            self._built[part] = self._make[part]()  # type: ignore[misc]
        return self._built[part].handle(event, remaining_seconds=remaining_seconds)
