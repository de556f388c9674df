"""Copying or moving an agent's concept into the tenant's shared knowledge (the studio's "Copy to shared"
and "Move to shared"), the only way besides an import: extraction never promotes what it learned. A
move deletes the agent's concept unless it was written since the copy; a move that failed after its
copy finishes when asked again. docs/retrieval.md, "Shared knowledge"; docs/studio.md."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from knowledge.curation.documents import stored_answer
from knowledge.errors import NameDeleted, NameTaken
from knowledge.format.concept import Concept
from knowledge.store.concepts import ConceptStore, DeletedConcept
from knowledge.store.keys import SHARED
from shared.errors import Conflict, InvalidConcept, NotFound
from shared.httpapi import Operator
from shared.names import check_slug


@dataclass(frozen=True)
class SharedNames:
    """The shared scope's names as two listings read them, for a bulk move: one version listing per
    name (what a single move asks) is slow at hundreds of names."""

    current: frozenset[str]
    deleted: dict[str, DeletedConcept]  # the names whose newest version is a delete marker

    def taken(self, name: str) -> bool:
        """Whether a current shared concept has the name; NameDeleted when a deleted one has it."""
        if name in self.deleted:
            raise NameDeleted(name, _stamp(self.deleted[name].deleted_at), None)
        return name in self.current


class Sharing:
    def __init__(self, store: ConceptStore):
        self._store = store

    def names(self, tenant: str) -> SharedNames:
        """The shared scope's current and deleted names, for a bulk move to check all its rows by."""
        check_slug("tenant", tenant)
        deleted = {d.name: d for d in self._store.list_deleted(tenant, SHARED)}
        return SharedNames(frozenset(c.name for c in self._store.list(tenant, SHARED)), deleted)

    def share(self, op: Operator, tenant: str, agent: str, name: str, *, move: bool = False,
              names: Optional[SharedNames] = None) -> dict[str, Any]:
        """The shared copy as the studio answers a concept (name, markdown, etag, version_id,
        related), with `moved`: whether the agent's concept was deleted. `names`: the shared scope's
        names as a bulk move read them once, else they are asked for this name."""
        source, concept, _ = self._source(op, tenant, agent, name, names)
        try:
            copy = self._store.create(tenant, SHARED, concept, actor=op.actor, reason="created")
        except Conflict as exc:
            if exc.current is None or not move or not _same_document(exc.current, concept):
                raise NameTaken(name, shared=True) from None
            copy = exc.current  # a move asked again after its copy was written
        moved = move and self._delete_unchanged(op, tenant, agent, source)
        return {**stored_answer(copy), "moved": moved}

    def ready(self, op: Operator, tenant: str, agent: str, name: str,
              names: Optional[SharedNames] = None) -> Concept:
        """The concept a move of `name` would copy, or the refusal the move would meet (NotFound,
        InvalidConcept, NameDeleted, NameTaken), writing nothing: a bulk move's dry run."""
        _, concept, taken = self._source(op, tenant, agent, name, names)
        if taken:
            there = self._store.find(tenant, SHARED, name)
            if there is not None and not _same_document(there, concept):
                raise NameTaken(name, shared=True)
        return concept

    def _source(self, op: Operator, tenant: str, agent: str, name: str,
                names: Optional[SharedNames]) -> tuple[Any, Concept, bool]:
        """The agent's concept, what of it is copied, and whether the shared scope has a current
        concept of the name; NameDeleted when its newest version there is a delete marker."""
        op.check(tenant)
        check_slug("tenant", tenant)
        check_slug("agent", agent)  # the shared scope itself is no source
        check_slug("name", name)
        try:
            source = self._store.get(tenant, agent, name)
        except NotFound:
            raise NotFound(f"there is no concept {name!r} in agent {agent!r} to share") from None
        taken = self._refuse_deleted_name(tenant, name) if names is None else names.taken(name)
        # InvalidConcept: a file that does not parse is repaired first. `retired_by` names a policy of
        # the agent's, which the shared scope does not have: there it would keep the concept out of
        # every agent's recall.
        return source, source.concept.replace(retired_by=None), taken

    def _refuse_deleted_name(self, tenant: str, name: str) -> bool:
        """NameDeleted when the shared scope's newest version of `name` is a delete marker: the copy
        would go on that deleted concept's history (restore it there, or rename this one). Else
        whether a current shared concept has the name (one list request tells both)."""
        try:
            newest, _ = self._store.version_page(tenant, SHARED, name, limit=1, marker=None)
        except NotFound:
            return False
        if newest and newest[0].deleted:
            raise NameDeleted(name, _stamp(newest[0].time), newest[0].actor)
        return bool(newest)

    def _delete_unchanged(self, op: Operator, tenant: str, agent: str, source: Any) -> bool:
        """Delete the agent's concept if it is still the version copied; False (kept) when it was
        written since: the shared copy stands, and nothing unread is deleted."""
        current = self._store.find(tenant, agent, source.name)
        if current is None:
            return True  # deleted meanwhile: moved all the same
        if current.etag != source.etag:
            return False
        try:
            self._store.delete(tenant, agent, source.name, actor=op.actor)
        except NotFound:
            pass
        return True


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _same_document(current: Any, concept: Any) -> bool:
    try:
        return current.concept.render() == concept.render()
    except InvalidConcept:
        return False
