"""The concepts already stored under a name that carries personal data (a person's name, or digit groups that
spell a CPF, CNPJ or phone number), for an operator to rename: the name gate refuses such a name wherever a
name is taken now, but one stored before it stays, an object key that outlives forget_customer.

Read-only: one listing of the agent's concept keys, no concept read, nothing written. Renaming is the
studio's create under a new name, then delete (a concept's name is its key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from knowledge.store.agents import unknown_agent
from shared import pii


class Listing(Protocol):
    """What the check reads of the concept store."""

    def list(self, tenant: str, agent: str) -> list: ...

    def agent_exists(self, tenant: str, agent: str) -> bool: ...


@dataclass(frozen=True)
class NameToRename:
    name: str
    kind: str  # shared.pii's kind: name, cpf, cnpj, phone...

    @property
    def holds(self) -> str:
        return pii.SLUG_KINDS.get(self.kind, "personal data")


@dataclass(frozen=True)
class NameCheck:
    checked: int
    to_rename: list[NameToRename]


def check_names(store: Listing, tenant: str, scope: str) -> NameCheck:
    """Every current concept name of an agent (or the shared scope) the name gate would refuse now, by name."""
    if not store.agent_exists(tenant, scope):
        raise unknown_agent(tenant, scope, "check the tenant and the agent's name")
    names = sorted(entry.name for entry in store.list(tenant, scope))
    found = [NameToRename(name, kind) for name in names if (kind := pii.pii_in_slug(name)) is not None]
    return NameCheck(len(names), found)
