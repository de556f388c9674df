"""Concepts written before "nothing without a judgment" repaired: every engine-written "not judged" entry
(a policy review that got no verdict, `Policy [[name]] (date), not judged: …`) is moved out of the concept's
`## Related claims` into its waiting pairs (knowledge.store.waiting), one version per concept (reason
`repaired`, actor `engine`); and in the tenant's shared scope, every claim a sighting left there
(`Session … (date): …`, never judged) is moved to the waiting pairs of the agent whose turn it came from,
found by the evidence link of the version that added it. Nothing else in a body moves, so text an operator
wrote is never touched; an entry whose agent cannot be found stays (retrieval's hop never follows its
links, and other agents are not served it: knowledge.recall.retrieve).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from pydantic import ConfigDict

from knowledge.curation.scoped import ScopedRequest
from knowledge.format.concept import Concept
from knowledge.format.evidence import EvidenceLink
from knowledge.store.agents import unknown_agent
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from knowledge.store.waiting import POLICY, SIGHTING, WaitingPair
from shared.errors import Conflict, InvalidConcept, InvalidRequest, NotFound
from shared.validation import validate_object

ENGINE = "engine"
NOT_JUDGED = "not_judged"
_RELATED = re.compile(r"^## Related claims[ \t]*$", re.MULTILINE)
_NEXT_SECTION = re.compile(r"^## ", re.MULTILINE)
_POLICY_ENTRY = re.compile(r"Policy \[\[([a-z0-9]+(?:-[a-z0-9]+)*)\]\] \((\d{4}-\d{2}-\d{2})\), not judged: [^\n]*")
_SESSION_ENTRY = re.compile(r"Session (\S+) \((\d{4}-\d{2}-\d{2})\): ([^\n]*)")
VERSIONS_LOOKED = 200  # a shared concept's history read for the versions that added its claims


@dataclass
class Repair:
    """What a repair did (or, in a dry run, would do): per concept, the entries moved out."""

    scope: str
    dry_run: bool
    checked: int = 0
    moved: dict[str, int] = field(default_factory=dict)  # concept -> entries moved to the waiting pairs
    left: dict[str, int] = field(default_factory=dict)  # concept -> entries whose agent is unknown (shared)
    contended: list[str] = field(default_factory=list)  # written meanwhile: run again

    def as_dict(self) -> dict:
        return {"scope": self.scope, "dry_run": self.dry_run, "checked": self.checked,
                "concepts": len(self.moved), "entries": sum(self.moved.values()), "moved": dict(self.moved),
                "left": dict(self.left), "contended": list(self.contended)}


def repair_related(store: ConceptStore, tenant: str, scope: str, *, dry_run: bool = False) -> Repair:
    """Move the engine's unjudged entries out of every concept of `scope` (an agent, or SHARED)."""
    if not store.agent_exists(tenant, scope):
        raise unknown_agent(tenant, scope, "check the tenant and the agent's name")
    repair = Repair(scope, dry_run)
    for stored in store.load_all(tenant, scope):
        repair.checked += 1
        try:
            concept = stored.concept
        except InvalidConcept:
            continue  # unreadable: the studio lists it; nothing here rewrites it
        paragraphs = _related_paragraphs(concept.body)
        if paragraphs is None:
            continue
        pairs: list[tuple[str, WaitingPair]] = []  # (the agent it waits in, the pair)
        kept: list[str] = []
        left = 0
        for paragraph in paragraphs:
            pair = _pair(store, tenant, scope, concept, paragraph)
            if pair is None and scope == SHARED and _SESSION_ENTRY.match(paragraph):
                left += 1
            if pair is None:
                kept.append(paragraph)
            else:
                pairs.append(pair)
        if left:
            repair.left[concept.name] = left
        if not pairs:
            continue
        repair.moved[concept.name] = len(pairs)
        if dry_run:
            continue
        for agent, pair in pairs:
            store.waiting().put(tenant, agent, pair)
        try:
            store.replace(tenant, scope, concept.replace(body=_without(concept.body, kept)), if_match=stored.etag,
                          actor=ENGINE, reason="repaired", sightings=stored.sightings)
        except (Conflict, NotFound):
            repair.contended.append(concept.name)  # the pairs are written; the next run moves the entries
    return repair


def _related_paragraphs(body: str) -> Optional[list[str]]:
    """The entries of the body's `## Related claims` section, each its head paragraph with the quoted
    paragraphs (`> …`) under it (None without one)."""
    heading = _RELATED.search(body)
    if heading is None:
        return None
    following = _NEXT_SECTION.search(body, heading.end())
    section = body[heading.end():following.start() if following else len(body)]
    entries: list[str] = []
    for paragraph in (p.strip("\n") for p in re.split(r"\n[ \t]*\n", section) if p.strip()):
        if paragraph.startswith(">") and entries:
            entries[-1] += "\n\n" + paragraph  # a quoted claim belongs to the entry above it
        else:
            entries.append(paragraph)
    return entries


def _without(body: str, kept: list[str]) -> str:
    """`body` with its `## Related claims` section holding only `kept` (the heading gone with the last)."""
    heading = _RELATED.search(body)
    assert heading is not None
    following = _NEXT_SECTION.search(body, heading.end())
    head = body[:heading.start()].rstrip()
    tail = body[following.start():] if following else ""
    section = "\n\n## Related claims\n\n" + "\n\n".join(kept) if kept else ""
    return head + section + ("\n\n" + tail if tail else "")


def _pair(store: ConceptStore, tenant: str, scope: str, concept: Concept,
          paragraph: str) -> Optional[tuple[str, WaitingPair]]:
    policy = _POLICY_ENTRY.fullmatch(paragraph)
    if policy is not None and scope != SHARED:
        return scope, WaitingPair(concept=concept.name, kind=POLICY, why=NOT_JUDGED, since=policy.group(2),
                                  policy=policy.group(1))
    session = _SESSION_ENTRY.match(paragraph)
    if session is None or scope != SHARED:
        return None
    link = _evidence(store, tenant, concept.name, session.group(1))
    if link is None or link.agent is None:
        return None
    quoted = "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">")
                       for line in paragraph.split("\n")[1:] if line.startswith(">"))
    return link.agent, WaitingPair(concept=concept.name, kind=SIGHTING, why=NOT_JUDGED, since=session.group(2),
                                   description=session.group(3), body=quoted.strip() or session.group(3),
                                   session_id=session.group(1), turn_id=link.turn_id, shared=True,
                                   evidence=link.encode())


def _evidence(store: ConceptStore, tenant: str, name: str, session_id: str) -> Optional[EvidenceLink]:
    """The evidence link of the version that kept this session's claim beside the shared concept."""
    versions, _ = store.version_page(tenant, SHARED, name, limit=VERSIONS_LOOKED, marker=None)
    for version in versions:
        if version.evidence is not None and version.evidence.session_id == session_id:
            return version.evidence
    return None


class RepairRequest(ScopedRequest):
    """The RepairFunction event: which agent (or the tenant's shared concepts), and whether to only say."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["repair_related"] = "repair_related"
    dry_run: bool = False


class Repairer:
    """RepairFunction's service (and `knowledge repair-related`'s): one request, parsed and run."""

    def __init__(self, store: ConceptStore):
        self._store = store

    def run(self, event: Any) -> Repair:
        request = validate_object(RepairRequest, event, InvalidRequest, "the repair event")
        return repair_related(self._store, request.tenant, request.scope, dry_run=request.dry_run)
