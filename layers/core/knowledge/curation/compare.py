"""Two versions of a concept in one answer, for the history's "Changes" and "Against current": both
are read at once in one request, so a diff costs the page one round trip. Two requests from the page
would queue one behind the other in a busy container, or start a second (cold) container on AWS."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from knowledge.curation.documents import ANSWER_MARKDOWN_MAX_BYTES, too_large_to_open
from shared import deadline
from shared.httpapi import Operator


class VersionReader(Protocol):
    def version(self, op: Operator, tenant: str, agent: str, name: str, version_id: str) -> dict[str, Any]: ...


class VersionPairs:
    """Two versions side by side, each read as the studio reads one version (its checks, its answer)."""

    def __init__(self, studio: VersionReader):
        self._studio = studio

    def read(self, op: Operator, tenant: str, agent: str, name: str, version_id: str, against: str
             ) -> dict[str, Any]:
        """`{version, against}`, read at once. A pair whose texts would not fit in one answer together
        is TooLargeToOpen, as one version too large to send is."""
        asked = [version_id] if against == version_id else [version_id, against]
        with ThreadPoolExecutor(max_workers=len(asked)) as pool:
            read = list(pool.map(deadline.carry(lambda vid: self._studio.version(op, tenant, agent, name, vid)),
                                 asked))
        texts = [answer["markdown"] for answer in read]
        # Each fits alone (the single read checks it); together they may not, only when one is over the
        # format's size. At most 12 bytes per character JSON-encoded: most pairs are cleared unencoded.
        if sum(len(t) for t in texts) * 12 > ANSWER_MARKDOWN_MAX_BYTES and \
                sum(len(json.dumps(t)) for t in texts) > ANSWER_MARKDOWN_MAX_BYTES:
            raise too_large_to_open(name, max(len(t.encode("utf-8", "replace")) for t in texts))
        return {"version": read[0], "against": read[-1]}
