"""When a word's teachers are enough to make it a learned word (docs/contract.md, learned words): the
one rule the learning path, forget_customer and `knowledge words audit` all apply.

A teacher is a customer where the turn names one (`customer_id`), else a session. A word needs
`minimum` (the agent's `learn_min_sessions`) distinct teachers; unless that many are customers, its
teachings must also lie at least SPREAD apart, first to last, so that one visitor without a customer id
cannot teach a word alone by opening a few sessions in a few minutes (sessions on two different days,
in practice). A store whose engine sends no `customer_id` still learns: its sessions are its teachers.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol, Sequence

SPREAD = timedelta(hours=12)


class Taught(Protocol):
    @property
    def customer(self) -> bool: ...

    @property
    def at(self): ...


def enough(teachings: Sequence[Taught], minimum: int) -> bool:
    """Whether these teachers (each distinct) make a word a learned word at threshold `minimum`."""
    if len(teachings) < minimum:
        return False
    if sum(1 for t in teachings if t.customer) >= minimum:
        return True
    times = [t.at for t in teachings if t.at is not None]
    return len(times) >= 2 and max(times) - min(times) >= SPREAD
