"""Per-session state, written when a turn is archived, so a distillation pass finds due sessions without
listing the archive: one state object per session (its turns, its customer — fixed by its earliest
tagged turn — and how far it was distilled), written by compare-and-swap, and one idle marker keyed by
its last turn's time while it may come due. docs/facts.md, "Facts: distilled customer memory, human-gated"."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Callable, Iterator, Optional

from knowledge.format.turn import Turn
from shared import awscall
from shared.errors import Conflict, NotFound
from shared.names import is_session_id

from . import layout
from .errors import Busy, RecordUnreadable
from .fact import iso, parse_iso

STATE_VERSION = 1
TURNS_MAX = 1000  # a session's state stays well under a few hundred KB
CAS_ATTEMPTS = 8


@dataclass(frozen=True)
class TurnEntry:
    turn_id: str
    completed_at: datetime
    messages: int


@dataclass(frozen=True)
class SessionState:
    tenant: str
    agent: str
    session_id: str
    turns: tuple[TurnEntry, ...] = ()
    customer_id: Optional[str] = None
    customer_at: Optional[datetime] = None  # completed_at of the turn that stamped the customer
    distilled_through: Optional[datetime] = None  # last_at when it was last distilled
    attempts: int = 0  # consecutive failed distillations of this last_at

    @property
    def last_at(self) -> datetime:
        return max(t.completed_at for t in self.turns)

    @property
    def messages(self) -> int:
        return sum(t.messages for t in self.turns)

    @property
    def distilled(self) -> bool:
        return self.distilled_through is not None and self.distilled_through >= self.last_at

    def ordered_turns(self) -> list[TurnEntry]:
        """The transcript's order: completed_at, then turn id."""
        return sorted(self.turns, key=lambda t: (t.completed_at, t.turn_id))

    def with_turn(self, turn: Turn) -> "SessionState":
        state = self
        if all(t.turn_id != turn.turn_id for t in self.turns) and len(self.turns) < TURNS_MAX:
            state = replace(state, turns=self.turns + (TurnEntry(turn.turn_id, turn.completed_at, len(turn.messages)),))
        if turn.customer_id and (state.customer_at is None or turn.completed_at < state.customer_at):
            state = replace(state, customer_id=turn.customer_id, customer_at=turn.completed_at)
        return state

    def body(self) -> bytes:
        return json.dumps({
            "v": STATE_VERSION, "tenant": self.tenant, "agent": self.agent, "session_id": self.session_id,
            "customer_id": self.customer_id, "customer_at": iso(self.customer_at) if self.customer_at else None,
            "turns": [{"turn_id": t.turn_id, "completed_at": iso(t.completed_at), "messages": t.messages}
                      for t in self.turns],
            "distilled_through": iso(self.distilled_through) if self.distilled_through else None,
            "attempts": self.attempts,
        }, separators=(",", ":")).encode()


def parse_state(body: bytes, tenant: str, agent: str, session_id: str) -> SessionState:
    try:
        data = json.loads(body)
        if data["v"] != STATE_VERSION or (data["tenant"], data["agent"], data["session_id"]) != (tenant, agent, session_id):
            raise ValueError("scope")
        turns = []
        for raw in data["turns"]:
            if not is_session_id(raw["turn_id"]) or not isinstance(raw["messages"], int) or raw["messages"] < 0:
                raise ValueError("turn")
            turns.append(TurnEntry(raw["turn_id"], parse_iso(raw["completed_at"]), raw["messages"]))
        customer = data["customer_id"]
        if customer is not None and not is_session_id(customer):
            raise ValueError("customer")
        attempts = data["attempts"]
        if not turns or not isinstance(attempts, int) or attempts < 0:
            raise ValueError("state")
        return SessionState(
            tenant, agent, session_id, tuple(turns), customer,
            parse_iso(data["customer_at"]) if data["customer_at"] else None,
            parse_iso(data["distilled_through"]) if data["distilled_through"] else None, attempts)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise RecordUnreadable("session state does not follow the format") from None


@dataclass(frozen=True)
class StoredState:
    state: SessionState
    etag: str


@dataclass(frozen=True)
class IdleMarker:
    key: str
    stamp: str
    session_id: str


