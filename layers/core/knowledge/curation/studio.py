"""The studio's operations: what an operator may see and do with an agent's concepts.

Every call names the operator (from the verified token) and is checked against the tenants
the operator belongs to before the store is touched. Saves are compare-and-swap on the
ETag the page read; a stale save is a Conflict carrying the newer version.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterator, Optional, Protocol

from knowledge.format.concept import FIELDS, Concept, format_timestamp, parse, related_waiting, utc_now
from knowledge.format.evidence import EvidenceLink
from knowledge.format.turn import InvalidTurn
from knowledge.recall.index import Index
from knowledge.recall.snapshot import Snapshot, SnapshotUnreadable, Summary, decode, encode
from knowledge.store.archive import TurnArchive
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.history import InvalidCursor, VersionInfo
from knowledge.store.journal import CONFIG_CHANGE, JOURNAL_GRACE_SECONDS
from knowledge.store.keys import etag_token
from shared import pii
from shared.errors import AccessDenied, Conflict, FieldError, InvalidConcept, KnowledgeError, NotFound
from shared.httpapi import Operator, page_offset
from shared.names import check_slug

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.format.turn import Turn

MARKDOWN_MAX_BYTES = 128 * 1024
HAND_DEFAULTS = {"provenance": "policy", "confidence": 0.95, "sources": [], "occurrences": 1}


class PreconditionRequired(KnowledgeError):
    code = "precondition_required"


class NoEvidence(NotFound):
    code = "no_evidence"


class ArchiveNotConfigured(KnowledgeError):
    code = "archive_not_configured"


class UnknownAgent(NotFound):
    """An agent with neither a knowledge.yaml nor any concept: most often a typo in ?agent=."""

    code = "unknown_agent"


class NotDeleted(NotFound):
    code = "not_deleted"


class NameTaken(KnowledgeError):
    """A create whose name is already a concept: the operator may open that one instead."""

    code = "name_taken"

    def __init__(self, name: str):
        super().__init__(f"a concept named {name!r} already exists: open it to edit it, or choose another name")
        self.name = name


class Archive(Protocol):
    """Where archived turns are read (adapters.TurnArchive)."""

    def get(self, key: str) -> "Turn": ...


def _related_in(data: bytes) -> int:
    try:
        return related_waiting(parse(data).body)
    except InvalidConcept:
        return 0


def _stored(item: StoredConcept) -> dict[str, Any]:
    # A stored file that is not UTF-8 is still shown (its bad bytes as U+FFFD) so an operator can fix it.
    return {"name": item.name, "markdown": item.data.decode("utf-8", "replace"), "etag": item.etag,
            "version_id": item.version_id, "related": _related_in(item.data)}


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def excerpt(content: str, start: int, end: int) -> str:
    """content[start:end] as an operator may see it: personal data found in the whole message
    (whose context a span alone can lack) is replaced where it overlaps, then the span again."""
    out, at = [], start
    for finding in pii.find(content):
        if finding.end <= at or finding.start >= end:
            continue
        out.append(content[at:max(finding.start, at)])
        out.append(f"[{finding.kind}]")
        at = min(finding.end, end)
    out.append(content[at:end])
    return pii.redact("".join(out)).text


def _text(markdown: str) -> str:
    if len(markdown) > MARKDOWN_MAX_BYTES or len(markdown.encode("utf-8", "surrogatepass")) > MARKDOWN_MAX_BYTES:
        raise InvalidConcept([FieldError("document", f"must be at most {MARKDOWN_MAX_BYTES} bytes")])
    return markdown


def concept_by_hand(markdown: str, now: datetime) -> Concept:
    """A concept an operator writes from scratch: name, description, type and body are theirs;
    missing engine fields default to a curated concept (provenance policy); both stamps are now."""
    stamp = format_timestamp(now)
    with located(markdown):
        return parse(_text(markdown), defaults=HAND_DEFAULTS, overrides={"created_at": stamp, "updated_at": stamp})


# What the concept format refuses in a body, as concept.py's check does: the line holding it is marked.
_REFUSED_IN_BODY = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\ufeff\ufffe\uffff\r]")


def _closing_line(lines: list[str]) -> Optional[int]:
    """The 1-based line of the frontmatter's closing '---', or None when it has none."""
    if not lines or lines[0] != "---":
        return None
    return next((number for number, line in enumerate(lines[1:], start=2) if line == "---"), None)


