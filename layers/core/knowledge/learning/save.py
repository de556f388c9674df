"""save_knowledge: an insight an agent saves mid-session, learned exactly as extraction learns one — the
same gates, stamped as a first sighting of its turn, sent to the CandidatesQueue with extraction's
identity (so saving it again, or extraction finding it, is one sighting). Refused when the agent does
not learn. docs/retrieval.md, "search_knowledge and save_knowledge"."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace as replaced
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from knowledge.errors import Gated, LearningOff, SaveLimit
from knowledge.format.concept import DESCRIPTION_MAX
from knowledge.format.config import ConceptType
from knowledge.format.events import SAVED, detail
from knowledge.format.evidence import STAMP
from knowledge.format.sighting import Sighting
from knowledge.format.turn import Turn
from knowledge.learning.extract import evidence_ref, stamp
from knowledge.learning.gates import EVIDENCE_MAX, EVIDENCE_NOT_FOUND, NAME_RAW_MAX, SCHEMA, gate
from knowledge.recall.answers import Tool, tool_input
from knowledge.store.archive import TurnArchive
from knowledge.store.config_cache import ConfigCache
from knowledge.store.queues import CandidateSink
from knowledge.store.saves import (
    NOT_SENT,
    QUEUED,
    SAVE_ID_PATTERN,
    SaveRecord,
    SaveRecords,
    new_save_id,
    sighting_part,
)
from shared import deadline
from shared.errors import (
    EventPublishError,
    InvalidConcept,
    InvalidRequest,
    KnowledgeError,
    NotFound,
    SettingsError,
    UnknownAgent,
)
from shared.events import Events
from shared.names import SessionId, Slug
from shared.telemetry import Counters
from shared.validation import validate_object

# The session's turns a save may quote: those archived in the last day, the most recent first.
LOOKBACK = timedelta(hours=24)
# How far back a refused save looks for the session's last turn, to say which it was and when.
LAST_SEEN_LOOKBACK = timedelta(days=7)
LAST_SEEN_KEYS = 5000
TURNS_READ = 20
SAVE_RESERVE = 1.5  # seconds kept for the answer
BODY_MAX_CHARS = 16 * 1024  # the gates also hold the body to 16 KiB of UTF-8


GATE_HELP = {
    "evidence_not_found": "the evidence is not quoted verbatim from an archived turn of this session",
    "evidence_not_from_store": "a claim about the store must quote the store's side (assistant or tool), "
                               "only an objection may quote the customer",
    "evidence_negated": "the quote is cut just after a negation, so it supports the opposite claim",
    "evidence_missing": "the evidence quote is too short",
    "type_not_allowed": "the agent's knowledge.yaml does not learn this type",
    "bad_name": "the name is not a slug",
    "pii_in_name": "the name carries personal data",
    "too_large": "the description, body or quote is too long",
    "schema": "a field is empty or the description is not one line",
}


def gated(reason: str) -> Gated:
    """The refusal of a gate, saying what it asks for."""
    return Gated(reason, GATE_HELP.get(reason, "see docs/contract.md, the gates"))


class SaveRequest(BaseModel):
    """save_knowledge: one insight, grounded on a quote from the session's archived turns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Slug = "default"
    agent: Slug
    session_id: SessionId
    action: Literal["save_knowledge"]
    name: str = Field(min_length=1, max_length=NAME_RAW_MAX)
    description: str = Field(min_length=1, max_length=DESCRIPTION_MAX)
    type: ConceptType
    body: str = Field(min_length=1, max_length=BODY_MAX_CHARS)
    evidence: str = Field(min_length=1, max_length=EVIDENCE_MAX)
    turn_id: Optional[SessionId] = Field(default=None, description="the archived turn that quotes the evidence "
                                                                   "(default: the session's recent turns)")


