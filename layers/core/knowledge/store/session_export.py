"""The engine's session exports in S3, read for backfill: one JSON turn-complete message per line.

An export is every object under one prefix (`s3://bucket/prefix/`), read in key order and each
object line by line (`.gz` objects are gunzipped as they stream), so memory holds one line at a
time whatever the object's size. A position is `{key}#{line}`: the lines up to and including
`line` of `key` are done.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.errors import InvalidExport
from knowledge.format.turn import TURN_MAX_BYTES
from shared import awscall

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
CHUNK = 64 * 1024
TOO_LONG = None  # what `lines` yields for a line over TURN_MAX_BYTES: never held in memory whole


@dataclass(frozen=True)
class ExportLocation:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> "ExportLocation":
        """`s3://bucket/prefix/` (the prefix may be empty: the whole bucket)."""
        if not isinstance(url, str) or not url.startswith("s3://"):
            raise InvalidExport("from_export: must be written s3://bucket/prefix/")
        bucket, _, prefix = url[len("s3://"):].partition("/")
        if not _BUCKET.fullmatch(bucket):
            raise InvalidExport("from_export: not a valid S3 bucket name")
        if len(prefix) > 900 or any(ord(c) < 32 for c in prefix) or ".." in prefix.split("/"):
            raise InvalidExport("from_export: not a usable key prefix")
        return cls(bucket, prefix)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def position(key: str, line: int) -> str:
    return f"{key}#{line}"


def parse_position(value: str, location: ExportLocation) -> tuple[str, int]:
    """A `{key}#{line}` from an earlier answer, checked to belong to this export."""
    key, _, line = value.rpartition("#")
    if not key.startswith(location.prefix) or not line.isdigit():
        raise InvalidExport("start_after must be a position in this export (from an earlier answer)")
    return key, int(line)


class SessionExport:
    def __init__(self, s3: Any, location: ExportLocation):
        self._s3, self.location = s3, location

    def objects(self, start_key: Optional[str] = None) -> list[tuple[str, int]]:
        """(key, size) of every object from `start_key` on (inclusive), in key order."""
        request: dict[str, Any] = {"Bucket": self.location.bucket, "Prefix": self.location.prefix}
        if start_key:
            request["StartAfter"] = start_key[:-1] + chr(ord(start_key[-1]) - 1)
        found = []
        for page in awscall.pages(self._s3, "list_objects_v2", **request):
            for item in page.get("Contents", []):
                if not item["Key"].endswith("/") and (not start_key or item["Key"] >= start_key):
                    found.append((item["Key"], int(item.get("Size", 0))))
        return found

    def lines(self, key: str) -> Iterator[tuple[int, Optional[bytes]]]:
        """(line number from 1, the line) for each non-empty line; TOO_LONG for a line over the
        turn's size limit."""
        body = awscall.call(self._s3, "get_object", Bucket=self.location.bucket, Key=key)["Body"]
        stream = gzip.GzipFile(fileobj=body) if key.endswith(".gz") else body
        try:
            yield from _split(stream)
        except (BotoCoreError, ClientError) as error:  # the connection dropped mid-object
            raise awscall.translate(error) from None
        except (OSError, EOFError):  # not gzip after all, or cut short
            raise InvalidExport(f"export object {key} is not readable as {'gzip' if key.endswith('.gz') else 'text'}"
                                ) from None
        finally:
            body.close()


def _split(stream: Any) -> Iterator[tuple[int, Optional[bytes]]]:
    number, pending, skipping = 0, bytearray(), False
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping:
                pending += piece
                if len(pending) > TURN_MAX_BYTES:
                    skipping, pending = True, bytearray()
            if end < 0:
                break
            number += 1
            if skipping:
                yield number, TOO_LONG
            elif pending.strip():
                yield number, bytes(pending)
            pending, skipping, start = bytearray(), False, end + 1
    if skipping:
        yield number + 1, TOO_LONG
    elif pending.strip():
        yield number + 1, bytes(pending)
