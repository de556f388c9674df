"""Backfill: replay an agent's archived turns, oldest first, through the live extractor.

The recovery path for anything missed. Re-running is safe: consolidation counts a
sighting (tenant, agent, session, turn, name) once, however often it arrives.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict, field_validator

from .errors import KnowledgeError
from .adapters import TurnArchive
from .extract import Extractor
from .names import Slug
from .validation import validate_object


@dataclass
class BackfillReport:
    turns: int = 0
    skipped: int = 0
    sent: int = 0
    rejected: Counter = field(default_factory=Counter)
    failed: int = 0
    complete: bool = True
    resume_after: Optional[str] = None

    def as_dict(self) -> dict[str, Any]:
        return {"turns": self.turns, "skipped": self.skipped, "sent": self.sent, "rejected": dict(self.rejected),
                "failed": self.failed, "complete": self.complete, "resume_after": self.resume_after}

    def summary(self, dry_run: bool) -> str:
        verb = "would send" if dry_run else "sent"
        rejected = ", ".join(f"{reason} {n}" for reason, n in sorted(self.rejected.items())) or "none"
        text = (f"replayed {self.turns} turn(s): {verb} {self.sent} candidate(s); rejected: {rejected}; "
                f"skipped {self.skipped} (knowledge off); failed {self.failed}")
        if not self.complete:
            text += f"; stopped early, resume after {self.resume_after}"
        return text


def backfill(extractor: Extractor, archive: TurnArchive, tenant: str, agent: str, since: datetime,
             until: Optional[datetime] = None, *, dry_run: bool = False, start_after: Optional[str] = None,
             progress: Optional[Callable[[int, int], None]] = None,
             keep_going: Callable[[], bool] = lambda: True) -> BackfillReport:
    """Replay archived turns, oldest first, through the live extraction code."""
    report = BackfillReport()
    keys = list(archive.keys(tenant, agent, since, until, start_after=start_after))
    for done, key in enumerate(keys, start=1):
        if not keep_going():
            report.complete, report.resume_after = False, keys[done - 2] if done > 1 else start_after
            break
        try:
            outcome = extractor.process(archive.get(key), archive=False, send=not dry_run)
        except KnowledgeError:  # the archive's S3 errors arrive translated
            report.failed += 1
        else:
            report.turns += 1
            if outcome.status != "processed":
                report.skipped += 1
            report.sent += len(outcome.sightings)
            report.rejected.update(outcome.rejected)
        if progress:
            progress(done, len(keys))
    return report


def parse_moment(value: str, field_name: str) -> datetime:
    """An ISO 8601 time with a zone (a bare date means midnight UTC)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise KnowledgeError(f"{field_name}: not an ISO 8601 time (for example 2026-08-01T00:00:00Z)") from None
    if moment.tzinfo is None:
        if len(value) == 10:
            return moment.replace(tzinfo=timezone.utc)
        raise KnowledgeError(f"{field_name}: must carry a time zone (for example 2026-08-01T00:00:00Z)")
    return moment.astimezone(timezone.utc)



class BackfillRequest(BaseModel):
    """The BackfillFunction event (and the CLI's arguments)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Slug = "default"
    agent: Slug
    since: datetime
    until: Optional[datetime] = None
    dry_run: bool = False
    start_after: Optional[str] = None


    @field_validator("since", "until", mode="before")
    @classmethod
    def _moment(cls, value: Any, info: Any) -> Any:
        return parse_moment(value, info.field_name) if isinstance(value, str) else value

    @field_validator("since", "until")
    @classmethod
    def _aware(cls, value: Optional[datetime]) -> Optional[datetime]:
        if value is not None and value.tzinfo is None:
            raise ValueError("must carry a time zone (for example 2026-08-01T00:00:00Z)")
        return value

    def model_post_init(self, _context: Any) -> None:
        if self.until is not None and self.until <= self.since:
            raise ValueError("until must be later than since")
        if self.start_after is not None and not self.start_after.startswith(
                TurnArchive.prefix(self.tenant, self.agent)):
            raise ValueError("start_after must be a key of this agent's archive (from an earlier answer)")


def parse_backfill_request(event: Any) -> BackfillRequest:
    try:
        return validate_object(BackfillRequest, event, KnowledgeError, "the backfill event")
    except ValueError as exc:  # model_post_init's cross-field checks
        raise KnowledgeError(str(exc)) from None
