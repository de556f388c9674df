"""The words summary: every concept's learned words of one agent in one object, beside its snapshot
(`{agent prefix}concepts-index/words`), so that the studio's words page answers 5,000 concepts from
one read instead of 5,000. It is a cache, never the truth: each entry carries the ETag of the
concept it was read from, and a reader re-reads any concept whose ETag moved on
(knowledge.curation.words_page). Written conditionally, like the snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from knowledge.store.keys import words_summary_key
from shared.errors import Conflict, NotFound

WORDS_CONTENT_TYPE = "application/octet-stream"


@dataclass(frozen=True)
class StoredWordsSummary:
    data: bytes
    etag: str


class WordsSummaryFile:
    """Reads and writes through the store's `_call`."""

    def get_words_summary(self: Any, tenant: str, agent: str) -> Optional[StoredWordsSummary]:
        """The agent's stored words summary, or None when there is none."""
        try:
            answer = self._call("get_object", Bucket=self.bucket, Key=words_summary_key(tenant, agent),
                                read_body=True)
        except NotFound:
            return None
        return StoredWordsSummary(answer["Body"], answer["ETag"])

    def put_words_summary(self: Any, tenant: str, agent: str, data: bytes, *, if_match: Optional[str]) -> str:
        """Write it over the one read (`if_match`), or create it (None); Conflict when another writer
        came first. Returns the new ETag."""
        condition = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        try:
            answer = self._call("put_object", Bucket=self.bucket, Key=words_summary_key(tenant, agent), Body=data,
                                ContentType=WORDS_CONTENT_TYPE, **condition)
        except (Conflict, NotFound):
            raise Conflict("the words summary changed since it was read", None) from None
        return answer["ETag"]