class SessionStates:
    def __init__(self, s3: Any, bucket: str, *, sleep: Callable[[float], None] = time.sleep):
        self._s3, self.bucket, self._sleep = s3, bucket, sleep

    def get(self, tenant: str, agent: str, session_id: str) -> Optional[StoredState]:
        try:
            answer = awscall.call(self._s3, "get_object", Bucket=self.bucket,
                                  Key=layout.session_key(tenant, agent, session_id), read_body=True)
        except NotFound:
            return None
        return StoredState(parse_state(answer["Body"], tenant, agent, session_id), answer["ETag"])

    def swap(self, stored: Optional[StoredState], state: SessionState) -> StoredState:
        """Conflict when the state was written since `stored` was read (or created, when None)."""
        condition = {"IfMatch": stored.etag} if stored else {"IfNoneMatch": "*"}
        answer = awscall.call(self._s3, "put_object", Bucket=self.bucket,
                              Key=layout.session_key(state.tenant, state.agent, state.session_id),
                              Body=state.body(), ContentType="application/json", **condition)
        return StoredState(state, answer["ETag"])

    def record(self, turn: Turn) -> SessionState:
        """Fold one archived turn into its session's state, and (re)place the idle marker."""
        for attempt in range(CAS_ATTEMPTS):
            stored = self.get(turn.tenant, turn.agent, turn.session_id)
            before = stored.state if stored else None
            state = (before or SessionState(turn.tenant, turn.agent, turn.session_id)).with_turn(turn)
            if state != before:
                try:
                    self.swap(stored, state)
                except Conflict:
                    self._sleep(random.uniform(0, 0.02 * 2 ** attempt))
                    continue
            break
        else:
            raise Busy("the session's state kept changing; the turn will be retried")
        # After the state, so a marker never points at a state that does not say why. A redelivery
        # (state unchanged) puts the marker again: the first delivery may have died before it.
        if not state.distilled:
            self._put(layout.idle_key(state.tenant, state.agent, state.last_at, state.session_id))
        if before is not None and before.last_at != state.last_at:
            self.drop_marker(layout.idle_key(state.tenant, state.agent, before.last_at, state.session_id))
        # Every customer a turn names (not only the one stamped), and again on a redelivery, which
        # the first delivery may have died before indexing.
        if before is None or state == before or before.customer_id != turn.customer_id:
            self.index(turn)
        return state

    def index(self, turn: Turn) -> None:
        """Enter the turn's session under its customer (nothing for an untagged turn): how
        forget_customer finds the session without reading any turn."""
        if turn.customer_id:
            self._put(layout.customer_session_key(turn.tenant, turn.agent, turn.customer_id, turn.session_id))

    def idle_markers(self, tenant: str, agent: str, cutoff: datetime) -> Iterator[IdleMarker]:
        """Markers of sessions whose last turn is at or before `cutoff`, oldest first; the
        listing stops at the first newer one, so it never reads the rest."""
        prefix = layout.idle_prefix(tenant, agent)
        last = layout.stamp(cutoff)
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                parsed = layout.read_idle_key(prefix, item["Key"])
                if parsed is None:
                    continue
                if parsed[0] > last:
                    return
                yield IdleMarker(item["Key"], *parsed)

    def park(self, marker: IdleMarker, stored: StoredState) -> bool:
        """Remove a marker whose session is not due (untagged, too short, gone); False when the
        state changed meanwhile (then the marker is put back: the newer turn may make it due)."""
        self.drop_marker(marker.key)
        try:
            awscall.call(self._s3, "head_object", Bucket=self.bucket, IfMatch=stored.etag,
                         Key=layout.session_key(stored.state.tenant, stored.state.agent, stored.state.session_id))
            return True
        except (Conflict, NotFound):
            current = self.get(stored.state.tenant, stored.state.agent, stored.state.session_id)
            if current is not None and not current.state.distilled:
                self._put(layout.idle_key(current.state.tenant, current.state.agent, current.state.last_at,
                                          current.state.session_id))
            return False

    def drop_marker(self, key: str) -> None:
        awscall.call(self._s3, "delete_object", Bucket=self.bucket, Key=key)

    def _put(self, key: str) -> None:
        awscall.call(self._s3, "put_object", Bucket=self.bucket, Key=key, Body=b"")


def record_turn(s3: Any, bucket: str, turn: Turn) -> SessionState:
    """What the extraction path calls after it archives a turn (and on a redelivery of one
    already archived): the session's state and idle marker, for distillation."""
    return SessionStates(s3, bucket).record(turn)
