"""Reads for builders: an agent's concepts listed and a concept's history, read-only, through
RetrieveFunction's direct calls (`list_knowledge`, `knowledge_history`; README "Reads for builders").

They serve only what load_knowledge may serve: nothing while retrieval is off for the agent
(`unknown_agent` for an agent that does not exist), the agent's own concepts and, for an agent with
`shared: true`, the tenant's shared ones it does not shadow; a shared concept's text never carries
the claims a sighting left beside it (those wait in the agent that saw them, counted in its entry's
`waiting`). Writing stays where it is: agents save through the gates, operators edit in the studio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from knowledge.format.concept import parse_stored, without_claims_kept_beside
from knowledge.format.evidence import EvidenceLink
from knowledge.recall.answers import ConceptType, Provenance, Recall
from knowledge.recall.postings import Doc
from knowledge.recall.retrieve import Retriever
from knowledge.recall.warm import AgentKnowledge
from knowledge.store.concepts import ConceptStore
from knowledge.store.keys import SHARED
from shared.errors import InvalidConcept, InvalidRequest, NotFound
from shared.names import SessionId, Slug
from shared.validation import validate_object

LIST_MAX = 100
MOMENT = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z)?$"
RecallFilter = Literal["in_recall", "expired", "not_started", "stale", "retired", "waiting", "conflict"]


class _Read(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Slug = "default"
    agent: Slug
    session_id: Optional[SessionId] = None


class ListRequest(_Read):
    """list_knowledge: the agent's concepts by name, a page at a time, filtered."""

    action: Literal["list_knowledge"]
    type: Optional[ConceptType] = None
    provenance: Optional[Provenance] = None
    recall: Optional[RecallFilter] = Field(default=None, description=(
        "in_recall (in the block when relevant), a reason out of it (expired, not_started, stale, retired), "
        "waiting (pairs waiting for a verdict beside it) or conflict"))
    since: Optional[str] = Field(default=None, pattern=MOMENT, description=(
        "only concepts updated at or after this UTC day or moment (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)"))
    limit: int = Field(default=50, ge=1, le=LIST_MAX)
    after: Optional[Slug] = Field(default=None, description="the previous page's next_after: the page after it")


class HistoryRequest(_Read):
    """knowledge_history: a concept's versions (who, why, when), and one version's text."""

    action: Literal["knowledge_history"]
    name: Slug
    version_id: Optional[str] = Field(default=None, min_length=1, max_length=1024,
                                      description="a version to answer the text of (from `versions`)")


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LearnedWordEntry(_Answer):
    word: str
    origin: Literal["loaded", "sighting", "model", "operator"] = Field(description=(
        "what taught it: loaded (a customer's message, then the concept loaded), sighting (a turn extraction saw "
        "it in), model (proposed by the model when the concept entered) or operator (added in the studio)"))
    sessions: int


class ListEntry(_Answer):
    name: str
    description: str
    type: ConceptType
    provenance: Provenance
    confidence: float
    occurrences: Optional[int]
    updated_at: Optional[str]
    shared: bool = Field(description="the tenant's shared concept, recalled by this agent")
    recall: Optional[Recall] = Field(description="why it is out of the block now, or null")
    conflict: bool = Field(description="a contradicting sighting is recorded in it, for a human")
    waiting: int = Field(description="pairs waiting for a verdict beside it, in this agent")
    learned_words: list[LearnedWordEntry]


class ListAnswer(_Answer):
    concepts: list[ListEntry]
    total: int = Field(description="the concepts the filters match, on every page")
    next_after: Optional[str] = Field(description="pass as `after` for the next page; null on the last")


class VersionEntry(_Answer):
    version_id: str
    time: str
    actor: Optional[str] = Field(description="who wrote it: engine, operator:<id>, import:<id>…")
    reason: Optional[str] = Field(description="why: created, merged, contradiction, edited, restored, deleted…")
    deleted: bool
    latest: bool
    size: int
    session_id: Optional[str] = Field(default=None, description="the session whose sighting wrote it")
    turn_id: Optional[str] = None


class HistoryAnswer(_Answer):
    name: str
    shared: bool
    versions: list[VersionEntry] = Field(description="newest first")
    markdown: Optional[str] = Field(description="the text of `version_id` when one was asked, else null")


ACTIONS: dict[str, type[_Read]] = {"list_knowledge": ListRequest, "knowledge_history": HistoryRequest}


