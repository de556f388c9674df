"""The studio's operations: what an operator may see and do with an agent's concepts (and the
tenant's shared ones: the scope SHARED in an agent's place).

Over 500 lines because the list's catch-up (snapshot, journal, sweep, budget) and every operation
that reads through it live together: they share one container's held rows per agent.

Every call names the operator (from the verified token) and is checked against the tenants
the operator belongs to before the store is touched. Saves are compare-and-swap on the
ETag the page read; a stale save is a Conflict carrying the newer version.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

from knowledge.curation.documents import (
    bounded_conflicts,
    checked_size,
    concept_by_hand,
    excerpt,
    located,
    name_line,
    removals_kept,
    servable,
    stored_answer,
)
from knowledge.curation import relevance
from knowledge.curation.beside import dismiss_beside, pairs_beside
from knowledge.curation.behind import JournalTail
from knowledge.curation.search_reasons import explain, notes
from knowledge.curation.listing import RELEVANCE, SORTS, HeldList, Unseen, fold_for_search, since_stamp, sorted_names
from knowledge.errors import (
    ArchiveNotConfigured,
    InvalidTurn,
    NameTaken,
    NoEvidence,
    NotDeleted,
    PreconditionRequired,
    SnapshotUnreadable,
)
from knowledge.format.concept import OUT_OF_RECALL, Concept, parse, utc_now
from knowledge.format.config import parse_agent_config
from knowledge.format.evidence import EvidenceLink
from knowledge.recall.snapshot import Snapshot, decode, encode
from knowledge.store.archive import TurnArchive
from knowledge.store.concepts import ConceptStore, NotModified, StoredConcept
from knowledge.store.history import VersionInfo
from knowledge.store.journal import CONFIG_CHANGE, JOURNAL_GRACE_SECONDS, VOCABULARY_CHANGE
from knowledge.store.keys import SHARED, check_scope, etag_token
from shared.errors import (
    AccessDenied,
    Conflict,
    FieldError,
    InvalidConcept,
    InvalidConfig,
    InvalidCursor,
    KnowledgeError,
    NotFound,
    UnknownAgent,
)
from shared.httpapi import Operator, page_offset
from shared.names import check_slug

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.format.turn import Turn


class Archive(Protocol):
    """Where archived turns are read (adapters.TurnArchive)."""

    def get(self, key: str) -> "Turn": ...


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


# The history's lifecycle rule (template.yaml: ConceptVersionsKept, ConceptVersionDays), as the
# studio tells an operator when older versions expire.
VERSIONS_KEPT_DEFAULT, VERSION_DAYS_DEFAULT = 20, 30
# A snapshot behind the listing by this many concepts is written again by the studio.
SNAPSHOT_REWRITE_CHANGES = 16
# Between two full listings a warm list reads the change journal only; a listing at least this
# often bounds how long a writer killed before its journal entry leaves a row stale.
SWEEP_SECONDS = 60.0
# A list, a search or the agents overview reads what changed for about this long before it
# answers, partial if it must (`catching_up`); the next request, or the scheduled snapshot pass,
# reads the rest. With the snapshot and the listing it keeps an answer within ~3 s however far
# behind the snapshot is (scripts/bench/studio_list.py).
CATCH_UP_SECONDS = 1.5
FETCH_CHUNK = 32  # concepts read in parallel (two rounds of the pool) between two looks at the clock


@dataclass
class _Written:
    """What a container knows of an agent's stored snapshot."""

    etag: Optional[str] = None  # the stored one's ETag; None when there is none
    due: bool = False  # none, or it did not decode: write one once caught up
    changes: int = 0  # concepts read or dropped since it
    allowed: bool = True  # False: the policy refuses its key, so it is never written


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


