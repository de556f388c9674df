"""The concept store (ConceptStore): one versioned S3 object per concept, every write conditional, its
actor and reason in the object's metadata (S3's version list is the history), and a change-journal
entry after every concept, knowledge.yaml or vocabulary.yaml write. Key shapes: knowledge.store.keys;
the journal: knowledge.store.journal; history: knowledge.store.history. docs/contract.md, "Storage layout"."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, Iterator, Optional

from knowledge.format.concept import Concept, parse_stored, related_waiting
from knowledge.format.config import DistillConfig, KnowledgeConfig, parse_agent_config
from knowledge.format.evidence import EvidenceLink
from knowledge.store import agents
from knowledge.store.history import ACTOR, VERSION_ID, ConceptHistory
from knowledge.store.journal import CONFIG_CHANGE, ChangeJournal
from knowledge.store.pending_words import PendingWords
from knowledge.store.waiting import WaitingPairs
from knowledge.store.keys import (
    SHARED,
    agent_of,
    agent_prefix,
    concept_key,
    config_key,
    deletion_key,
    is_agent,
    name_from_key,
    snapshot_key,
)
from knowledge.store.vocabulary_file import VocabularyFile
from knowledge.store.words_summary import WordsSummaryFile
from shared import awscall, deadline
from shared.errors import Conflict, InvalidConcept, InvalidName, KnowledgeError, NotFound, NotModified  # noqa: F401 - NotModified re-exported
from shared.names import check_slug

REASONS = ("created", "confirmed", "merged", "kept_beside", "contradiction", "retired", "edit", "restore", "delete",
           "purged", "learned", "repaired", "words_removed")
# `words_removed`: an operator removing learned words from the studio's words page.
_SIGHTING_ID = re.compile(r"[0-9a-f]{16}")
SIGHTINGS_KEPT = 20  # 20 x 17 characters: well inside S3's 2 KB of user metadata
CONTENT_TYPE = "text/markdown; charset=utf-8"
CONFIG_CONTENT_TYPE = "application/yaml; charset=utf-8"
SNAPSHOT_CONTENT_TYPE = "application/octet-stream"


def _learning_of(current: StoredConcept, old: StoredConcept) -> bytes:
    """`old`'s document with `current`'s learned and removed words (docs/contract.md, learned words):
    what the traffic taught since, and what an operator removed since (never learned again), are the
    concept's learning, not its text. `old` as it was when either does not parse or nothing differs."""
    try:
        now, then = current.concept, old.concept
    except (InvalidConcept, ValueError):
        return old.data
    if (now.learned_words, now.removed_words) == (then.learned_words, then.removed_words):
        return old.data
    return then.replace(learned_words=now.learned_words, removed_words=now.removed_words).render().encode("utf-8")


def check_actor(actor: str) -> str:
    if not isinstance(actor, str) or not ACTOR.fullmatch(actor):
        raise InvalidName("actor", "must be 'engine', 'learning' or 'operator:<id>' (ASCII letters, digits, ._@+:-)")
    return actor


def check_reason(reason: str) -> str:
    if reason not in REASONS:
        raise KnowledgeError(f"reason must be one of {', '.join(REASONS)}")
    return reason


@dataclass(frozen=True)
class StoredConcept:
    """One stored version of a concept: its exact bytes and what S3 says about them."""

    name: str
    data: bytes
    etag: str
    version_id: Optional[str]
    last_modified: Optional[datetime] = None
    actor: Optional[str] = None
    reason: Optional[str] = None
    sightings: tuple[str, ...] = ()
    written_at: Optional[str] = None  # the writer's own stamp (metadata), to the microsecond

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")

    @cached_property
    def concept(self) -> Concept:
        """The parsed concept; InvalidConcept when it does not parse or names another concept."""
        return parse_stored(self.data, self.name)


@dataclass(frozen=True)
class ConceptListing:
    name: str
    etag: str
    size: int
    last_modified: datetime


@dataclass(frozen=True)
class ConceptSummary:
    """What a listing shows of a concept; `problem` is set (and the fields empty) when it does not parse."""

    name: str
    etag: str
    type: Optional[str] = None
    provenance: Optional[str] = None
    confidence: Optional[float] = None
    occurrences: Optional[int] = None
    updated_at: Optional[datetime] = None
    conflict: bool = False
    problem: Optional[str] = None
    related: int = 0  # claims kept beside an operator's body, waiting to be folded in

    @classmethod
    def of(cls, stored: "StoredConcept") -> "ConceptSummary":
        try:
            c = stored.concept
        except InvalidConcept as exc:
            return cls(stored.name, stored.etag, problem=str(exc))
        return cls(stored.name, stored.etag, c.type, c.provenance, c.confidence, c.occurrences,
                   c.updated_at, c.in_conflict, related=related_waiting(c.body))


