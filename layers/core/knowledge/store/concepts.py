"""The concept store: one versioned S3 object per concept, every write conditional.

Layout in KNOWLEDGE_BUCKET (names are validated slugs before they reach a key):
    agents/{tenant}/{agent}/knowledge.yaml                       the `knowledge:` block
    agents/{tenant}/{agent}/concepts/{name}.md                   one concept
    agents/{tenant}/{agent}/deletions/{name}/{marker-version}    who deleted it (JSON)
    agents/{tenant}/{agent}/concepts-index/snapshot              the built warm index (knowledge.recall.snapshot)
    journal/{tenant}/{agent}/{stamp}_{etag}_{what}               empty: `what` (a concept's name or knowledge.yaml)
                                                                 was written at `stamp` as `etag` (`deleted`);
                                                                 expired by a lifecycle rule after JOURNAL_RETENTION_DAYS
Every write records its actor and reason as object metadata, so S3's own version list
is the history. Every concept or knowledge.yaml write then adds a change to the journal, so
a warm index learns what changed from one listing of recent changes instead of listing
every concept (knowledge.recall.warm). The journal has a top-level prefix so that one lifecycle
rule can expire it (a rule's prefix cannot skip the tenant and agent).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, Iterator, Optional

from knowledge.format.concept import Concept, parse, related_waiting
from knowledge.format.config import DistillConfig, KnowledgeConfig, parse_agent_config
from knowledge.format.evidence import EvidenceLink
from shared import awscall, deadline
from shared.errors import Conflict, InvalidConcept, InvalidName, KnowledgeError, NotFound, NotModified  # noqa: F401 - NotModified re-exported
from shared.names import check_slug

REASONS = ("created", "confirmed", "merged", "kept_beside", "contradiction", "edit", "restore", "delete")
_ACTOR = re.compile(r"engine|operator:[A-Za-z0-9._@+:-]{1,128}")
_VERSION_ID = re.compile(r"[A-Za-z0-9._+=-]{1,1024}")
_SIGHTING_ID = re.compile(r"[0-9a-f]{16}")
SIGHTINGS_KEPT = 20  # 20 x 17 characters: well inside S3's 2 KB of user metadata
CONTENT_TYPE = "text/markdown; charset=utf-8"
CONFIG_CONTENT_TYPE = "application/yaml; charset=utf-8"


def check_actor(actor: str) -> str:
    if not isinstance(actor, str) or not _ACTOR.fullmatch(actor):
        raise InvalidName("actor", "must be 'engine' or 'operator:<id>' (ASCII letters, digits, ._@+:-)")
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
        return parse(self.data)


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
class VersionInfo:
    version_id: str
    time: datetime
    actor: Optional[str]
    reason: Optional[str]
    size: int
    deleted: bool
    latest: bool
    evidence: Optional[EvidenceLink] = None  # where the sighting that wrote it was quoted


@dataclass(frozen=True)
class DeletedConcept:
    name: str
    deleted_at: datetime  # to the microsecond when the deletion record says, else S3's second
    marker_version_id: str
    deleted_by: Optional[str] = None  # the deletion record's actor (read only when asked for)


class InvalidCursor(KnowledgeError):
    """A page cursor this code did not hand out (or for another concept)."""

    code = "invalid_cursor"


class InvalidLimit(KnowledgeError):
    code = "invalid_limit"


@dataclass(frozen=True)
class StoredConfig:
    config: Optional[KnowledgeConfig]
    text: str
    etag: str
    distill: Optional[DistillConfig] = None  # the same file's `distill:` block (Facts)


def agent_prefix(tenant: str, agent: str) -> str:
    return f"agents/{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/"


def concept_key(tenant: str, agent: str, name: str) -> str:
    return f"{agent_prefix(tenant, agent)}concepts/{check_slug('name', name)}.md"


def config_key(tenant: str, agent: str) -> str:
    return f"{agent_prefix(tenant, agent)}knowledge.yaml"


CONFIG_CHANGE = "knowledge.yaml"  # the journal's name for a change to the agent's config
SNAPSHOT_CONTENT_TYPE = "application/octet-stream"
# A journal entry is stamped after its write and lands within JOURNAL_WRITE_SECONDS (or is
# given up, see _journal): a reader that looks at the journal again from JOURNAL_GRACE_SECONDS
# before its last look sees every entry that landed since (writer clocks are NTP-synced).
JOURNAL_WRITE_SECONDS = 2.0
JOURNAL_GRACE_SECONDS = 15.0
# The journal's lifecycle rule (template.yaml, `expire-change-journal`) expires an entry this
# many days after it was written, never sooner: a reader trusts the journal only for a
# position younger than that, less a margin (knowledge.recall.warm.JOURNAL_TRUSTED_SECONDS).
JOURNAL_RETENTION_DAYS = 7
DELETED = "deleted"  # the journal's ETag for a delete


def etag_token(etag: str) -> str:
    """An ETag as the journal writes it (no quotes): compare with this, never with the raw ETag."""
    return etag.strip('"')


def _etag_part(etag: Optional[str]) -> str:
    token = DELETED if etag is None else etag_token(etag)
    return token if re.fullmatch(r"[A-Za-z0-9-]{1,64}", token) else "unknown"


def snapshot_key(tenant: str, agent: str) -> str:
    return f"{agent_prefix(tenant, agent)}concepts-index/snapshot"


def journal_prefix(tenant: str, agent: str) -> str:
    return f"journal/{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/"


def journal_stamp(epoch: float) -> str:
    """A journal key's time, which sorts as it reads (microseconds, UTC)."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


