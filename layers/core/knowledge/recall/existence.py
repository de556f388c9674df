"""Whether an agent that retrieval finds off exists at all: a typo's `unknown_agent` is told apart
from an agent whose knowledge.yaml is missing, off or broken (README "How an engine wires itself in").

An agent exists once it has a knowledge.yaml (even one that does not parse) or a current concept:
one S3 listing of at most one key, asked at most once per refresh window per agent, so a warm
container answers a mistyped agent without a request to S3 on every turn.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Callable, Literal, Optional

from shared.errors import KnowledgeError

Off = Literal["unknown_agent", "retrieval_off"]
UNKNOWN: Off = "unknown_agent"
OFF: Off = "retrieval_off"
HELD = 4096  # agents remembered per container; the oldest asked is forgotten first


class Existence:
    def __init__(self, exists: Callable[[str, str], bool], window_seconds: float,
                 clock: Callable[[], float] = time.monotonic):
        self._exists, self._window, self._clock = exists, window_seconds, clock
        self._seen: OrderedDict[tuple[str, str], tuple[bool, float]] = OrderedDict()

    def why_off(self, tenant: str, agent: str, *, has_config: bool) -> Off:
        """Why retrieval answers nothing for the agent: it does not exist, or it is switched off.
        When S3 cannot say, the agent is taken as existing (retrieval_off): never a false typo."""
        if has_config:
            return OFF
        known = self._seen.get((tenant, agent))
        now = self._clock()
        if known is None or now - known[1] >= self._window:
            try:
                exists = self._exists(tenant, agent)
            except KnowledgeError:
                return OFF
            self._seen[(tenant, agent)] = known = (exists, now)
            self._seen.move_to_end((tenant, agent))
            while len(self._seen) > HELD:
                self._seen.popitem(last=False)
        return OFF if known[0] else UNKNOWN

    def forget(self, tenant: str, agent: Optional[str] = None) -> None:
        for key in [k for k in self._seen if k[0] == tenant and (agent is None or k[1] == agent)]:
            del self._seen[key]
