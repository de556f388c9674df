"""The requests and answers of every call, as the service publishes them (schemas/*.schema.json in
the Knowledge repository; a test there keeps these models equal to those schemas).

Requests are closed and checked here before anything is sent, with the service's own rules.
Answers ignore fields they do not know, so a client one release behind keeps working while a
deploy rolls.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

SLUG_MAX = 64
SLUG_PATTERN = "^[a-z0-9]+(-[a-z0-9]+)*$"
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
MOMENT_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$"
RETRIEVE_MESSAGE_MAX = 8000
TURN_MESSAGE_MAX = 32_000
TURN_MESSAGES_MAX = 200
TURN_MAX_BYTES = 240 * 1024
SHOWN_MAX = 50
SEARCH_MAX_HITS = 50
FACT_NAME_MAX, FACT_VALUE_MAX = 64, 500

Slug = Annotated[str, Field(pattern=SLUG_PATTERN, max_length=SLUG_MAX)]
Id = Annotated[str, Field(min_length=1, max_length=128, pattern=ID_PATTERN)]
Provenance = Literal["observed", "policy"]
ConceptType = Literal["fact", "entity", "procedure", "policy", "objection"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# ------------------------------------------------------------------ the turn (TurnCompleteQueue)


class Message(_Request):
    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(min_length=1, max_length=TURN_MESSAGE_MAX)


class TurnShown(_Request):
    """What the session was shown (retrieve's concepts) and loaded so far, this turn included."""

    retrieved: tuple[Slug, ...] = Field(default=(), max_length=SHOWN_MAX)
    loaded: tuple[Slug, ...] = Field(default=(), max_length=SHOWN_MAX)


class TurnComplete(_Request):
    """One completed turn (the SQS body)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"additionalProperties": True})

    tenant: Slug
    agent: Slug
    session_id: Id
    turn_id: Id
    completed_at: str = Field(pattern=MOMENT_PATTERN, json_schema_extra={"format": "date-time"})
    messages: tuple[Message, ...] = Field(min_length=1, max_length=TURN_MESSAGES_MAX)
    customer_id: Optional[Id] = None
    shown: Optional[TurnShown] = None


# ------------------------------------------------------------------ RetrieveFunction


class RetrieveRequest(_Request):
    tenant: Slug = "default"
    agent: Slug
    session_id: Id
    message: str = Field(max_length=RETRIEVE_MESSAGE_MAX)


class LoadRequest(_Request):
    tenant: Slug = "default"
    agent: Slug
    session_id: Id
    action: Literal["load_knowledge"]
    name: str = Field(max_length=200)


class Tool(_Answer):
    """A tool definition to hand the model: its name, description and input's JSON Schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Shown(_Answer):
    name: str
    score: float
    confidence: float
    provenance: Provenance
    linked: bool


class RetrieveAnswer(_Answer):
    block: str
    concepts: list[Shown]
    priority: int
    tool: Optional[Tool]  # load_knowledge whenever retrieval is on, even when the block is empty
    reason: Optional[Literal["unknown_agent", "retrieval_off"]] = None  # why tool is null


class Concept(_Answer):
    name: str
    description: str
    type: ConceptType
    provenance: Provenance
    confidence: float
    sources: list[str]
    occurrences: int
    created_at: str
    updated_at: str
    body: str
    conflict: bool
    valid_from: Optional[str]
    valid_until: Optional[str]
    retired_by: Optional[str] = None
    recall: Optional[Literal["expired", "not_started", "stale", "retired"]]


class LoadAnswer(_Answer):
    name: str
    markdown: str
    concept: Concept


class SearchRequest(_Request):
    tenant: Slug = "default"
    agent: Slug
    session_id: Id
    action: Literal["search_knowledge"]
    query: str = Field(min_length=1, max_length=RETRIEVE_MESSAGE_MAX)
    limit: int = Field(default=10, ge=1, le=SEARCH_MAX_HITS)


class SearchHit(_Answer):
    name: str
    description: str
    type: ConceptType
    provenance: Provenance
    confidence: float
    score: float
    injected: bool
    recall: Optional[Literal["expired", "not_started", "stale", "retired"]]


class SearchAnswer(_Answer):
    hits: list[SearchHit]


class SaveRequest(_Request):
    tenant: Slug = "default"
    agent: Slug
    session_id: Id
    action: Literal["save_knowledge"]
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(min_length=1, max_length=300)
    type: ConceptType
    body: str = Field(min_length=1, max_length=16 * 1024)
    evidence: str = Field(min_length=1, max_length=1000)
    turn_id: Optional[Id] = None


class SaveAnswer(_Answer):
    save_id: str  # ask save_status with it what became of the save
    name: str
    type: str
    turn_id: str
    status: Literal["queued"]
    echo: bool
    redacted: dict[str, int]


# ------------------------------------------------------------------ MemoryFunction


SAVE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}~[0-9a-f]{16}[A-Za-z0-9_-]{22}$"
SaveStatus = Literal["queued", "created", "confirmed", "merged", "kept_beside", "waiting", "contradiction", "echoed",
                     "replayed", "not_sent"]


