"""Keep the local stack's S3 data across restarts (moto holds state in memory only): a save walks the
versions moto holds in this process and appends what changed (content-addressed blobs, changes.jsonl;
manifest.json now and then), and a start puts every version straight back into moto with its own
version id, time and metadata. It reads moto's in-memory objects, not an S3 client's view, which keeps
5,000 concepts flat in memory and CPU. docs/local-stack.md, "What survives a restart"."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

MANIFEST = "manifest.json"
CHANGES = "changes.jsonl"
FORMAT = 2  # 1: the manifest of the HTTP mirror (boto3's metadata, replayed request by request)
COMPACT_AFTER = 20_000  # changes appended before the manifest is written whole again


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def moto_bucket(name: str) -> Any:
    """moto's in-memory bucket `name`, in whichever account holds it (this process's moto)."""
    from moto.s3.models import s3_backends

    for account in list(s3_backends.keys()):
        backend = s3_backends[account]["aws"]
        if name in backend.buckets:
            return backend, backend.buckets[name]
    raise LookupError(f"bucket {name!r} is not held by this process's moto server")


def _ident(key: str, version: Any) -> tuple[str, str, str]:
    try:
        etag = getattr(version, "etag", None) or "marker"
    except (ValueError, OSError):  # disposed before its ETag was ever asked for: being deleted
        etag = "disposed"
    return key, str(version.version_id), etag


class BucketSnapshot:
    """Mirror of one bucket in `folder`; `save()` writes only what changed since the last one."""

    def __init__(self, s3: Any, bucket: str, folder: Path):
        self._s3, self.bucket, self.folder = s3, bucket, folder  # s3: kept for the callers' signature
        self._keys: dict[str, list[dict]] = {}  # key -> entries, oldest first (what is on disk)
        self._known: dict[tuple[str, str, str], dict] = {}  # (key, version id, etag) -> its entry
        self._refs: Counter[str] = Counter()  # blob -> versions referring to it
        self._appended = 0
        self._has_manifest = False
        self._folded = False  # the saved state was more than a manifest of this format

    # -------------------------------------------------------------- save
    def save(self, *, compact: bool = False) -> bool:
        """Write what changed since the last save; True when anything did."""
        _, bucket = moto_bucket(self.bucket)
        current = list(dict.items(bucket.keys))  # one C-level copy: request threads go on writing
        present = {_ident(key, version) for key, versions in current for version in list(versions)}
        # What went first, then what came: an unversioned key written over is one of each.
        changes: list[dict] = []
        for ident in [ident for ident in self._known if ident not in present]:
            entry = self._remove(ident)
            changes.append({"key": ident[0], "gone": entry["version_id"], "blob": entry.get("blob")})
        for key, versions in current:
            for version in list(versions):
                ident = _ident(key, version)
                if ident in self._known:
                    continue
                entry = self._entry(version)
                if entry is None:
                    continue  # removed while it was read: the next save sees it gone
                self._add(key, ident, entry)
                changes.append({"key": key, "entry": entry})
        if not self._has_manifest or (compact and (self._appended or changes)) \
                or self._appended + len(changes) > COMPACT_AFTER:
            self._write_manifest()
        elif changes:
            self._append(changes)
        self._drop_blobs()
        return bool(changes)

    def _entry(self, version: Any) -> Optional[dict]:
        from moto.s3.models import FakeDeleteMarker

        at = version.last_modified.isoformat()
        if isinstance(version, FakeDeleteMarker):
            return {"marker": True, "version_id": version.version_id, "last_modified": at}
        try:
            body = version.value
        except (ValueError, OSError):  # disposed: deleted between the look at the lists and the read
            return None
        digest = hashlib.sha256(body).hexdigest()
        blob = self.folder / "blobs" / digest
        if not blob.exists():
            _write_atomic(blob, body)
        return {"version_id": version.version_id, "blob": digest, "metadata": dict(version.metadata),
                "last_modified": at}

    def _add(self, key: str, ident: tuple[str, str, str], entry: dict) -> None:
        self._keys.setdefault(key, []).append(entry)
        self._known[ident] = entry
        if "blob" in entry:
            self._refs[entry["blob"]] += 1

    def _remove(self, ident: tuple[str, str, str]) -> dict:
        entry = self._known.pop(ident)
        entries = self._keys[ident[0]]
        entries.remove(entry)
        if not entries:
            del self._keys[ident[0]]
        if "blob" in entry:
            self._refs[entry["blob"]] -= 1
        return entry

    def _drop_blobs(self, sweep: bool = False) -> None:
        """A purge (forget-customer) or a version deleted must not leave its content on this disk;
        `sweep` also removes any blob on disk no version refers to (one listing of the folder)."""
        for blob, count in list(self._refs.items()):
            if count <= 0:
                (self.folder / "blobs" / blob).unlink(missing_ok=True)
                del self._refs[blob]
        folder = self.folder / "blobs"
        if sweep and folder.is_dir():
            for blob in folder.iterdir():
                if blob.name not in self._refs and not blob.name.startswith(".tmp-"):
                    blob.unlink(missing_ok=True)

    def _append(self, changes: list[dict]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / CHANGES, "a", encoding="utf-8") as log:
            log.write("".join(json.dumps(change, sort_keys=True) + "\n" for change in changes))
        self._appended += len(changes)

    def _write_manifest(self) -> None:
        data = json.dumps({"format": FORMAT, "bucket": self.bucket, "keys": self._keys}, sort_keys=True).encode()
        _write_atomic(self.folder / MANIFEST, data)
        (self.folder / CHANGES).unlink(missing_ok=True)  # replaying it over this manifest would change nothing
        self._appended, self._has_manifest = 0, True

    # -------------------------------------------------------------- load
    def load(self) -> int:
        """Put the saved versions straight back into the (empty) bucket; returns how many."""
        keys = self._read()
        if keys is None:
            return 0
        from moto.s3.models import FakeDeleteMarker, FakeKey

        backend, bucket = moto_bucket(self.bucket)
        self._keys, self._known, self._refs = {}, {}, Counter()
        count = 0
        for key, entries in keys.items():
            versions: list[Any] = []
            kept: list[dict] = []
            for entry in entries:
                at = datetime.fromisoformat(entry["last_modified"]) if entry.get("last_modified") else None
                if entry.get("marker"):
                    if not bucket.is_versioned:
                        continue
                    version = FakeDeleteMarker(versions[-1] if versions else self._placeholder(backend, key))
                    version._version_id = entry["version_id"]  # its own id, as S3 keeps it
                else:
                    blob = self.folder / "blobs" / entry["blob"]
                    try:
                        body = blob.read_bytes()
                    except FileNotFoundError:
                        continue  # removed by a purge whose change was not recorded: the version is gone
                    version_id = entry.get("version_id") or "null"
                    version = FakeKey(name=key, value=body, account_id=backend.account_id,
                                      region_name=backend.region_name, is_versioned=bucket.is_versioned,
                                      version_id=version_id if bucket.is_versioned else "null",
                                      bucket_name=self.bucket)
                    version.set_metadata(dict(entry.get("metadata") or {}))
                version.last_modified = at or version.last_modified
                entry = {**entry, "last_modified": version.last_modified.isoformat()}
                versions.append(version)
                kept.append(entry)
                count += 1
            if not bucket.is_versioned:
                versions, kept = versions[-1:], kept[-1:]
            if versions:
                bucket.keys.setlist(key, versions)
                for version, entry in zip(versions, kept):
                    self._add(key, _ident(key, version), entry)
        # What moto holds now becomes the manifest (the changes folded in), unless it is that already.
        if self._folded or not (self.folder / MANIFEST).exists():
            self._write_manifest()
            self._drop_blobs(sweep=True)
        self._has_manifest = True
        return count

    def _placeholder(self, backend: Any, key: str) -> Any:
        from moto.s3.models import FakeKey

        return FakeKey(name=key, value=b"", account_id=backend.account_id, region_name=backend.region_name,
                       is_versioned=True, bucket_name=self.bucket)

    def _read(self) -> Optional[dict[str, list[dict]]]:
        """The manifest with the changes after it applied (a change already applied is skipped, a
        torn last line left out); None when nothing was saved."""
        path = self.folder / MANIFEST
        if not path.exists():
            return None
        saved = json.loads(path.read_text())
        keys: dict[str, list[dict]] = saved.get("keys", {})
        self._folded = saved.get("format") != FORMAT or (self.folder / CHANGES).exists()
        if saved.get("format") != FORMAT:
            keys = {key: [_from_format_1(entry) for entry in entries] for key, entries in keys.items()}
        log = self.folder / CHANGES
        if log.exists():
            for line in log.read_text(encoding="utf-8").splitlines():
                try:
                    change = json.loads(line)
                except ValueError:
                    continue  # a line torn by a crash mid-write
                entries = keys.setdefault(change["key"], [])
                if "gone" in change:
                    entries[:] = [e for e in entries if (e.get("version_id"), e.get("blob"))
                                  != (change["gone"], change.get("blob"))]
                elif change["entry"] not in entries:
                    entries.append(change["entry"])
        return {key: entries for key, entries in keys.items() if entries}


def _from_format_1(entry: dict) -> dict:
    """An entry of the HTTP mirror: boto3's user metadata and content type, in moto's own shape."""
    if entry.get("marker"):
        return {"marker": True, "version_id": entry.get("version_id"), "last_modified": None}
    metadata = {f"x-amz-meta-{k}": v for k, v in (entry.get("metadata") or {}).items()}
    metadata["content-type"] = entry.get("content_type", "binary/octet-stream")
    return {"version_id": entry.get("version_id"), "blob": entry["blob"], "metadata": metadata,
            "last_modified": None}
