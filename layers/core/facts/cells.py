"""The customer's memory cell in KNOWLEDGE_BUCKET: read, and every write a compare-and-swap.

Beside it, the latches: one empty object per rejected or dismissed (name, value), named by
its keyed hash, kept in the versioned bucket so a latch outlives the proposal that set it.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Optional

from shared import awscall
from shared.errors import Conflict, NotFound

from . import layout
from .errors import Busy, FactMoved
from .fact import Cell, Fact, check_customer, check_fact, parse_cell, utc_now

CAS_ATTEMPTS = 8
CONTENT_TYPE = "application/json"
ANY = object()  # write_fact: whatever the fact's revision is


@dataclass(frozen=True)
class StoredCell:
    cell: Cell
    etag: Optional[str]  # None: no cell yet (the first write is create-only)


class MemoryCells:
    def __init__(self, s3: Any, bucket: str, *, sleep: Callable[[float], None] = time.sleep):
        self._s3, self.bucket, self._sleep = s3, bucket, sleep

    def read(self, tenant: str, customer_id: str) -> StoredCell:
        check_customer(customer_id)
        try:
            answer = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=layout.cell_key(tenant, customer_id),
                                  read_body=True)
        except NotFound:
            return StoredCell(Cell(tenant, customer_id), None)
        return StoredCell(parse_cell(answer["Body"], tenant, customer_id), answer["ETag"])

    def swap(self, stored: StoredCell, cell: Cell) -> StoredCell:
        """Write `cell` over `stored` only if nothing was written since it was read (Conflict otherwise)."""
        condition = {"IfMatch": stored.etag} if stored.etag else {"IfNoneMatch": "*"}
        answer = awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=layout.cell_key(cell.tenant, cell.customer_id),
                              Body=cell.body(), ContentType=CONTENT_TYPE, **condition)
        return StoredCell(cell, answer["ETag"])

    def write_fact(self, tenant: str, customer_id: str, name: str, value: str, origin: str, *,
                   expect: Any = ANY, at: Optional[datetime] = None) -> Fact:
        """Set one fact, re-reading on a lost race. `expect` (a revision, or None for "absent")
        makes it conditional on that fact alone: FactMoved when it is no longer so."""
        name, value = check_fact(name, value)
        for attempt in range(CAS_ATTEMPTS):
            stored = self.read(tenant, customer_id)
            current = stored.cell.facts.get(name)
            if expect is not ANY and (current.revision if current else None) != expect:
                raise FactMoved(f"fact {name!r} changed since it was read")
            cell = stored.cell.with_fact(name, value, origin, at or utc_now())
            try:
                return self.swap(stored, cell).cell.facts[name]
            except Conflict:
                self._sleep(random.uniform(0, 0.02 * 2 ** attempt))
        raise Busy("the memory cell kept changing; try again")

    # ------------------------------------------------------------ latches
    def latched(self, tenant: str, customer_id: str) -> frozenset[str]:
        """The tuple ids latched for this customer (one listing)."""
        prefix = layout.latch_prefix(tenant, customer_id)
        return frozenset(item["Key"][len(prefix):]
                         for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix)
                         for item in page.get("Contents", []))

    def latch(self, tenant: str, customer_id: str, tuple_id: str) -> None:
        # Create-only: a second latch of the same tuple adds no version.
        awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket,
                         Key=layout.latch_key(tenant, customer_id, tuple_id), Body=b"", IfNoneMatch="*")
