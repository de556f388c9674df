"""The engine's direct invoke of its customer's memory (MemoryFunction).

{"action": "read", "tenant", "customer_id"} -> the facts and the rendered <memory> block.
{"action": "remember", "tenant", "customer_id", "name", "value"} -> the fact as written (origin
`engine`): the engine's own `remember` tool writes the cell directly, never through a proposal.
Values are answered to the engine only: never logged, counted or published.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union
from xml.sax.saxutils import escape, quoteattr

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from shared.errors import InvalidRequest
from shared.names import SessionId, Slug
from shared.telemetry import Counters
from shared.validation import describe_errors

from .cells import MemoryCells
from .fact import NAME_MAX, VALUE_MAX, Cell, check_fact

PRIORITY = 75  # below knowledge (77) and curated skills (80)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: Slug
    customer_id: SessionId
    # Correlation only (logs); the cell is the customer's, whichever agent asks.
    agent: Optional[Slug] = None
    session_id: Optional[SessionId] = None


class ReadRequest(_Request):
    """The customer's memory cell, for the <memory> block."""

    action: Literal["read"]


class RememberRequest(_Request):
    """The engine's own `remember` tool: one fact written to the customer's cell (origin engine)."""

    action: Literal["remember"]
    name: str = Field(min_length=1, max_length=NAME_MAX)
    value: str = Field(min_length=1, max_length=VALUE_MAX)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServedFact(_Answer):
    name: str
    value: str
    origin: str = Field(description="who wrote it: engine, operator, legacy or distilled:<proposal id>")
    at: str = Field(description="when it was written, UTC")
    revision: int


class ReadAnswer(_Answer):
    customer_id: str
    priority: int
    block: str = Field(description="the <memory> block for the prompt; empty when the customer has no facts")
    facts: list[ServedFact]


class RememberAnswer(_Answer):
    customer_id: str
    fact: ServedFact


MemoryRequest = Annotated[Union[ReadRequest, RememberRequest], Field(discriminator="action")]
_REQUEST = TypeAdapter(MemoryRequest)


def parse_request(event: Any) -> Union[ReadRequest, RememberRequest]:
    if not isinstance(event, dict):
        raise InvalidRequest("the request must be a JSON object")
    if event.get("action") not in ("read", "remember"):
        raise InvalidRequest("action: must be 'read' or 'remember'")
    try:
        return _REQUEST.validate_python(event)
    except ValidationError as exc:
        problems = [p.removeprefix(f"{event['action']}.") for p in describe_errors(exc)]
        raise InvalidRequest("; ".join(problems)) from None


def render_block(cell: Cell) -> str:
    """The <memory> block, one line per fact served (at most FACTS_MAX), XML-escaped; empty when
    the customer has none."""
    facts = cell.served()
    if not facts:
        return ""
    lines = [f"  <fact name={quoteattr(name)}>{escape(fact.value)}</fact>" for name, fact in sorted(facts.items())]
    return "<memory>\n" + "\n".join(lines) + "\n</memory>"


class Memory:
    def __init__(self, cells: MemoryCells, counters: Optional[Counters] = None):
        self._cells = cells
        self.counters = counters or Counters()

    def handle(self, event: Any) -> dict:
        request = parse_request(event)
        if isinstance(request, ReadRequest):
            cell = self._cells.read(request.tenant, request.customer_id).cell
            self.counters.count("MemoryRead", tenant=request.tenant)
            if cell.over_full:  # written outside the engine: the Facts page says so and can trim it
                self.counters.count("MemoryOverFull", tenant=request.tenant)
            return ReadAnswer(customer_id=request.customer_id, priority=PRIORITY, block=render_block(cell),
                              facts=[ServedFact(name=name, **fact.as_json())
                                     for name, fact in sorted(cell.served().items())]).model_dump(mode="json")
        name, value = check_fact(request.name, request.value)
        fact = self._cells.write_fact(request.tenant, request.customer_id, name, value, "engine")
        self.counters.count("FactRemembered", tenant=request.tenant)
        return RememberAnswer(customer_id=request.customer_id,
                              fact=ServedFact(name=name, **fact.as_json())).model_dump(mode="json")

