"""RetrieveFunction's service: retrieval's calls (retrieve, load_knowledge, search_knowledge) and
save_knowledge. The saver (knowledge.learning.save: the gates, PII detection, the queue) is built
on the first save, so a retrieve's cold start imports none of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Protocol

from shared.telemetry import Counters


class Handles(Protocol):
    counters: Counters

    def handle(self, event: Any, remaining_seconds: Optional[float] = None) -> dict[str, Any]: ...


class AgentTools:
    def __init__(self, retriever: Handles, saver: Callable[[], Handles]):
        self.retriever, self._make_saver = retriever, saver
        self._saver: Optional[Handles] = None
        self.counters = retriever.counters

    def handle(self, event: Any, remaining_seconds: Optional[float] = None) -> dict[str, Any]:
        if isinstance(event, dict) and event.get("action") == "save_knowledge":
            if self._saver is None:
                self._saver = self._make_saver()
            return self._saver.handle(event, remaining_seconds=remaining_seconds)
        return self.retriever.handle(event, remaining_seconds=remaining_seconds)
