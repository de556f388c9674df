"""Backfill: replay an agent's turns, oldest first, through the live extractor, from this stack's archive
or from the engine's session exports (`from_export`, refused when it reaches further back than the
sighting markers live). Re-running is safe (a sighting is counted once); a dry run counts the model
calls and estimates their tokens; Facts is told of each replayed turn as ExtractFunction tells it.
docs/backfill-and-export.md."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator, Optional

from pydantic import BaseModel, ConfigDict, field_validator

from knowledge.errors import BeyondRetention, DailyCapReached, InvalidTurn
from knowledge.format.turn import Turn, parse_turn
from knowledge.learning.extract import Extractor, SessionRecorder
from knowledge.learning.usage import estimate_tokens
from knowledge.store.archive import TurnArchive, expiry_days
from knowledge.store.session_export import ExportLocation, SessionExport, parse_position, position
from shared.errors import KnowledgeError
from shared.model import MAX_TOKENS
from shared.names import Slug
from shared.validation import validate_object

# S3 expires an object at the first midnight UTC after its days have passed, and a live turn's
# marker is written a little after its completed_at (by the engine's clock): a day covers both.
RETENTION_MARGIN = timedelta(days=1)


@dataclass
class BackfillReport:
    turns: int = 0
    skipped: int = 0
    sent: int = 0
    rejected: Counter = field(default_factory=Counter)
    failed: int = 0
    complete: bool = True
    resume_after: Optional[str] = None
    archived: int = 0  # export turns newly archived
    recorded: int = 0  # turns Facts was told of (the agent distils)
    invalid: int = 0  # export lines that are not valid turn-complete messages
    elsewhere: int = 0  # export turns of another tenant or agent
    model_calls: int = 0  # dry run: calls the replay would make
    prompt_chars: int = 0  # dry run: characters of the prompts it would send
    stopped: Optional[str] = None  # why it stopped early: "time", or an error code (daily_cap_reached)

    @property
    def prompt_tokens(self) -> int:
        return estimate_tokens(self.prompt_chars)

    def as_dict(self) -> dict[str, Any]:
        return {"turns": self.turns, "skipped": self.skipped, "sent": self.sent, "rejected": dict(self.rejected),
                "failed": self.failed, "complete": self.complete, "resume_after": self.resume_after,
                "archived": self.archived, "recorded": self.recorded, "invalid": self.invalid,
                "elsewhere": self.elsewhere,
                "model_calls": self.model_calls, "prompt_tokens_estimate": self.prompt_tokens,
                "answer_tokens_max": self.model_calls * MAX_TOKENS, "stopped": self.stopped}

    def summary(self, dry_run: bool, daily_cap: Optional[int] = None) -> str:
        if dry_run:
            text = (f"would replay {self.turns} turn(s): {self.model_calls} model call(s), about "
                    f"{self.prompt_tokens} prompt tokens (characters/4 of each extraction prompt) and at most "
                    f"{self.model_calls * MAX_TOKENS} answer tokens; skipped {self.skipped} (knowledge off); "
                    f"failed {self.failed}")
            if daily_cap and self.model_calls:
                text += f"; at the daily cap of {daily_cap} call(s), {-(-self.model_calls // daily_cap)} day(s)"
        else:
            rejected = ", ".join(f"{reason} {n}" for reason, n in sorted(self.rejected.items())) or "none"
            text = (f"replayed {self.turns} turn(s): sent {self.sent} candidate(s); rejected: {rejected}; "
                    f"skipped {self.skipped} (knowledge off); failed {self.failed}")
        if self.archived:
            text += f"; archived {self.archived}"
        if self.recorded:
            text += f"; {self.recorded} recorded for Facts"
        if self.invalid or self.elsewhere:
            text += f"; export lines invalid {self.invalid}, of other agents {self.elsewhere}"
        if not self.complete:
            why = "out of time" if self.stopped == "time" else self.stopped
            text += f"; stopped early ({why}), resume after {self.resume_after}"
        return text


@dataclass(frozen=True)
class _Item:
    """One turn to replay: where a resume starts after it, and how to read it."""

    position: str
    load: Callable[[], Turn]
    exported: bool = False


def backfill(extractor: Extractor, archive: TurnArchive, tenant: str, agent: str, since: datetime,
             until: Optional[datetime] = None, *, dry_run: bool = False, start_after: Optional[str] = None,
             progress: Optional[Callable[[int, int], None]] = None,
             keep_going: Callable[[], bool] = lambda: True, export: Optional[SessionExport] = None,
             retention_days: Optional[int] = None, now: Optional[datetime] = None,
             sessions: Optional[SessionRecorder] = None) -> BackfillReport:
    """Replay turns, oldest first, through the live extraction code: archived ones, or with
    `export` the engine's exported ones (archived here as they are replayed, unless `dry_run`).
    `sessions` (Facts' session state) is told of each replayed turn when the agent distils."""
    report = BackfillReport()
    if dry_run:
        sessions = None
    distils = sessions is not None and extractor.distils(tenant, agent)  # read once: a replay is one agent's
    if export is not None:
        check_horizon(since, retention_days, now or datetime.now(timezone.utc))
        items: Iterator[_Item] = _exported(export, report, tenant, agent, since, until, start_after, progress)
    else:
        items = _archived(archive, tenant, agent, since, until, start_after, progress)
    last = start_after
    while True:
        try:
            item = next(items, None)
        except KnowledgeError as exc:  # the export could not be listed or read on: resume from here
            report.complete, report.resume_after, report.stopped = False, last, exc.code
            break
        if item is None:
            break
        if not keep_going():
            report.complete, report.resume_after, report.stopped = False, last, "time"
            break
        try:
            turn = item.load()
            if dry_run:
                _estimate(extractor, turn, report)
            else:
                if item.exported and archive.put(turn):
                    report.archived += 1
                # Before extraction, as on the live path: Facts needs the turn even when learning
                # from it fails or is off.
                if distils:
                    sessions.record(turn)  # type: ignore[union-attr]
                    report.recorded += 1
                elif item.exported and sessions is not None:
                    sessions.index(turn)
                outcome = extractor.process(turn, archive=False, send=True)
                report.sent += len(outcome.sightings)
                report.rejected.update(outcome.rejected)
                if outcome.status != "processed":
                    report.skipped += 1
            report.turns += 1
        except DailyCapReached as exc:  # the rest waits for a day with calls left
            report.complete, report.resume_after, report.stopped = False, last, exc.code
            break
        except KnowledgeError:  # the archive's S3 errors arrive translated
            report.failed += 1
        last = item.position
    return report


def _estimate(extractor: Extractor, turn: Turn, report: BackfillReport) -> None:
    prompt = extractor.prompt_for(turn)
    if prompt is None:
        report.skipped += 1
        return
    report.model_calls += 1
    report.prompt_chars += len(prompt[0]) + len(prompt[1])


def _archived(archive: TurnArchive, tenant: str, agent: str, since: datetime, until: Optional[datetime],
              start_after: Optional[str], progress: Optional[Callable[[int, int], None]]) -> Iterator[_Item]:
    keys = list(archive.keys(tenant, agent, since, until, start_after=start_after))
    for done, key in enumerate(keys, start=1):
        yield _Item(key, lambda key=key: archive.get(key))
        if progress:
            progress(done, len(keys))


def _exported(export: SessionExport, report: BackfillReport, tenant: str, agent: str, since: datetime,
              until: Optional[datetime], start_after: Optional[str],
              progress: Optional[Callable[[int, int], None]]) -> Iterator[_Item]:
    """The export's turns of this agent in the window, in key and line order; progress by object."""
    start_key, start_line = parse_position(start_after, export.location) if start_after else (None, 0)
    objects = export.objects(start_key)
    for done, (key, _size) in enumerate(objects, start=1):
        for number, line in export.lines(key):
            if key == start_key and number <= start_line:
                continue
            try:
                if line is None:
                    raise InvalidTurn("line too long")
                turn = parse_turn(line)
            except InvalidTurn:
                report.invalid += 1  # counted, never quoted: the line may hold a customer's words
                continue
            if (turn.tenant, turn.agent) != (tenant, agent):
                report.elsewhere += 1
                continue
            if turn.completed_at < since or (until is not None and turn.completed_at >= until):
                continue
            yield _Item(position(key, number), lambda turn=turn: turn, exported=True)
        if progress:
            progress(done, len(objects))


def check_horizon(since: datetime, retention_days: Optional[int], now: datetime) -> None:
    """Refuse an export replay that starts before the sessions bucket's markers are sure to be kept."""
    if retention_days is None:
        return
    horizon = now - timedelta(days=retention_days) + RETENTION_MARGIN
    if since < horizon:
        raise BeyondRetention(
            f"since is older than SESSIONS_BUCKET keeps sighting markers ({retention_days} days, less a day): a "
            f"turn before {horizon:%Y-%m-%dT%H:%M:%SZ} may already have been learned from and its markers "
            "expired, so replaying it could count it twice. Start at or after that time, or raise RetentionDays "
            "first")


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
    from_export: Optional[str] = None

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
        if self.from_export is not None:
            location = ExportLocation.parse(self.from_export)
            if self.start_after is not None:
                parse_position(self.start_after, location)
        elif self.start_after is not None and not self.start_after.startswith(
                TurnArchive.prefix(self.tenant, self.agent)):
            raise ValueError("start_after must be a key of this agent's archive (from an earlier answer)")

    @property
    def export(self) -> Optional[ExportLocation]:
        return ExportLocation.parse(self.from_export) if self.from_export is not None else None


def parse_backfill_request(event: Any) -> BackfillRequest:
    try:
        return validate_object(BackfillRequest, event, KnowledgeError, "the backfill event")
    except ValueError as exc:  # model_post_init's cross-field checks
        raise KnowledgeError(str(exc)) from None


class Backfiller:
    """BackfillFunction's service: one request, parsed, run against the archive or an export (the
    sessions bucket's retention read for an export replay), with the function's extractor."""

    def __init__(self, extractor: Extractor, archive: TurnArchive, s3: Any, sessions_bucket: str,
                 sessions: Optional[SessionRecorder] = None):
        self.extractor, self.archive = extractor, archive
        self._s3, self._sessions_bucket, self._sessions = s3, sessions_bucket, sessions

    def run(self, event: Any, keep_going: Callable[[], bool]) -> tuple[BackfillRequest, BackfillReport]:
        request = parse_backfill_request(event)
        export = SessionExport(self._s3, request.export) if request.export else None
        # How long SESSIONS_BUCKET keeps sighting markers: an export replay must not reach further back.
        retention = expiry_days(self._s3, self._sessions_bucket) if export else None
        report = backfill(self.extractor, self.archive, request.tenant, request.agent, request.since, request.until,
                          dry_run=request.dry_run, start_after=request.start_after, export=export,
                          retention_days=retention, sessions=self._sessions, keep_going=keep_going)
        return request, report
