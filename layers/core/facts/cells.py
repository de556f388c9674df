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
from .errors import Busy, CellReadable, CellUnreadable, FactMoved, InvalidFact, NothingToRestore, RecordUnreadable
from .fact import Cell, Fact, Removal, check_customer, check_fact, check_reason, name_problem, parse_cell, utc_now

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
        try:
            return StoredCell(parse_cell(answer["Body"], tenant, customer_id), answer["ETag"])
        except RecordUnreadable:
            raise CellUnreadable(answer["ETag"]) from None

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

    def _change(self, tenant: str, customer_id: str, change: Callable[[Cell], Cell]) -> StoredCell:
        """`change` applied to the cell as it is now, by compare-and-swap, re-reading on a lost race."""
        for attempt in range(CAS_ATTEMPTS):
            stored = self.read(tenant, customer_id)
            cell = change(stored.cell)  # FactMoved (a Conflict too) is the caller's, never retried
            try:
                return self.swap(stored, cell)
            except Conflict:
                self._sleep(random.uniform(0, 0.02 * 2 ** attempt))
        raise Busy("the memory cell kept changing; try again")

    def remove_fact(self, tenant: str, customer_id: str, name: str, *, expect: int, by: Optional[str] = None,
                    reason: Optional[str] = None, at: Optional[datetime] = None) -> StoredCell:
        """Remove one fact if it is still at revision `expect` (FactMoved otherwise, or when it is gone);
        `by` (an operator) is recorded in the cell with `reason`, the newest removals kept."""
        problem = name_problem(name)
        if problem:
            raise InvalidFact(f"name: {problem}")
        reason = check_reason(reason)

        def remove(cell: Cell) -> Cell:
            current = cell.facts.get(name)
            if current is None or current.revision != expect:
                raise FactMoved(f"fact {name!r} changed since it was read")
            removal = None if by is None else Removal(name, by, at or utc_now(), current.revision, reason)
            return cell.without(name, removal)
        return self._change(tenant, customer_id, remove)

    def trim(self, tenant: str, customer_id: str) -> tuple[StoredCell, int]:
        """An over-full cell cut to what a read serves (its most recently written facts); how many went."""
        removed = 0

        def trim(cell: Cell) -> Cell:
            nonlocal removed
            kept = cell.trimmed()
            removed = len(cell.facts) - len(kept.facts)
            return kept
        return self._change(tenant, customer_id, trim), removed

    # ------------------------------------------------------------ repairing an unreadable cell
    def _unreadable(self, tenant: str, customer_id: str) -> str:
        """The ETag of the current cell, which must not parse (CellReadable when it does, or is absent)."""
        try:
            stored = self.read(tenant, customer_id)
        except CellUnreadable as exc:
            return exc.etag  # type: ignore[return-value]  # set by read()
        raise CellReadable("this customer's memory cell reads fine: edit or remove its facts instead"
                           if stored.etag else "this customer has no memory cell: there is nothing to repair")

    def restore(self, tenant: str, customer_id: str) -> StoredCell:
        """Write back the newest earlier version of an unreadable cell that parses, if the cell is
        still what was found unreadable (Conflict otherwise); NothingToRestore when none does."""
        etag = self._unreadable(tenant, customer_id)
        key = layout.cell_key(tenant, customer_id)
        for page in awscall.pages(self._s3, "list_object_versions", Bucket=self.bucket, Prefix=key):
            for version in page.get("Versions", []):  # newest first; delete markers are listed apart
                if version["Key"] != key or version.get("IsLatest"):
                    continue
                answer = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key,
                                      VersionId=version["VersionId"], read_body=True)
                try:
                    cell = parse_cell(answer["Body"], tenant, customer_id)
                except RecordUnreadable:
                    continue
                return self.swap(StoredCell(cell, etag), cell)
        raise NothingToRestore("no earlier version of this customer's memory cell reads either: reset it")

    def reset(self, tenant: str, customer_id: str, *, clock: Callable[[], int] = time.time_ns) -> StoredCell:
        """An unreadable cell replaced by an empty one, if it is still what was found unreadable.
        Its sequence starts from the clock (microseconds), above any revision the lost cell can have
        handed out, so a proposal's recorded revision is never mistaken for a new fact's."""
        etag = self._unreadable(tenant, customer_id)
        cell = Cell(tenant, customer_id, {}, clock() // 1000)
        return self.swap(StoredCell(cell, etag), cell)

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

    def unlatch(self, tenant: str, customer_id: str, tuple_ids: tuple[str, ...]) -> None:
        """Lift the latch of a tuple (every id it may be stored under): a reopened proposal's."""
        for tuple_id in tuple_ids:
            awscall.call(self._s3, "delete_object", Bucket=self.bucket,
                         Key=layout.latch_key(tenant, customer_id, tuple_id))
