"""The warm index of an agent's concepts that a container keeps, shared by retrieval and extraction: a
cold container reads the snapshot, then corrects it with the change journal; a warm one refreshes
from the journal at most once per window and sweeps every concept now and then; stale, never wrong.
Also the agent's vocabulary (its Lexicon, once per ETag), the fetch and memory budgets, and who
writes the snapshot back. docs/retrieval.md, "The warm index, the snapshot and the change journal"
and "Memory and fetch budgets"."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Optional

from knowledge.errors import SnapshotUnreadable, Unindexable
from knowledge.format.config import KnowledgeConfig, parse_agent_config
from knowledge.format.vocabulary import InvalidVocabulary, parse_vocabulary
from knowledge.recall.index import Index
from knowledge.recall.lexicon import Lexicon, lexicon_for
from knowledge.recall.snapshot import Snapshot, Summary, decode, encode
from knowledge.store.concepts import ConceptStore, NotModified
from knowledge.store.journal import CONFIG_CHANGE, JOURNAL_GRACE_SECONDS, JOURNAL_RETENTION_DAYS, VOCABULARY_CHANGE
from knowledge.store.keys import SHARED, etag_token
from shared.errors import (
    AccessDenied,
    Conflict,
    DeadlineExceeded,
    InvalidConcept,
    InvalidConfig,
    KnowledgeError,
    StoreUnavailable,
)
from shared.telemetry import Counters

FETCH_CHUNK = 128  # concepts fetched and indexed between two looks at the clock
FETCH_BUDGET_SECONDS = 4.0
SWEEP_SECONDS = 300.0  # a full listing at least this often: bounds how long a lost journal entry matters
REWRITE_AFTER_CHANGES = 16  # changes applied since the snapshot before a reader writes a newer one
SNAPSHOT_MAX_AGE_SECONDS = 3600.0
# A snapshot older than this is not corrected from the journal: the reader lists every concept
# instead. Never more than the journal's retention less a day (its entries may have expired;
# S3 expires them no sooner), and at most 12 hours, past which a listing is the cheaper read.
JOURNAL_TRUSTED_SECONDS = min(12 * 3600.0, (JOURNAL_RETENTION_DAYS - 1) * 86400.0)
# The memory budget: what the function's memory leaves once the runtime, the imports and one
# call's work are set aside, of which a share goes to indexes (measured bytes understate the
# allocator's own overhead; scripts/bench/knowledge_index.py checks the peak RSS).
RESERVED_MB = 160
INDEX_SHARE = 0.5


def memory_budget_bytes(environ: Optional[dict] = None) -> Optional[int]:
    """Bytes of indexes a container may hold, from AWS_LAMBDA_FUNCTION_MEMORY_SIZE (set by
    Lambda); None (no budget) outside Lambda or when it does not read as a size."""
    raw = (os.environ if environ is None else environ).get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
    try:
        memory_mb = int(raw)
    except ValueError:
        return None
    if memory_mb <= 0:
        return None
    return int(max(16, (memory_mb - RESERVED_MB) * INDEX_SHARE) * 2**20)


_GENERATIONS = itertools.count()


@dataclass
class AgentKnowledge:
    config: Optional[KnowledgeConfig] = None
    config_etag: Optional[str] = None
    config_text: Optional[str] = None
    index: Index = field(default_factory=Index)
    refreshed_at: float = float("-inf")
    unreadable: dict[str, str] = field(default_factory=dict)  # name -> ETag that did not parse
    # Per concept, indexed or unreadable, what the studio's list shows (kept for the snapshot).
    summaries: dict[str, Summary] = field(default_factory=dict)
    # Changed concepts found but not fetched yet (a refresh ran out of time).
    backlog: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    loaded: bool = False  # the snapshot, or a first listing, has been read
    indexed: bool = False  # the index holds the agent (false while the config does not want it)
    position: float = 0.0  # epoch seconds: where the next look at the journal starts (less its grace)
    swept_at: float = float("-inf")  # the container's clock at the last full listing
    snapshot_etag: Optional[str] = None
    snapshot_position: Optional[float] = None  # None: there is no snapshot to build on
    snapshot_lost: bool = False  # another reader wrote a newer one: leave writing to it
    changes: int = 0  # changes applied since the snapshot
    size: int = 0  # measured bytes of the index
    measured: tuple = ()  # what the index looked like when measured
    # Moves whenever a concept is indexed, dropped or replaced (what is out of recall is worked out
    # again); each AgentKnowledge starts far from every other, so an evicted one's never matches.
    generation: int = field(default_factory=lambda: next(_GENERATIONS) << 40)
    # The agent's readings (its vocabulary.yaml) and the places; None: the places only (no file, or
    # not read yet, or one that does not parse).
    lexicon: Optional[Lexicon] = None
    vocabulary_read: bool = False
    vocabulary_etag: Optional[str] = None  # the file read (in force, or invalid); None: there is none
    vocabulary_error: Optional[str] = None  # why the file read is not in force


class WarmIndexes:
    """One AgentKnowledge per (tenant, agent), indexed only while `wanted(config)` holds; with
    `vocabulary`, each agent's vocabulary.yaml read into its Lexicon too (retrieval's)."""

    def __init__(self, store: ConceptStore, wanted: Callable[[KnowledgeConfig], bool], *,
                 refresh_seconds: float = 5.0, fetch_budget_seconds: float = FETCH_BUDGET_SECONDS,
                 sweep_seconds: float = SWEEP_SECONDS, memory_budget: Optional[int] = None,
                 counters: Optional[Counters] = None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, vocabulary: bool = False, shared_snapshot: bool = True):
        """`shared_snapshot`: write the tenant's shared index's snapshot back too (False: extraction,
        which writes nothing in the shared scope)."""
        self._store, self._wanted = store, wanted
        self.vocabulary = vocabulary
        self.shared_snapshot = shared_snapshot
        self.refresh_seconds = refresh_seconds
        self.fetch_budget_seconds = fetch_budget_seconds
        self.sweep_seconds = sweep_seconds
        self.memory_budget = memory_budget
        self.counters = counters or Counters()
        self._clock, self._wall = clock, wall
        self._agents: OrderedDict[tuple[str, str], AgentKnowledge] = OrderedDict()
        self._agents_lock = threading.Lock()

    def held(self, tenant: str, agent: str) -> AgentKnowledge:
        """What this container holds for the agent now, without asking S3."""
        with self._agents_lock:
            knowledge = self._agents.get((tenant, agent))
            if knowledge is None:
                knowledge = self._agents[(tenant, agent)] = AgentKnowledge()
            self._agents.move_to_end((tenant, agent))
            return knowledge

    def holds(self, tenant: str, agent: str) -> bool:
        """Whether the container holds the agent's index now (no cold start needed)."""
        with self._agents_lock:
            knowledge = self._agents.get((tenant, agent))
            return knowledge is not None and knowledge.loaded

    def held_bytes(self) -> int:
        with self._agents_lock:
            return sum(k.size for k in self._agents.values())

    def knowledge(self, tenant: str, agent: str, budget: Optional[float] = None, *,
                  config: Optional[KnowledgeConfig] = None) -> AgentKnowledge:
        """The agent's config and index, refreshed when the window has passed, and caught up
        (within `budget` seconds of fetching) while a backlog remains. A `config` the caller
        has just read is used as is (knowledge.yaml is not read again)."""
        knowledge = self.held(tenant, agent)
        if config is not None:
            knowledge.config = config
        if self._clock() - knowledge.refreshed_at < self.refresh_seconds and not knowledge.backlog:
            return knowledge
        fetch_until = self._clock() + (self.fetch_budget_seconds if budget is None else budget)
        with knowledge.lock:
            try:
                if self._clock() - knowledge.refreshed_at >= self.refresh_seconds:
                    self._refresh(tenant, agent, knowledge, fetch_until, read_config=config is None)
                    knowledge.refreshed_at = self._clock()
                elif knowledge.backlog:
                    self._catch_up(tenant, agent, knowledge, fetch_until)
                self._write_snapshot(tenant, agent, knowledge, read_config=config is None)
            except (StoreUnavailable, DeadlineExceeded, InvalidConfig) as exc:
                if not knowledge.loaded and config is None:
                    raise  # nothing to serve yet: the caller gets the error
                # Serve what this container already holds, and look again after the window.
                knowledge.refreshed_at = self._clock()
                self.counters.count("ServedStale", reason=exc.code)
            finally:
                self._measure(tenant, agent, knowledge)
        return knowledge

    def fetch_pending(self, tenant: str, agent: str, knowledge: AgentKnowledge, name: str) -> None:
        """Fetch one concept the warm-up has found but not reached yet (no-op otherwise)."""
        if name in knowledge.backlog:
            with knowledge.lock:
                if name in knowledge.backlog:
                    self._fetch(tenant, agent, knowledge, [name])
                    knowledge.backlog.remove(name)
                    knowledge.index.settle()

    # ------------------------------------------------------------ refreshing
    def _refresh(self, tenant: str, agent: str, knowledge: AgentKnowledge, fetch_until: float, *,
                 read_config: bool) -> None:
        if not knowledge.loaded:
            self._load(tenant, agent, knowledge, read_config=read_config)
        if (self._clock() - knowledge.swept_at >= self.sweep_seconds
                or self._wall() - knowledge.position > JOURNAL_TRUSTED_SECONDS):
            self._sweep(tenant, agent, knowledge, read_config=read_config)
        else:
            self._follow_journal(tenant, agent, knowledge, read_config=read_config)
        if knowledge.indexed:
            self.counters.count("IndexRefreshed")
            self._catch_up(tenant, agent, knowledge, fetch_until)

    def _load(self, tenant: str, agent: str, knowledge: AgentKnowledge, *, read_config: bool) -> None:
        """A cold container: the snapshot, when there is one that decodes (the journal corrects
        it next); otherwise the next step lists every concept."""
        try:
            stored = self._store.get_snapshot(tenant, agent)
        except AccessDenied:  # a policy without the snapshot's key: build from the concepts
            self.counters.count("SnapshotUnreadable", reason=AccessDenied.code)
            stored = None
        snapshot: Optional[Snapshot] = None
        if stored is not None:
            try:
                snapshot = decode(stored.data, tenant, agent)
            except SnapshotUnreadable:
                self.counters.count("SnapshotUnreadable")
            knowledge.snapshot_etag = stored.etag  # overwritten, conditionally, once rebuilt
        if snapshot is None:
            return  # the sweep that follows builds it (swept_at is -inf)
        if read_config and snapshot.config_etag is not None:
            # What the snapshot was written with: the refresh that follows asks S3, If-None-Match
            # its ETag, before this call answers, so a stale one never wins (any writer, `aws s3 cp` too).
            self._set_config(knowledge, snapshot.config_text, snapshot.config_etag)
        knowledge.index, knowledge.unreadable = snapshot.index, snapshot.unreadable
        knowledge.summaries = snapshot.summaries
        knowledge.generation += 1
        # Left out of this container's index as surely as if it had fetched them: counted alike.
        self.counters.count("ConceptUnreadable", len(snapshot.unreadable))
        knowledge.position = knowledge.snapshot_position = snapshot.position
        knowledge.indexed = knowledge.loaded = True
        knowledge.swept_at = self._clock()  # the journal stands for a listing until the next sweep
        self.counters.count("SnapshotLoaded")

    def _follow_journal(self, tenant: str, agent: str, knowledge: AgentKnowledge, *, read_config: bool) -> None:
        started = self._wall()
        newest: dict[str, Optional[str]] = {}
        for change in self._store.changes_since(tenant, agent, knowledge.position - JOURNAL_GRACE_SECONDS):
            newest[change.name] = change.etag  # oldest first: the last one wins
        newest.pop(CONFIG_CHANGE, None)
        vocabulary = newest.pop(VOCABULARY_CHANGE, False)
        if read_config:
            # One conditional GET per refresh, journaled or not: a knowledge.yaml written by any
            # writer is in force within the window (docs/retrieval.md, "Switches").
            self._read_config(tenant, agent, knowledge)
        knowledge.position = started
        if not self._keep_wanted(knowledge):
            return
        if not knowledge.indexed:  # wanted again after a while without: list it whole
            self._sweep(tenant, agent, knowledge, read_config=False)
            return
        index, queued = knowledge.index, set(knowledge.backlog)
        changed = [name for name, etag in newest.items()
                   if name not in queued and (
                       (name in index.docs or name in knowledge.unreadable) if etag is None
                       else etag not in (_token(index.etag(name)), _token(knowledge.unreadable.get(name))))]
        knowledge.backlog[:0] = changed  # newest knowledge first
        knowledge.changes += len(changed)
        # After the changes are queued: a vocabulary read that fails loses none of them (the
        # position has moved past them), and is asked again at the next refresh.
        if self.vocabulary and (not knowledge.vocabulary_read
                                or (vocabulary is not False and vocabulary != _token(knowledge.vocabulary_etag))):
            self._read_vocabulary(tenant, agent, knowledge)

    def _sweep(self, tenant: str, agent: str, knowledge: AgentKnowledge, *, read_config: bool) -> None:
        """List every concept: what changed is queued, what is gone is dropped."""
        started = self._wall()
        if read_config:
            self._read_config(tenant, agent, knowledge)
        if not self._keep_wanted(knowledge):
            knowledge.position, knowledge.swept_at, knowledge.loaded = started, self._clock(), True
            return
        if self.vocabulary:
            self._read_vocabulary(tenant, agent, knowledge)
        index = knowledge.index
        listing = self._store.list(tenant, agent)
        listed = {item.name for item in listing}
        gone = [name for name in index.docs if name not in listed]
        for name in gone:
            index.remove(name)
        knowledge.generation += len(gone)
        for name in [name for name in knowledge.unreadable if name not in listed]:
            del knowledge.unreadable[name]
        for name in [name for name in knowledge.summaries if name not in listed]:
            del knowledge.summaries[name]
        # Newest first: what a warm-up cut short leaves out is the oldest knowledge.
        listing.sort(key=lambda item: (item.last_modified, item.name), reverse=True)
        knowledge.backlog = [item.name for item in listing
                             if index.etag(item.name) != item.etag and knowledge.unreadable.get(item.name) != item.etag]
        if knowledge.indexed and (gone or knowledge.backlog):
            # Something the journal did not say (a writer killed before its entry, a hand
            # edit): the snapshot must not keep it from the next cold container.
            knowledge.changes = max(knowledge.changes, REWRITE_AFTER_CHANGES)
        knowledge.indexed = knowledge.loaded = True
        knowledge.position, knowledge.swept_at = started, self._clock()

    def _keep_wanted(self, knowledge: AgentKnowledge) -> bool:
        if knowledge.config is not None and self._wanted(knowledge.config):
            return True
        if len(knowledge.index) or knowledge.indexed:
            knowledge.index, knowledge.unreadable, knowledge.summaries = Index(), {}, {}
            knowledge.generation += 1
        knowledge.backlog, knowledge.indexed = [], False
        return False

    def _read_config(self, tenant: str, agent: str, knowledge: AgentKnowledge) -> None:
        """The agent's knowledge.yaml if it changed; one that does not parse turns the agent off
        (a kill switch fails safe), counted ConfigInvalid at every refresh until it is fixed."""
        try:
            stored = self._store.get_config(tenant, agent, unless_etag=knowledge.config_etag)
        except NotModified:
            return
        except InvalidConfig:
            knowledge.config = knowledge.config_etag = knowledge.config_text = None
            self.counters.count("ConfigInvalid", tenant=tenant, agent=agent)
            return
        if stored is None:
            knowledge.config = knowledge.config_etag = knowledge.config_text = None
        else:
            knowledge.config, knowledge.config_etag, knowledge.config_text = stored.config, stored.etag, stored.text

    def _read_vocabulary(self, tenant: str, agent: str, knowledge: AgentKnowledge) -> None:
        """The agent's vocabulary.yaml if it changed (If-None-Match the one read): its Lexicon, or
        the places' only when there is none or it does not parse (counted VocabularyInvalid). The
        tenant's shared scope has none: each agent's own applies to it (no request)."""
        if agent == SHARED:
            knowledge.vocabulary_read = True
            return
        try:
            stored = self._store.get_vocabulary(tenant, agent, unless_etag=knowledge.vocabulary_etag)
        except NotModified:
            if knowledge.vocabulary_error is not None:
                self.counters.count("VocabularyInvalid", tenant=tenant, agent=agent)
            return
        except AccessDenied:  # a policy without the key: recall goes on without it, counted
            stored, knowledge.vocabulary_error = None, AccessDenied.code
            self.counters.count("VocabularyInvalid", tenant=tenant, agent=agent)
        else:
            knowledge.vocabulary_error = None
        knowledge.vocabulary_read = True
        if stored is None:
            knowledge.lexicon, knowledge.vocabulary_etag = None, None
            return
        knowledge.vocabulary_etag = stored.etag
        try:
            readings = parse_vocabulary(stored.data).pairs()
        except InvalidVocabulary as exc:
            knowledge.lexicon, knowledge.vocabulary_error = None, str(exc)
            self.counters.count("VocabularyInvalid", tenant=tenant, agent=agent)
            return
        knowledge.lexicon = lexicon_for(readings, _token(stored.etag)) if readings else None

    def _set_config(self, knowledge: AgentKnowledge, text: Optional[str], etag: str) -> None:
        try:
            knowledge.config = parse_agent_config(text or "").knowledge
        except InvalidConfig:  # read again from S3 by the refresh that follows
            knowledge.config = knowledge.config_etag = knowledge.config_text = None
            return
        knowledge.config_text, knowledge.config_etag = text, etag

    def _catch_up(self, tenant: str, agent: str, knowledge: AgentKnowledge, fetch_until: float) -> None:
        """Fetch the backlog in chunks (a few hundred parsed concepts held at a time, not all)
        until it is done or the deadline passes; at least one chunk per call, so it ends."""
        try:
            while knowledge.backlog:
                self._fetch(tenant, agent, knowledge, knowledge.backlog[:FETCH_CHUNK])
                del knowledge.backlog[:FETCH_CHUNK]
                if knowledge.backlog and self._clock() >= fetch_until:
                    self.counters.count("IndexIncomplete")
                    break
        finally:
            knowledge.index.settle()

    def _fetch(self, tenant: str, agent: str, knowledge: AgentKnowledge, names: list[str]) -> None:
        index = knowledge.index
        for name, stored_concept in zip(names, self._store.fetch_many(tenant, agent, names)):
            knowledge.generation += 1
            if stored_concept is None:  # deleted since it was listed or journaled
                index.remove(name)
                knowledge.unreadable.pop(name, None)
                knowledge.summaries.pop(name, None)
                continue
            if index.etag(name) == stored_concept.etag:
                continue
            knowledge.summaries[name] = Summary.of(stored_concept)
            try:
                index.upsert(stored_concept.name, stored_concept.etag, stored_concept.concept, stored_concept.data)
            except InvalidConcept as exc:  # or Unindexable: skipped and named, the others still answer
                index.remove(stored_concept.name)
                knowledge.unreadable[stored_concept.name] = stored_concept.etag
                knowledge.summaries[name] = knowledge.summaries[name]._replace(problem=str(exc))
                self.counters.count("ConceptUnreadable", **({"reason": exc.code} if isinstance(exc, Unindexable) else {}))
            else:
                knowledge.unreadable.pop(name, None)

    # ------------------------------------------------------------ the snapshot
    def _write_snapshot(self, tenant: str, agent: str, knowledge: AgentKnowledge, *, read_config: bool) -> None:
        """Write the index back when it is complete and the stored snapshot is missing, behind
        or old (see the module's docstring); a lost race leaves it to the reader that won."""
        if not knowledge.indexed or knowledge.backlog or knowledge.snapshot_lost:
            return
        if agent == SHARED and not self.shared_snapshot:
            return
        behind = knowledge.snapshot_position is None or knowledge.changes >= REWRITE_AFTER_CHANGES
        old = (knowledge.snapshot_position is not None
               and knowledge.position - knowledge.snapshot_position > SNAPSHOT_MAX_AGE_SECONDS)
        if not (behind or old):
            return
        try:
            if self._wall() - knowledge.position > JOURNAL_GRACE_SECONDS:
                # A long build: one more look at the journal first, so the snapshot's position
                # is now and a cold container lists only what was written after it.
                self._follow_journal(tenant, agent, knowledge, read_config=read_config)
            if knowledge.indexed and knowledge.backlog:
                self._catch_up(tenant, agent, knowledge, self._clock())  # one chunk
            if not knowledge.indexed or knowledge.backlog:
                return  # much changed meanwhile: written at a later call, once caught up
            data = encode(Snapshot(tenant, agent, knowledge.index, knowledge.position, knowledge.config_text,
                                   knowledge.config_etag, dict(knowledge.unreadable), knowledge.summaries))
            knowledge.snapshot_etag = self._store.put_snapshot(tenant, agent, data, if_match=knowledge.snapshot_etag)
        except Conflict:
            knowledge.snapshot_lost = True
            self.counters.count("SnapshotRaceLost")
            return
        except KnowledgeError as exc:  # the answer matters more than the snapshot: try again later
            self.counters.count("SnapshotNotWritten", reason=exc.code)
            return
        knowledge.snapshot_position, knowledge.changes = knowledge.position, 0
        self.counters.count("SnapshotWritten")

    # ------------------------------------------------------------ the memory budget
    def _measure(self, tenant: str, agent: str, knowledge: AgentKnowledge) -> None:
        index = knowledge.index
        shape = (id(index), *index.shape())
        if shape != knowledge.measured:  # measuring walks the index: only after it changed
            knowledge.size = index.memory_bytes() + sum(s.memory_bytes() for s in knowledge.summaries.values())
            knowledge.measured = shape
        if self.memory_budget is None:
            return
        with self._agents_lock:
            total = sum(k.size for k in self._agents.values())
            for key in list(self._agents):
                if total <= self.memory_budget:
                    break
                if key == (tenant, agent):
                    continue
                total -= self._agents.pop(key).size
                self.counters.count("IndexEvicted")


def _token(etag: Optional[str]) -> Optional[str]:
    return etag_token(etag) if etag is not None else None
