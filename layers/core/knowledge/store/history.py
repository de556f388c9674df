"""A concept's version history: every version with who wrote it and why, whole or a page at a time, and the
sighting a version carries (the history half of ConceptStore, read through its `_call` and `_pages`)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional

from knowledge.errors import InvalidLimit
from knowledge.format.evidence import EvidenceLink
from knowledge.store.keys import concept_key, deletion_key
from shared import deadline
from shared.errors import InvalidCursor, NotFound

VERSION_ID = re.compile(r"[A-Za-z0-9._+=-]{1,1024}")
# Who a version is recorded as written by. `learning`: the engine writing a word its traffic taught into a
# concept's learned_words.
ACTOR = re.compile(r"engine|learning|operator:[A-Za-z0-9._@+:-]{1,128}")


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


class ConceptHistory:
    """The history half of ConceptStore: versions listed and described through the store's `_call` and `_pages`."""

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
        """Listed versions and delete markers with who wrote each and why: one request per entry, all
        at once (a HEAD per version, the deletion record's GET per delete marker, never a listing)."""
        if not raw:
            return []

        def describe(entry: tuple[dict, bool]) -> VersionInfo:
            item, deleted = entry
            vid = item["VersionId"]
            if deleted:
                at, actor = self._deletion(tenant, agent, name, vid, item["LastModified"])
                return VersionInfo(vid, at, actor, "delete", 0, True, bool(item.get("IsLatest")))
            meta = self._call("head_object", Bucket=self.bucket, Key=key, VersionId=vid).get("Metadata", {})
            return VersionInfo(vid, precise(meta.get("written-at"), item["LastModified"]), meta.get("actor"),
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
        on the last): one listing request and one request per version on the page (a HEAD, or a
        delete marker's deletion record), however long the history. `marker` is what an earlier
        page returned; anything else is InvalidCursor."""
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
        if not isinstance(version_id, str) or not VERSION_ID.fullmatch(version_id):
            raise NotFound(f"no version {version_id!r} of concept {name!r}")
        try:
            head = self._call("head_object", Bucket=self.bucket, Key=key, VersionId=version_id)
        except NotFound:
            raise NotFound(f"no version {version_id!r} of concept {name!r}") from None
        meta = head.get("Metadata", {})
        return VersionInfo(version_id, precise(meta.get("written-at"), head["LastModified"]), meta.get("actor"),
                           meta.get("reason"), int(head.get("ContentLength", 0)), False, False,
                           EvidenceLink.decode(meta.get("evidence")))

    def _deletion(self, tenant: str, agent: str, name: str, marker: str, listed_at: datetime
                  ) -> tuple[datetime, Optional[str]]:
        """When a delete marker was written (to the microsecond) and by whom, from its deletion record: one
        GET. S3's second and no one when no record says (deleted by hand, or by a writer killed before it)."""
        if not VERSION_ID.fullmatch(marker):
            return listed_at, None
        try:
            body = self._call("get_object", Bucket=self.bucket, Key=deletion_key(tenant, agent, name, marker),
                              read_body=True)["Body"]
            record = json.loads(body)
        except (NotFound, ValueError):
            return listed_at, None
        if not isinstance(record, dict):
            return listed_at, None
        actor = record.get("actor")
        known = isinstance(actor, str) and ACTOR.fullmatch(actor)
        return precise(record.get("at"), listed_at), actor if known else None


def _encode_marker(version_id: str) -> str:
    """A history page's marker as the caller sees it: URL-safe (S3 version ids hold + and =)."""
    return base64.urlsafe_b64encode(version_id.encode("ascii")).decode("ascii").rstrip("=")


def _decode_marker(marker: object) -> str:
    if isinstance(marker, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,1400}", marker):
        try:
            version_id = base64.urlsafe_b64decode(marker + "=" * (-len(marker) % 4)).decode("ascii")
        except (binascii.Error, ValueError):
            version_id = ""
        if VERSION_ID.fullmatch(version_id):
            return version_id
    raise InvalidCursor("cursor must be the `next` of an earlier page of this history")


def precise(stamp: object, fallback: datetime) -> datetime:
    if isinstance(stamp, str):
        for layout in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
            try:
                return datetime.strptime(stamp, layout).replace(tzinfo=timezone.utc)
            except ValueError:
                continue
    return fallback
