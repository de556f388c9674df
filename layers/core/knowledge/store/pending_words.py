"""Concepts whose words wait for the tenant's next model budget (docs/contract.md, "Words pending").

When the tenant's daily model calls run out, a words job's remaining concepts are never dropped: each
gets an empty object at `{agent prefix}words-pending/{concept}` in KNOWLEDGE_BUCKET (its key is the
record: a concept deferred twice is one object). WordsPendingFunction's daily schedule queues them
again, batched, once the day has turned; the job that teaches a concept deletes its record. A listing
of the prefix (no object read) is what the studio shows as "words pending" beside the concept.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional

from knowledge.store.keys import agent_prefix, is_name
from shared import awscall
from shared.names import check_slug

_LIST_PAGE = 1000
_DELETE_BATCH = 1000  # S3's most keys in one DeleteObjects


def pending_prefix(tenant: str, agent: str) -> str:
    return f"{agent_prefix(tenant, agent)}words-pending/"


class PendingWords:
    """The scope's (an agent's, or the tenant's shared) concepts whose words wait, in KNOWLEDGE_BUCKET."""

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    def put(self, tenant: str, agent: str, names: Iterable[str]) -> int:
        """Each of `names` recorded as waiting (again: the same object); how many."""
        count = 0
        for name in names:
            awscall.call(self._s3, "put_object", Bucket=self.bucket, Body=b"", ContentType="text/plain",
                         Key=pending_prefix(tenant, agent) + check_slug("name", name))
            count += 1
        return count

    def names(self, tenant: str, agent: str, limit: Optional[int] = None) -> list[str]:
        """The waiting concepts by name (a listing; an object someone put there by hand is left out)."""
        found = []
        for name in self._iter(tenant, agent):
            found.append(name)
            if limit is not None and len(found) >= limit:
                break
        return found

    def _iter(self, tenant: str, agent: str) -> Iterator[str]:
        prefix, token = pending_prefix(tenant, agent), None
        while True:
            page = awscall.call(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix, MaxKeys=_LIST_PAGE,
                                **({"ContinuationToken": token} if token else {}))
            for item in page.get("Contents", []):
                name = item["Key"][len(prefix):]
                if is_name(name):
                    yield name
            token = page.get("NextContinuationToken")
            if not token:
                return

    def among(self, tenant: str, agent: str, names: Iterable[str]) -> set[str]:
        """Which of `names` wait: one listing from the first of them to the last (nothing waiting: one
        request answering nothing)."""
        wanted = sorted(set(names))
        asked = set(wanted)
        if not wanted:
            return set()
        prefix, found, token = pending_prefix(tenant, agent), set(), None
        start = {"StartAfter": prefix + wanted[0][:-1]}  # a prefix of the first name sorts just before it
        while True:
            page = awscall.call(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix, MaxKeys=_LIST_PAGE,
                                **({"ContinuationToken": token} if token else start))
            for item in page.get("Contents", []):
                name = item["Key"][len(prefix):]
                if name > wanted[-1]:
                    return found
                if name in asked:
                    found.add(name)
            token = page.get("NextContinuationToken")
            if not token:
                return found

    def done(self, tenant: str, agent: str, names: Iterable[str]) -> None:
        """`names` no longer wait (a name that was not waiting is no error)."""
        keys = [pending_prefix(tenant, agent) + check_slug("name", n) for n in names]
        for start in range(0, len(keys), _DELETE_BATCH):
            awscall.call(self._s3, "delete_objects", Bucket=self.bucket,
                         Delete={"Objects": [{"Key": k} for k in keys[start:start + _DELETE_BATCH]], "Quiet": True})
