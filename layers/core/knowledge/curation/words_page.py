"""The studio's learned-words page: the words learned across an agent's concepts, newest first, and where
each came from; read from the words summary (knowledge.store.words_summary) corrected with the change
journal, as a retrieval reader corrects its snapshot, within a read budget; what a container keeps is
knowledge.curation.words_held. docs/studio.md, "The learned words page"."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

import numpy as np

from knowledge.curation.words_held import (
    CODE,
    Held,
    cursor_key,
    decode,
    decode_cursor,
    encode,
    encode_cursor,
)
from knowledge.errors import UnknownOrigin
from knowledge.format.learned_words import OPERATOR, TRAFFIC
from knowledge.recall.warm import JOURNAL_TRUSTED_SECONDS
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.journal import CONFIG_CHANGE, JOURNAL_GRACE_SECONDS, VOCABULARY_CHANGE
from knowledge.store.keys import check_scope, etag_token
from shared.errors import AccessDenied, Conflict, KnowledgeError
from shared.httpapi import Operator
from shared.names import check_slug

# Where a word came from, as the page says it, and the stored origins each stands for.
SOURCES = {"model": ("model",), "traffic": TRAFFIC, "operator": (OPERATOR,)}
# What `origin=` may filter by: a source, or one stored origin.
ORIGIN_FILTERS = {**SOURCES, "loaded": ("loaded",), "sighting": ("sighting",)}
SOURCE_OF = {origin: source for source, origins in SOURCES.items() for origin in origins}
PAGE_DEFAULT, PAGE_MAX = 100, 500
CATCH_UP_SECONDS = 1.5  # the list's (knowledge.curation.studio): both answer within the studio's budget
FETCH_CHUNK = 32
REWRITE_CHANGES = 16
SWEEP_SECONDS = 300.0  # a retrieval reader's (knowledge.recall.warm): how long a lost journal entry matters
_NOT_CONCEPTS = (CONFIG_CHANGE, VOCABULARY_CHANGE)


class LearnedWords:
    """The words page over the agent's words summary, corrected by the journal (`check_agent`:
    operator, tenant, agent -> the list's tenancy check, UnknownAgent for an agent that does not exist)."""

    def __init__(self, store: ConceptStore, check_agent: Callable[[Operator, str, str], None], *,
                 catch_up_seconds: float = CATCH_UP_SECONDS, fetch_chunk: int = FETCH_CHUNK,
                 sweep_seconds: float = SWEEP_SECONDS, clock: Any = time.monotonic, wall: Any = time.time):
        self._store, self._check_agent = store, check_agent
        self._catch_up_seconds, self._fetch_chunk = catch_up_seconds, max(1, fetch_chunk)
        self._sweep_seconds, self._clock, self._wall = sweep_seconds, clock, wall
        self._held: dict[tuple[str, str], Held] = {}

    # ------------------------------------------------------------ reading
    def page(self, op: Operator, tenant: str, agent: str, *, origin: Optional[str] = None,
             concept: Optional[str] = None, limit: int = PAGE_DEFAULT, cursor: Optional[str] = None) -> dict[str, Any]:
        """One page of the agent's learned words, newest first (the day it was learned; then the
        concept's name and the word), filtered by `origin` (a source or a stored origin) and `concept`."""
        if origin is not None and origin not in ORIGIN_FILTERS:
            raise UnknownOrigin(f"origin must be one of {', '.join(ORIGIN_FILTERS)} (got {origin[:40]!r})")
        if concept is not None:
            check_slug("concept", concept)
        limit = max(1, min(limit, PAGE_MAX))  # the route refuses anything else (422)
        after = decode_cursor(cursor) if cursor is not None else None
        op.check(tenant)  # before anything of the tenant is read
        check_scope(agent)
        held = self.current(tenant, agent, self._clock() + self._catch_up_seconds)
        if not held.rows and not held.unreadable:
            self._check_agent(op, tenant, agent)  # nothing listed: is there such an agent?
        order = held.ordered()
        chosen = np.ones(len(order.keys), dtype=bool)
        if origin:
            chosen &= np.isin(order.origin, [ord(CODE[o]) for o in ORIGIN_FILTERS[origin]])
        if concept is not None:
            rank = order.names.index(concept) if concept in held.rows and held.rows[concept].words else -1
            chosen &= order.owner == rank
        at = np.flatnonzero(chosen)
        keys = order.keys[at]
        start = int(np.searchsorted(keys, cursor_key(order, held.rows, *after), side="right")) if after else 0
        page = at[start:start + limit]
        out = []
        for i in page:
            name = order.names[order.owner[i]]
            entry, row = held.entry(name, int(order.place[i])), held.rows[name]
            out.append({"concept": name, **entry, "source": SOURCE_OF.get(entry["origin"], entry["origin"]),
                        "etag": row.etag, "description": row.description or None})
        last = out[-1] if out and start + limit < len(at) else None
        return {"words": out, "total": len(at),
                "next": encode_cursor(last["at"], last["concept"], last["word"]) if last else None,
                "concepts": int(np.unique(order.owner[at]).size), "catching_up": len(held.backlog)}

    def current(self, tenant: str, agent: str, until: float) -> Held:
        """The agent's words, brought up to date within the budget (`until`, on the container's clock)."""
        held = self._held.setdefault((tenant, agent), Held())
        if not held.loaded:
            self._load(tenant, agent, held)
        if (held.position is None or self._clock() - held.swept_at >= self._sweep_seconds
                or self._wall() - held.position > JOURNAL_TRUSTED_SECONDS):
            self._sweep(tenant, agent, held)
        else:
            self._follow_journal(tenant, agent, held)
        done = 0
        while held.backlog and (done == 0 or self._clock() < until):  # one chunk at least: every request gets on
            chunk = held.backlog[:self._fetch_chunk]
            for name, stored in zip(chunk, self._store.fetch_many(tenant, agent, chunk)):
                if stored is None:  # deleted since it was listed or journaled
                    held.drop(name)
                else:
                    held.read(stored)
            del held.backlog[:len(chunk)]
            done += len(chunk)
            held.changes += len(chunk)
        if (not held.backlog and held.allowed and (held.due or held.changes >= REWRITE_CHANGES)
                and (held.rows or held.unreadable or held.etag is not None)):
            self._write(tenant, agent, held)
        return held

    def told(self, tenant: str, agent: str, stored: StoredConcept) -> None:
        """A concept this container just read (the list's catch-up) or wrote (a removal): its words
        as they are, so that the next page does not read it again."""
        held = self._held.setdefault((tenant, agent), Held())
        held.read(stored)
        held.changes += 1

    def _sweep(self, tenant: str, agent: str, held: Held) -> None:
        """List every concept: what changed since it was read is queued, what is gone is dropped."""
        started = self._wall()
        listed = self._store.list(tenant, agent)
        listed.sort(key=lambda item: (item.last_modified, item.name), reverse=True)  # newest first
        etags = {item.name: item.etag for item in listed}
        gone = [name for name in (*held.rows, *held.unreadable) if name not in etags]
        for name in gone:
            held.drop(name)
        held.changes += len(gone)
        held.backlog = [name for name, etag in etags.items() if held.etag_of(name) != etag]
        held.position, held.swept_at = started, self._clock()

    def _follow_journal(self, tenant: str, agent: str, held: Held) -> None:
        """Queue what the journal names since the last look, when it disagrees with what is held
        (entries are compared, not trusted); a delete is dropped at once."""
        started = self._wall()
        newest: dict[str, Optional[str]] = {}
        for change in self._store.changes_since(tenant, agent, held.position - JOURNAL_GRACE_SECONDS):
            newest[change.name] = change.etag  # oldest first: the last one wins
        queued = set(held.backlog)
        changed = []
        for name, etag in newest.items():
            if name in _NOT_CONCEPTS or name in queued:
                continue
            known = held.etag_of(name)
            if etag is None:
                if known is not None:
                    held.drop(name)
                    held.changes += 1
            elif known is None or etag != etag_token(known):
                changed.append(name)
        held.backlog[:0] = changed
        held.position = started

    def _load(self, tenant: str, agent: str, held: Held) -> None:
        held.loaded = True
        try:
            stored = self._store.get_words_summary(tenant, agent)
        except AccessDenied:
            held.allowed = False
            return
        if stored is None:
            held.due = True
            return
        held.etag = stored.etag
        try:
            summary = decode(stored.data, tenant, agent)
        except ValueError:  # another format, say: rebuilt from the concepts, then written over
            held.due = True
            return
        for name, row in summary.rows.items():
            if held.etag_of(name) is None:  # one read or written since this container started is newer
                held.put(name, row)
        for name, etag in summary.unreadable.items():
            if held.etag_of(name) is None:
                held.unreadable[name] = etag
        if held.position is None:  # the journal stands for a listing from there, until the next sweep
            held.position, held.swept_at = summary.position, self._clock()

    def _write(self, tenant: str, agent: str, held: Held) -> None:
        data = encode(tenant, agent, held.rows, held.unreadable, held.position or 0.0)
        try:
            held.etag = self._store.put_words_summary(tenant, agent, data, if_match=held.etag)
        except Conflict:  # another container wrote it: read again next time (rows are checked by ETag)
            held.loaded, held.etag = False, None
            return
        except AccessDenied:
            held.allowed = False
            return
        except KnowledgeError:  # S3 down: the next request tries again
            return
        held.due, held.changes = False, 0
