"""An agent's warm index as one object, what a cold container reads instead of every concept: the built
index (never the concepts' text), the knowledge.yaml it was built with, the concepts that did not
parse, each concept's list row, and its position in the change journal. Versioned: anything that does
not decode (an older format included) is no snapshot, and is rebuilt. docs/contract.md, "Storage
layout" (`concepts-index/snapshot`); docs/retrieval.md, "The warm index, the snapshot and the change journal"."""

from __future__ import annotations

import gc
import json
import re
import struct
import sys
import zlib
from dataclasses import dataclass, field
from datetime import timezone
from typing import TYPE_CHECKING, NamedTuple, Optional

from knowledge.errors import SnapshotUnreadable
from knowledge.format.concept import DATE_PATTERN, format_timestamp, related_waiting
from knowledge.recall.index import Index
from knowledge.store.concepts import REASONS, check_actor
from shared.errors import InvalidConcept, InvalidName
from shared.names import is_slug

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.store.concepts import StoredConcept

# 5: a concept whose frontmatter names another concept is unreadable; a snapshot of format 4 may
# index one as readable, so it is no snapshot and is rebuilt. 6: summaries carry valid_from and
# valid_until (what keeps a concept out of recall), which a format 5 snapshot does not know. 7: a
# concept's learned words are terms of their own (knowledge.recall.postings.LEARNED). 8: a learned
# word's weight no longer depends on its concept's length. 9: a concept's links are those the hop
# follows (never one inside an engine-written entry), and its related count is every entry waiting.
# 10: a learned phrase is one term (its words adjacent in a message), a model word weighs its origin.
# 11: a model's phrase is also each of its words (knowledge.recall.postings.MODEL_PHRASE_WORDS).
MAGIC = b"KNOWLEDGE-SNAPSHOT/11\n"
_PRECISE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
_LENGTH = struct.Struct(">I")


class Summary(NamedTuple):
    """What the studio's list shows of one concept beyond the index's own fields (description,
    type, provenance, confidence): the rest of its row, and the writer of its current version."""

    etag: str
    occurrences: Optional[int]
    updated_at: Optional[str]  # as the concept states it, YYYY-MM-DDTHH:MM:SSZ
    conflict: bool
    related: int
    problem: Optional[str]  # why it does not parse (the fields above are then empty)
    actor: Optional[str]  # engine or operator:<id>, from the object's metadata
    written_at: Optional[str]  # the writer's stamp, YYYY-MM-DDTHH:MM:SS.ffffffZ (else S3's second)
    valid_from: Optional[str] = None  # YYYY-MM-DD, as the concept states it
    valid_until: Optional[str] = None
    reason: Optional[str] = None  # why its current version was written (ConceptStore's REASONS)
    retired_by: Optional[str] = None  # the policy concept whose text retired it from recall

    @classmethod
    def of(cls, stored: "StoredConcept") -> "Summary":
        # Metadata is what a writer said: only the shapes this code writes are kept, so that rows
        # sort and compare by time (a hand-put object falls back to S3's own second).
        written = stored.written_at if isinstance(stored.written_at, str) and _PRECISE.fullmatch(
            stored.written_at) else None
        if written is None and stored.last_modified is not None:
            written = stored.last_modified.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        actor = sys.intern(stored.actor) if _is_actor(stored.actor) else None  # a few actors, many concepts
        reason = sys.intern(stored.reason) if stored.reason in REASONS else None
        try:
            c = stored.concept
        except InvalidConcept as exc:
            return cls(stored.etag, None, None, False, 0, str(exc), actor, written, reason=reason)
        return cls(stored.etag, c.occurrences, format_timestamp(c.updated_at), c.in_conflict,
                   related_waiting(c.body), None, actor, written,
                   c.valid_from.isoformat() if c.valid_from else None,
                   c.valid_until.isoformat() if c.valid_until else None, reason,
                   sys.intern(c.retired_by) if c.retired_by else None)

    def memory_bytes(self) -> int:
        return (sys.getsizeof(self) + sys.getsizeof(self.etag) + sum(
            sys.getsizeof(v) for v in (self.updated_at, self.problem, self.written_at) if v is not None) + 120)


@dataclass
class Snapshot:
    tenant: str
    agent: str
    index: Index
    position: float  # epoch seconds: the journal is read again from here (less its grace)
    config_text: Optional[str] = None
    config_etag: Optional[str] = None
    unreadable: dict[str, str] = field(default_factory=dict)  # name -> ETag that did not parse
    summaries: dict[str, Summary] = field(default_factory=dict)  # one per concept, indexed or unreadable


