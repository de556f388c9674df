"""The change journal: one empty object per concept or knowledge.yaml write, named for when and as what it was
written, so a warm index learns what changed from one listing (knowledge.recall.warm)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Optional

from knowledge.store.keys import etag_token, is_name, journal_prefix, journal_stamp
from shared import deadline
from shared.errors import KnowledgeError

CONFIG_CHANGE = "knowledge.yaml"  # the journal's name for a change to the agent's config
VOCABULARY_CHANGE = "vocabulary.yaml"  # and to its vocabulary (knowledge.format.vocabulary)
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


def _etag_part(etag: Optional[str]) -> str:
    token = DELETED if etag is None else etag_token(etag)
    return token if re.fullmatch(r"[A-Za-z0-9-]{1,64}", token) else "unknown"


@dataclass(frozen=True)
class Change:
    """One journal entry: `name` (a concept, CONFIG_CHANGE or VOCABULARY_CHANGE) was written at about `stamp`."""

    key: str
    stamp: str
    name: str
    etag: Optional[str]  # the version written, without quotes; None for a delete


class ChangeJournal:
    """The journal half of ConceptStore: it writes and lists through the store's `_call` and `_paginate`."""

    def changes_since(self, tenant: str, agent: str, since: float) -> list[Change]:
        """Journal entries stamped after `since` (epoch seconds), oldest first: one listing
        request per thousand entries, none of them read."""
        prefix = journal_prefix(tenant, agent)
        out = []
        for item in self._paginate("list_objects_v2", "Contents", Prefix=prefix,
                                   StartAfter=prefix + journal_stamp(max(since, 0.0))):
            parts = item["Key"][len(prefix):].split("_")
            if len(parts) == 3 and (parts[2] in (CONFIG_CHANGE, VOCABULARY_CHANGE) or is_name(parts[2])):
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
