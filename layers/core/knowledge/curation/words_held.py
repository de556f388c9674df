"""What a studio container keeps of one agent's learned words between requests, and the words summary's
bytes (knowledge.store.words_summary): each concept's words as a few flat tuples, the page's order one
integer key per word (day, concept's rank, place), sorted once per change with numpy, filtered with
masks and paged by bisection. docs/studio.md, "The learned words page"."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import date
from typing import Any, NamedTuple, Optional

import numpy as np

from knowledge.format.learned_words import ORIGINS
from knowledge.store.concepts import StoredConcept
from shared.errors import InvalidConcept, InvalidCursor, KnowledgeError
from shared.names import check_slug

# 3: each concept's description, the concepts that do not parse and the journal position (a /2 summary
# is none: rebuilt from the concepts).
MAGIC = b"KNOWLEDGE-WORDS/3\n"
CODE = {origin: str(i) for i, origin in enumerate(ORIGINS)}  # one character per word's origin
ORIGIN = {code: origin for origin, code in CODE.items()}
_DAY_SHIFT, _RANK_SHIFT = 32, 8  # key = (newest day first) << 32 | concept rank << 8 | place in concept
_LAST_DAY = date.max.toordinal()


class Row(NamedTuple):
    """One concept's words as last read (in alphabetical order), and the ETag they were read at."""

    etag: str
    words: tuple[str, ...]
    origins: str  # CODE of each word's origin
    sessions: tuple[int, ...]
    days: tuple[int, ...]  # date ordinals
    removed: int  # how many words its removed_words holds
    description: str = ""  # the concept's, shown beside its words


def row_of(stored: StoredConcept) -> Optional[Row]:
    """The concept's words; None when it does not parse (the list shows it as unreadable)."""
    try:
        concept = stored.concept
    except (InvalidConcept, ValueError):
        return None
    entries = sorted(concept.learned_words, key=lambda e: e.word)
    return Row(stored.etag, tuple(e.word for e in entries), "".join(CODE[e.origin] for e in entries),
               tuple(e.sessions for e in entries), tuple(e.at.toordinal() for e in entries),
               len(concept.removed_words), concept.description)


@dataclass
class Order:
    """Every word of the agent in the page's order: `keys` ascending, and for each the concept
    (`names[owner]`) and its place in that concept's row."""

    names: list[str]
    keys: np.ndarray
    owner: np.ndarray
    place: np.ndarray
    origin: np.ndarray  # the CODE character's byte


@dataclass
class Held:
    """One agent's words in one container."""

    rows: dict[str, Row] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # concepts that do not parse -> their ETag
    loaded: bool = False  # the summary (or its absence) has been read
    etag: Optional[str] = None  # the stored summary's, None when there is none
    due: bool = False  # none, or unreadable: write one once caught up
    changes: int = 0  # concepts read or dropped since the stored one
    allowed: bool = True  # False: the policy refuses its key
    position: Optional[float] = None  # when the last look at the journal or the listing began (epoch)
    swept_at: float = float("-inf")  # when the concepts were last listed (the container's clock)
    backlog: list[str] = field(default_factory=list)  # concepts known changed and not read yet
    version: int = 0  # moves on with every change of `rows`
    order: Optional[tuple[int, Order]] = None  # built for that version

    def etag_of(self, name: str) -> Optional[str]:
        """The ETag the concept was last read at (None: not known)."""
        row = self.rows.get(name)
        return row.etag if row is not None else self.unreadable.get(name)

    def put(self, name: str, row: Optional[Row]) -> None:
        if row is None:
            if self.rows.pop(name, None) is not None:
                self.version += 1
            return
        self.unreadable.pop(name, None)
        if self.rows.get(name) != row:
            self.rows[name] = row
            self.version += 1

    def read(self, stored: StoredConcept) -> None:
        """A concept as just read: its words, or that it does not parse."""
        row = row_of(stored)
        self.put(stored.name, row)
        if row is None:
            self.unreadable[stored.name] = stored.etag

    def drop(self, name: str) -> None:
        self.put(name, None)
        self.unreadable.pop(name, None)

    def ordered(self) -> Order:
        if self.order is None or self.order[0] != self.version:
            self.order = (self.version, _order(self.rows))
        return self.order[1]

    def entry(self, name: str, place: int) -> dict[str, Any]:
        row = self.rows[name]
        return {"word": row.words[place], "origin": ORIGIN[row.origins[place]], "sessions": row.sessions[place],
                "at": date.fromordinal(row.days[place]).isoformat()}


