"""An agent's warm index as one object: what a cold container reads instead of every concept.

A snapshot holds the built index (knowledge.search.Index.export_state: names, descriptions,
confidence, provenance, links, ETags and the postings, never the concepts' text), the
knowledge.yaml it was built with, the concepts that did not parse, and its position in the
agent's change journal: the time its writer's last look at the journal or the listing began.
A reader that loads it corrects it with the journal from that position on (see
knowledge.warm). The format is versioned; anything that does not decode is no snapshot.
"""

from __future__ import annotations

import gc
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Optional

from .errors import KnowledgeError
from .search import Index

MAGIC = b"KNOWLEDGE-SNAPSHOT/2\n"
_LENGTH = struct.Struct(">I")


class SnapshotUnreadable(KnowledgeError):
    """The stored snapshot is not one this code wrote for this agent: rebuilt from the concepts."""

    code = "snapshot_unreadable"


@dataclass
class Snapshot:
    tenant: str
    agent: str
    index: Index
    position: float  # epoch seconds: the journal is read again from here (less its grace)
    config_text: Optional[str] = None
    config_etag: Optional[str] = None
    unreadable: dict[str, str] = field(default_factory=dict)  # name -> ETag that did not parse


def encode(snapshot: Snapshot) -> bytes:
    header, blobs = snapshot.index.export_state()
    header.update(tenant=snapshot.tenant, agent=snapshot.agent, position=snapshot.position,
                  config={"text": snapshot.config_text, "etag": snapshot.config_etag}
                  if snapshot.config_etag is not None else None,
                  unreadable=snapshot.unreadable, blobs=[len(blob) for blob in blobs])
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
        return Snapshot(tenant, agent, Index.from_state(header, blobs), float(header["position"]),
                        config["text"] if config else None, config["etag"] if config else None, unreadable)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, struct.error, zlib.error) as exc:
        raise SnapshotUnreadable(f"snapshot of {tenant}/{agent} does not decode ({type(exc).__name__})") from None
