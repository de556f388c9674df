"""The studio's words page: the words recall learned across an agent's concepts, newest first, and
where each came from (the model, the traffic).

At 5,000 concepts with 24 words each a page cannot read 5,000 objects. It builds on the list: the
concepts' ETags come from the list's rows (knowledge.curation.studio: the snapshot, then the change
journal), and each concept's words from the words summary (knowledge.store.words_summary: one
object for the whole agent) kept beside the snapshot. A concept whose ETag moved on since the
summary was written is read again, within the same kind of budget as the list's catch-up (what is
left is counted in `catching_up` and read by the next request); once nothing is left, a summary
missing, unreadable or behind by REWRITE_CHANGES concepts is written again, conditionally.

Removal (knowledge.curation.words_removal) writes through the store and tells this cache at once.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import zlib
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable, NamedTuple, Optional

from knowledge.curation.listing import HeldList
from knowledge.errors import InvalidCursor, UnknownOrigin
from knowledge.store.concepts import ConceptStore, StoredConcept
from shared.errors import AccessDenied, Conflict, InvalidConcept, KnowledgeError
from shared.httpapi import Operator
from shared.names import check_slug

# Where a word came from, as the page says it, and the stored origins each stands for.
SOURCES = {"model": ("model",), "traffic": ("loaded", "sighting")}
# What `origin=` may filter by: a source, or one stored origin.
ORIGIN_FILTERS = {**SOURCES, "loaded": ("loaded",), "sighting": ("sighting",)}
SOURCE_OF = {origin: source for source, origins in SOURCES.items() for origin in origins}
PAGE_DEFAULT, PAGE_MAX = 100, 500
CATCH_UP_SECONDS = 1.5  # the list's (knowledge.curation.studio): both answer within the studio's budget
FETCH_CHUNK = 32
REWRITE_CHANGES = 16
MAGIC = b"KNOWLEDGE-WORDS/1\n"


class Entry(NamedTuple):
    word: str
    origin: str
    sessions: int
    at: str  # YYYY-MM-DD: sorts as the day does


class Row(NamedTuple):
    """One concept's words as last read, and the ETag they were read at."""

    etag: str
    words: tuple[Entry, ...]
    removed: int  # how many words its removed_words holds


def row_of(stored: StoredConcept) -> Optional[Row]:
    """The concept's words; None when it does not parse (the list shows it as unreadable)."""
    try:
        concept = stored.concept
    except (InvalidConcept, ValueError):
        return None
    return Row(stored.etag, tuple(Entry(e.word, e.origin, e.sessions, e.at.isoformat())
                                  for e in concept.learned_words), len(concept.removed_words))


@dataclass
class Held:
    """What a container keeps of one agent's words between requests."""

    rows: dict[str, Row] = field(default_factory=dict)
    loaded: bool = False  # the summary (or its absence) has been read
    etag: Optional[str] = None  # the stored summary's, None when there is none
    due: bool = False  # none, or unreadable: write one once caught up
    changes: int = 0  # concepts read or dropped since the stored one
    allowed: bool = True  # False: the policy refuses its key
    left: int = 0  # concepts known changed and not read yet
    version: int = 0  # moves on with every change of `rows`
    flat: Optional[tuple[int, list[tuple], list[tuple]]] = None  # (version, keys, rows) newest first

    def put(self, name: str, row: Optional[Row]) -> None:
        if row is None:
            if self.rows.pop(name, None) is not None:
                self.version += 1
            return
        if self.rows.get(name) != row:
            self.rows[name] = row
            self.version += 1

    def ordered(self) -> tuple[list[tuple], list[tuple]]:
        """Every word as (key, (concept, entry)), newest day first, then concept and word: the keys
        ascending, so that a cursor is found by bisection."""
        if self.flat is None or self.flat[0] != self.version:
            items = sorted(((_key(e.at, name, e.word), name, e) for name, row in self.rows.items()
                            for e in row.words), key=lambda item: item[0])
            self.flat = (self.version, [item[0] for item in items], [(item[1], item[2]) for item in items])
        return self.flat[1], self.flat[2]


def _key(at: str, name: str, word: str) -> tuple:
    return (-date.fromisoformat(at).toordinal(), name, word)


def encode(tenant: str, agent: str, rows: dict[str, Row]) -> bytes:
    body = {"tenant": tenant, "agent": agent,
            "concepts": [[name, row.etag, row.removed, [list(e) for e in row.words]] for name, row in rows.items()]}
    return MAGIC + zlib.compress(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 6)


def decode(data: bytes, tenant: str, agent: str) -> dict[str, Row]:
    """The rows in `data`; ValueError when it is not this agent's summary in this format."""
    if not data.startswith(MAGIC):
        raise ValueError("not a words summary")
    try:
        body = json.loads(zlib.decompress(data[len(MAGIC):]).decode("utf-8"))
        if body["tenant"] != tenant or body["agent"] != agent:
            raise ValueError("another agent's words summary")
        return {name: Row(etag, tuple(Entry(w, o, s, a) for w, o, s, a in words), removed)
                for name, etag, removed, words in body["concepts"]}
    except (zlib.error, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise ValueError("not a words summary") from exc


def encode_cursor(at: str, name: str, word: str) -> str:
    return base64.urlsafe_b64encode(f"{at}\n{name}\n{word}".encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple:
    """The key of the last row of the page before; InvalidCursor for anything this page did not hand out."""
    try:
        at, name, word = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8").split("\n")
        return _key(at, check_slug("concept", name), word)
    except (binascii.Error, UnicodeDecodeError, ValueError, KnowledgeError):
        raise InvalidCursor("cursor must be the `next` of an earlier page of the words") from None


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
        keys, rows = held.ordered()
        origins = ORIGIN_FILTERS[origin] if origin else None
        if concept is not None or origins is not None:
            chosen = [i for i, (name, e) in enumerate(rows)
                      if (concept is None or name == concept) and (origins is None or e.origin in origins)]
            keys, rows = [keys[i] for i in chosen], [rows[i] for i in chosen]
        start = bisect_right(keys, after) if after is not None else 0
        page = rows[start:start + limit]
        out = [{"concept": name, "word": e.word, "origin": e.origin, "source": SOURCE_OF.get(e.origin, e.origin),
                "sessions": e.sessions, "at": e.at, "etag": held.rows[name].etag,
                "description": _description(list_rows, name)} for name, e in page]
        last = page[-1] if page and start + limit < len(rows) else None
        return {"words": out, "total": len(rows), "next": encode_cursor(last[1].at, last[0], last[1].word) if last else None,
                "concepts": sum(1 for row in held.rows.values() if row.words) if concept is None else
                int(bool(held.rows.get(concept, Row("", (), 0)).words)),
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
