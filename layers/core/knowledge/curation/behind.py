"""What was written behind an open list: the studio's cue "N changes since you opened it — show".

A container reads an agent's change journal (knowledge.store.journal) for the list anyway: every warm
list follows it (Studio._follow_journal). `JournalTail` keeps what those reads found, per agent, and
answers every open list's cue from it. A cue reads the journal itself only when the container's last
read of that agent is older than `fresh_seconds`, once for all the lists asking, from where that read
left off; it never reads a concept or an operator's review state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Protocol

from knowledge.errors import InvalidSince
from knowledge.store.journal import CONFIG_CHANGE, JOURNAL_GRACE_SECONDS, VOCABULARY_CHANGE, Change
from knowledge.store.keys import journal_stamp

# A cue is answered from a read of the journal at most this old (the page asks every 3 s): however
# many lists of an agent are open on a container, it lists the journal at most once in that time.
FRESH_SECONDS = 2.0
# The newest entries kept per agent; a list opened before them is told "more than" what they name.
KEPT_ENTRIES = 10_000
_NOT_CONCEPTS = (CONFIG_CHANGE, VOCABULARY_CHANGE)


class Journal(Protocol):
    """What the tail reads (knowledge.store.concepts.ConceptStore)."""

    def changes_since(self, tenant: str, agent: str, since: float) -> list[Change]: ...


@dataclass
class _Tail:
    """One agent's journal as this container last read it: every entry stamped at or after `start`
    (after it, once `pruned`) that had landed when the last read began, at `looked`."""

    start: str  # a journal stamp
    looked: float  # epoch seconds
    read_at: float  # the container's clock
    entries: dict[str, Change] = field(default_factory=dict)  # by key
    pruned: bool = False

    def covers(self, stamp: str) -> bool:
        return stamp > self.start or (stamp == self.start and not self.pruned)


class JournalTail:
    def __init__(self, journal: Journal, *, fresh_seconds: float = FRESH_SECONDS, kept: int = KEPT_ENTRIES,
                 clock: Callable[[], float] = time.monotonic):
        self._journal, self._fresh, self._kept, self._clock = journal, fresh_seconds, max(1, kept), clock
        self._tails: dict[tuple[str, str], _Tail] = {}

    def read(self, tenant: str, agent: str, since: float) -> tuple[list[Change], float]:
        """The list's look: the journal's entries stamped after `since`, read now (the one request the
        list makes today), and when the read began (where the next look starts, less its grace)."""
        started = time.time()
        changes = self._journal.changes_since(tenant, agent, since)
        self._remember(tenant, agent, since, started, changes)
        return changes, started

    def _remember(self, tenant: str, agent: str, since: float, started: float, changes: list[Change]) -> None:
        tail = self._tails.get((tenant, agent))
        stamp = journal_stamp(max(since, 0.0))
        # Added to what is held only when the two leave no gap: a read from before the last one began,
        # less the time an entry may take to land (JOURNAL_GRACE_SECONDS), else held from `since` anew.
        if tail is None or not tail.covers(stamp) or since > tail.looked - JOURNAL_GRACE_SECONDS:
            tail = self._tails[(tenant, agent)] = _Tail(start=stamp, looked=started, read_at=self._clock())
        tail.entries.update((change.key, change) for change in changes)
        tail.looked, tail.read_at = started, self._clock()
        if len(tail.entries) > self._kept:
            keys = sorted(tail.entries)
            cut = tail.entries[keys[-self._kept - 1]].stamp
            tail.entries = {key: change for key, change in tail.entries.items() if change.stamp > cut}
            tail.start, tail.pruned = cut, True

    def behind(self, op: Any, tenant: str, agent: str, since: str) -> dict[str, Any]:
        """How many concepts were written (created, changed or deleted, by anyone) after `since`, the
        time a list was listed as its answer said it (`as_of`); `more` when at least that many."""
        op.check(tenant)
        moment = _moment(since)
        stamp = journal_stamp(moment)
        tail = self._tails.get((tenant, agent))
        if tail is None or self._clock() - tail.read_at >= self._fresh or not (tail.covers(stamp) or tail.pruned):
            if tail is not None and (tail.covers(stamp) or tail.pruned):
                self.read(tenant, agent, tail.looked - JOURNAL_GRACE_SECONDS)  # on from the last read
            else:
                self.read(tenant, agent, moment)
            tail = self._tails[(tenant, agent)]
        names = {change.name for change in tail.entries.values()
                 if change.stamp >= stamp and change.name not in _NOT_CONCEPTS}
        return {"changes": len(names), "more": not tail.covers(stamp), "since": since}


def _moment(since: str) -> float:
    """A list's `as_of` (`2026-11-29T21:05:03.123456Z`, as the route's pattern admits it) in epoch seconds."""
    try:
        moment: Optional[datetime] = datetime.fromisoformat(since[:-1]).replace(tzinfo=timezone.utc)
    except ValueError:
        moment = None
    if moment is None or moment.year < 2000:
        raise InvalidSince("since must be a UTC time after 2000, as a list's as_of gives it "
                           "(such as 2026-11-29T21:05:03.123456Z)")
    return moment.timestamp()
