"""A distillation pass: every due session of every agent with `distill:` on, within the deadline.

Per due session: read its archived turns (the transcript, completed_at order), ask the model,
gate the answer, drop what the latch, the cell or the ledger already knows, and store the
rest as pending proposals. The landing cell is (the session's tenant, the session's customer):
the model's answer never names it. Recovery is a re-scan: a crash leaves the session marked
due, the next pass takes it again, and the ledger (proposal ids) filters the duplicates.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Callable, Iterator, Optional

from pydantic import BaseModel, ConfigDict

from knowledge.format.config import DistillConfig, parse_agent_config
from knowledge.format.turn import Message
from knowledge.store.archive import TurnArchive
from knowledge.store.keys import config_key
from shared import awscall
from shared.errors import (
    Conflict,
    DeadlineExceeded,
    InvalidConfig,
    InvalidRequest,
    KnowledgeError,
    ModelConfigError,
    ModelError,
    NotFound,
    NotModified,
)
from shared.events import Events
from shared.language import detect
from shared.model import ModelCache
from shared.names import Slug, is_slug
from shared.telemetry import Counters
from shared.validation import validate_object

from . import events as fact_events
from .cells import MemoryCells
from .errors import ProposalNotFound, RecordUnreadable
from .fact import Cell, utc_now
from .gates import ANSWER_NOT_ARRAY, ANSWER_NOT_JSON, ANSWER_TOO_LARGE, TOO_MANY, gate
from .keyed_hashes import FactKeys, same_value
from .prompt import distill_prompt
from .proposals import EvidenceLink, Proposal, ProposalRef, ProposalStore
from .sessions import IdleMarker, SessionStates, StoredState

logger = logging.getLogger(__name__)

# Passes a session's model call may fail, or answer something that is no JSON list, before the
# session is given up: the schedule runs a pass every 15 minutes, so about half an hour of retries.
MODEL_ATTEMPTS = 3
# The gate's answer-level rejections: the answer as a whole is no list of facts.
UNUSABLE = frozenset({ANSWER_NOT_JSON, ANSWER_NOT_ARRAY, ANSWER_TOO_LARGE})
UNCAPPED = 1 << 30  # the gate's cap, unused: max_proposals is applied after the ledger's filter
MODEL_FAILURES_STOP = 3  # consecutive failures (any sessions) that end the pass: the model is down
# A session is started only with this much time left: a model call and its writes.
SESSION_SECONDS = 60.0


@dataclass
class PassReport:
    agents: int = 0
    scanned: int = 0
    distilled: int = 0
    proposed: int = 0
    complete: bool = True
    skipped: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    filtered: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        """Counts only: safe to log and to answer."""
        return {"agents": self.agents, "scanned": self.scanned, "distilled": self.distilled,
                "proposed": self.proposed, "complete": self.complete, "skipped": dict(self.skipped),
                "rejected": dict(self.rejected), "filtered": dict(self.filtered)}


SWITCHED_OFF = "switched_off"
# A running pass looks at an agent's file again (one conditional GET) at most this often, before a
# model call and before its answer is written: a switch holds within this and one session step.
SWITCH_SECONDS = 5.0


@dataclass(frozen=True)
class _Switch:
    etag: Optional[str]  # None: there is no file
    config: Optional[DistillConfig]  # None: off
    invalid: bool = False


class Distiller:
    def __init__(self, s3: Any, *, knowledge_bucket: str, sessions_bucket: str, models: ModelCache,
                 utility_model: Optional[str], keys: FactKeys, events: Optional[Events],
                 counters: Optional[Counters] = None, clock: Callable[[], datetime] = utc_now,
                 switch_seconds: float = SWITCH_SECONDS, ticks: Callable[[], float] = time.monotonic):
        self._s3, self._knowledge_bucket, self._sessions_bucket = s3, knowledge_bucket, sessions_bucket
        self.states = SessionStates(s3, sessions_bucket)
        self.archive = TurnArchive(s3, sessions_bucket)
        self.proposals = ProposalStore(s3, sessions_bucket)
        self.cells = MemoryCells(s3, knowledge_bucket)
        self._models, self._utility_model, self._keys, self._events = models, utility_model, keys, events
        self.counters = counters or Counters()
        self._clock = clock
        self._switches: dict[tuple[str, str], _Switch] = {}  # each agent's file as this pass last read it
        self._switch_seconds, self._ticks = switch_seconds, ticks
        self._looked: dict[tuple[str, str], float] = {}  # when (ticks) each file was last looked at
        # The local stack's idle shortcut (knowledge_dev.handlers.distill_handler): a session is due once
        # nobody wrote for this long, when it is shorter than the agent's idle_hours. None when deployed.
        self.idle_hours_at_most: Optional[float] = None

    # ------------------------------------------------------------ the pass
    def handle(self, event: Any, remaining_seconds: Callable[[], float]) -> PassReport:
        """DistillFunction's event ({}, or {"tenant"[, "agent"]} by hand): its pass, stopped while
        SESSION_SECONDS are left for one more session."""
        request = parse_distill_request(event)
        return self.run(tenant=request.tenant, agent=request.agent,
                        keep_going=lambda: remaining_seconds() > SESSION_SECONDS)

    def run(self, *, tenant: Optional[str] = None, agent: Optional[str] = None,
            keep_going: Callable[[], bool] = lambda: True) -> PassReport:
        report = PassReport()
        now = self._clock()
        failures = 0
        self._switches.clear()  # a pass reads each file anew: a new container and a warm one alike
        self._looked.clear()
        for tenant_, agent_ in self.agents(tenant, agent):
            config = self._config(tenant_, agent_, report)
            if config is None:
                continue
            if self.idle_hours_at_most is not None and config.idle_hours > self.idle_hours_at_most:
                config = config.model_copy(update={"idle_hours": self.idle_hours_at_most})
            report.agents += 1
            cutoff = now - timedelta(hours=config.idle_hours)
            for marker in self.states.idle_markers(tenant_, agent_, cutoff):
                if not keep_going() or failures >= MODEL_FAILURES_STOP:
                    report.complete = False
                    return self._counted(report)
                report.scanned += 1
                outcome = self.session(tenant_, agent_, marker, config, report)
                if outcome == SWITCHED_OFF:
                    break  # the agent's switch was pulled during the pass: none of its sessions more
                failures = failures + 1 if outcome == "model_failed" else 0
        return self._counted(report)

    def agents(self, tenant: Optional[str], agent: Optional[str]) -> Iterator[tuple[str, str]]:
        """(tenant, agent) pairs that have anything archived (two delimiter listings, no turn read)."""
        tenants = [tenant] if tenant else self._children("")
        for tenant_ in tenants:
            for agent_ in ([agent] if agent else self._children(f"{tenant_}/")):
                yield tenant_, agent_

    def _children(self, prefix: str) -> list[str]:
        names = []
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self._sessions_bucket, Prefix=prefix,
                                  Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(prefix):-1]
                if is_slug(name):
                    names.append(name)
        return names

    def _config(self, tenant: str, agent: str, report: PassReport) -> Optional[DistillConfig]:
        switch = self._look(tenant, agent)
        if switch.invalid:
            report.skipped["config_invalid"] += 1
        return switch.config

    def _look(self, tenant: str, agent: str) -> "_Switch":
        """The agent's `distill:` block as the file says now, whoever wrote it (the studio, the CLI,
        `aws s3 cp`): one GET, conditional on the ETag this pass last read. Absent, empty, `enabled:
        false` or not parsing: off (a kill switch fails safe)."""
        known = self._switches.get((tenant, agent))
        kwargs = {"IfNoneMatch": known.etag} if known is not None and known.etag else {}
        try:
            answer = awscall.call(self._s3, "get_object", Bucket=self._knowledge_bucket,
                                  Key=config_key(tenant, agent), read_body=True, **kwargs)
        except NotModified:
            return known  # type: ignore[return-value]  # only asked with its ETag
        except NotFound:
            switch = _Switch(None, None)
        else:
            try:
                config = parse_agent_config(answer["Body"]).distill
                switch = _Switch(answer["ETag"], config if config is not None and config.enabled else None)
            except InvalidConfig:
                switch = _Switch(answer["ETag"], None, invalid=True)
        self._switches[(tenant, agent)] = switch
        self._looked[(tenant, agent)] = self._ticks()
        return switch

    def _still_on(self, tenant: str, agent: str, report: PassReport) -> Optional[DistillConfig]:
        """The agent's block, looked at again before a model call and before what it answers is
        written, once `switch_seconds` have passed since the last look: a switch pulled mid-pass holds
        within that and one session step (counted `switched_off`)."""
        looked = self._looked.get((tenant, agent))
        try:
            if looked is not None and self._ticks() - looked < self._switch_seconds:
                config = self._switches[(tenant, agent)].config
            else:
                config = self._look(tenant, agent).config
        except KnowledgeError:  # the store did not answer this look: as last read, looked at again next step
            known = self._switches.get((tenant, agent))
            config = known.config if known is not None else None
        if config is None:
            report.skipped[SWITCHED_OFF] += 1
        return config

    # ------------------------------------------------------------ one session
    def session(self, tenant: str, agent: str, marker: IdleMarker, config: DistillConfig, report: PassReport) -> str:
        """Settle one marker; answers what happened (a reason, `distilled` or `model_failed`)."""
        try:
            stored = self.states.get(tenant, agent, marker.session_id)
        except RecordUnreadable:
            return self._skip(report, "state_unreadable", marker)
        if stored is None:
            return self._skip(report, "gone", marker)
        state = stored.state
        if marker.stamp != self._stamp(state.last_at) or state.distilled:
            return self._skip(report, "obsolete" if not state.distilled else "done", marker)
        if not state.customer_id:
            return self._park(report, "untagged", marker, stored)
        if state.messages < config.min_messages:
            return self._park(report, "too_short", marker, stored)
        links, transcript = self._transcript(stored)
        if not transcript:
            return self._park(report, "gone", marker, stored)
        try:
            # Before the model call: a cell that no longer parses waits for a human, at no model cost.
            cell = self.cells.read(state.tenant, state.customer_id).cell
        except RecordUnreadable:
            report.skipped["cell_unreadable"] += 1
            return "cell_unreadable"
        config = self._still_on(tenant, agent, report)  # the model call is what the switch stops
        if config is None:
            return SWITCHED_OFF
        ref = config.model or self._utility_model
        try:
            if not ref:
                raise ModelConfigError("no model: set the agent's distill.model or UTILITY_MODEL")
            system, user = distill_prompt(transcript, config.prompt, config.language)
            answer = self._models.get(ref).complete(system, user)
        except DeadlineExceeded:
            raise
        except ModelError as exc:
            self.counters.count("DistillModelFailed", reason=exc.code)
            self._failed(stored, marker)
            report.skipped["model_failed"] += 1
            return "model_failed"
        # Uncapped here: max_proposals counts what is new to the ledger (in _propose), so facts
        # already decided or pending never use up the cap of a re-distilled session.
        gated = gate(answer, len(transcript), UNCAPPED,
                     config.language or detect("\n".join(m.content for m in transcript)))
        unusable = sorted(set(gated.rejected) & UNUSABLE)
        if unusable:
            # A 200 whose content is no list of facts is retried like a fault, never settled at once.
            self.counters.count("DistillAnswerUnusable", reason=unusable[0])
            self._failed(stored, marker, dropped=unusable[0])
            report.skipped["answer_unusable"] += 1
            return "model_failed"
        if self._still_on(tenant, agent, report) is None:  # pulled while the model answered: nothing of it kept,
            return SWITCHED_OFF                              # the session stays due for when it is on again
        report.rejected.update(gated.rejected)
        if gated.other_language:
            self.counters.count("ProposalOtherLanguage", gated.other_language)
        self._propose(stored, cell, gated.proposals, links, report, config.max_proposals)
        self._done(stored, marker)
        report.distilled += 1
        self.counters.count("SessionDistilled")
        return "distilled"

    def _transcript(self, stored: StoredState) -> tuple[list[EvidenceLink], list[Message]]:
        state = stored.state
        links: list[EvidenceLink] = []
        messages: list[Message] = []
        for entry in state.ordered_turns():
            try:
                turn = self.archive.get(TurnArchive.key_for(state.tenant, state.agent, entry.completed_at,
                                                            state.session_id, entry.turn_id))
            except NotFound:  # aged out of the archive: the rest is still a transcript
                self.counters.count("TurnMissing")
                continue
            except KnowledgeError as exc:
                if exc.code != "invalid_turn":
                    raise
                self.counters.count("TurnMissing")
                continue
            for index, message in enumerate(turn.messages):
                links.append(EvidenceLink(turn_id=entry.turn_id, completed_at=entry.completed_at, message=index))
                messages.append(message)
        return links, messages

    def _propose(self, stored: StoredState, cell: Cell, proposed: list, links: list[EvidenceLink],
                 report: PassReport, max_proposals: int) -> None:
        state = stored.state
        # The landing cell: the session's tenant and customer. Nothing in the answer reaches these.
        tenant, customer = state.tenant, state.customer_id
        latched = self.cells.latched(tenant, customer)
        now = self._clock()
        made = 0
        for item in proposed:
            # The tuple's id, then the id a latch or proposal written before today's fold has.
            tuple_id, *legacy = self._keys.tuple_ids(tenant, customer, item.name, item.value)
            fact = cell.facts.get(item.name)
            if latched.intersection((tuple_id, *legacy)):
                reason = "latched"
            elif fact is not None and same_value(fact.value, item.value):
                reason = "already_applied" if fact.origin.startswith("distilled:") else "already_known"
            elif made >= max_proposals:
                reason = TOO_MANY
            elif legacy and self._pending_under(tenant, state.agent, customer, legacy[0]):
                reason = "duplicate"
            else:
                reason = None
            if reason == TOO_MANY:
                report.rejected[reason] += 1
                continue
            if reason:
                report.filtered[reason] += 1
                continue
            proposal = Proposal(id=tuple_id, tenant=tenant, agent=state.agent, session_id=state.session_id,
                                customer_id=customer, name=item.name, value=item.value, confidence=item.confidence,
                                evidence=tuple(links[i] for i in item.evidence), proposed_at=now,
                                base_revision=fact.revision if fact else None)
            if not self.proposals.create(proposal):
                report.filtered["duplicate"] += 1
                continue
            made += 1
            report.proposed += 1
            fact_events.publish(self._events, self.counters, fact_events.PROPOSED, fact_events.detail(
                tenant, state.agent, self._keys.pseudonym(tenant, customer), item.name))

    def _pending_under(self, tenant: str, agent: str, customer: str, legacy_id: str) -> bool:
        """Whether a proposal written under the tuple's legacy id still waits (not expired)."""
        try:
            stored = self.proposals.get(ProposalRef(tenant, agent, customer, legacy_id))
        except ProposalNotFound:
            return False
        except RecordUnreadable:
            return True  # a record there that no longer parses: do not pile on it
        return stored.proposal.status != "expired"

    # ------------------------------------------------------------ settling a marker
    def _done(self, stored: StoredState, marker: IdleMarker) -> None:
        state = stored.state
        try:
            self.states.swap(stored, replace(state, distilled_through=state.last_at, attempts=0))
        except Conflict:
            return  # a turn arrived meanwhile: the marker stays (or moved), the next pass re-scans
        self.states.drop_marker(marker.key)

    def _failed(self, stored: StoredState, marker: IdleMarker, dropped: str | None = None) -> None:
        """One more failed attempt at this session; the last one allowed gives it up (counted).
        `dropped`: the attempt had an answer, unusable for that reason (DistillAnswerDropped)."""
        state = stored.state
        attempts = state.attempts + 1
        gave_up = attempts >= MODEL_ATTEMPTS
        try:
            self.states.swap(stored, replace(state, attempts=0 if gave_up else attempts,
                                              distilled_through=state.last_at if gave_up else state.distilled_through))
        except Conflict:
            return
        if gave_up:
            self.counters.count("SessionGivenUp")
            if dropped:
                self.counters.count("DistillAnswerDropped", reason=dropped)
            self.states.drop_marker(marker.key)

    def _skip(self, report: PassReport, reason: str, marker: IdleMarker) -> str:
        self.states.drop_marker(marker.key)
        report.skipped[reason] += 1
        return reason

    def _park(self, report: PassReport, reason: str, marker: IdleMarker, stored: StoredState) -> str:
        self.states.park(marker, stored)
        report.skipped[reason] += 1
        return reason

    @staticmethod
    def _stamp(moment: datetime) -> str:
        return TurnArchive.stamp(moment)

    def _counted(self, report: PassReport) -> PassReport:
        self.counters.count("SessionScanned", report.scanned)
        self.counters.count("FactProposed", report.proposed)
        for reason, n in report.skipped.items():
            self.counters.count("SessionSkipped", n, reason=reason)
        for reason, n in report.rejected.items():
            self.counters.count("ProposalRejected", n, reason=reason)
        for reason, n in report.filtered.items():
            self.counters.count("ProposalFiltered", n, reason=reason)
        return report


class DistillRequest(BaseModel):
    """The scheduled event ({}), or a manual run narrowed to one tenant or one agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Optional[Slug] = None
    agent: Optional[Slug] = None


def parse_distill_request(event: Any) -> DistillRequest:
    if event is None:
        return DistillRequest()
    request = validate_object(DistillRequest, event, InvalidRequest, "the distill event")
    if request.agent and not request.tenant:
        raise InvalidRequest("agent: needs tenant")
    return request
