"""Copying or moving an agent's concept into the tenant's shared knowledge (the studio's "Copy to
shared" and "Move to shared"): the only way a concept gets there besides an import, because
extraction never promotes what it learned on its own (docs/retrieval.md, shared knowledge).

The copy is a new shared concept written by the operator (reason `created`), the document exactly
as the agent has it; the agent's concept keeps its own history. A move then deletes the agent's
concept (a restorable delete marker), so that the agents that opt in recall the shared one. A
shared concept of the name already there is NameTaken, unless it is this very document: a move
that failed after its copy (S3 down between the two writes) finishes when asked again.
"""

from __future__ import annotations

from typing import Any

from knowledge.curation.documents import stored_answer
from knowledge.errors import NameTaken
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from shared.errors import Conflict, InvalidConcept, KnowledgeError, NotFound
from shared.httpapi import Operator
from shared.names import check_slug


class SharedNameTaken(NameTaken):
    """name_taken, said of the shared scope: the operator may open the shared concept instead."""

    def __init__(self, name: str):
        KnowledgeError.__init__(self, f"the tenant's shared knowledge already has a concept named {name!r}: "
                                      "open it there to edit it, or rename this one first")
        self.name = name


class Sharing:
    def __init__(self, store: ConceptStore):
        self._store = store

    def share(self, op: Operator, tenant: str, agent: str, name: str, *, move: bool = False) -> dict[str, Any]:
        """The shared copy as the studio answers a concept (name, markdown, etag, version_id,
        related), with `moved`: whether the agent's concept was deleted."""
        op.check(tenant)
        check_slug("tenant", tenant)
        check_slug("agent", agent)  # the shared scope itself is no source
        check_slug("name", name)
        try:
            source = self._store.get(tenant, agent, name)
        except NotFound:
            raise NotFound(f"there is no concept {name!r} in agent {agent!r} to share") from None
        concept = source.concept  # InvalidConcept: a file that does not parse is repaired first
        try:
            copy = self._store.create(tenant, SHARED, concept, actor=op.actor, reason="created")
        except Conflict as exc:
            if exc.current is None or not move or not _same_document(exc.current, concept):
                raise SharedNameTaken(name) from None
            copy = exc.current  # a move asked again after its copy was written
        if move:
            try:
                self._store.delete(tenant, agent, name, actor=op.actor)
            except NotFound:
                pass  # deleted meanwhile: moved all the same
        return {**stored_answer(copy), "moved": move}


def _same_document(current: Any, concept: Any) -> bool:
    try:
        return current.concept.render() == concept.render()
    except InvalidConcept:
        return False