class Studio:
    def __init__(self, store: ConceptStore, archive: Optional[Archive] = None, *,
                 sweep_seconds: float = SWEEP_SECONDS, catch_up_seconds: float = CATCH_UP_SECONDS,
                 fetch_chunk: int = FETCH_CHUNK, clock: Any = time.monotonic):
        self._store, self._archive = store, archive
        self.journal = JournalTail(store)  # what the list reads of the journal, kept for the stale-list cue
        self._sweep_seconds, self._clock = sweep_seconds, clock
        self._catch_up_seconds, self._fetch_chunk = catch_up_seconds, max(1, fetch_chunk)
        self._written: dict[tuple[str, str], _Written] = {}  # per agent, what this container knows of its snapshot
        self._held: dict[tuple[str, str], HeldList] = {}  # per agent, the rows read: a list re-reads what changed
        self._agents: set[tuple[str, str]] = set()  # agents seen to exist (an agent is never un-made by the studio)
        # Told of every concept the list reads (the words page keeps its words: no second read).
        self.readers: list[Callable[[str, str, StoredConcept], None]] = []

    def _check_agent(self, tenant: str, agent: str) -> None:
        """UnknownAgent for an agent with neither a knowledge.yaml nor any concept (current or deleted)."""
        if (tenant, agent) in self._agents:
            return
        if not self._store.agent_exists(tenant, agent):
            raise UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml "
                               "nor any concept (check the agent's name, or save its knowledge.yaml first)")
        self._agents.add((tenant, agent))

    def check_agent(self, op: Operator, tenant: str, agent: str) -> None:
        """The operator may act on the tenant, and the agent exists (the shared scope always does)."""
        op.check(tenant)
        if agent != SHARED:
            self._check_agent(tenant, agent)

    def _missing(self, tenant: str, agent: str, name: str) -> NotFound:
        """What to say when a concept is not found: the agent itself, when that is what is missing."""
        try:
            self._check_agent(tenant, agent)
        except UnknownAgent as unknown:
            return unknown
        return NotFound(f"there is no concept {name!r} in this agent (if it was deleted, "
                        "it can be restored from the deleted concepts)")

    # ------------------------------------------------------------ reading
    def agents(self, op: Operator, tenant: str,
               unseen: Optional[Callable[[str], Unseen]] = None) -> list[dict[str, Any]]:
        """The tenant's agents by name, each with how many concepts it has, how many hold a
        conflict and how many have related claims waiting; with `unseen` (agent -> what is new
        to the operator), how many are `new`, counted from the same rows within the same budget."""
        op.check(tenant)
        out = []
        until = self._clock() + self._catch_up_seconds  # one budget for the whole overview
        for agent in self._store.agents(tenant):
            held = self._beside(tenant, agent, self._rows(tenant, agent, until))
            rows = list(held.summaries.values())
            self._agents.add((tenant, agent))
            out.append({"name": agent, "concepts": len(rows),
                        "conflicts": sum(1 for name in held.summaries if held.in_conflict(name)),
                        "related": sum(1 for name in held.summaries if held.related(name)),
                        "catching_up": len(held.backlog)})
            if unseen is not None:
                who = unseen(agent)
                out[-1]["new"] = sum(1 for name, row in held.summaries.items() if who.is_new(name, row))
        return out

    def _rows(self, tenant: str, agent: str, until: Optional[float] = None,
              rewrite_after: int = SNAPSHOT_REWRITE_CHANGES) -> "HeldList":
        """The agent's rows and search index, brought up to date within a budget. The first time:
        the agent's snapshot (knowledge.recall.snapshot, one request) and one listing; after that
        the change journal since the last look (one request when nothing changed), and a full
        listing every `sweep_seconds`. What they name as changed is read in chunks until `until`
        (the container's clock; CATCH_UP_SECONDS from now by default), at least one chunk; the
        rest stays in the backlog for the next call, its rows the snapshot's meanwhile. Once
        nothing is left, a snapshot missing, unreadable or behind by `rewrite_after` concepts is
        written, conditionally, for the next container."""
        key = (tenant, agent)
        held = self._held.setdefault(key, HeldList())
        state = self._written.setdefault(key, _Written())
        until = self._clock() + self._catch_up_seconds if until is None else until
        if held.loaded and self._clock() - held.swept_at < self._sweep_seconds:
            self._follow_journal(tenant, agent, held)
        else:
            if not held.loaded:
                self._load_snapshot(tenant, agent, held, state)
            started = time.time()
            listed = self._store.list(tenant, agent)
            # Newest first, as a retrieval reader's sweep reads them: the index's weights start from
            # the first concept it holds, so the same order builds the same index.
            listed.sort(key=lambda item: (item.last_modified, item.name), reverse=True)
            listing = {item.name: item.etag for item in listed}
            gone = [name for name in held.summaries if name not in listing]
            for name in gone:
                held.drop(name)
            held.backlog = [name for name, etag in listing.items()
                            if name not in held.summaries or held.summaries[name].etag != etag]
            state.changes += len(gone)
            if not held.config_known:  # after that, the journal says when it changes
                self._read_config(tenant, agent, held)
            held.beside_due = True  # what waits beside: no journal tells, so read once per full listing
            held.position, held.swept_at, held.loaded = started, self._clock(), True
        self._catch_up(tenant, agent, held, state, until)
        # Never a first one for an agent with no concept: its snapshot would make a typo an agent. One
        # already there is written over once its last concept is gone (readers would start from the
        # deleted ones and drop them, each cold container again).
        if (not held.backlog and (held.summaries or state.etag is not None) and state.allowed
                and (state.due or state.changes >= rewrite_after) and self._clock() <= until):
            self._write_snapshot(tenant, agent, held, state)
        return held

    def _follow_journal(self, tenant: str, agent: str, held: HeldList) -> None:
        """Queue what the journal names since the last look, when it disagrees with what is held
        (entries are compared, not trusted)."""
        changes, started = self.journal.read(tenant, agent, held.position - JOURNAL_GRACE_SECONDS)
        newest: dict[str, Optional[str]] = {}
        for change in changes:
            newest[change.name] = change.etag  # oldest first: the last one wins
        config_etag = newest.pop(CONFIG_CHANGE, False)
        newest.pop(VOCABULARY_CHANGE, None)  # not a concept: the list shows none of it
        if config_etag is not False and (config_etag is None or held.config_etag is None
                                         or config_etag != etag_token(held.config_etag)):
            self._read_config(tenant, agent, held)
        queued = set(held.backlog)
        changed = [name for name, etag in newest.items()
                   if name not in queued and (name in held.summaries if etag is None
                                              else name not in held.summaries
                                              or etag != etag_token(held.summaries[name].etag))]
        held.backlog[:0] = changed  # newest knowledge first
        held.position = started

    def _read_config(self, tenant: str, agent: str, held: HeldList) -> None:
        """The agent's knowledge: block, for what "stale" and a local date mean in the list (a file
        that does not parse counts as the defaults: the list is shown all the same)."""
        try:
            stored = self._store.get_config(tenant, agent, unless_etag=held.config_etag)
        except NotModified:
            return
        except InvalidConfig:
            held.config = held.config_etag = held.config_text = None
            held.config_known = True
            return
        held.config = stored.config if stored is not None else None
        held.config_etag = stored.etag if stored is not None else None
        held.config_text = stored.text if stored is not None else None
        held.config_known = True

    def _catch_up(self, tenant: str, agent: str, held: HeldList, state: "_Written", until: float) -> None:
        """Read the backlog a chunk at a time until it is done or `until` passes (one chunk at
        least, so that every call makes progress)."""
        if not held.backlog:
            return
        try:
            while held.backlog:
                chunk = held.backlog[:self._fetch_chunk]
                self._fetch(tenant, agent, held, chunk)
                del held.backlog[:len(chunk)]
                state.changes += len(chunk)
                if self._clock() >= until:
                    break
        finally:
            held.index.settle()

    def _fetch(self, tenant: str, agent: str, held: HeldList, names: list[str]) -> None:
        for name, stored in zip(names, self._store.fetch_many(tenant, agent, names)):
            if stored is None:  # deleted since it was listed or journaled
                held.drop(name)
            else:
                held.take(stored)
                for reader in self.readers:
                    reader(tenant, agent, stored)

    def _load_snapshot(self, tenant: str, agent: str, held: HeldList, state: "_Written") -> None:
        """Fill `held` from the agent's snapshot, and say in `state` whether one must be written
        (there is none, or it does not decode)."""
        try:
            stored = self._store.get_snapshot(tenant, agent)
        except AccessDenied:  # a policy without the snapshot's key: rows from the concepts
            state.allowed = False
            return
        if stored is None:
            state.due = True
            return
        state.etag = stored.etag
        try:
            snapshot = decode(stored.data, tenant, agent)
        except SnapshotUnreadable:  # an older format, say: rebuilt from the concepts, then written over
            state.due = True
            return
        held.index, held.unreadable, held.summaries = snapshot.index, snapshot.unreadable, snapshot.summaries
        if snapshot.config_etag is not None:  # a retrieval reader's: the journal says when it changes
            try:
                held.config = parse_agent_config(snapshot.config_text or "").knowledge
                held.config_etag, held.config_text, held.config_known = snapshot.config_etag, snapshot.config_text, True
            except InvalidConfig:
                pass
        # A concept the snapshot holds without its summary (a writer that kept none) is read
        # again, as a changed one is.
        for name in [name for name in snapshot.index.docs if name not in held.summaries]:
            held.index.remove(name)
        for name in [name for name in held.unreadable if name not in held.summaries]:
            del held.unreadable[name]
        held.folded = {name: fold_for_search(f"{name}\n{doc.description}") for name, doc in snapshot.index.docs.items()}
        held.folded.update((name, fold_for_search(name)) for name in snapshot.unreadable)

    def _write_snapshot(self, tenant: str, agent: str, held: HeldList, state: "_Written") -> None:
        """As a retrieval reader does (knowledge.recall.warm): conditionally, positioned where the last
        look at the listing or the journal began (the journal corrects it from there). A lost race
        drops what this container holds of the agent, so that its next look starts from the
        newer snapshot; a refusal or S3 down leaves it for later, and the list is answered all
        the same. The config goes in when the studio has read it (else a reader reads it: one request)."""
        data = encode(Snapshot(tenant, agent, held.index, held.position, held.config_text, held.config_etag,
                               dict(held.unreadable),
                               dict(held.summaries)))
        try:
            state.etag = self._store.put_snapshot(tenant, agent, data, if_match=state.etag)
        except Conflict:  # another writer came first
            self._held.pop((tenant, agent), None)
            self._written.pop((tenant, agent), None)
            return
        except AccessDenied:
            state.allowed = False
            return
        except KnowledgeError:  # S3 down: the next call tries again
            return
        state.due, state.changes = False, 0

    def catch_up(self, tenant: str, agent: str, *, seconds: float) -> int:
        """Bring the agent's rows up to date for up to `seconds`, and once nothing is left write
        its snapshot if anything changed since it (the scheduled pass,
        knowledge.operation.snapshots); returns how many changes are still to read."""
        check_slug("tenant", tenant)
        check_scope(agent)
        return len(self._rows(tenant, agent, self._clock() + max(0.0, seconds), rewrite_after=1).backlog)

    def _beside(self, tenant: str, agent: str, held: HeldList) -> HeldList:
        """`held` with what waits beside its concepts read again, once per full listing (a list asks it;
        the snapshot pass does not)."""
        if held.beside_due:
            if agent != SHARED:  # pairs wait beside an agent's concepts (a shared one's: in each agent)
                held.beside = self._store.waiting().kinds(tenant, agent)
            held.words_pending, held.beside_due = frozenset(self._store.pending_words().names(tenant, agent)), False
        return held

    def rows(self, op: Operator, tenant: str, agent: str) -> HeldList:
        """The agent's rows as the list reads them, with the list's checks (the words page builds on them)."""
        op.check(tenant)
        held = self._rows(tenant, agent)
        if not held.summaries:
            self._check_agent(tenant, agent)
        return held

    def list(self, op: Operator, tenant: str, agent: str, *, status: Optional[str] = None,
             type: Optional[str] = None, q: Optional[str] = None, sort: Optional[str] = None, order: str = "desc",
             limit: Optional[int] = None, cursor: Optional[str] = None,
             since: Optional[datetime] = None, unseen: Optional[Unseen] = None) -> dict[str, Any]:
        """One page of the agent's concepts, filtered and sorted here (not in the browser).

        `q` keeps the concepts holding every word of it, by retrieval's index or as text in name
        or description (knowledge.curation.relevance), ordered by relevance unless `sort` is a
        column, each row with what matched (`match`); a body is not searched for substrings
        (the snapshot holds no text).
        With `since`, each row says whether it is `new` (the engine wrote its current version
        after then), the answer counts the agent's new rows (`new`, before any filter), and
        `status="new"` keeps only those; `unseen` says what is new to one operator instead
        (knowledge.curation.listing.Unseen). Each row's `recall` says why it is out of recall now
        (expired, not_started, stale; null: recalled), and `status` of one of those keeps only them."""
        op.check(tenant)
        stamp = since_stamp(since)
        if unseen is None and stamp is not None:
            unseen = Unseen(stamp)
        held = self._beside(tenant, agent, self._rows(tenant, agent))
        names = list(held.summaries)
        if not names:
            self._check_agent(tenant, agent)
        fresh = {name for name in names if unseen.is_new(name, held.summaries[name])} if unseen else set()
        if status == "conflict":
            names = [n for n in names if held.in_conflict(n)]
        elif status == "related":
            names = [n for n in names if held.related(n)]
        elif status == "new":
            names = [n for n in names if n in fresh]
        now = datetime.now(timezone.utc)
        if status in OUT_OF_RECALL:
            names = [n for n in names if held.recall(n, now) == status]
        if type:
            names = [n for n in names if (doc := held.index.docs.get(n)) is not None and doc.type == type]
        searching = bool(q and q.strip())
        candidates = names
        if searching and sort in (None, RELEVANCE):
            names = relevance.search(held, q, names)
        else:
            if searching:
                found = set(relevance.search(held, q, names))
                names = [n for n in names if n in found]
            names = sorted_names(names, sort if sort in SORTS else "written_at", order == "desc", held)
        start = _offset(cursor)
        page = names[start:] if limit is None else names[start:start + limit]
        end = start + len(page)
        rows = [{**held.row(name), "recall": held.recall(name, now), "scope": "shared" if agent == SHARED else "agent"}
                for name in page]
        if searching:
            explain(held, q, rows, lambda names: self._store.fetch_many(tenant, agent, names))
        answer: dict[str, Any] = {"concepts": rows, "total": len(names),
                                  "next": str(end) if end < len(names) else None,
                                  "catching_up": len(held.backlog),
                                  "query": notes(held, q, candidates, len(names)) if searching else None}
        if unseen is not None:
            for row in rows:
                row["new"] = row["name"] in fresh
            answer["new"] = len(fresh)
        shared = self._shared_names(tenant, agent, held)
        answer["shared_recalled"] = None if shared is None else len(shared - held.summaries.keys())
        for row in rows:
            row["shadows_shared"] = shared is not None and row["name"] in shared
        return answer

    def _shared_names(self, tenant: str, agent: str, held: HeldList) -> Optional[set[str]]:
        """The tenant's shared concepts an agent that opts in (`shared: true`) recalls beside its own,
        as this container holds them; None for the shared scope itself, an agent that does not opt
        in, or while the shared scope cannot be read."""
        if agent == SHARED or held.config is None or not held.config.shared:
            return None
        try:
            return set(self._rows(tenant, SHARED).summaries)
        except KnowledgeError:
            return None

    def shared(self, op: Operator, tenant: str, unseen: Optional[Unseen] = None) -> dict[str, Any]:
        """The tenant's shared scope as the agents overview counts an agent (`agents`)."""
        op.check(tenant)
        held = self._rows(tenant, SHARED)
        rows = held.summaries
        out = {"name": SHARED, "concepts": len(rows), "conflicts": sum(1 for r in rows.values() if r.conflict),
               "related": sum(1 for r in rows.values() if r.related), "catching_up": len(held.backlog)}
        if unseen is not None:
            out["new"] = sum(1 for name, row in rows.items() if unseen.is_new(name, row))
        return out

    def get(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        try:
            answer = stored_answer(self._store.get(tenant, agent, name))
        except NotFound:
            raise self._missing(tenant, agent, name) from None
        return {**answer, "words_pending": bool(self._store.pending_words().among(tenant, agent, [name]))}

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
        if agent == SHARED and link.agent is None:
            raise NoEvidence(f"version {version_id!r} of shared concept {name!r} does not say which agent's "
                             "conversation it was learned from")
        quote = self._quote(tenant, link.agent if agent == SHARED else agent, link)
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
        return stored_answer(self._store.read_version(tenant, agent, name, version_id))

    def waiting(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        """The pairs no judge decided, waiting beside the concept for the operator (never in it)."""
        op.check(tenant)
        if self._store.find(tenant, agent, name) is None:
            raise self._missing(tenant, agent, name)
        return {"pairs": pairs_beside(self._store, tenant, agent, name)}

    def dismiss_waiting(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        """The operator has judged what waited beside the concept (folded in what was right): all dismissed."""
        op.check(tenant)
        if self._store.find(tenant, agent, name) is None:
            raise self._missing(tenant, agent, name)
        dismissed = dismiss_beside(self._store, tenant, agent, name)
        if (held := self._held.get((tenant, agent))) is not None:
            held.beside.pop(name, None)  # this container's list says so at once
        return {"dismissed": dismissed}

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
        kept = servable(self._store.read_version(tenant, agent, name, last.version_id))
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
            concept = parse(checked_size(markdown))
        if concept.name != name:
            raise InvalidConcept([FieldError("name", f"must stay {name!r} (rename = create a new concept, "
                                                     "then delete this one)", name_line(markdown))])
        # Carry the engine's record of applied sightings forward, so that a sighting whose
        # queue message comes back after this edit is still recognised (and counted once).
        with bounded_conflicts():
            current = self._store.find(tenant, agent, name)
            if current is not None and current.etag != if_match:
                raise Conflict(f"concept {name!r} changed since it was read", current)
            if current is not None and _same(current, concept):
                return stored_answer(current)  # nothing changed: no new version, the same ETag back
            concept = removals_kept(current, concept).replace(updated_at=max(utc_now(), concept.created_at))
            return stored_answer(self._store.replace(tenant, agent, concept, if_match=if_match, actor=op.actor,
                                               reason="edit", sightings=current.sightings if current else ()))

    def create(self, op: Operator, tenant: str, agent: str, markdown: str) -> dict[str, Any]:
        op.check(tenant)
        check_scope(agent)
        concept = concept_by_hand(markdown, utc_now())
        self._check_agent(tenant, agent)
        try:
            return stored_answer(self._store.create(tenant, agent, concept, actor=op.actor, reason="created"))
        except Conflict as exc:
            if exc.current is None:
                raise
            raise NameTaken(concept.name) from None

    def delete(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        return {"name": name, "version_id": self._store.delete(tenant, agent, name, actor=op.actor)}

    def undelete(self, op: Operator, tenant: str, agent: str, name: str) -> dict[str, Any]:
        op.check(tenant)
        with bounded_conflicts():
            return stored_answer(self._store.undelete(tenant, agent, name, actor=op.actor))

    def restore(self, op: Operator, tenant: str, agent: str, name: str, version_id: str,
                if_match: Optional[str]) -> dict[str, Any]:
        op.check(tenant)
        with bounded_conflicts():
            return stored_answer(self._store.restore(tenant, agent, name, version_id, actor=op.actor, if_match=if_match))

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