class StatusRequest(BaseModel):
    """save_status: what became of a save, by the id its answer gave."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Slug = "default"
    agent: Slug
    action: Literal["save_status"]
    save_id: str = Field(max_length=200, pattern=SAVE_ID_PATTERN, description="a save_knowledge answer's save_id")


SaveStatus = Literal["queued", "created", "confirmed", "merged", "kept_beside", "waiting", "contradiction", "echoed",
                     "replayed", "not_sent"]


class StatusAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    save_id: str
    name: str
    type: str
    session_id: str
    turn_id: str
    status: SaveStatus = Field(description=(
        "queued (consolidation has not applied it yet), or what consolidation did: created, confirmed (a source "
        "added to the concept of that name), merged, kept_beside (a related claim kept beside a concept), waiting "
        "(beside a human's text, waiting for an operator's verdict), contradiction (recorded for a human), echoed "
        "(it restated what the session was shown: counted as use, wrote nothing) or replayed (this turn's "
        "sighting of it was applied before); not_sent: the queue refused it, so nothing will come of it (the save "
        "answered an error; saving it again sends it anew, under the same id)"))
    saved_at: str
    settled_at: Optional[str] = Field(description="when consolidation applied it; null while queued")


class SaveAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    save_id: str = Field(description="ask save_status with it what became of the save (unguessable; answered only "
                                     "within this tenant and agent; expires with the session's archive)")
    name: str = Field(description="the concept's name, as it will be kept")
    type: str
    turn_id: str = Field(description="the archived turn whose quote grounds it")
    status: Literal["queued"] = Field(description="sent to consolidation, which writes it as any sighting")
    echo: bool = Field(description="the quote restates what the session was shown: counted as use, writes nothing")
    redacted: dict[str, int] = Field(description="personal data redacted from it, by kind")


SAVE_TOOL = Tool(
    name="save_knowledge",
    description=("Save an insight this conversation showed, so future conversations know it. Quote the evidence "
                 "verbatim from the conversation (what the store said; only an objection may quote the customer). "
                 "It is learned as an observation, never as policy, and an operator can review it."),
    input_schema=tool_input(SaveRequest, {
        "name": "a short slug naming the insight (lowercase words and hyphens)",
        "description": "one line saying what is true",
        "type": "fact, entity, procedure, policy (what the store says it does) or objection (what customers say)",
        "body": "the insight in a few sentences",
        "evidence": "a verbatim quote from the conversation that shows it",
    }))


class Saver:
    def __init__(self, configs: ConfigCache, archive: Optional[TurnArchive], candidates: Optional[CandidateSink],
                 events: Events, counters: Optional[Counters] = None, wall: Callable[[], float] = time.time,
                 exists: Optional[Callable[[str, str], bool]] = None, saves: Optional[SaveRecords] = None,
                 saves_per_session: int = 20):
        """`archive` and `candidates` None: this deployment cannot save (SESSIONS_BUCKET or
        CANDIDATES_QUEUE_URL unset), and a save says so. `exists`: whether an agent without a
        knowledge.yaml exists at all (unknown_agent rather than disabled)."""
        self._configs, self._archive, self._candidates, self._events = configs, archive, candidates, events
        self._exists = exists
        self._saves, self.saves_per_session = saves, saves_per_session
        self.counters = counters or Counters()
        self._wall = wall

    def handle(self, event: Any, remaining_seconds: Optional[float] = None) -> dict[str, Any]:
        """One save_knowledge invocation, validated first; S3 retries stop in time for the answer."""
        if isinstance(event, dict) and event.get("action") == "save_status":
            return self.status(validate_object(StatusRequest, event, InvalidRequest, "the event"))
        request = validate_object(SaveRequest, event, InvalidRequest, "the event")
        ends = None if remaining_seconds is None else time.monotonic() + max(0.0, remaining_seconds - SAVE_RESERVE)
        with deadline.until(ends):
            return self.save(request)

    def save(self, request: SaveRequest) -> dict[str, Any]:
        if self._archive is None or self._candidates is None:
            raise SettingsError("save_knowledge needs SESSIONS_BUCKET and CANDIDATES_QUEUE_URL")
        config = self._configs.get(request.tenant, request.agent)
        self._known(request.tenant, request.agent, config)
        if config is None or not config.extract:
            raise LearningOff("this agent does not learn (no knowledge.yaml, or extract: false)")
        turns = self.session_turns(request)
        if not turns:
            raise NotFound(self.nothing_to_quote(request))
        insight = json.dumps([{"name": request.name, "description": request.description, "type": request.type,
                               "body": request.body, "evidence": request.evidence}])
        refused: Optional[str] = None
        for turn in turns:
            report = gate(insight, turn.messages, config.types, config.published_contacts, config.language)
            if report.candidates:
                break
            # The most telling refusal: one that found the quote says more than "not found".
            reason = next(iter(report.rejected), EVIDENCE_NOT_FOUND)
            refused = reason if refused in (None, EVIDENCE_NOT_FOUND) else refused
        else:
            self.counters.count("CandidateRejected", reason=refused or EVIDENCE_NOT_FOUND)
            raise gated(refused or EVIDENCE_NOT_FOUND)
        candidate = report.candidates[0]
        echo = turn.echoes(candidate.name, candidate.evidence_at.message)
        save_id, record = self.recorded(request, candidate.name, candidate.type, turn.turn_id)
        try:
            sighting = Sighting.of(turn.tenant, turn.agent, turn.session_id, turn.turn_id, stamp(candidate, turn),
                                   evidence_ref(candidate, turn), echo=echo, save_id=save_id)
        except InvalidConcept:
            self.counters.count("CandidateRejected", reason=SCHEMA)
            raise gated(SCHEMA) from None
        if record is not None:  # recorded before it is sent: consolidation finds it to settle
            self._saves.put(request.tenant, request.agent, record)  # type: ignore[union-attr]
        try:
            self._candidates.send([sighting])
        except KnowledgeError:
            if record is not None:  # never `queued` for ever: it says it was not sent
                self._saves.put(request.tenant, request.agent, replaced(record, status=NOT_SENT))  # type: ignore[union-attr]
            raise
        self.counters.count("CandidateAccepted")
        self.counters.count("CandidateEchoed", 1 if echo else 0)
        if report.other_language:  # kept, and counted as extraction counts it
            self.counters.count("CandidateOtherLanguage", report.other_language)
        for kind, n in report.redacted.items():
            self.counters.count("PiiRedacted", n, kind=kind)
        self.counters.count("KnowledgeSaved", tenant=request.tenant, agent=request.agent)
        try:
            self._events.publish(SAVED, {**detail(request.tenant, request.agent, candidate.name, candidate.type,
                                                  session_id=request.session_id), "turn_id": turn.turn_id})
        except EventPublishError:
            self.counters.count("EventPublishFailed")
        return SaveAnswer(save_id=save_id, name=candidate.name, type=candidate.type, turn_id=turn.turn_id,
                          status="queued",
                          echo=echo, redacted=dict(report.redacted)).model_dump(mode="json")

    def _known(self, tenant: str, agent: str, config: Any) -> None:
        if config is None and self._exists is not None and not self._exists(tenant, agent):
            raise UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml "
                               "nor any concept (check the agent's name)")

    def recorded(self, request: SaveRequest, name: str, type: str, turn_id: str) -> tuple[str, Optional[SaveRecord]]:
        """The save's id, and its record to write (None: this insight from this turn was saved before,
        and keeps its id and record). Refused past the session's cap."""
        if self._saves is None:
            raise SettingsError("save_knowledge needs SESSIONS_BUCKET")
        known = self._saves.of_session(request.tenant, request.agent, request.session_id)
        part = sighting_part(name, turn_id)
        same = [save_id for save_id in known if save_id.split("~", 1)[1].startswith(part)]
        if same:
            earlier = self._saves.get(request.tenant, request.agent, same[0])
            # One the queue refused is sent anew under its id; any other keeps its record.
            return same[0], (replaced(earlier, status=QUEUED) if earlier.status == NOT_SENT else None)
        if len(known) >= self.saves_per_session:
            self.counters.count("SaveRefused", reason=SaveLimit.code)
            raise SaveLimit(f"this session has saved {len(known)} insights, the most one session may "
                            f"(KNOWLEDGE_SAVES_PER_SESSION, {self.saves_per_session}); nothing was saved")
        save_id = new_save_id(request.session_id, name, turn_id)
        now = datetime.fromtimestamp(self._wall(), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return save_id, SaveRecord(save_id=save_id, name=name, type=type, session_id=request.session_id,
                                   turn_id=turn_id, status=QUEUED, saved_at=now)

    def status(self, request: StatusRequest) -> dict[str, Any]:
        """What became of a save, answered only within its tenant and agent."""
        if self._saves is None:
            raise SettingsError("save_status needs SESSIONS_BUCKET")
        self._known(request.tenant, request.agent, self._configs.get(request.tenant, request.agent))
        record = self._saves.get(request.tenant, request.agent, request.save_id)
        return StatusAnswer(**record.__dict__).model_dump(mode="json")

    def nothing_to_quote(self, request: SaveRequest) -> str:
        """Why a save found no turn to quote: the window counts from each turn's completed_at, so
        say which turn of the session was seen last, and when it completed."""
        hours = int(LOOKBACK.total_seconds() // 3600)
        which = (f"turn {request.turn_id} of session {request.session_id} did not" if request.turn_id
                 else f"no turn of session {request.session_id} did")
        said = f"{which} complete in the last {hours} hours (the window counts from a turn's completed_at)"
        archive: TurnArchive = self._archive  # type: ignore[assignment]
        now = datetime.fromtimestamp(self._wall(), timezone.utc)
        prefix = archive.prefix(request.tenant, request.agent)
        last: Optional[tuple[str, str]] = None
        for seen, key in enumerate(archive.keys(request.tenant, request.agent, now - LAST_SEEN_LOOKBACK)):
            stamp, session_id, turn_file = key[len(prefix):].split("/", 2)
            if session_id == request.session_id:
                last = (turn_file.removesuffix(".json"), stamp)
            if seen >= LAST_SEEN_KEYS:
                break
        days = LAST_SEEN_LOOKBACK.days
        if last is None:
            return f"{said}; none of its turns was archived in the last {days} days: send the turn first"
        moment = datetime.strptime(last[1], STAMP).replace(tzinfo=timezone.utc)
        return (f"{said}; the last turn of the session seen is {last[0]}, completed at "
                f"{moment.strftime('%Y-%m-%dT%H:%M:%SZ')} (a turn's completed_at is when it completed, not a fixed date)")

    def session_turns(self, request: SaveRequest) -> list[Turn]:
        """The session's turns archived within LOOKBACK, the most recent first (TURNS_READ at most);
        only `turn_id` when the request names one."""
        archive: TurnArchive = self._archive  # type: ignore[assignment]
        since = datetime.fromtimestamp(self._wall(), timezone.utc) - LOOKBACK
        prefix = archive.prefix(request.tenant, request.agent)
        keys = []
        for key in archive.keys(request.tenant, request.agent, since):
            _, session_id, turn_file = key[len(prefix):].split("/", 2)  # {stamp}/{session_id}/{turn_id}.json
            if session_id == request.session_id and (request.turn_id is None
                                                     or turn_file == f"{request.turn_id}.json"):
                keys.append(key)
        return [archive.get(key) for key in reversed(keys[-TURNS_READ:])]