@dataclass(frozen=True)
class Change:
    """One journal entry: `name` (a concept, or CONFIG_CHANGE) was written at about `stamp`."""

    key: str
    stamp: str
    name: str
    etag: Optional[str]  # the version written, without quotes; None for a delete


@dataclass(frozen=True)
class StoredSnapshot:
    data: bytes
    etag: str


class ConceptStore:
    """Reads and writes concepts; a lost race raises Conflict carrying what is stored now."""

    def __init__(self, s3: Any, bucket: str, *, max_workers: int = 16):
        self._s3 = s3
        self.bucket = bucket
        self._max_workers = max_workers

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
            name = _name_from_key(item["Key"], prefix)
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

    def agent_exists(self, tenant: str, agent: str) -> bool:
        """An agent exists once it has a knowledge.yaml or any concept, current or deleted."""
        answer = self._call("list_objects_v2", Bucket=self.bucket, Prefix=agent_prefix(tenant, agent), MaxKeys=1)
        if answer.get("KeyCount", 0):
            return True
        answer = self._call(
            "list_object_versions", Bucket=self.bucket, Prefix=agent_prefix(tenant, agent), MaxKeys=1
        )
        return bool(answer.get("Versions") or answer.get("DeleteMarkers"))

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
        if _VERSION_ID.fullmatch(marker):
            record = {"actor": actor, "reason": "delete", "at": _precise_now()}
            self._call(
                "put_object",
                Bucket=self.bucket,
                Key=f"{agent_prefix(tenant, agent)}deletions/{name}/{marker}",
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
            name = _name_from_key(marker["Key"], prefix)
            if name and marker.get("IsLatest"):
                out.append(DeletedConcept(name, marker["LastModified"], marker["VersionId"]))
        if recorded and out:
            with ThreadPoolExecutor(max_workers=min(self._max_workers, len(out))) as pool:
                out = list(pool.map(deadline.carry(lambda d: self._recorded(tenant, agent, d)), out))
        return sorted(out, key=lambda d: d.deleted_at, reverse=True)

    def _recorded(self, tenant: str, agent: str, deleted: DeletedConcept) -> DeletedConcept:
        key = f"{agent_prefix(tenant, agent)}deletions/{deleted.name}/{deleted.marker_version_id}"
        if not _VERSION_ID.fullmatch(deleted.marker_version_id):
            return deleted
        try:
            record = json.loads(self._call("get_object", Bucket=self.bucket, Key=key, read_body=True)["Body"])
        except (NotFound, ValueError):
            return deleted  # deleted by hand, or by a writer killed before its record
        if not isinstance(record, dict):
            return deleted
        actor = record.get("actor") if isinstance(record.get("actor"), str) and _ACTOR.fullmatch(record["actor"]) \
            else None
        return DeletedConcept(deleted.name, _precise(record.get("at"), deleted.deleted_at),
                              deleted.marker_version_id, actor)

    def agents(self, tenant: str) -> list[str]:
        """The agents a tenant has in the bucket (any object under its prefix), by name: one
        listing request per thousand agents."""
        prefix = f"agents/{check_slug('tenant', tenant)}/"
        names = set()
        for page in self._pages("list_objects_v2", Prefix=prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(prefix):].rstrip("/")
                if _is_agent(name):
                    names.add(name)
        return sorted(names)

    def undelete(self, tenant: str, agent: str, name: str, *, actor: str) -> StoredConcept:
        """Bring back the newest version before the delete marker, as a new version."""
        versions = self.versions(tenant, agent, name)
        if not versions or not versions[0].deleted:
            raise NotFound(f"concept {name!r} is not deleted")
        previous = next((v for v in versions if not v.deleted), None)
        if previous is None:
            raise NotFound(f"concept {name!r} has no version to bring back")
        return self.restore(tenant, agent, name, previous.version_id, actor=actor)

    # ------------------------------------------------------------ history
    def versions(self, tenant: str, agent: str, name: str) -> list[VersionInfo]:
        """Every version of a concept, newest first, with who wrote it and why."""
        key = concept_key(tenant, agent, name)
        raw: list[tuple[dict, bool]] = []
        for page in self._pages("list_object_versions", Prefix=key):
            raw.extend((item, False) for item in page.get("Versions", []) if item["Key"] == key)
            raw.extend((item, True) for item in page.get("DeleteMarkers", []) if item["Key"] == key)
        if not raw:
            raise NotFound(f"concept {name!r} has no history")
        return self._describe(tenant, agent, name, key, raw)

    def _describe(self, tenant: str, agent: str, name: str, key: str, raw: list[tuple[dict, bool]]
                  ) -> list[VersionInfo]:
        """Listed versions and delete markers with who wrote each and why (one HEAD per version)."""
        if not raw:
            return []
        deletions = self._deletion_records(tenant, agent, name) if any(d for _, d in raw) else {}

        def describe(entry: tuple[dict, bool]) -> VersionInfo:
            item, deleted = entry
            vid = item["VersionId"]
            if deleted:
                record = deletions.get(vid, {})
                return VersionInfo(vid, _precise(record.get("at"), item["LastModified"]), record.get("actor"),
                                   "delete", 0, True, bool(item.get("IsLatest")))
            meta = self._call("head_object", Bucket=self.bucket, Key=key, VersionId=vid).get("Metadata", {})
            return VersionInfo(vid, _precise(meta.get("written-at"), item["LastModified"]), meta.get("actor"),
                               meta.get("reason"), item["Size"], False, bool(item.get("IsLatest")),
                               EvidenceLink.decode(meta.get("evidence")))

        with ThreadPoolExecutor(max_workers=min(self._max_workers, len(raw))) as pool:
            infos = list(pool.map(deadline.carry(describe), raw))
        # Newest first. Times have one-second resolution: the sort is stable, so within one
        # second S3's own newest-first order is kept, and the current version stays on top.
        return sorted(infos, key=lambda v: (not v.latest, -v.time.timestamp()))

    def version_page(self, tenant: str, agent: str, name: str, *, limit: int, marker: Optional[str]
                     ) -> tuple[list[VersionInfo], Optional[str]]:
        """One page of a concept's history, newest first, and the marker of the next page (None
        on the last): one listing request and one HEAD per version on the page, however long
        the history. `marker` is what an earlier page returned; anything else is InvalidCursor."""
        key = concept_key(tenant, agent, name)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidLimit("limit must be a whole number from 1 to 1000")
        after = {} if marker is None else {"KeyMarker": key, "VersionIdMarker": _decode_marker(marker)}
        try:
            answer = self._call("list_object_versions", Bucket=self.bucket, Prefix=key, MaxKeys=limit, **after)
        except NotFound:
            if marker is None:
                raise
            # S3 refuses a marker naming no version of this key (another concept's, or expired).
            raise InvalidCursor("cursor names no version of this concept's history") from None
        raw = [(item, False) for item in answer.get("Versions", []) if item["Key"] == key]
        raw += [(item, True) for item in answer.get("DeleteMarkers", []) if item["Key"] == key]
        if not raw and marker is None:
            raise NotFound(f"concept {name!r} has no history")
        more = (answer.get("IsTruncated") and answer.get("NextKeyMarker") == key
                and isinstance(answer.get("NextVersionIdMarker"), str))
        infos = self._describe(tenant, agent, name, key, raw)
        return infos, _encode_marker(answer["NextVersionIdMarker"]) if more else None

    def written_since(self, tenant: str, agent: str, name: str, base: Optional[str], sighting: str
                      ) -> Optional[str]:
        """The reason of a version written after version `base` (None: any version) that carries
        `sighting` in its metadata, or None when there is none. One listing, then one HEAD per
        version newer than `base`."""
        key = concept_key(tenant, agent, name)
        for page in self._pages("list_object_versions", Prefix=key):
            for item in page.get("Versions", []):  # newest first
                if item["Key"] != key:
                    continue
                if base is not None and item["VersionId"] == base:
                    return None
                meta = self._call("head_object", Bucket=self.bucket, Key=key,
                                  VersionId=item["VersionId"]).get("Metadata", {})
                if sighting in meta.get("sightings", "").split(","):
                    return meta.get("reason") or ""
        return None

    def version_info(self, tenant: str, agent: str, name: str, version_id: str) -> VersionInfo:
        """One version's history entry with a single HEAD, however long the history is."""
        key = concept_key(tenant, agent, name)
        if not isinstance(version_id, str) or not _VERSION_ID.fullmatch(version_id):
            raise NotFound(f"no version {version_id!r} of concept {name!r}")
        try:
            head = self._call("head_object", Bucket=self.bucket, Key=key, VersionId=version_id)
        except NotFound:
            raise NotFound(f"no version {version_id!r} of concept {name!r}") from None
        meta = head.get("Metadata", {})
        return VersionInfo(version_id, _precise(meta.get("written-at"), head["LastModified"]), meta.get("actor"),
                           meta.get("reason"), int(head.get("ContentLength", 0)), False, False,
                           EvidenceLink.decode(meta.get("evidence")))

    def read_version(self, tenant: str, agent: str, name: str, version_id: str) -> StoredConcept:
        key = concept_key(tenant, agent, name)
        if not isinstance(version_id, str) or not _VERSION_ID.fullmatch(version_id):
            raise NotFound(f"no version {version_id!r} of concept {name!r}")
        return self._get(key, name, version_id=version_id)

    def restore(
        self, tenant: str, agent: str, name: str, version_id: str, *, actor: str, if_match: Optional[str] = None
    ) -> StoredConcept:
        """Write an old version back as a new one (read, then a conditional put).

        With `if_match`, the current version must still be that ETag; without it, the
        restore is conditional on whatever is current when it is read.
        """
        old = self.read_version(tenant, agent, name, version_id)
        _ = old.concept  # an old version that no longer parses is refused (InvalidConcept), never restored
        key = concept_key(tenant, agent, name)
        current = self._get_or_none(key, name)
        if if_match is not None and (current is None or current.etag != if_match):
            raise Conflict(f"concept {name!r} changed since it was read", current)
        if current is None:
            return self._put(key, name, old.data, actor, "restore", if_none_match=True)
        return self._put(key, name, old.data, actor, "restore", if_match=current.etag,
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

    # ------------------------------------------------------------ snapshot and change journal
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

    def changes_since(self, tenant: str, agent: str, since: float) -> list[Change]:
        """Journal entries stamped after `since` (epoch seconds), oldest first: one listing
        request per thousand entries, none of them read."""
        prefix = journal_prefix(tenant, agent)
        out = []
        for item in self._paginate("list_objects_v2", "Contents", Prefix=prefix,
                                   StartAfter=prefix + journal_stamp(max(since, 0.0))):
            parts = item["Key"][len(prefix):].split("_")
            if len(parts) == 3 and (parts[2] == CONFIG_CHANGE or _is_name(parts[2])):
                out.append(Change(item["Key"], parts[0], parts[2], None if parts[1] == DELETED else parts[1]))
        return out

    def _journal(self, tenant: str, agent: str, name: str, etag: Optional[str]) -> None:
        """Add a change to the journal after a write (`etag` None: a delete); never fails the
        write it follows. A change lost here (S3 down, or the writer killed first) leaves
        readers stale, not wrong, until their next full listing (knowledge.recall.warm's sweep)."""
        stamp = journal_stamp(time.time())
        key = f"{journal_prefix(tenant, agent)}{stamp}_{_etag_part(etag)}_{name}"
        try:
            with deadline.until(time.monotonic() + JOURNAL_WRITE_SECONDS):
                self._call("put_object", Bucket=self.bucket, Key=key, Body=b"", IfNoneMatch="*")
        except KnowledgeError:
            pass

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
                self._journal(*_agent_of(key), name, current.etag)
                return current  # our own write, whose answer was lost: the retry met it
            raise Conflict(f"concept {name!r} changed since it was read", current) from None
        self._journal(*_agent_of(key), name, answer["ETag"])
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

    def _deletion_records(self, tenant: str, agent: str, name: str) -> dict[str, dict]:
        prefix = f"{agent_prefix(tenant, agent)}deletions/{name}/"
        records = {}
        for item in self._paginate("list_objects_v2", "Contents", Prefix=prefix):
            try:
                body = self._call("get_object", Bucket=self.bucket, Key=item["Key"], read_body=True)["Body"]
                records[item["Key"][len(prefix):]] = json.loads(body)
            except (NotFound, ValueError):
                continue
        return records

    def _pages(self, operation: str, **kwargs: Any) -> Iterator[dict]:
        yield from awscall.pages(self._s3, operation, Bucket=self.bucket, **kwargs)

    def _paginate(self, operation: str, field: str, **kwargs: Any) -> Iterator[dict]:
        for page in self._pages(operation, **kwargs):
            yield from page.get(field, [])

    def _call(self, operation: str, **kwargs: Any) -> dict:
        return awscall.call(self._s3, operation, **kwargs)


translate_client_error = awscall.translate


def _name_from_key(key: str, prefix: str) -> Optional[str]:
    if not key.startswith(prefix) or not key.endswith(".md"):
        return None
    name = key[len(prefix):-3]
    try:
        return check_slug("name", name)
    except InvalidName:
        return None  # an object someone put there by hand; not a concept


def _agent_of(key: str) -> tuple[str, str]:
    """(tenant, agent) of a key under agents/ (built by agent_prefix, so already valid)."""
    _, tenant, agent, _ = key.split("/", 3)
    return tenant, agent


def _is_agent(text: str) -> bool:
    try:
        check_slug("agent", text)
    except InvalidName:
        return False
    return True


def _encode_marker(version_id: str) -> str:
    """A history page's marker as the caller sees it: URL-safe (S3 version ids hold + and =)."""
    return base64.urlsafe_b64encode(version_id.encode("ascii")).decode("ascii").rstrip("=")


def _decode_marker(marker: object) -> str:
    if isinstance(marker, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,1400}", marker):
        try:
            version_id = base64.urlsafe_b64decode(marker + "=" * (-len(marker) % 4)).decode("ascii")
        except (binascii.Error, ValueError):
            version_id = ""
        if _VERSION_ID.fullmatch(version_id):
            return version_id
    raise InvalidCursor("cursor must be the `next` of an earlier page of this history")


def _is_name(text: str) -> bool:
    try:
        check_slug("name", text)
    except InvalidName:
        return False
    return True


def _precise_now() -> str:
    """A write's time to the microsecond: S3's LastModified has one-second resolution."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _precise(stamp: object, fallback: datetime) -> datetime:
    if isinstance(stamp, str):
        for layout in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
            try:
                return datetime.strptime(stamp, layout).replace(tzinfo=timezone.utc)
            except ValueError:
                continue
    return fallback
