"""Whether an agent's knowledge.yaml parses, for the studio's banner: a file that does not is off for its
agent (retrieval and extraction, as knowledge.recall.warm reads it: a kill switch fails safe), and the
list and agents pages say so with the problem's line and what to do, until it parses again.

Checked at most every CHECK_SECONDS per agent and container, whoever wrote the file (the studio, the
CLI, `aws s3 cp`, a pipeline): one conditional GET, a 304 while the file is unchanged.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional

from knowledge.format.config import parse_agent_config
from knowledge.store.concepts import ConceptStore, NotModified
from shared.errors import InvalidConfig, KnowledgeError

CHECK_SECONDS = 10.0
_LINE = re.compile(r"\bline (\d+)\b")
_FIELD = re.compile(r"^(knowledge|distill)\.([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class _Seen:
    checked_at: float
    etag: Optional[str]  # the file's as last read; None: there is none
    problem: Optional[dict[str, Any]]


def line_of(message: str, text: Optional[str]) -> Optional[int]:
    """The 1-based line a problem names, else the line of the key it names (`knowledge.retrieve: …`)."""
    found = _LINE.search(message)
    if found:
        return int(found.group(1))
    field = _FIELD.match(message)
    if not field or text is None:
        return None
    block, key, inside = field.group(1), field.group(2), False
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"{block}\s*:", line):
            inside = True
        elif inside and re.match(rf"\s+{re.escape(key)}\s*:", line):
            return number
        elif line[:1].strip() and not line.startswith("#"):
            inside = False
    return None


def problem_of(data: bytes) -> Optional[dict[str, Any]]:
    try:
        parse_agent_config(data)
    except InvalidConfig as exc:
        message = str(exc)
        return {"message": message, "line": line_of(message, data.decode("utf-8", "replace"))}
    return None


PARALLEL = 16  # agents looked at at once by `problems`


class ConfigCheck:
    def __init__(self, store: ConceptStore, *, every: float = CHECK_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self._store, self._every, self._clock = store, every, clock
        self._seen: dict[tuple[str, str], _Seen] = {}

    def problem(self, tenant: str, agent: str) -> Optional[dict[str, Any]]:
        """None while the agent's file parses (or it has none: off, as meant); else what is wrong,
        {message, line}. A store that cannot answer leaves what was last known."""
        key = (tenant, agent)
        seen = self._seen.get(key)
        now = self._clock()
        if seen is not None and now - seen.checked_at < self._every:
            return seen.problem
        try:
            stored = self._store.get_config_bytes(tenant, agent, unless_etag=seen.etag if seen else None)
        except NotModified:
            assert seen is not None
            self._seen[key] = _Seen(now, seen.etag, seen.problem)
            return seen.problem
        except KnowledgeError:
            return seen.problem if seen is not None else None
        fresh = _Seen(now, None, None) if stored is None else _Seen(now, stored[1], problem_of(stored[0]))
        self._seen[key] = fresh
        return fresh.problem

    def problems(self, tenant: str, agents: list[str]) -> list[Optional[dict[str, Any]]]:
        """`problem` of each agent, in their order, looked at side by side (the agents page: one
        conditional GET per agent a window, at most PARALLEL at once, not one after another)."""
        if len(agents) <= 1:
            return [self.problem(tenant, agent) for agent in agents]
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(agents))) as pool:
            return list(pool.map(lambda agent: self.problem(tenant, agent), agents))