class Reader:
    def __init__(self, retriever: Retriever, store: ConceptStore):
        self._retriever, self._store = retriever, store
        self.counters = retriever.counters

    def handle(self, event: Any, remaining_seconds: Optional[float] = None) -> dict[str, Any]:
        model = ACTIONS.get(event.get("action")) if isinstance(event, dict) else None
        if model is None:
            raise InvalidRequest("action: must be list_knowledge or knowledge_history")
        request = validate_object(model, event, InvalidRequest, "the event")
        budget = self._retriever.fetch_budget_seconds
        if remaining_seconds is not None:
            budget = max(0.0, min(budget, remaining_seconds - 1.5))
        if isinstance(request, ListRequest):
            return self.list(request, budget)
        return self.history(request, budget)  # type: ignore[arg-type]

    def _served(self, tenant: str, agent: str, budget: float) -> "_Served":
        """What load_knowledge may serve the agent now, and why each lapsed one is out of the block."""
        retriever = self._retriever
        knowledge = retriever.knowledge(tenant, agent, budget)
        if knowledge.config is None or not knowledge.config.retrieve:
            retriever.refuse_off(tenant, agent, knowledge)
        served = _Served(knowledge, None, {}, dict(retriever.lapsed(tenant, agent, knowledge).names))
        shared = retriever.shared(tenant, agent, knowledge, budget)
        if shared is not None:
            served.shared, shared_lapsed = shared[0], shared[2]
            own = set(knowledge.index.docs) | set(knowledge.unreadable)
            for name, doc in shared[0].index.docs.items():
                if name not in own:  # the agent's concept of the same name is the one served
                    served.docs[name] = (doc, SHARED)
                    if name in shared_lapsed:
                        served.lapsed[name] = shared_lapsed[name]
        for name, doc in knowledge.index.docs.items():
            served.docs[name] = (doc, agent)
        return served

    def list(self, request: ListRequest, budget: float) -> dict[str, Any]:
        served = self._served(request.tenant, request.agent, budget)
        lapsed = served.lapsed
        waiting = self._store.waiting().counts(request.tenant, request.agent)
        since = request.since if request.since is None or "T" in request.since else f"{request.since}T00:00:00Z"
        matched = []
        for name in sorted(served.docs):
            doc, scope = served.docs[name]
            summary = (served.shared.summaries if scope == SHARED and served.shared else served.own.summaries).get(name)
            conflict = bool(summary and summary.conflict)
            if request.type and doc.type != request.type or request.provenance and doc.provenance != request.provenance:
                continue
            if since and (summary is None or (summary.updated_at or "") < since[:19] + "Z"):
                continue
            state = request.recall
            if state == "in_recall" and name in lapsed or state in ("expired", "not_started", "stale", "retired") \
                    and lapsed.get(name) != state or state == "waiting" and not waiting.get(name) \
                    or state == "conflict" and not conflict:
                continue
            matched.append((name, doc, scope, summary, conflict))
        page = [m for m in matched if request.after is None or m[0] > request.after][:request.limit]
        fetched = self._texts(request.tenant, [(name, doc, scope) for name, doc, scope, _, _ in page])
        entries = []
        for (name, doc, scope, summary, conflict), concept in zip(page, fetched):
            words = [LearnedWordEntry(word=w.word, origin=w.origin, sessions=w.sessions)  # type: ignore[arg-type]
                     for w in (concept.learned_words if concept is not None else ())]
            entries.append(ListEntry(
                name=name, description=doc.description, type=doc.type, provenance=doc.provenance,
                confidence=doc.confidence, occurrences=summary.occurrences if summary else None,
                updated_at=summary.updated_at if summary else None, shared=scope == SHARED,
                recall=lapsed.get(name), conflict=conflict, waiting=waiting.get(name, 0), learned_words=words))
        last = page[-1][0] if page and page[-1] is not matched[-1] else None
        return ListAnswer(concepts=entries, total=len(matched), next_after=last).model_dump(mode="json")

    def _texts(self, tenant: str, items: list[tuple[str, Any, str]]) -> list[Any]:
        """Each concept parsed (for its learned words): the indexed bytes, else one parallel read."""
        out: list[Any] = [None] * len(items)
        missing: dict[str, list[tuple[int, str]]] = {}
        for i, (name, doc, scope) in enumerate(items):
            if doc.data is not None:
                out[i] = _parsed(doc.data, name)
            else:
                missing.setdefault(scope, []).append((i, name))
        for scope, wanted in missing.items():
            for (i, name), stored in zip(wanted, self._store.fetch_many(tenant, scope, [n for _, n in wanted])):
                out[i] = None if stored is None else _parsed(stored.data, name)
        return out

    def history(self, request: HistoryRequest, budget: float) -> dict[str, Any]:
        served = self._served(request.tenant, request.agent, budget)
        if request.name not in served.docs:
            raise NotFound(f"no such concept: {request.name}")
        scope = served.docs[request.name][1]
        versions = self._store.versions(request.tenant, scope, request.name)
        markdown = None
        if request.version_id is not None:
            if request.version_id not in {v.version_id for v in versions if not v.deleted}:
                raise NotFound("no such version of this concept (see versions)")
            stored = self._store.read_version(request.tenant, scope, request.name, request.version_id)
            markdown = stored.text
            if scope == SHARED:  # a shared concept serves only what a human approved
                try:
                    concept = parse_stored(stored.data, request.name)
                except InvalidConcept:
                    concept = None
                if concept is not None and (body := without_claims_kept_beside(concept.body)) != concept.body:
                    markdown = concept.replace(body=body).render()
        return HistoryAnswer(name=request.name, shared=scope == SHARED, markdown=markdown, versions=[
            VersionEntry(version_id=v.version_id, time=v.time.isoformat().replace("+00:00", "Z"), actor=v.actor,
                         reason=v.reason, deleted=v.deleted, latest=v.latest, size=v.size,
                         session_id=v.evidence.session_id if _ours(v.evidence, scope, request.agent) else None,
                         turn_id=v.evidence.turn_id if _ours(v.evidence, scope, request.agent) else None)
            for v in versions]).model_dump(mode="json")


@dataclass
class _Served:
    own: AgentKnowledge
    shared: Optional[AgentKnowledge]
    docs: dict[str, tuple[Doc, str]]  # name -> (what the index holds, the scope it is read from)
    lapsed: dict[str, str]  # name -> why it is out of the block


def _ours(evidence: Optional[EvidenceLink], scope: str, agent: str) -> bool:
    """A shared concept's version names a session only when the sighting was this agent's."""
    return evidence is not None and (scope != SHARED or evidence.agent in (None, agent))


def _parsed(data: bytes, name: str) -> Any:
    try:
        return parse_stored(data, name)
    except InvalidConcept:
        return None
