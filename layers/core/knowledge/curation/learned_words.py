"""The studio's words page: the words recall learned across an agent's concepts, newest first, and
where each came from (the model, the traffic, an operator).

At 5,000 concepts with 24 words each a page cannot read 5,000 objects. It builds on the list: the
concepts' ETags come from the list's rows (knowledge.curation.studio: the snapshot, then the change
journal), and each concept's words from the words summary (knowledge.store.words_summary: one
object for the whole agent) kept beside the snapshot. A concept whose ETag moved on since the
summary was written is read again, within the same kind of budget as the list's catch-up (what is
left is counted in `catching_up` and read by the next request); once nothing is left, a summary
missing, unreadable or behind by REWRITE_CHANGES concepts is written again, conditionally.

What a container keeps, and its order, is knowledge.curation.words_held. Removal
(knowledge.curation.words_removal) writes through the store and tells this cache at once.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

import numpy as np

from knowledge.curation.listing import HeldList
from knowledge.curation.words_held import (
    CODE,
    Held,
    cursor_key,
    decode,
    decode_cursor,
    encode,
    encode_cursor,
    row_of,
)
from knowledge.errors import UnknownOrigin
from knowledge.format.learned import OPERATOR, TRAFFIC
from knowledge.store.concepts import ConceptStore, StoredConcept
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


class LearnedWords:
    """The words page over the studio's list (`rows`: operator, tenant, agent -> the list's rows,
    with its tenancy checks)."""

    def __init__(self, rows: Callable[[Operator, str, str], HeldList], store: ConceptStore, *,
                 catch_up_seconds: float = CATCH_UP_SECONDS, fetch_chunk: int = FETCH_CHUNK,
                 clock: Any = time.monotonic):
        self._list_rows, self._store = rows, store
        self._catch_up_seconds, self._fetch_chunk, self._clock = catch_up_seconds, max(1, fetch_chunk), clock
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
        until = self._clock() + self._catch_up_seconds
        list_rows = self._list_rows(op, tenant, agent)
        held = self.current(tenant, agent, list_rows, until)
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
            entry = held.entry(name, int(order.place[i]))
            out.append({"concept": name, **entry, "source": SOURCE_OF.get(entry["origin"], entry["origin"]),
                        "etag": held.rows[name].etag, "description": _description(list_rows, name)})
        last = out[-1] if out and start + limit < len(at) else None
        return {"words": out, "total": len(at),
                "next": encode_cursor(last["at"], last["concept"], last["word"]) if last else None,
                "concepts": int(np.unique(order.owner[at]).size),
                "catching_up": held.left + len(list_rows.backlog)}

    def current(self, tenant: str, agent: str, list_rows: HeldList, until: float) -> Held:
        """The agent's words, brought up to date with the list's rows within the budget."""
        key = (tenant, agent)
        held = self._held.setdefault(key, Held())
        if not held.loaded:
            self._load(tenant, agent, held)
        summaries = list_rows.summaries
        for name in [name for name in held.rows if name not in summaries or summaries[name].problem is not None]:
            held.put(name, None)
            held.changes += 1
        # A concept the list has yet to read is left to it: it tells this page its words when it does.
        behind = set(list_rows.backlog)
        stale = [name for name, summary in summaries.items() if summary.problem is None and name not in behind
                 and (name not in held.rows or held.rows[name].etag != summary.etag)]
        done = 0
        while done < len(stale):  # one chunk at least, so that every request makes progress
            chunk = stale[done:done + self._fetch_chunk]
            for name, stored in zip(chunk, self._store.fetch_many(tenant, agent, chunk)):
                held.put(name, None if stored is None else row_of(stored))
            done += len(chunk)
            held.changes += len(chunk)
            if self._clock() >= until:
                break
        held.left = len(stale) - done
        if (not held.left and not list_rows.backlog and held.allowed and (held.due or held.changes >= REWRITE_CHANGES)
                and (held.rows or held.etag is not None)):
            self._write(tenant, agent, held)
        return held

    def told(self, tenant: str, agent: str, stored: StoredConcept) -> None:
        """A concept this container just read (the list's catch-up) or wrote (a removal): its words
        as they are, so that the next page does not read it again."""
        held = self._held.setdefault((tenant, agent), Held())
        held.put(stored.name, row_of(stored))
        held.changes += 1

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
            for name, row in decode(stored.data, tenant, agent).items():
                if name not in held.rows:  # one read or written since this container started is newer
                    held.put(name, row)
        except ValueError:
            held.due = True

    def _write(self, tenant: str, agent: str, held: Held) -> None:
        try:
            held.etag = self._store.put_words_summary(tenant, agent, encode(tenant, agent, held.rows),
                                                      if_match=held.etag)
        except Conflict:  # another container wrote it: read again next time (rows are checked by ETag)
            held.loaded, held.etag = False, None
            return
        except AccessDenied:
            held.allowed = False
            return
        except KnowledgeError:  # S3 down: the next request tries again
            return
        held.due, held.changes = False, 0


def _description(list_rows: HeldList, name: str) -> Optional[str]:
    doc = list_rows.index.docs.get(name)
    return doc.description if doc is not None else None