def locate(errors: list[FieldError], markdown: str) -> list[FieldError]:
    """The line an operator should look at for each error: a character refused in the body is
    marked where it is, another body problem at the body's first line, and a field the
    frontmatter leaves out at its closing '---' (where it goes)."""
    lines = markdown.split("\n")
    closing = _closing_line(lines)
    out = []
    for error in errors:
        line = error.line
        if closing is not None and error.field == "body":
            body = list(enumerate(lines[closing:], start=closing + 1))
            line = (next((n for n, text in body if _REFUSED_IN_BODY.search(text)), None)
                    or next((n for n, text in body if text.strip()), None) or line)
        elif closing is not None and line is None and error.field in FIELDS:
            line = closing
        out.append(FieldError(error.field, error.message, line))
    return out


@contextmanager
def located(markdown: str) -> Iterator[None]:
    """Re-raises InvalidConcept with the lines `locate` finds in `markdown`."""
    try:
        yield
    except InvalidConcept as exc:
        raise InvalidConcept(locate(exc.errors, markdown)) from None


SORTS = ("written_at", "updated_at", "name", "type", "provenance", "confidence", "occurrences")
ENGINE = "engine"  # the actor of what the engine learned (consolidation's writes)
# The history's lifecycle rule (template.yaml: ConceptVersionsKept, ConceptVersionDays), as the
# studio tells an operator when older versions expire.
VERSIONS_KEPT_DEFAULT, VERSION_DAYS_DEFAULT = 20, 30
# A snapshot behind the listing by this many concepts is written again by the studio.
SNAPSHOT_REWRITE_CHANGES = 16
# Between two full listings a warm list reads the change journal only; a listing at least this
# often bounds how long a writer killed before its journal entry leaves a row stale.
SWEEP_SECONDS = 60.0


def versions_kept(environ: Optional[dict] = None) -> dict[str, int]:
    """The lifecycle's keep rule, from KNOWLEDGE_VERSIONS_KEPT and KNOWLEDGE_VERSION_DAYS: the
    newest past versions always kept, and for how many days any other one is."""
    env = os.environ if environ is None else environ
    out = {}
    for key, variable, default in (("newest", "KNOWLEDGE_VERSIONS_KEPT", VERSIONS_KEPT_DEFAULT),
                                   ("days", "KNOWLEDGE_VERSION_DAYS", VERSION_DAYS_DEFAULT)):
        raw = env.get(variable, "")
        out[key] = int(raw) if raw.isascii() and raw.isdigit() and 0 < int(raw) < 100_000 else default
    return out


def _offset(cursor: Optional[str]) -> int:
    return page_offset(cursor, InvalidCursor)


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


@dataclass
class _Held:
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

    def matching(self, q: str) -> set[str]:
        found = {hit.name for hit in self.index.search(q, top_k=max(1, len(self.index)))}
        needle = _fold(q.strip())
        found.update(name for name, text in self.folded.items() if needle in text)
        return found

    def drop(self, name: str) -> None:
        self.index.remove(name)
        self.unreadable.pop(name, None)
        self.summaries.pop(name, None)
        self.folded.pop(name, None)

    def take(self, stored: StoredConcept) -> None:
        summary = Summary.of(stored)
        self.summaries[stored.name] = summary
        if summary.problem is None:
            concept = stored.concept
            self.index.upsert(stored.name, stored.etag, concept, stored.data)
            self.unreadable.pop(stored.name, None)
            self.folded[stored.name] = _fold(f"{concept.name}\n{concept.description}")
        else:
            self.index.remove(stored.name)
            self.unreadable[stored.name] = stored.etag
            self.folded[stored.name] = _fold(stored.name)

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
                "updated_at": summary.updated_at, "conflict": summary.conflict, "related": summary.related,
                "etag": summary.etag, "problem": summary.problem, "description": doc.description if doc else None,
                "written_at": summary.written_at, "written_by": summary.actor}


def _sorted(names: list[str], sort: str, descending: bool, held: _Held) -> list[str]:
    """Names by `sort`; rows without a value go last either way, and the name breaks ties."""
    present = sorted(n for n in names if held.value(n, sort) is not None)
    present.sort(key=lambda n: held.value(n, sort), reverse=descending)
    return present + sorted(n for n in names if held.value(n, sort) is None)


