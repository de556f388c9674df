"""What RetrieveFunction answers, as models: the handler's answers are built from them and the
published schemas (schemas/*.answer.schema.json, scripts/gen/schemas.py) are written from
them, so the two cannot drift. README "How an engine wires itself in" shows each."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

Provenance = Literal["observed", "policy"]
ConceptType = Literal["fact", "entity", "procedure", "policy", "objection"]
Recall = Literal["expired", "not_started", "stale", "retired"]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tool(_Answer):
    """A tool definition the engine hands its model (name, description, JSON Schema of its input)."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Shown(_Answer):
    """One concept in the block: ranked (`linked` false) or one [[link]] away from one that is."""

    name: str
    score: float
    confidence: float
    provenance: Provenance
    linked: bool


class RetrieveAnswer(_Answer):
    block: str = Field(description="the <knowledge> block for the prompt; empty when nothing is relevant")
    concepts: list[Shown]
    priority: int
    tool: Optional[Tool] = Field(description="load_knowledge, for the model, whenever retrieval is on for the agent "
                                             "(even when the block is empty); null when it is off")
    reason: Optional[Literal["unknown_agent", "retrieval_off"]] = Field(default=None, description=(
        "why the block is empty and the tool null: unknown_agent (no knowledge.yaml and no concept: most often a "
        "mistyped agent) or retrieval_off (a knowledge.yaml missing, with retrieve: false, or that does not parse); "
        "null while retrieval is on"))


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
    retired_by: Optional[str] = Field(default=None, description="the policy concept whose text retired it from "
                                                                "recall, or null")
    recall: Optional[Recall] = Field(description="why the concept is out of the block now, or null")


class LoadAnswer(_Answer):
    name: str
    markdown: str = Field(description="the stored concept, byte for byte")
    concept: Concept


class SearchHit(_Answer):
    """One concept the query ranks, best first, with whether a retrieve of the query would inject it."""

    name: str
    description: str
    type: ConceptType
    provenance: Provenance
    confidence: float
    score: float
    injected: bool = Field(description="whether a retrieve with this query as its message would put it in the block")
    recall: Optional[Recall] = Field(description="why the concept is out of the block now (never injected), or null")


class SearchAnswer(_Answer):
    hits: list[SearchHit]


def tool_input(request: type[BaseModel], fields: dict[str, str]) -> dict[str, Any]:
    """A tool's input schema: the model-written `fields` (name -> what to tell the model) of the request
    model the function validates with, so the tool and the check are one source."""
    schema = request.model_json_schema(mode="validation")
    properties = {}
    for field, told in fields.items():
        prop = {k: v for k, v in schema["properties"][field].items() if k not in ("title", "default")}
        properties[field] = {**prop, "description": told}
    required = [field for field in fields if field in schema.get("required", [])]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