class StatusRequest(_Request):
    tenant: Slug = "default"
    agent: Slug
    action: Literal["save_status"]
    save_id: str = Field(max_length=200, pattern=SAVE_ID_PATTERN)


class StatusAnswer(_Answer):
    save_id: str
    name: str
    type: str
    session_id: str
    turn_id: str
    status: SaveStatus
    saved_at: str
    settled_at: Optional[str]


# ------------------------------------------------------------------ the builders' reads (RetrieveFunction)

LIST_MAX = 100
DAY_OR_MOMENT = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z)?$"
RecallFilter = Literal["in_recall", "expired", "not_started", "stale", "retired", "waiting", "conflict"]


class ListRequest(_Request):
    tenant: Slug = "default"
    agent: Slug
    session_id: Optional[Id] = None
    action: Literal["list_knowledge"]
    type: Optional[ConceptType] = None
    provenance: Optional[Provenance] = None
    recall: Optional[RecallFilter] = None
    since: Optional[str] = Field(default=None, pattern=DAY_OR_MOMENT)
    limit: int = Field(default=50, ge=1, le=LIST_MAX)
    after: Optional[Slug] = None


class LearnedWordEntry(_Answer):
    word: str
    origin: Literal["loaded", "sighting", "model", "operator"]
    sessions: int


class ListEntry(_Answer):
    name: str
    description: str
    type: ConceptType
    provenance: Provenance
    confidence: float
    occurrences: Optional[int]
    updated_at: Optional[str]
    shared: bool
    recall: Optional[Literal["expired", "not_started", "stale", "retired"]]
    conflict: bool
    waiting: int
    learned_words: list[LearnedWordEntry]


class ListAnswer(_Answer):
    concepts: list[ListEntry]
    total: int
    next_after: Optional[str]


class HistoryRequest(_Request):
    tenant: Slug = "default"
    agent: Slug
    session_id: Optional[Id] = None
    action: Literal["knowledge_history"]
    name: Slug
    version_id: Optional[str] = Field(default=None, min_length=1, max_length=1024)


class VersionEntry(_Answer):
    version_id: str
    time: str
    actor: Optional[str]
    reason: Optional[str]
    deleted: bool
    latest: bool
    size: int
    session_id: Optional[str] = None
    turn_id: Optional[str] = None


class HistoryAnswer(_Answer):
    name: str
    shared: bool
    versions: list[VersionEntry]
    markdown: Optional[str]


class MemoryReadRequest(_Request):
    tenant: Slug
    customer_id: Id
    agent: Optional[Slug] = None
    session_id: Optional[Id] = None
    action: Literal["read"]


class RememberRequest(_Request):
    tenant: Slug
    customer_id: Id
    agent: Optional[Slug] = None
    session_id: Optional[Id] = None
    action: Literal["remember"]
    name: str = Field(min_length=1, max_length=FACT_NAME_MAX)
    value: str = Field(min_length=1, max_length=FACT_VALUE_MAX)


class ServedFact(_Answer):
    name: str
    value: str
    origin: str
    at: str
    revision: int


class MemoryAnswer(_Answer):
    customer_id: str
    priority: int
    block: str
    facts: list[ServedFact]


class RememberAnswer(_Answer):
    customer_id: str
    fact: ServedFact


# ------------------------------------------------------------------ a refusal


class Refused(_Answer):
    code: str
    message: str


class Refusal(_Answer):
    error: Refused
