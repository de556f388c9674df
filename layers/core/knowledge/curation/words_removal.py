"""Removing learned words from many concepts at once, from the studio's words page: each concept named
written once by the operator (reason `words_removed`), its words moved from `learned_words` to
`removed_words` (never learned again: knowledge.learning.traffic_words and
knowledge.learning.model_words refuse a removed word), compare-and-swap on the ETag the page listed; a
concept written meanwhile is answered `changed`. docs/studio.md, "The learned words page"."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from knowledge.errors import InvalidRemoval, TooManyWords
from knowledge.format.learned_words import REMOVED_MAX, fold_word, word_problem
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.keys import check_scope
from shared import deadline
from shared.errors import Conflict, InvalidConcept, UnknownAgent
from shared.httpapi import Operator
from shared.names import check_slug

REMOVE_MAX = 500  # words in one request: each concept is two S3 requests, well inside the API's 29 s
WORKERS = 8
ETAG_MAX = 200


def grouped(items: list[dict[str, Any]]) -> dict[str, tuple[str, list[str]]]:
    """concept -> (the ETag the page listed, its words), every name and word checked before it
    reaches a key; InvalidName, InvalidRemoval or TooManyWords otherwise."""
    if not items:
        raise InvalidRemoval("words must name at least one {concept, word, etag}")
    if len(items) > REMOVE_MAX:
        raise TooManyWords(f"at most {REMOVE_MAX} words per request (got {len(items)}): remove them in batches")
    out: dict[str, tuple[str, list[str]]] = {}
    for i, item in enumerate(items):
        name = check_slug("concept", item.get("concept"))
        word, etag = item.get("word"), item.get("etag")
        problem = word_problem(word)
        if problem:
            raise InvalidRemoval(f"words[{i}].word {problem}")
        if not isinstance(etag, str) or not 0 < len(etag) <= ETAG_MAX:
            raise InvalidRemoval(f"words[{i}].etag must be the concept's ETag as the page listed it")
        listed, words = out.setdefault(name, (etag, []))
        if listed != etag:
            raise InvalidRemoval(f"words[{i}]: concept {name!r} is named with two different ETags")
        if word not in words:
            words.append(word)
    return out


class WordsRemoval:
    """`told(tenant, agent, stored)`: what this container's words page is told of each write."""

    def __init__(self, store: ConceptStore, told: Optional[Callable[[str, str, StoredConcept], None]] = None, *,
                 workers: int = WORKERS):
        self._store, self._told, self._workers = store, told, max(1, workers)

    def remove(self, op: Operator, tenant: str, agent: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        op.check(tenant)
        check_scope(agent)
        groups = grouped(items)
        with ThreadPoolExecutor(max_workers=min(self._workers, len(groups))) as pool:
            done = list(pool.map(deadline.carry(lambda pair: self._one(op, tenant, agent, *pair)),
                                 sorted(groups.items())))
        results = [result for result, _ in done]
        if all(r["status"] == "gone" for r in results) and not self._store.agent_exists(tenant, agent):
            # Nothing was written: said as the list says it (404 unknown_agent), not as concepts gone.
            raise UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}")
        if self._told is not None:  # here, not in the workers: the page's cache is one thread's
            for _, written in done:
                if written is not None:
                    self._told(tenant, agent, written)
        return {"concepts": results, "removed": sum(len(r["removed"]) for r in results),
                "complete": all(r["status"] in ("removed", "unchanged") for r in results)}

    def _one(self, op: Operator, tenant: str, agent: str, name: str,
             listed: tuple[str, list[str]]) -> tuple[dict[str, Any], Optional[StoredConcept]]:
        """What became of one concept, and the version written (None when nothing was)."""
        etag, words = listed
        out: dict[str, Any] = {"concept": name, "status": "", "removed": [], "not_learned": [], "etag": None,
                               "version_id": None}
        stored = self._store.find(tenant, agent, name)
        if stored is None:
            return {**out, "status": "gone", "not_learned": words}, None
        if stored.etag != etag:
            return {**out, "status": "changed", "etag": stored.etag}, None
        try:
            concept = stored.concept
        except InvalidConcept:
            return {**out, "status": "unreadable", "etag": stored.etag}, None
        asked = {fold_word(w) for w in words}
        gone = [e.word for e in concept.learned_words if fold_word(e.word) in asked]
        present = {fold_word(w) for w in gone}
        missing = [w for w in words if fold_word(w) not in present]
        if not gone:
            return {**out, "status": "unchanged", "not_learned": missing, "etag": stored.etag}, None
        already = {fold_word(w) for w in concept.removed_words}
        removed = (*concept.removed_words, *(w for w in gone if fold_word(w) not in already))[-REMOVED_MAX:]
        updated = concept.replace(learned_words=tuple(e for e in concept.learned_words if fold_word(e.word) not in asked),
                                  removed_words=removed)
        try:
            written = self._store.replace(tenant, agent, updated, if_match=stored.etag, actor=op.actor,
                                          reason="words_removed", sightings=stored.sightings)
        except Conflict as exc:
            return {**out, "status": "changed", "etag": exc.current.etag if exc.current is not None else None}, None
        return {**out, "status": "removed", "removed": gone, "not_learned": missing, "etag": written.etag,
                "version_id": written.version_id}, written
