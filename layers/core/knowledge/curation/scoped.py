"""What an ExportFunction or ImportFunction event names: one agent of a tenant, or the tenant's
shared concepts (`"shared": true` in place of `agent`; docs/contract.md, shared knowledge)."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, model_validator

from knowledge.store.keys import SHARED
from shared.names import Slug


class ScopedRequest(BaseModel):
    tenant: Slug = "default"
    agent: Optional[Slug] = None
    shared: bool = False

    @model_validator(mode="after")
    def _one_scope(self) -> "ScopedRequest":
        if self.agent is not None and self.shared:
            raise ValueError('name an agent ("agent") or the tenant\'s shared concepts ("shared": true), not both')
        if self.agent is None and not self.shared:
            raise ValueError('name an agent ("agent") or the tenant\'s shared concepts ("shared": true)')
        return self

    @property
    def scope(self) -> str:
        """The store's scope: the agent's name, or SHARED."""
        return SHARED if self.shared else str(self.agent)

    @property
    def folder(self) -> str:
        """The scope's folder under {tenant}/ of SESSIONS_BUCKET: the agent's name, or `_shared`
        (not a slug: no agent's folder can be it)."""
        return SHARED if self.shared else str(self.agent)
