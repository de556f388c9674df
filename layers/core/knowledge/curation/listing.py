"""The studio's list of one agent's concepts, as a container keeps it between requests: the index
and each concept's row, sorted, searched and marked new since an operator last looked."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any, Mapping, Optional

from knowledge.errors import Unindexable
from knowledge.format.concept import out_of_recall
from knowledge.format.config import KnowledgeConfig
from knowledge.recall.index import Index
from knowledge.recall.snapshot import Summary
from knowledge.store.concepts import StoredConcept

RELEVANCE = "relevance"  # with a query, the default order (knowledge.curation.relevance); else written_at
SORTS = ("written_at", "updated_at", "name", "type", "provenance", "confidence", "occurrences")
ENGINE = "engine"  # the actor of what the engine learned (consolidation's writes)


def fold_for_search(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


@dataclass
class HeldList:
    """What a container keeps of one agent for the list: the search index over name,
    description and body (retrieval's own, restorable from the agent's snapshot), each
    concept's summary (the rest of its row), and its name and description folded for
    substring search (a snapshot holds no body text, so substrings are not looked for there)."""

    index: Index = field(default_factory=Index)
    summaries: dict[str, Summary] = field(default_factory=dict)  # every current concept
    unreadable: dict[str, str] = field(default_factory=dict)  # name -> ETag that did not parse
    folded: dict[str, str] = field(default_factory=dict)
    loaded: bool = False  # the snapshot (or its absence) has been read
    position: float = 0.0  # epoch seconds: where the next look at the journal starts (less its grace)
    swept_at: float = float("-inf")  # the container's clock at the last full listing
    # The agent's knowledge: block as last read (what "stale" and local dates mean), and its ETag.
    config: Optional[KnowledgeConfig] = None
    config_etag: Optional[str] = None
    config_text: Optional[str] = None
    config_known: bool = False  # read (or found in the snapshot) at least once
    # Per concept, what waits beside it for a judgment, by kind (knowledge.store.waiting), as the last full
    # listing found it: counted in its row's related claims (policy, sighting) and conflict (conflict).
    beside: dict[str, dict[str, int]] = field(default_factory=dict)
    beside_due: bool = False  # a full listing happened since `beside` was read
    # The concepts whose model words wait for the tenant's budget (knowledge.store.pending_words), read with
    # `beside`, once per full listing (one listing request, no object read).
    words_pending: frozenset[str] = frozenset()

    def related(self, name: str) -> int:
        """Claims waiting for the operator: under the body's `## Related claims`, and beside it."""
        kinds = self.beside.get(name, {})
        return self.summaries[name].related + kinds.get("policy", 0) + kinds.get("sighting", 0)

    def in_conflict(self, name: str) -> bool:
        """A `## Contradiction` in the body, or a policy judged to contradict it (both kept)."""
        return self.summaries[name].conflict or bool(self.beside.get(name, {}).get("conflict"))

    def recall(self, name: str, now: datetime) -> Optional[str]:
        """Why the concept is not recalled now (expired, not_started, stale), or None."""
        doc, summary = self.index.docs.get(name), self.summaries.get(name)
        if doc is None or summary is None:
            return None  # unreadable: the list says so otherwise
        config = self.config or KnowledgeConfig()
        updated = datetime.strptime(summary.updated_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc) \
            if summary.updated_at else None
        return out_of_recall(valid_from=_day(summary.valid_from), valid_until=_day(summary.valid_until),
                             provenance=doc.provenance, updated_at=updated, now=now,
                             stale_after_days=config.stale_after_days, utc_offset=config.offset,
                             retired_by=summary.retired_by)
    # Concepts known to have changed (by the listing or the journal) and not read yet, newest
    # first: their rows are the snapshot's until read, a new one has none (knowledge.curation.studio).
    backlog: list[str] = field(default_factory=list)

    def drop(self, name: str) -> None:
        self.index.remove(name)
        self.unreadable.pop(name, None)
        self.summaries.pop(name, None)
        self.folded.pop(name, None)

    def take(self, stored: StoredConcept) -> None:
        summary = Summary.of(stored)
        if summary.problem is None:
            concept = stored.concept
            try:
                self.index.upsert(stored.name, stored.etag, concept, stored.data)
            except Unindexable as exc:  # parses, but its text cannot be indexed: listed as unreadable
                summary = summary._replace(problem=str(exc))
            else:
                self.summaries[stored.name] = summary
                self.unreadable.pop(stored.name, None)
                self.folded[stored.name] = fold_for_search(f"{concept.name}\n{concept.description}")
                return
        self.summaries[stored.name] = summary
        self.index.remove(stored.name)
        self.unreadable[stored.name] = stored.etag
        self.folded[stored.name] = fold_for_search(stored.name)

    def value(self, name: str, sort: str) -> Any:
        if sort in ("type", "provenance", "confidence"):
            doc = self.index.docs.get(name)
            return getattr(doc, sort) if doc else None
        if sort == "name":
            return name
        return getattr(self.summaries[name], sort)  # written_at, updated_at (sortable text), occurrences

    def row(self, name: str) -> dict[str, Any]:
        doc, summary = self.index.docs.get(name), self.summaries[name]
        return {"name": name, "type": doc.type if doc else None, "provenance": doc.provenance if doc else None,
                "confidence": doc.confidence if doc else None, "occurrences": summary.occurrences,
                "updated_at": summary.updated_at, "conflict": self.in_conflict(name), "related": self.related(name),
                "etag": summary.etag, "problem": summary.problem, "description": doc.description if doc else None,
                "written_at": summary.written_at, "written_by": summary.actor, "reason": summary.reason,
                "valid_from": summary.valid_from, "valid_until": summary.valid_until,
                "retired_by": summary.retired_by, "words_pending": name in self.words_pending}


def _day(text: Optional[str]) -> Optional[date]:
    return date.fromisoformat(text) if text else None


def sorted_names(names: list[str], sort: str, descending: bool, held: HeldList) -> list[str]:
    """Names by `sort`; rows without a value go last either way, and the name breaks ties."""
    present = sorted(n for n in names if held.value(n, sort) is not None)
    present.sort(key=lambda n: held.value(n, sort), reverse=descending)
    return present + sorted(n for n in names if held.value(n, sort) is None)


def is_new(summary: Summary, since: Optional[str]) -> bool:
    """Written by the engine after `since` (both stamps in the same sortable layout)."""
    return Unseen(since).is_new("", summary) if since is not None else False


@dataclass(frozen=True)
class Unseen:
    """What is new to one operator: a current version written after `since` by anyone but the
    operator (`viewer`: the engine, or a colleague), unless the operator marked that concept
    reviewed at that version or later (`reviewed`: name -> the written_at reviewed). Without a
    viewer (the agent's own count) only the engine's writes are new."""

    since: str  # sortable UTC stamp, YYYY-MM-DDTHH:MM:SS.ffffffZ
    viewer: Optional[str] = None  # engine or operator:<id>
    reviewed: Mapping[str, str] = field(default_factory=dict)

    def is_new(self, name: str, summary: Summary) -> bool:
        written = summary.written_at
        if written is None or summary.actor is None or written <= self.since:
            return False
        if self.viewer is None and summary.actor != ENGINE or summary.actor == self.viewer:
            return False
        seen = self.reviewed.get(name)
        return seen is None or written > seen


def since_stamp(since: Optional[datetime]) -> Optional[str]:
    if since is None:
        return None
    if not isinstance(since, datetime):
        raise TypeError("since must be a datetime (the review state's time, parsed)")
    moment = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
