"""Creating a concept under a deleted concept's name: the studio says so (NameDeleted, with who deleted
it and when) and lets the operator restore the deleted one (undelete) or start a new concept under the
name knowingly (`new_history`), instead of silently starting it over.

One more request per create (the newest entry of the name's history: a listing of one version and its
HEAD); creates are an operator's, one at a time.
"""

from __future__ import annotations

from datetime import timezone
from typing import Any

from knowledge.curation.documents import concept_by_hand
from knowledge.curation.studio import Studio
from knowledge.errors import NameDeleted
from knowledge.format.concept import utc_now
from knowledge.store.concepts import ConceptStore
from shared.errors import NotFound
from shared.httpapi import Operator


class Recreation:
    def __init__(self, studio: Studio, store: ConceptStore):
        self._studio, self._store = studio, store

    def create(self, op: Operator, tenant: str, agent: str, markdown: str, *, new_history: bool = False
               ) -> dict[str, Any]:
        """The studio's create; NameDeleted first when the name's newest version is a delete marker
        and `new_history` is not set."""
        op.check(tenant)  # before anything is read: a deleted name is no other tenant's business
        if not new_history:
            name = concept_by_hand(markdown, utc_now()).name
            try:
                newest, _ = self._store.version_page(tenant, agent, name, limit=1, marker=None)
            except NotFound:
                newest = []
            if newest and newest[0].deleted:
                when = newest[0].time.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
                raise NameDeleted(name, when, newest[0].actor)
        return self._studio.create(op, tenant, agent, markdown)
