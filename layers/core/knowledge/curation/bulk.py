"""Bulk actions on the studio list's selected rows: mark reviewed, delete (and its undo), change type,
move to shared (knowledge.curation.bulk_share). A request that breaks a limit is refused whole before
anything is done; otherwise each row is acted on alone and answered with its own outcome, so a failed
row never hides the others. docs/studio.md, `POST /concepts/bulk`."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from knowledge.curation.bulk_share import DONE as SHARE_DONE
from knowledge.curation.bulk_share import READY, BulkShare
from knowledge.curation.reviews import parse_seen_at
from knowledge.errors import InvalidBulk, InvalidSeenAt, TooManyRows
from knowledge.format.concept import TYPES, parse
from knowledge.store.keys import SHARED
from shared import deadline
from shared.errors import Conflict, InvalidConcept, NotFound
from shared.httpapi import Operator
from shared.names import check_slug

BULK_MAX = 500  # rows per action: at most a few S3 requests each, well inside the API's 29 s
ACTIONS = ("reviewed", "delete", "undelete", "type", "share")
WORKERS = 8


def checked(action: Any, rows: Any, type_: Any = None, dry_run: Any = False) -> list[dict[str, Any]]:
    """The rows of a valid request, each name checked before it reaches a key."""
    if action not in ACTIONS:
        raise InvalidBulk(f"action must be one of {', '.join(ACTIONS)}")
    if not isinstance(rows, list) or not rows:
        raise InvalidBulk("rows must name at least one concept")
    if len(rows) > BULK_MAX:
        raise TooManyRows(f"at most {BULK_MAX} rows per action (got {len(rows)}): select fewer, or act in batches")
    if action == "type" and type_ not in TYPES:
        raise InvalidBulk(f"type must be one of {', '.join(TYPES)}")
    if action != "type" and type_ is not None:
        raise InvalidBulk("type is only for the action type")
    if dry_run not in (True, False) or (dry_run and action != "share"):
        raise InvalidBulk("dry_run is only for the action share")
    seen: set[str] = set()
    for i, row in enumerate(rows):
        name = check_slug(f"rows[{i}].name", row.get("name"))
        if name in seen:
            raise InvalidBulk(f"rows[{i}]: {name!r} is named twice")
        seen.add(name)
        if action == "reviewed":
            try:
                row["at"] = parse_seen_at(row.get("written_at"))
            except InvalidSeenAt:
                raise InvalidBulk(f"rows[{i}].written_at must be the version's time as its row showed it") from None
    return rows


class Bulk:
    """Over the studio (knowledge.curation.studio.Studio) and the review API (reviews.ReviewApi)."""

    def __init__(self, studio: Any, reviews: Any, *, workers: int = WORKERS, sharing: Any = None,
                 queue: Any = None, utility_model: Optional[str] = None):
        """`sharing` (sharing.Sharing; None: no move to shared), `queue` (the studio's PolicyReviewQueue,
        or None) and `utility_model`: what a move to shared copies with, queues and costs."""
        self._studio, self._reviews, self._workers = studio, reviews, max(1, workers)
        self._share = None if sharing is None else BulkShare(sharing, queue, utility_model)

    def act(self, op: Operator, tenant: str, agent: str, action: Any, rows: Any, type_: Any = None,
            dry_run: Any = False) -> dict[str, Any]:
        op.check(tenant)
        rows = checked(action, rows, type_, dry_run)
        if action == "reviewed":
            return self._reviewed(op, tenant, agent, rows)
        if action == "share":
            return self._shared(op, tenant, agent, [row["name"] for row in rows], dry_run is True)
        one: Callable[[str], str] = {
            "delete": lambda name: self._delete(op, tenant, agent, name),
            "undelete": lambda name: self._undelete(op, tenant, agent, name),
            "type": lambda name: self._retype(op, tenant, agent, name, type_),
        }[action]
        names = [row["name"] for row in rows]
        self._studio.config(op, tenant, agent)  # UnknownAgent before anything is written
        with ThreadPoolExecutor(max_workers=min(self._workers, len(names))) as pool:
            outcomes = list(pool.map(deadline.carry(one), names))
        return answer(action, [{"name": n, "outcome": o} for n, o in zip(names, outcomes)])

    def _shared(self, op: Operator, tenant: str, agent: str, names: list[str], dry_run: bool) -> dict[str, Any]:
        if self._share is None:
            raise InvalidBulk("move to shared is not offered by this studio")
        if agent == SHARED:
            raise InvalidBulk("move to shared is an agent's action: these concepts are shared already")
        self._studio.config(op, tenant, agent)  # UnknownAgent before anything is read or written
        moved = self._share.act(op, tenant, agent, names, dry_run)
        return {**answer("share", moved.pop("rows"), dry_run), **moved}

    def _reviewed(self, op: Operator, tenant: str, agent: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
        state, covered = self._reviews.mark_many(op, tenant, agent, {row["name"]: row["at"] for row in rows})
        out = answer("reviewed", [{"name": row["name"], "outcome": "unchanged" if row["name"] in covered
                                   else "reviewed"} for row in rows])
        out["review"] = state
        return out

    def _delete(self, op: Operator, tenant: str, agent: str, name: str) -> str:
        try:
            self._studio.delete(op, tenant, agent, name)
        except NotFound:
            return "gone"
        return "deleted"

    def _undelete(self, op: Operator, tenant: str, agent: str, name: str) -> str:
        try:
            self._studio.undelete(op, tenant, agent, name)
        except NotFound:
            return "not_deleted"
        except Conflict:
            return "changed_meanwhile"
        return "restored"

    def _retype(self, op: Operator, tenant: str, agent: str, name: str, type_: str) -> str:
        try:
            current = self._studio.get(op, tenant, agent, name)
        except NotFound:
            return "gone"
        concept = parse(current["markdown"])
        if concept.type == type_:
            return "unchanged"
        try:
            self._studio.save(op, tenant, agent, name, concept.replace(type=type_).render(), current["etag"])
        except Conflict:
            return "changed_meanwhile"
        except InvalidConcept:
            return "invalid"  # e.g. a field the new type does not allow
        return "changed"


def answer(action: str, rows: list[dict[str, Any]], dry_run: bool = False) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    done = {"reviewed": ("reviewed", "unchanged"), "delete": ("deleted",), "undelete": ("restored",),
            "type": ("changed", "unchanged"), "share": (READY,) if dry_run else SHARE_DONE}[action]
    return {"action": action, "rows": rows, "counts": counts, "complete": all(r["outcome"] in done for r in rows)}
