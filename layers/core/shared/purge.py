"""Purging data for good (LGPD): every object version and delete marker under a key prefix, for
both loops (knowledge.operation.purge deletes a tenant; facts.purge forgets a customer).

In a versioned bucket a delete only adds a delete marker; a purge removes each version and each
marker by its id. It is driven by listings, so a rerun after a crash, a deadline or a refused
delete finds what is left and removes it, and a run that finds nothing removes nothing. Reports
hold counts per kind of object, never a key (keys carry customer ids).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Optional, Union

from shared import awscall
from shared.errors import DeadlineExceeded, PurgeRefused

BATCH = 1000  # DeleteObjects' most keys per request, and a listing's largest page
OTHER = "other"  # a key under a purged prefix that no layout names: removed all the same

Classifier = Callable[[str], Optional[str]]
Kind = Union[str, Classifier]
Bucket = Literal["knowledge", "sessions"]


class _Stopped(Exception):
    """keep_going said no: the purge stops between two requests and reports itself incomplete."""


@dataclass
class PurgeReport:
    """What a purge removed (or, dry run, would remove): object versions and delete markers per kind."""

    dry_run: bool = False
    complete: bool = True
    removed: Counter = field(default_factory=Counter)
    # Versions each concept lost ("{agent}/{concept}" -> n): a concept's name is the store's, never a
    # customer's (every name gate refuses one that holds personal data).
    concepts: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.removed.values())

    def as_dict(self) -> dict[str, Any]:
        """Counts only: safe to log and to answer."""
        out = {"complete": self.complete, "dry_run": self.dry_run, "removed": dict(sorted(self.removed.items())),
               "total": self.total}
        lost = {name: n for name, n in sorted(self.concepts.items()) if n}
        if lost:
            out["concept_versions"] = lost
        return out

    def summary(self, what: str) -> str:
        verb = "would remove" if self.dry_run else "removed"
        if self.total == 0:
            lines = [f"{what}: nothing found, nothing {'would be ' if self.dry_run else ''}removed" if self.complete
                     else f"{what}: stopped before anything was removed"]
        else:
            lines = [f"{what}: {verb} {self.total} object version(s) and delete marker(s)"]
            lines += [f"  {kind}: {n}" for kind, n in sorted(self.removed.items())]
            lines += [f"  concept {name}: {n} version(s)" for name, n in sorted(self.concepts.items()) if n]
        if not self.complete:
            lines.append("stopped before the end (deadline): run the same command again to finish")
        return "\n".join(lines)


class Sweeper:
    """Removes every version and delete marker of keys in one report; `keep_going` is asked before
    each request, and a `dry_run` only counts."""

    def __init__(self, s3: Any, report: PurgeReport, keep_going: Callable[[], bool] = lambda: True):
        self._s3, self.report, self._keep_going = s3, report, keep_going

    def checkpoint(self) -> None:
        if not self._keep_going():
            raise _Stopped()

    def prefix(self, bucket: str, prefix: str, kind: Kind) -> None:
        """Everything under `prefix` (which ends in '/', so `acme/` never reaches `acme-2/`)."""
        if not prefix.endswith("/"):
            raise ValueError("a purged prefix ends with '/'")
        if self.report.dry_run:
            for page in self._pages(bucket, prefix):
                self._count(_entries(page), kind)
            return
        # Listed again from the start after each batch: what was deleted is no longer there, so no
        # marker ever points at a version that is gone.
        while True:
            self.checkpoint()
            page = awscall.call(self._s3, "list_object_versions", Bucket=bucket, Prefix=prefix, MaxKeys=BATCH)
            entries = _entries(page)
            if entries:
                self._delete(bucket, entries, kind)
            if not entries or not page.get("IsTruncated"):
                return

    def keys(self, bucket: str, keys: Iterable[str], kind: Kind) -> None:
        """Every version of exactly these keys (not the keys they prefix), in batched deletes."""
        found: list[dict] = []
        for key in keys:
            for page in self._pages(bucket, key):
                matching = [e for e in _entries(page) if e["Key"] == key]
                found += matching
                # Listings are in key order: once another key shows up, this one's versions are done.
                if len(matching) < len(_entries(page)):
                    break
        if self.report.dry_run:
            self._count(found, kind)
            return
        for start in range(0, len(found), BATCH):
            self._delete(bucket, found[start:start + BATCH], kind)

    def versions(self, bucket: str, key: str, version_ids: Iterable[str], kind: str) -> None:
        """These versions of one key (not its others), in batched deletes; a dry run only counts."""
        entries = [{"Key": key, "VersionId": version_id} for version_id in version_ids]
        if self.report.dry_run:
            self._count(entries, kind)
            return
        for start in range(0, len(entries), BATCH):
            self._delete(bucket, entries[start:start + BATCH], kind)

    def children(self, bucket: str, prefix: str) -> list[str]:
        """The names one level below `prefix` (a delimiter listing: no object under them is read)."""
        names = []
        for page in self._pages_of("list_objects_v2", bucket, prefix, Delimiter="/"):
            names += [common["Prefix"][len(prefix):-1] for common in page.get("CommonPrefixes", [])]
        return names

    def listed(self, bucket: str, prefix: str) -> Iterable[str]:
        """The current keys under `prefix` (keys only: no object is read)."""
        for page in self._pages_of("list_objects_v2", bucket, prefix):
            for item in page.get("Contents", []):
                yield item["Key"]

    # ------------------------------------------------------------ internals
    def _pages(self, bucket: str, prefix: str) -> Iterable[dict]:
        return self._pages_of("list_object_versions", bucket, prefix)

    def _pages_of(self, operation: str, bucket: str, prefix: str, **extra: str) -> Iterable[dict]:
        for page in awscall.pages(self._s3, operation, Bucket=bucket, Prefix=prefix, **extra):
            yield page
            self.checkpoint()

    def _delete(self, bucket: str, entries: list[dict], kind: Kind) -> None:
        self.checkpoint()
        answer = awscall.call(self._s3, "delete_objects", Bucket=bucket, Delete={
            "Objects": [{"Key": e["Key"], "VersionId": e["VersionId"]} for e in entries], "Quiet": True})
        errors = answer.get("Errors", [])
        failed = {(e.get("Key"), e.get("VersionId")) for e in errors}
        self._count([e for e in entries if (e["Key"], e["VersionId"]) not in failed], kind)
        if errors:
            codes = Counter(str(e.get("Code", "?")) for e in errors)
            raise PurgeRefused(f"S3 refused to delete {len(errors)} object version(s) "
                               f"({', '.join(f'{c}: {n}' for c, n in sorted(codes.items()))}); run again")

    def _count(self, entries: Iterable[dict], kind: Kind) -> None:
        for entry in entries:
            self.report.removed[kind if isinstance(kind, str) else (kind(entry["Key"]) or OTHER)] += 1


def _entries(page: dict) -> list[dict]:
    return [*page.get("Versions", []), *page.get("DeleteMarkers", [])]


def run(report: PurgeReport, work: Callable[[], None]) -> PurgeReport:
    """`work` to its end, or until keep_going or the invocation's deadline stops it (then incomplete)."""
    try:
        work()
    except (_Stopped, DeadlineExceeded):
        report.complete = False
    return report
