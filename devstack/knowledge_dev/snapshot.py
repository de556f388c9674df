"""Keep the local stack's S3 data across restarts (moto holds state in memory only).

Every object version, delete marker and its metadata is written to a data folder
(content-addressed blobs plus one manifest per bucket) and replayed, oldest first,
into a fresh moto server on start. S3 assigns new version ids on replay, so a key whose
last segment is an old version id (the store's deletion records) is renamed to the new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from botocore.exceptions import ClientError

MANIFEST = "manifest.json"
_GONE = frozenset({"NoSuchKey", "NoSuchVersion", "404"})


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


class BucketSnapshot:
    """Mirror of one bucket in `folder`; `save()` fetches only versions it has not seen."""

    def __init__(self, s3: Any, bucket: str, folder: Path):
        self._s3, self.bucket, self.folder = s3, bucket, folder
        self._seen: dict[tuple[str, str, str], dict] = {}  # (key, version id, etag) -> entry
        self._last: bytes = b""

    # -------------------------------------------------------------- save
    def save(self) -> bool:
        """Write the manifest if anything changed; True when it did."""
        keys: dict[str, list[tuple[datetime, int, dict]]] = {}
        sequence = 0
        paginator = self._s3.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=self.bucket):
            for kind in ("Versions", "DeleteMarkers"):
                for item in page.get(kind, []):
                    sequence += 1
                    entry = self._entry(item, kind == "DeleteMarkers")
                    if entry is None:
                        continue  # gone between the listing and the read: the next save lists it gone
                    # S3 lists each key's versions newest first: a falling sequence within a key.
                    keys.setdefault(item["Key"], []).append((item["LastModified"], -sequence, entry, item.get("IsLatest")))
        manifest = {}
        for key, entries in sorted(keys.items()):
            ordered = sorted(entries, key=lambda e: (bool(e[3]), e[0], e[1]))
            manifest[key] = [entry for *_, entry, _latest in ordered]
        data = json.dumps({"bucket": self.bucket, "keys": manifest}, indent=1, sort_keys=True).encode()
        if data == self._last:
            return False
        _write_atomic(self.folder / MANIFEST, data)
        self._last = data
        self._drop_unreferenced(manifest)
        return True

    def _drop_unreferenced(self, manifest: dict[str, list[dict]]) -> None:
        """Remove blobs no version refers to any more: a purge (forget-customer) or a lifecycle
        deletion must not leave the content on this disk."""
        wanted = {entry["blob"] for entries in manifest.values() for entry in entries if "blob" in entry}
        self._seen = {k: v for k, v in self._seen.items() if v["blob"] in wanted}
        folder = self.folder / "blobs"
        if not folder.is_dir():
            return
        for blob in folder.iterdir():
            if blob.name not in wanted and not blob.name.startswith(".tmp-"):
                blob.unlink(missing_ok=True)

    def _entry(self, item: dict, marker: bool) -> Optional[dict]:
        """The manifest entry of one listed version, its blob written; None when the version was
        deleted after the listing (the stack's handlers keep writing and deleting while it saves)."""
        if marker:
            return {"marker": True, "version_id": item.get("VersionId")}
        cache_key = (item["Key"], item.get("VersionId") or "null", item.get("ETag", ""))
        if cache_key not in self._seen:
            kwargs = {"VersionId": item["VersionId"]} if item.get("VersionId") not in (None, "null") else {}
            try:
                answer = self._s3.get_object(Bucket=self.bucket, Key=item["Key"], **kwargs)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in _GONE:
                    return None
                raise
            body = answer["Body"].read()
            digest = hashlib.sha256(body).hexdigest()
            blob = self.folder / "blobs" / digest
            if not blob.exists():
                _write_atomic(blob, body)
            self._seen[cache_key] = {
                "version_id": item.get("VersionId"),
                "blob": digest,
                "metadata": answer.get("Metadata", {}),
                "content_type": answer.get("ContentType", "binary/octet-stream"),
            }
        return self._seen[cache_key]

    # -------------------------------------------------------------- load
    def load(self) -> int:
        """Replay a saved manifest into the (empty) bucket; returns the number of entries."""
        path = self.folder / MANIFEST
        if not path.exists():
            return 0
        manifest = json.loads(path.read_text()).get("keys", {})
        old_ids = {e.get("version_id") for entries in manifest.values() for e in entries} - {None, "null"}
        renamed: dict[str, str] = {}
        # Keys named after a version id go last, once the new ids are known.
        ordered = sorted(manifest.items(), key=lambda item: item[0].rsplit("/", 1)[-1] in old_ids)
        count = 0
        for key, entries in ordered:
            head, _, last = key.rpartition("/")
            if last in renamed:
                key = f"{head}/{renamed[last]}"
            for entry in entries:
                count += 1
                if entry.get("marker"):
                    answer = self._s3.delete_object(Bucket=self.bucket, Key=key)
                else:
                    body = (self.folder / "blobs" / entry["blob"]).read_bytes()
                    answer = self._s3.put_object(Bucket=self.bucket, Key=key, Body=body,
                                                 Metadata=entry.get("metadata", {}),
                                                 ContentType=entry["content_type"])
                if entry.get("version_id") and answer.get("VersionId"):
                    renamed[entry["version_id"]] = answer["VersionId"]
        self.save()  # remember the new version ids so the next save fetches nothing
        return count