def _order(rows: dict[str, Row]) -> Order:
    names = sorted(name for name, row in rows.items() if row.words)
    days: list[int] = []
    owners: list[int] = []
    places: list[int] = []
    for rank, name in enumerate(names):
        row = rows[name]
        days.extend(row.days)
        owners.extend([rank] * len(row.days))
        places.extend(range(len(row.days)))
    owner = np.array(owners, dtype=np.int64)
    place = np.array(places, dtype=np.int64)
    keys = ((_LAST_DAY - np.array(days, dtype=np.int64)) << _DAY_SHIFT) | (owner << _RANK_SHIFT) | place
    origin = np.frombuffer("".join(rows[name].origins for name in names).encode("ascii"), dtype=np.uint8)
    by = np.argsort(keys, kind="stable")
    return Order(names, keys[by], owner[by], place[by], origin[by])


def cursor_key(order: Order, rows: dict[str, Row], day: int, name: str, word: str) -> int:
    """The key after which the page goes on: rows whose key is greater come after (day, name, word),
    whether or not that word or concept is still there."""
    rank = bisect_left(order.names, name)
    base = ((_LAST_DAY - day) << _DAY_SHIFT) | (rank << _RANK_SHIFT)
    if rank < len(order.names) and order.names[rank] == name:
        return base + bisect_right(rows[name].words, word) - 1
    return base - 1


def encode_cursor(at: str, name: str, word: str) -> str:
    return base64.urlsafe_b64encode(f"{at}\n{name}\n{word}".encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str, str]:
    """(day ordinal, concept, word) of the last row of the page before; InvalidCursor for anything
    the page did not hand out."""
    try:
        at, name, word = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8").split("\n")
        return date.fromisoformat(at).toordinal(), check_slug("concept", name), word
    except (binascii.Error, UnicodeDecodeError, ValueError, KnowledgeError):
        raise InvalidCursor("cursor must be the `next` of an earlier page of the words") from None


class Summary(NamedTuple):
    """A words summary as stored: the rows, the concepts that do not parse, and its journal position."""

    rows: dict[str, Row]
    unreadable: dict[str, str]
    position: float


def encode(tenant: str, agent: str, rows: dict[str, Row], unreadable: Optional[dict[str, str]] = None,
           position: float = 0.0) -> bytes:
    """Columns, not one object per word: a cold container reads 120,000 words in a tenth of a second."""
    names = list(rows)
    body = {"tenant": tenant, "agent": agent, "position": position, "unreadable": dict(unreadable or {}),
            "names": names, "etags": [rows[n].etag for n in names], "descriptions": [rows[n].description for n in names],
            "removed": [rows[n].removed for n in names], "counts": [len(rows[n].words) for n in names],
            "words": [w for n in names for w in rows[n].words], "origins": "".join(rows[n].origins for n in names),
            "sessions": [s for n in names for s in rows[n].sessions], "days": [d for n in names for d in rows[n].days]}
    return MAGIC + zlib.compress(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 1)


def decode(data: bytes, tenant: str, agent: str) -> Summary:
    """The summary in `data`; ValueError when it is not this agent's summary in this format."""
    if not data.startswith(MAGIC):
        raise ValueError("not a words summary")
    try:
        body = json.loads(zlib.decompress(data[len(MAGIC):]).decode("utf-8"))
        if body["tenant"] != tenant or body["agent"] != agent:
            raise ValueError("another agent's words summary")
        words, origins, sessions, days = body["words"], body["origins"], body["sessions"], body["days"]
        if not len(words) == len(origins) == len(sessions) == len(days) == sum(body["counts"]) \
                or set(origins) - set(ORIGIN):
            raise ValueError("a words summary whose columns disagree")
        position, unreadable = body["position"], body["unreadable"]
        if type(position) not in (int, float) or not all(type(v) is str for v in unreadable.values()):
            raise ValueError("a words summary with a bad position or unreadable list")
        out, at = {}, 0
        for name, etag, description, removed, count in zip(body["names"], body["etags"], body["descriptions"],
                                                           body["removed"], body["counts"], strict=True):
            out[name] = Row(etag, tuple(words[at:at + count]), origins[at:at + count], tuple(sessions[at:at + count]),
                            tuple(days[at:at + count]), removed, description)
            at += count
        return Summary(out, dict(unreadable), float(position))
    except (zlib.error, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError("not a words summary") from exc
