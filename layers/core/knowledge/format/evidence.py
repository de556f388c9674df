"""The evidence link a concept version carries: where in the archived turn its claim was
quoted, never the quote (evidence is a link, not a copy).

Encoded as one ASCII line for S3 user metadata:
    {session_id}/{turn_id}/{completed_at as YYYYMMDDTHHMMSS.ffffffZ}/{message}/{start}-{end}[/{agent}]
The archived turn is then `TurnArchive.key_for(tenant, agent, completed_at, session_id, turn_id)`
and the quote `messages[message].content[start:end]`. The agent is the concept's own, except on a
version of a tenant's shared concept: a claim kept beside it names the agent whose turn it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Optional

from shared.names import is_session_id

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.format.sighting import Sighting

STAMP = "%Y%m%dT%H%M%S.%fZ"
_LINK = re.compile(r"([^/]{1,128})/([^/]{1,128})/(\d{8}T\d{6}\.\d{6}Z)/(\d{1,3})/(\d{1,5})-(\d{1,5})"
                   r"(?:/([a-z0-9]+(?:-[a-z0-9]+)*))?")


@dataclass(frozen=True)
class EvidenceLink:
    session_id: str
    turn_id: str
    completed_at: datetime
    message: int
    start: int
    end: int
    agent: Optional[str] = None  # whose archive holds the turn, when not the concept's own agent

    @classmethod
    def of(cls, sighting: "Sighting", *, naming_agent: bool = False) -> Optional["EvidenceLink"]:
        """The sighting's link; `naming_agent` for a write outside the sighting's agent (shared)."""
        ref = sighting.evidence
        if ref is None:
            return None
        return cls(sighting.session_id, sighting.turn_id, ref.completed_at, ref.message, ref.start, ref.end,
                   sighting.agent if naming_agent else None)

    def encode(self) -> str:
        stamp = self.completed_at.astimezone(timezone.utc).strftime(STAMP)
        agent = f"/{self.agent}" if self.agent else ""
        return f"{self.session_id}/{self.turn_id}/{stamp}/{self.message}/{self.start}-{self.end}{agent}"

    @classmethod
    def decode(cls, text: Optional[str]) -> Optional["EvidenceLink"]:
        """The link in `text`, or None when there is none or it is not one (never raises)."""
        match = _LINK.fullmatch(text or "")
        if not match or not (is_session_id(match.group(1)) and is_session_id(match.group(2))):
            return None
        try:
            moment = datetime.strptime(match.group(3), STAMP).replace(tzinfo=timezone.utc)
        except ValueError:
            return None
        start, end = int(match.group(5)), int(match.group(6))
        if end <= start:
            return None
        agent = match.group(7)
        if agent is not None and len(agent) > 64:
            return None
        return cls(match.group(1), match.group(2), moment, int(match.group(4)), start, end, agent)
