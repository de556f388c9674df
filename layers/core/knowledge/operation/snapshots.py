"""The scheduled snapshot pass (SnapshotFunction): every agent's snapshot, and each tenant's shared
scope's, brought up to date after writes no reader met (a Lambda does no work after it answers),
through the studio's own catch-up, written conditionally when anything changed; what one pass cannot
finish before its deadline the next does. docs/operating.md, "The snapshot pass"."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from pydantic import BaseModel, ConfigDict

from knowledge.store.keys import SHARED
from shared import deadline
from shared.errors import InvalidRequest, KnowledgeError
from shared.names import Slug
from shared.validation import validate_object

# Kept free of each agent's catch-up: encoding the snapshot and its PUT.
WRITE_RESERVE_SECONDS = 5.0


class SnapshotRequest(BaseModel):
    """The scheduled event ({}), or a manual run narrowed to one tenant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Optional[Slug] = None


def parse_snapshot_request(event: Any) -> Optional[str]:
    """The tenant a pass is narrowed to (None: every tenant); InvalidRequest otherwise."""
    if event is None:
        return None
    return validate_object(SnapshotRequest, event, InvalidRequest, "the snapshot event").tenant


class Catching(Protocol):
    def catch_up(self, tenant: str, agent: str, *, seconds: float) -> int: ...


class Agents(Protocol):
    def tenants(self) -> list[str]: ...

    def agents(self, tenant: str) -> list[str]: ...

    def has_shared(self, tenant: str) -> bool: ...


@dataclass
class PassReport:
    agents: int = 0  # agents looked at
    current: int = 0  # caught up (and their snapshot written if anything had changed)
    behind: int = 0  # still changes to read: the next pass goes on
    changes_left: int = 0
    failed: int = 0  # S3 refused or failed for the agent: the next pass tries again
    complete: bool = True  # every agent of every tenant was reached

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class SnapshotPass:
    def __init__(self, studio: Catching, store: Agents, *, clock: Callable[[], float] = time.monotonic):
        self._studio, self._store, self._clock = studio, store, clock

    def handle(self, event: Any) -> PassReport:
        """SnapshotFunction's event ({}, or {"tenant"} to run one tenant): its pass."""
        return self.run(parse_snapshot_request(event))

    def run(self, tenant: Optional[str] = None) -> PassReport:
        """One pass over every agent (of `tenant`, when given) within the deadline in force."""
        report = PassReport()
        for tenant_ in [tenant] if tenant else self._store.tenants():
            # The tenant's shared concepts have a snapshot of their own, which every agent recalling
            # them starts from (knowledge.recall.warm): brought up to date like an agent's.
            try:
                scopes = self._store.agents(tenant_)
                if scopes and self._store.has_shared(tenant_):
                    scopes = [*scopes, SHARED]
            except KnowledgeError:  # this tenant's listing failed: the next tenants go on, the next pass retries
                report.failed += 1
                report.complete = False
                continue
            for agent in scopes:
                left = deadline.remaining(self._clock)
                if left is not None and left < WRITE_RESERVE_SECONDS:
                    report.complete = False
                    return report
                report.agents += 1
                seconds = 600.0 if left is None else left - WRITE_RESERVE_SECONDS
                try:
                    behind = self._studio.catch_up(tenant_, agent, seconds=seconds)
                except KnowledgeError:
                    report.failed += 1
                    continue
                if behind:
                    report.behind += 1
                    report.changes_left += behind
                else:
                    report.current += 1
        return report
