"""The studio's vocabulary editor: an agent's vocabulary.yaml (knowledge.format.vocabulary) read
with whether recall holds it in force, saved compare-and-swap by ETag (journaled, so every warm
retrieval container obeys it at its next refresh), and the shipped starters an agent copies from."""

from __future__ import annotations

from typing import Any, Optional

from knowledge.format.vocabulary import STARTERS, InvalidVocabulary, parse_vocabulary, starter_text
from knowledge.store.concepts import ConceptStore
from shared.errors import NotFound, UnknownAgent
from shared.httpapi import Operator


def _answer(text: Optional[str], etag: Optional[str], data: Optional[bytes] = None) -> dict[str, Any]:
    """The file, how many readings it holds, and why it is not in force when it does not parse
    (a file written by hand: `aws s3 cp`): retrieval then reads the agent without it."""
    if text is None:
        return {"yaml": None, "etag": None, "readings": 0, "phrases": 0, "in_force": False, "problem": None,
                "starters": sorted(STARTERS)}
    try:
        vocabulary = parse_vocabulary(data if data is not None else text)
    except InvalidVocabulary as exc:
        return {"yaml": text, "etag": etag, "readings": 0, "phrases": 0, "in_force": False,
                "problem": {"message": str(exc), "line": exc.line}, "starters": sorted(STARTERS)}
    return {"yaml": text, "etag": etag, "readings": len(vocabulary.readings),
            "phrases": sum(len(reading.customers) for reading in vocabulary.readings),
            "in_force": bool(vocabulary.readings), "problem": None, "starters": sorted(STARTERS)}


class VocabularyEditor:
    def __init__(self, store: ConceptStore):
        self._store = store

    def get(self, op: Operator, tenant: str, agent: str) -> dict[str, Any]:
        op.check(tenant)
        stored = self._store.get_vocabulary(tenant, agent)
        if stored is None:
            if not self._store.agent_exists(tenant, agent):
                raise NotFound(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml "
                               "nor any concept")
            return _answer(None, None)
        return _answer(stored.text, stored.etag, stored.data)

    def save(self, op: Operator, tenant: str, agent: str, text: str, if_match: Optional[str]) -> dict[str, Any]:
        """Validate and write (InvalidVocabulary names the line and the rule; Conflict when it
        changed since `if_match`, or exists already when creating)."""
        op.check(tenant)
        if if_match is None and not self._store.agent_exists(tenant, agent):  # a vocabulary makes no agent
            raise UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml "
                               "nor any concept")
        stored, _ = self._store.put_vocabulary(tenant, agent, text, actor=op.actor, if_match=if_match)
        return _answer(stored.text, stored.etag, stored.data)

    def starter(self, op: Operator, name: str) -> dict[str, Any]:
        """A shipped starter's text, for the operator to copy into the agent's file and edit."""
        del op  # any signed-in operator: it is the product's, not a tenant's
        try:
            return {"name": name, "yaml": starter_text(name)}
        except InvalidVocabulary as exc:
            raise NotFound(str(exc)) from None