def encode(snapshot: Snapshot) -> bytes:
    header, blobs = snapshot.index.export_state()
    header.update(tenant=snapshot.tenant, agent=snapshot.agent, position=snapshot.position,
                  config={"text": snapshot.config_text, "etag": snapshot.config_etag}
                  if snapshot.config_etag is not None else None,
                  unreadable=snapshot.unreadable, summaries=[[name, *summary] for name, summary
                                                              in snapshot.summaries.items()],
                  blobs=[len(blob) for blob in blobs])
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return MAGIC + zlib.compress(_LENGTH.pack(len(head)) + head + b"".join(blobs), 6)


def decode(data: bytes, tenant: str, agent: str) -> Snapshot:
    """The snapshot of this agent in `data`; SnapshotUnreadable when it is anything else."""
    # Tens of thousands of objects with no cycles among them: the cyclic collector would walk
    # the whole heap (every other agent's index) several times over while they are made.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _decode(data, tenant, agent)
    finally:
        if collecting:
            gc.enable()


def _decode(data: bytes, tenant: str, agent: str) -> Snapshot:
    try:
        if not data.startswith(MAGIC):
            raise ValueError("not a snapshot")
        raw = zlib.decompress(data[len(MAGIC):])
        (length,) = _LENGTH.unpack_from(raw)
        header = json.loads(raw[4:4 + length].decode("utf-8"))
        if header["tenant"] != tenant or header["agent"] != agent:
            raise ValueError("another agent's snapshot")
        blobs, at = [], 4 + length
        for size in header["blobs"]:
            blobs.append(raw[at:at + size])
            at += size
        if at != len(raw) or len(blobs) != 4:
            raise ValueError("truncated")
        config = header["config"]
        unreadable = {str(name): str(etag) for name, etag in header["unreadable"].items()}
        index = Index.from_state(header, blobs)
        # A summary counts only at the version the index (or the unreadable list) holds; a concept
        # without one is read again by the studio (knowledge.curation.studio), never shown half-known.
        summaries = {}
        for row in header["summaries"]:
            name, summary = str(row[0]), _summary(row[1:])
            doc = index.docs.get(name)
            if summary.etag == (doc.etag if doc is not None else unreadable.get(name)):
                summaries[name] = summary
        return Snapshot(tenant, agent, index, float(header["position"]),
                        config["text"] if config else None, config["etag"] if config else None, unreadable,
                        summaries)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, struct.error, zlib.error) as exc:
        raise SnapshotUnreadable(f"snapshot of {tenant}/{agent} does not decode ({type(exc).__name__})") from None


def _optional(value: object, kind: type) -> object:
    if value is not None and type(value) is not kind:
        raise TypeError("a summary field of the wrong type")
    return value


def _summary(row: list) -> Summary:
    # A row written before summaries kept the version's reason (or who retired it) has none: its
    # reason is unknown (null) until the concept is written again, rather than the whole snapshot
    # rebuilt for it; a retired concept is always written with its retired_by, so a row without
    # one is of a concept nobody had retired.
    etag, occurrences, updated_at, conflict, related, problem, actor, written_at, valid_from, valid_until, \
        *rest = row
    if type(etag) is not str or type(conflict) is not bool or type(related) is not int or len(rest) > 2:
        raise TypeError("a summary field of the wrong type")
    reason = rest[0] if rest else None
    retired_by = _optional(rest[1], str) if len(rest) > 1 else None
    if retired_by is not None and not is_slug(retired_by):
        raise TypeError("a summary's retired_by is no concept name")
    return Summary(etag, _optional(occurrences, int), _optional(updated_at, str), conflict, related,
                   _optional(problem, str), sys.intern(actor) if _optional(actor, str) else None,
                   _optional(written_at, str), _day(valid_from), _day(valid_until),
                   sys.intern(reason) if reason in REASONS else None, retired_by)


def _day(value: object) -> Optional[str]:
    if value is not None and (type(value) is not str or not DATE_PATTERN.fullmatch(value)):
        raise TypeError("a summary date of the wrong shape")
    return value  # type: ignore[return-value]


def _is_actor(actor: object) -> bool:
    try:
        check_actor(actor)  # type: ignore[arg-type]
    except InvalidName:
        return False
    return True