def _is_new(summary: Summary, since: Optional[str]) -> bool:
    """Written by the engine after `since` (both stamps in the same sortable layout)."""
    return since is not None and summary.actor == ENGINE and summary.written_at is not None \
        and summary.written_at > since


def _since_stamp(since: Optional[datetime]) -> Optional[str]:
    if since is None:
        return None
    if not isinstance(since, datetime):
        raise TypeError("since must be a datetime (the review state's time, parsed)")
    moment = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Studio:
    def __init__(self, store: ConceptStore, archive: Optional[Archive] = None, *,
                 sweep_seconds: float = SWEEP_SECONDS, clock: Any = time.monotonic):
        self._store = store
        self._archive = archive
        self._sweep_seconds, self._clock = sweep_seconds, clock
        # Per agent, the rows this container has read: a list re-reads only what changed.
        self._held: dict[tuple[str, str], _Held] = {}  # per agent, kept per container
        self._agents: set[tuple[str, str]] = set()  # agents seen to exist (an agent is never un-made by the studio)

    def _check_agent(self, tenant: str, agent: str) -> None:
        """UnknownAgent for an agent with neither a knowledge.yaml nor any concept (current or deleted)."""
        if (tenant, agent) in self._agents:
            return
        if not self._store.agent_exists(tenant, agent):
            raise UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml "
                               "nor any concept (check the agent's name, or save its knowledge.yaml first)")
        self._agents.add((tenant, agent))

    def _missing(self, tenant: str, agent: str, name: str) -> NotFound:
        """What to say when a concept is not found: the agent itself, when that is what is missing."""
        try:
            self._check_agent(tenant, agent)
        except UnknownAgent as unknown:
            return unknown
        return NotFound(f"there is no concept {name!r} in this agent (if it was deleted, "
                        "it can be restored from the deleted concepts)")

    # ------------------------------------------------------------ reading
    def agents(self, op: Operator, tenant: str) -> list[dict[str, Any]]:
        """The tenant's agents by name, each with how many concepts it has, how many hold a
        conflict and how many have related claims waiting."""
        op.check(tenant)
        out = []
        for agent in self._store.agents(tenant):
            rows = list(self._rows(tenant, agent).summaries.values())
            self._agents.add((tenant, agent))
            out.append({"name": agent, "concepts": len(rows), "conflicts": sum(1 for r in rows if r.conflict),
                        "related": sum(1 for r in rows if r.related)})
        return out

    def _rows(self, tenant: str, agent: str) -> "_Held":
        """The agent's rows and search index, brought up to date. The first time: the agent's
        snapshot (knowledge.recall.snapshot, one request) and one listing, and only the concepts whose
        ETag differs are read; a container that found no snapshot (or one behind by many
        concepts) writes one, conditionally, for the next. After that: the change journal since
        the last look (one request when nothing changed), and a full listing every
        `sweep_seconds`."""
        held = self._held.setdefault((tenant, agent), _Held())
        if held.loaded and self._clock() - held.swept_at < self._sweep_seconds:
            self._follow_journal(tenant, agent, held)
            return held
        snapshot_etag: Optional[str] = None
        rewrite = False
        if not held.loaded:
            snapshot_etag, rewrite = self._load_snapshot(tenant, agent, held)
        started = time.time()
        listed = self._store.list(tenant, agent)
        # Newest first, as a retrieval reader's sweep reads them: the index's weights start from
        # the first concept it holds, so the same order builds the same index.
        listed.sort(key=lambda item: (item.last_modified, item.name), reverse=True)
        listing = {item.name: item.etag for item in listed}
        gone = [name for name in held.summaries if name not in listing]
        for name in gone:
            held.drop(name)
        changed = [name for name, etag in listing.items()
                   if name not in held.summaries or held.summaries[name].etag != etag]
        self._fetch(tenant, agent, held, changed)
        held.position, held.swept_at = started, self._clock()
        if not held.loaded:
            held.loaded = True
            # Never for an agent with no concept: its snapshot would make a typo an agent.
            if held.summaries and (rewrite or len(changed) + len(gone) >= SNAPSHOT_REWRITE_CHANGES):
                self._write_snapshot(tenant, agent, held, started, snapshot_etag)
        return held

    def _follow_journal(self, tenant: str, agent: str, held: _Held) -> None:
        """Read what the journal names since the last look, when it disagrees with what is held
        (entries are compared, not trusted)."""
        started = time.time()
        newest: dict[str, Optional[str]] = {}
        for change in self._store.changes_since(tenant, agent, held.position - JOURNAL_GRACE_SECONDS):
            newest[change.name] = change.etag  # oldest first: the last one wins
        newest.pop(CONFIG_CHANGE, None)
        changed = [name for name, etag in newest.items()
                   if (name in held.summaries if etag is None
                       else name not in held.summaries or etag != etag_token(held.summaries[name].etag))]
        self._fetch(tenant, agent, held, changed)
        held.position = started

    def _fetch(self, tenant: str, agent: str, held: _Held, names: list[str]) -> None:
        for name, stored in zip(names, self._store.fetch_many(tenant, agent, names)):
            if stored is None:  # deleted since it was listed or journaled
                held.drop(name)
            else:
                held.take(stored)
        if names:
            held.index.settle()

    def _load_snapshot(self, tenant: str, agent: str, held: _Held) -> tuple[Optional[str], bool]:
        """Fill `held` from the agent's snapshot; returns its ETag and whether it must be written
        (there is none, or it does not decode)."""
        try:
            stored = self._store.get_snapshot(tenant, agent)
        except AccessDenied:  # a policy without the snapshot's key: rows from the concepts
            return None, False
        if stored is None:
            return None, True
        try:
            snapshot = decode(stored.data, tenant, agent)
        except SnapshotUnreadable:  # an older format, say: rebuilt from the concepts, then written over
            return stored.etag, True
        held.index, held.unreadable, held.summaries = snapshot.index, snapshot.unreadable, snapshot.summaries
        # A concept the snapshot holds without its summary (a writer that kept none) is read
        # again, as a changed one is.
        for name in [name for name in snapshot.index.docs if name not in held.summaries]:
            held.index.remove(name)
        for name in [name for name in held.unreadable if name not in held.summaries]:
            del held.unreadable[name]
        held.folded = {name: _fold(f"{name}\n{doc.description}") for name, doc in snapshot.index.docs.items()}
        held.folded.update((name, _fold(name)) for name in snapshot.unreadable)
        return stored.etag, False

    def _write_snapshot(self, tenant: str, agent: str, held: _Held, position: float,
                        if_match: Optional[str]) -> None:
        """As a retrieval reader does (knowledge.recall.warm): conditionally, positioned where the listing
        began (the journal corrects it from there); a lost race or a refusal leaves the snapshot
        to the readers, and the list is answered all the same. The config is left out: the
        studio never read it, so a reader reads it (one request)."""
        data = encode(Snapshot(tenant, agent, held.index, position, None, None, dict(held.unreadable),
                               dict(held.summaries)))
        try:
            self._store.put_snapshot(tenant, agent, data, if_match=if_match)
        except KnowledgeError:  # Conflict (another writer came first), AccessDenied, S3 down
            pass

    def list(self, op: Operator, tenant: str, agent: str, *, status: Optional[str] = None,
             type: Optional[str] = None, q: Optional[str] = None, sort: str = "written_at", order: str = "desc",
             limit: Optional[int] = None, cursor: Optional[str] = None,
             since: Optional[datetime] = None) -> dict[str, Any]:
        """One page of the agent's concepts, filtered and sorted here (not in the browser).

        `q` searches name, description and body with retrieval's index, and name and
        description for any text holding `q` (accents and case aside), so a prefix such as
        "reemb" finds too; a body is not searched for substrings (the snapshot holds no text).
        With `since`, each row says whether it is `new` (the engine wrote its current version
        after then), the answer counts the agent's new rows (`new`, before any filter), and
        `status="new"` keeps only those."""
        op.check(tenant)
        stamp = _since_stamp(since)
        held = self._rows(tenant, agent)
        names = list(held.summaries)
        if not names:
            self._check_agent(tenant, agent)
        fresh = {name for name in names if _is_new(held.summaries[name], stamp)} if stamp else set()
        if status == "conflict":
            names = [n for n in names if held.summaries[n].conflict]
        elif status == "related":
            names = [n for n in names if held.summaries[n].related]
        elif status == "new":
            names = [n for n in names if n in fresh]
        if type:
            names = [n for n in names if (doc := held.index.docs.get(n)) is not None and doc.type == type]
        if q and q.strip():
            found = held.matching(q)
            names = [n for n in names if n in found]
        names = _sorted(names, sort if sort in SORTS else "written_at", order == "desc", held)
        start = _offset(cursor)
        page = names[start:] if limit is None else names[start:start + limit]
        end = start + len(page)
        rows = [held.row(name) for name in page]
        answer: dict[str, Any] = {"concepts": rows, "total": len(names),
                                  "next": str(end) if end < len(names) else None}
        if stamp is not None:
            for row in rows:
                row["new"] = row["name"] in fresh
            answer["new"] = len(fresh)
        return answer

    def get(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        try:
            return _stored(self._store.get(tenant, agent, name))
        except NotFound:
            raise self._missing(tenant, agent, name) from None

    def versions(self, op: Operator, tenant: str, agent: str, name: str) -> list[dict[str, Any]]:
        """The history; a version written from a sighting names where it was learned (session
        and turn, never the quote)."""
        op.check(tenant)
        try:
            history = self._store.versions(tenant, agent, name)
        except NotFound:
            raise self._missing(tenant, agent, name) from None
        return [_version(v) for v in history]

    def version_page(self, op: Operator, tenant: str, agent: str, name: str, *, limit: int = 50,
                     cursor: Optional[str] = None) -> dict[str, Any]:
        """One page of the history, newest first, in a listing request and one HEAD per version
        shown (a concept confirmed thousands of times opens as fast as a new one); `next` is the
        cursor of the page after, and `kept` the lifecycle's rule (older versions expire)."""
        op.check(tenant)
        try:
            history, following = self._store.version_page(tenant, agent, name, limit=limit, marker=cursor)
        except NotFound:
            raise self._missing(tenant, agent, name) from None
        return {"versions": [_version(v) for v in history], "next": following, "kept": versions_kept()}

    def evidence(self, op: Operator, tenant: str, agent: str, name: str, version_id: str) -> dict[str, Any]:
        """The quote a version was learned from, read from the archived turn now and redacted;
        "expired" once the turn is gone (retention, purge) or the link no longer fits it."""
        op.check(tenant)
        link = self._store.version_info(tenant, agent, name, version_id).evidence
        if link is None:
            raise NoEvidence(f"version {version_id!r} of concept {name!r} was not learned from a sighting")
        if self._archive is None:
            raise ArchiveNotConfigured("the studio has no session archive to read evidence from (SESSIONS_BUCKET)")
        quote = self._quote(tenant, agent, link)
        return {"session_id": link.session_id, "turn_id": link.turn_id, "completed_at": _stamp(link.completed_at),
                "status": "expired" if quote is None else "available", "excerpt": quote}

    def _quote(self, tenant: str, agent: str, link: EvidenceLink) -> Optional[str]:
        key = TurnArchive.key_for(tenant, agent, link.completed_at, link.session_id, link.turn_id)
        try:
            turn = self._archive.get(key)  # type: ignore[union-attr]  # checked by the caller
        except (NotFound, InvalidTurn, AccessDenied):
            # Without s3:ListBucket (least privilege) S3 answers a missing key 403: gone all the same.
            return None
        if not (0 <= link.message < len(turn.messages)) or link.end > len(turn.messages[link.message].content):
            return None
        return excerpt(turn.messages[link.message].content, link.start, link.end)

    def version(self, op: Operator, tenant: str, agent: str, name: str, version_id: str) -> dict[str, Any]:
        op.check(tenant)
        return _stored(self._store.read_version(tenant, agent, name, version_id))

    def deleted(self, op: Operator, tenant: str, agent: str) -> list[dict[str, Any]]:
        """Deleted concepts, newest first, each with who deleted it (`deleted_by`, null when no
        deletion record says) and when."""
        op.check(tenant)
        rows = self._store.list_deleted(tenant, agent, recorded=True)
        if not rows:
            self._check_agent(tenant, agent)
        return [{"name": d.name, "deleted_at": _stamp(d.deleted_at), "deleted_by": d.deleted_by,
                 "version_id": d.marker_version_id} for d in rows]

    def deleted_one(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        """A deleted concept as it was before the delete, with who deleted it and when."""
        op.check(tenant)
        try:
            history = self._store.versions(tenant, agent, name)
        except NotFound:
            raise self._missing(tenant, agent, name) from None
        if not history[0].deleted:
            raise NotDeleted(f"concept {name!r} is not deleted")
        last = next((v for v in history if not v.deleted), None)
        if last is None:
            raise NotFound(f"concept {name!r} has no version to show")
        kept = self._store.read_version(tenant, agent, name, last.version_id)
        return {"name": name, "deleted_at": _stamp(history[0].time), "deleted_by": history[0].actor,
                "version_id": last.version_id, "markdown": kept.data.decode("utf-8", "replace")}

    # ------------------------------------------------------------ writing
    def save(self, op: Operator, tenant: str, agent: str, name: str, markdown: str,
             if_match: Optional[str]) -> dict[str, Any]:
        """An operator's edit of the whole document; `updated_at` is stamped now."""
        op.check(tenant)
        check_slug("name", name)
        if not if_match:
            raise PreconditionRequired("saving needs If-Match: the ETag of the version being edited")
        with located(markdown):
            concept = parse(_text(markdown))
        if concept.name != name:
            raise InvalidConcept([FieldError("name", f"must stay {name!r} (rename = create a new concept, "
                                                     "then delete this one)", _name_line(markdown))])
        # Carry the engine's record of applied sightings forward, so that a sighting whose
        # queue message comes back after this edit is still recognised (and counted once).
        current = self._store.find(tenant, agent, name)
        if current is not None and current.etag != if_match:
            raise Conflict(f"concept {name!r} changed since it was read", current)
        if current is not None and _same(current, concept):
            return _stored(current)  # nothing changed: no new version, the same ETag back
        concept = concept.replace(updated_at=max(utc_now(), concept.created_at))
        return _stored(self._store.replace(tenant, agent, concept, if_match=if_match, actor=op.actor,
                                           reason="edit", sightings=current.sightings if current else ()))

    def create(self, op: Operator, tenant: str, agent: str, markdown: str) -> dict[str, Any]:
        op.check(tenant)
        check_slug("agent", agent)
        concept = concept_by_hand(markdown, utc_now())
        self._check_agent(tenant, agent)
        try:
            return _stored(self._store.create(tenant, agent, concept, actor=op.actor, reason="created"))
        except Conflict as exc:
            if exc.current is None:
                raise
            raise NameTaken(concept.name) from None

    def delete(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        return {"name": name, "version_id": self._store.delete(tenant, agent, name, actor=op.actor)}

    def undelete(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        return _stored(self._store.undelete(tenant, agent, name, actor=op.actor))

    def restore(self, op: Operator, tenant: str, agent: str, name: str, version_id: str,
                if_match: Optional[str]) -> dict[str, Any]:
        op.check(tenant)
        return _stored(self._store.restore(tenant, agent, name, version_id, actor=op.actor, if_match=if_match))

    # ------------------------------------------------------------ the knowledge: block
    def config(self, op: Operator, tenant: str, agent: str) -> dict[str, Any]:
        op.check(tenant)
        stored = self._store.get_config(tenant, agent)
        if stored is None:
            self._check_agent(tenant, agent)
            return {"yaml": None, "etag": None, "config": None}
        return {"yaml": stored.text, "etag": stored.etag,
                "config": stored.config.model_dump(mode="json") if stored.config else None}

    def save_config(self, op: Operator, tenant: str, agent: str, text: str,
                    if_match: Optional[str]) -> dict[str, Any]:
        op.check(tenant)
        stored = self._store.put_config(tenant, agent, text, actor=op.actor, if_match=if_match)
        return {"yaml": stored.text, "etag": stored.etag,
                "config": stored.config.model_dump(mode="json") if stored.config else None}


def agent_names(store: ConceptStore, tenant: str) -> list[str]:
    """The agents a tenant has in the bucket (any object under its prefix), by name."""
    return store.agents(tenant)


def _version(v: VersionInfo) -> dict[str, Any]:
    return {"version_id": v.version_id, "time": _stamp(v.time), "actor": v.actor,
            "reason": v.reason, "size": v.size, "deleted": v.deleted, "latest": v.latest,
            "evidence": None if v.evidence is None else {
                "session_id": v.evidence.session_id, "turn_id": v.evidence.turn_id,
                "completed_at": _stamp(v.evidence.completed_at)}}


def _same(current: StoredConcept, concept: Concept) -> bool:
    """The edit says what is stored already (a file that no longer parses always differs)."""
    try:
        return current.concept == concept
    except InvalidConcept:
        return False


def _name_line(markdown: str) -> Optional[int]:
    return next((n for n, line in enumerate(markdown.split("\n"), start=1) if line.startswith("name:")), None)


def field_errors(exc: InvalidConcept) -> list[dict[str, Any]]:
    return [{"field": e.field, "message": e.message, "line": e.line} for e in exc.errors]