@dataclass(frozen=True)
class DeletedConcept:
    name: str
    deleted_at: datetime  # to the microsecond when the deletion record says, else S3's second
    marker_version_id: str
    deleted_by: Optional[str] = None  # the deletion record's actor (read only when asked for)


@dataclass(frozen=True)
class StoredConfig:
    config: Optional[KnowledgeConfig]
    text: str
    etag: str
    distill: Optional[DistillConfig] = None  # the same file's `distill:` block (Facts)


@dataclass(frozen=True)
class StoredSnapshot:
    data: bytes
    etag: str


class ConceptStore(ChangeJournal, ConceptHistory, VocabularyFile, WordsSummaryFile):
    """Reads and writes concepts; a lost race raises Conflict carrying what is stored now."""

    def __init__(self, s3: Any, bucket: str, *, max_workers: int = 16):
        self._s3 = s3
        self.bucket = bucket
        self._max_workers = max_workers

    def pending_words(self) -> "PendingWords":
        """The concepts whose model words wait for the tenant's budget (knowledge.store.pending_words)."""
        return PendingWords(self._s3, self.bucket)

    def waiting(self) -> "WaitingPairs":
        """The pairs no judge decided, kept beside this store's concepts (knowledge.store.waiting)."""
        return WaitingPairs(self._s3, self.bucket)

    # ------------------------------------------------------------ reading
    def get(self, tenant: str, agent: str, name: str) -> StoredConcept:
        key = concept_key(tenant, agent, name)
        return self._get(key, name)

    def find(self, tenant: str, agent: str, name: str) -> Optional[StoredConcept]:
        try:
            return self.get(tenant, agent, name)
        except NotFound:
            return None

    def list(self, tenant: str, agent: str) -> list[ConceptListing]:
        prefix = f"{agent_prefix(tenant, agent)}concepts/"
        out = []
        for item in self._paginate("list_objects_v2", "Contents", Prefix=prefix):
            name = name_from_key(item["Key"], prefix)
            if name:
                out.append(ConceptListing(name, item["ETag"], item["Size"], item["LastModified"]))
        return out

    def load_all(self, tenant: str, agent: str) -> list[StoredConcept]:
        """Every current concept of an agent, fetched in parallel with a bounded pool."""
        listing = self.list(tenant, agent)
        return [item for item in self.fetch_many(tenant, agent, [entry.name for entry in listing]) if item]

    def summaries(self, tenant: str, agent: str,
                  known: Optional[dict[str, ConceptSummary]] = None) -> list[ConceptSummary]:
        """A summary of every current concept, newest first.

        `known` (name -> summary, from an earlier call) saves the fetches: one listing, then
        only the concepts whose ETag changed are read. It is updated in place.
        """
        known = {} if known is None else known
        listing = {item.name: item.etag for item in self.list(tenant, agent)}
        for name in [name for name in known if name not in listing]:
            del known[name]
        changed = [name for name, etag in listing.items() if name not in known or known[name].etag != etag]
        for item in self.fetch_many(tenant, agent, changed):
            if item is not None:
                known[item.name] = ConceptSummary.of(item)
        epoch = datetime.min.replace(tzinfo=timezone.utc)
        return sorted(known.values(), key=lambda s: (s.updated_at or epoch, s.name), reverse=True)

    def fetch_many(self, tenant: str, agent: str, names: list[str]) -> list[Optional[StoredConcept]]:
        """Fetch the named concepts in parallel; a name deleted meanwhile comes back as None."""
        keys = [concept_key(tenant, agent, name) for name in names]
        if not keys:
            return []
        with ThreadPoolExecutor(max_workers=min(self._max_workers, len(keys))) as pool:
            return list(pool.map(deadline.carry(lambda pair: self._get_or_none(*pair)), zip(keys, names)))

    def agent_exists(self, tenant: str, agent: str, *, current_only: bool = False) -> bool:
        """An agent exists once it has a knowledge.yaml or any concept, current or deleted
        (knowledge.store.agents: the rule; `current_only`: current objects alone, one listing)."""
        return agents.agent_exists(self._s3, self.bucket, tenant, agent, current_only=current_only)

    # ------------------------------------------------------------ writing
    def create(self, tenant: str, agent: str, concept: Concept, *, actor: str, reason: str = "created",
               sightings: tuple[str, ...] = (), evidence: Optional[EvidenceLink] = None) -> StoredConcept:
        """Write a concept whose name is new (or deleted); Conflict when it already exists."""
        key = concept_key(tenant, agent, concept.name)
        return self._put(key, concept.name, concept.render().encode("utf-8"), actor, reason, if_none_match=True,
                         sightings=sightings, evidence=evidence)

    def replace(
        self, tenant: str, agent: str, concept: Concept, *, if_match: str, actor: str, reason: str,
        sightings: tuple[str, ...] = (), evidence: Optional[EvidenceLink] = None,
    ) -> StoredConcept:
        """Compare-and-swap: write only if the stored ETag is still `if_match`.

        `sightings` (the id of the sighting this version applies, kept in its metadata) lets
        consolidation recognise a sighting it already wrote when its queue message comes back;
        `evidence` is where that sighting's claim was quoted.
        """
        key = concept_key(tenant, agent, concept.name)
        return self._put(key, concept.name, concept.render().encode("utf-8"), actor, reason, if_match=if_match,
                         sightings=sightings, evidence=evidence)

    def delete(self, tenant: str, agent: str, name: str, *, actor: str) -> str:
        """Add a delete marker (restorable) and record who did it; returns the marker's version id."""
        key = concept_key(tenant, agent, name)
        check_actor(actor)
        self._get(key, name)  # NotFound for a name that is not there
        answer = self._call("delete_object", Bucket=self.bucket, Key=key)
        self._journal(tenant, agent, name, None)
        marker = answer.get("VersionId") or ""
        if VERSION_ID.fullmatch(marker):
            record = {"actor": actor, "reason": "delete", "at": _precise_now()}
            self._call(
                "put_object",
                Bucket=self.bucket,
                Key=deletion_key(tenant, agent, name, marker),
                Body=json.dumps(record).encode(),
                ContentType="application/json",
            )
        return marker

    def list_deleted(self, tenant: str, agent: str, *, recorded: bool = False) -> list[DeletedConcept]:
        """Concepts whose current version is a delete marker, newest first; with `recorded`, each
        with who deleted it and the precise time, from its deletion record (one GET each, in parallel)."""
        prefix = f"{agent_prefix(tenant, agent)}concepts/"
        out = []
        for marker in self._paginate("list_object_versions", "DeleteMarkers", Prefix=prefix):
            name = name_from_key(marker["Key"], prefix)
            if name and marker.get("IsLatest"):
                out.append(DeletedConcept(name, marker["LastModified"], marker["VersionId"]))
        if recorded and out:
            with ThreadPoolExecutor(max_workers=min(self._max_workers, len(out))) as pool:
                out = list(pool.map(deadline.carry(lambda d: self._recorded(tenant, agent, d)), out))
        return sorted(out, key=lambda d: d.deleted_at, reverse=True)

    def _recorded(self, tenant: str, agent: str, deleted: DeletedConcept) -> DeletedConcept:
        at, actor = self._deletion(tenant, agent, deleted.name, deleted.marker_version_id, deleted.deleted_at)
        return DeletedConcept(deleted.name, at, deleted.marker_version_id, actor)

    def tenants(self) -> list[str]:
        """The tenants with any agent in the bucket, by name (a delimiter listing, no object read)."""
        names = set()
        for page in self._pages("list_objects_v2", Prefix="agents/", Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len("agents/"):].rstrip("/")
                if is_agent(name):
                    names.add(name)
        return sorted(names)

    def agents(self, tenant: str) -> list[str]:
        """The agents a tenant has in the bucket (any object under its prefix), by name: one
        listing request per thousand agents."""
        prefix = f"agents/{check_slug('tenant', tenant)}/"
        names = set()
        for page in self._pages("list_objects_v2", Prefix=prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(prefix):].rstrip("/")
                if is_agent(name):
                    names.add(name)
        return sorted(names)

    def has_shared(self, tenant: str) -> bool:
        """Whether the tenant keeps anything shared: a concept, or the snapshot of concepts since
        deleted, which the snapshot pass writes over (one listing of at most one key)."""
        answer = self._call("list_objects_v2", Bucket=self.bucket, Prefix=agent_prefix(tenant, SHARED), MaxKeys=1)
        return bool(answer.get("KeyCount", 0))

    def undelete(self, tenant: str, agent: str, name: str, *, actor: str) -> StoredConcept:
        """Bring back the newest version before the delete marker, as a new version."""
        versions = self.versions(tenant, agent, name)
        if not versions or not versions[0].deleted:
            raise NotFound(f"concept {name!r} is not deleted")
        previous = next((v for v in versions if not v.deleted), None)
        if previous is None:
            raise NotFound(f"concept {name!r} has no version to bring back")
        return self.restore(tenant, agent, name, previous.version_id, actor=actor, hidden=previous.version_id)

    # ------------------------------------------------------------ history
    def read_version(self, tenant: str, agent: str, name: str, version_id: str) -> StoredConcept:
        key = concept_key(tenant, agent, name)
        if not isinstance(version_id, str) or not VERSION_ID.fullmatch(version_id):
            raise NotFound(f"no version {version_id!r} of concept {name!r}")
        return self._get(key, name, version_id=version_id)

    def restore(
        self, tenant: str, agent: str, name: str, version_id: str, *, actor: str, if_match: Optional[str] = None,
        hidden: Optional[str] = None,
    ) -> StoredConcept:
        """Write an old version back as a new one (read, then a conditional put); `hidden`: of a
        deleted concept, the version its delete hid, when the caller has listed it already.

        With `if_match`, the current version must still be that ETag; without it, the
        restore is conditional on whatever is current when it is read. The concept's learned and
        removed words stay as they are now (`_learning_of`): a restore brings back a text, and
        never a word an operator removed since.
        """
        old = self.read_version(tenant, agent, name, version_id)
        _ = old.concept  # an old version that no longer parses is refused (InvalidConcept), never restored
        key = concept_key(tenant, agent, name)
        current = self._get_or_none(key, name)
        if if_match is not None and (current is None or current.etag != if_match):
            raise Conflict(f"concept {name!r} changed since it was read", current)
        if current is None:  # deleted: the learning is the version the delete hid (an undelete: that one)
            if hidden is None:
                kept = next((v for v in self.versions(tenant, agent, name) if not v.deleted), None)
                hidden = kept.version_id if kept is not None else version_id
            data = old.data if hidden == version_id else _learning_of(
                self.read_version(tenant, agent, name, hidden), old)
            return self._put(key, name, data, actor, "restore", if_none_match=True)
        return self._put(key, name, _learning_of(current, old), actor, "restore", if_match=current.etag,
                         sightings=current.sightings)

    # ------------------------------------------------------------ config
    def get_config(self, tenant: str, agent: str, *, unless_etag: Optional[str] = None) -> Optional[StoredConfig]:
        """The agent's knowledge.yaml, or None when there is none (the feature is off).

        With `unless_etag`, a config still at that ETag raises NotModified (no body is sent).
        """
        kwargs = {"IfNoneMatch": unless_etag} if unless_etag else {}
        try:
            answer = self._call("get_object", Bucket=self.bucket, Key=config_key(tenant, agent), read_body=True,
                                **kwargs)
        except NotFound:
            return None
        data = answer["Body"]
        both = parse_agent_config(data)
        return StoredConfig(both.knowledge, data.decode("utf-8"), answer["ETag"], both.distill)

    def get_config_bytes(self, tenant: str, agent: str, *,
                         unless_etag: Optional[str] = None) -> Optional[tuple[bytes, str]]:
        """knowledge.yaml as stored, unparsed, with its ETag (None when there is none); with
        `unless_etag`, a file still at that ETag raises NotModified."""
        kwargs = {"IfNoneMatch": unless_etag} if unless_etag else {}
        try:
            answer = self._call("get_object", Bucket=self.bucket, Key=config_key(tenant, agent), read_body=True,
                                **kwargs)
        except NotFound:
            return None
        return answer["Body"], answer["ETag"]

    def put_config(
        self, tenant: str, agent: str, text: str, *, actor: str, if_match: Optional[str] = None
    ) -> StoredConfig:
        """Validate and write knowledge.yaml; create-only unless `if_match` names the current ETag."""
        both = parse_agent_config(text)
        key = config_key(tenant, agent)
        kwargs: dict[str, Any] = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        try:
            answer = self._call(
                "put_object", Bucket=self.bucket, Key=key, Body=text.encode("utf-8"),
                ContentType=CONFIG_CONTENT_TYPE, Metadata=self._metadata(actor, "edit"), **kwargs,
            )
        except (Conflict, NotFound):
            raise Conflict("knowledge.yaml changed since it was read", None) from None
        self._journal(tenant, agent, CONFIG_CHANGE, answer["ETag"])
        return StoredConfig(both.knowledge, text, answer["ETag"], both.distill)

    # ------------------------------------------------------------ snapshot
    def get_snapshot(self, tenant: str, agent: str) -> Optional[StoredSnapshot]:
        """The agent's stored snapshot (knowledge.recall.snapshot), or None when there is none."""
        try:
            answer = self._call("get_object", Bucket=self.bucket, Key=snapshot_key(tenant, agent), read_body=True)
        except NotFound:
            return None
        return StoredSnapshot(answer["Body"], answer["ETag"])

    def put_snapshot(self, tenant: str, agent: str, data: bytes, *, if_match: Optional[str]) -> str:
        """Write the snapshot over the one read (`if_match`), or create it (None); Conflict when
        another writer came first. Returns the new ETag."""
        condition = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        try:
            answer = self._call("put_object", Bucket=self.bucket, Key=snapshot_key(tenant, agent), Body=data,
                                ContentType=SNAPSHOT_CONTENT_TYPE, **condition)
        except (Conflict, NotFound):
            raise Conflict("the snapshot changed since it was read", None) from None
        return answer["ETag"]

    # ------------------------------------------------------------ internals
    def _metadata(self, actor: str, reason: str) -> dict[str, str]:
        return {
            "actor": check_actor(actor),
            "reason": check_reason(reason),
            "written-at": _precise_now(),
        }

    def _put(
        self, key: str, name: str, data: bytes, actor: str, reason: str, *,
        if_match: Optional[str] = None, if_none_match: bool = False, sightings: tuple[str, ...] = (),
        evidence: Optional[EvidenceLink] = None,
    ) -> StoredConcept:
        condition: dict[str, str] = {"IfNoneMatch": "*"} if if_none_match else {"IfMatch": if_match or ""}
        metadata = self._metadata(actor, reason)
        if evidence is not None:
            metadata["evidence"] = evidence.encode()
        if sightings:
            if not all(_SIGHTING_ID.fullmatch(s) for s in sightings):
                raise KnowledgeError("sighting ids must be 16 lowercase hex characters")
            metadata["sightings"] = ",".join(sightings[-SIGHTINGS_KEPT:])
        try:
            answer = self._call(
                "put_object", Bucket=self.bucket, Key=key, Body=data, ContentType=CONTENT_TYPE,
                Metadata=metadata, **condition,
            )
        except (Conflict, NotFound):
            # 412 (changed or exists) or 404 (IfMatch on a deleted key): tell the caller what is there now.
            current = self._get_or_none(key, name)
            if current is not None and current.data == data and current.written_at == metadata["written-at"]:
                self._journal(*agent_of(key), name, current.etag)
                return current  # our own write, whose answer was lost: the retry met it
            raise Conflict(f"concept {name!r} changed since it was read", current) from None
        self._journal(*agent_of(key), name, answer["ETag"])
        return StoredConcept(name, data, answer["ETag"], answer.get("VersionId"), None, actor, reason,
                             tuple(sightings[-SIGHTINGS_KEPT:]), metadata["written-at"])

    def _get(self, key: str, name: str, version_id: Optional[str] = None) -> StoredConcept:
        kwargs = {"VersionId": version_id} if version_id else {}
        answer = self._call("get_object", Bucket=self.bucket, Key=key, read_body=True, **kwargs)
        meta = answer.get("Metadata", {})
        sightings = tuple(s for s in meta.get("sightings", "").split(",") if _SIGHTING_ID.fullmatch(s))
        return StoredConcept(
            name, answer["Body"], answer["ETag"], answer.get("VersionId"),
            answer.get("LastModified"), meta.get("actor"), meta.get("reason"), sightings, meta.get("written-at"),
        )

    def _get_or_none(self, key: str, name: str) -> Optional[StoredConcept]:
        try:
            return self._get(key, name)
        except NotFound:
            return None

    def _pages(self, operation: str, **kwargs: Any) -> Iterator[dict]:
        yield from awscall.pages(self._s3, operation, Bucket=self.bucket, **kwargs)

    def _paginate(self, operation: str, field: str, **kwargs: Any) -> Iterator[dict]:
        for page in self._pages(operation, **kwargs):
            yield from page.get(field, [])

    def _call(self, operation: str, **kwargs: Any) -> dict:
        return awscall.call(self._s3, operation, **kwargs)


translate_client_error = awscall.translate


def _precise_now() -> str:
    """A write's time to the microsecond: S3's LastModified has one-second resolution."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
