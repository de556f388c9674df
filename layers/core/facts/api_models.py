"""The Facts API's requests and answers (FactsApiFunction), as its OpenAPI document states them, status by
status (studio_web/facts-openapi.json is written from them), and the limits its paths and queries
declare. The routes, and the map of errors to statuses, stay in functions/facts_api/app.py.
"""

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, Field, StrictInt

from shared.names import SESSION_ID_MAX, SLUG_MAX, SLUG_SCHEMA  # noqa: F401 - SLUG_MAX: a name's length in a path
from shared.pii import KINDS

from .fact import NAME_MAX, REASON_MAX, VALUE_MAX  # noqa: F401 - NAME_MAX: a fact's name in a path
from .bulk import BULK_MAX
from .studio import PAGE_MAX  # noqa: F401 - the most proposals a page lists

SLUG_PATTERN: str = SLUG_SCHEMA["pattern"]  # a tenant's or an agent's name in a path
CUSTOMER_ID_MAX = SESSION_ID_MAX  # a customer id is as long as a session id may be
# What an operator may confirm a value holds (shared.pii's kinds).
PERSONAL_DATA_KINDS: tuple[str, ...] = KINDS


class Excerpt(BaseModel):
    turn_id: str
    completed_at: str
    message: int = Field(description="The message's index in its turn.")
    status: Literal["available", "expired"] = Field(description="expired: the archived turn is gone.")
    role: Optional[str]
    excerpt: Optional[str] = Field(description="The message, read from the archive now and redacted; null when expired.")


class CurrentFact(BaseModel):
    value: str
    origin: str
    revision: int


class UndoView(BaseModel):
    action: Literal["undo_approval", "reopen"]
    by: str = Field(description="The operator (the token's subject) who undid it.")
    at: str


class ProposalView(BaseModel):
    id: str
    customer_id: str
    scope: str = Field(description="tenant:customer, the memory cell an approval writes.")
    session_id: str
    name: str
    value: str
    confidence: Optional[float]
    status: Literal["pending", "approving", "approved", "rejected", "dismissed", "stale", "expired"]
    proposed_at: str
    resolved_at: Optional[str]
    resolved_by: Optional[str] = Field(description="The operator (the token's subject) who decided.")
    reason: Optional[str] = Field(description="A rejection's reason, when one was given.")
    current: Optional[CurrentFact] = Field(description="Stale: the customer's fact as it stood when the approval "
                                                       "found it changed.")
    current_deleted: bool
    evidence: Optional[list[Excerpt]] = Field(description="Pending and stale rows: the supporting messages.")
    batch: Optional[str] = Field(description="The bulk decision this one was part of (Recent shows them as one).")
    can_undo: bool = Field(description="An approval whose fact can be taken back out of memory (POST …/undo).")
    can_reopen: bool = Field(description="A reject or dismiss that can be reopened (POST …/undo).")
    undos: list[UndoView] = Field(description="The undos of this proposal, newest first.")


class Group(BaseModel):
    value: str
    count: int


class ProposalList(BaseModel):
    proposals: list[ProposalView]
    total: int
    next: Optional[str] = Field(description="The cursor of the next page; null on the last.")
    counts: dict[str, int] = Field(description="How many proposals each list (pending, stale, recent) holds.")
    groups: dict[str, list[Group]] = Field(description="names and customers: how many rows of this list each fact "
                                                      "name and each customer has (the 100 with most rows).")


class BulkItem(BaseModel):
    customer_id: str = Field(min_length=1, max_length=CUSTOMER_ID_MAX)
    id: str = Field(pattern=r"^[0-9a-f]{32}$")


class BulkDecision(BaseModel):
    action: Literal["approve", "reject", "dismiss"]
    items: list[BulkItem] = Field(min_length=1, description=f"The proposals, at most {BULK_MAX}: the cards the "
                                                            "operator has on screen.")
    reason: Optional[str] = Field(None, max_length=REASON_MAX, description="A rejection's reason, for every one.")


class BulkOutcome(BaseModel):
    customer_id: str
    id: str
    name: Optional[str] = Field(description="The fact's name; null when this one was refused before it was read.")
    ok: bool
    outcome: str = Field(description="The proposal's status after (approved, rejected, dismissed), or the code "
                                     "that stopped it: fact_moved (it went stale), conflict, not_pending, busy…")
    message: Optional[str]
    proposal: Optional[ProposalView]


class BulkAnswer(BaseModel):
    batch: str
    action: str
    by: str
    at: str
    outcomes: list[BulkOutcome] = Field(description="One per proposal, in the order asked.")
    counts: dict[str, int] = Field(description="How many outcomes of each kind.")


class Reject(BaseModel):
    reason: Optional[str] = Field(None, max_length=REASON_MAX, description="Shown on the card; optional.")


class FactView(BaseModel):
    name: str
    value: str
    origin: str = Field(description="engine, operator, legacy or distilled:<session>.")
    at: str
    revision: int


class Removal(BaseModel):
    name: str
    by: str = Field(description="The operator (the token's subject) who removed it.")
    at: str
    revision: int = Field(description="The removed fact's revision (the cell's earlier version holds its value).")
    reason: Optional[str] = Field(description="Why, when the operator said.")


class MemoryCell(BaseModel):
    customer_id: str
    scope: str
    facts: list[FactView] = Field(description="What a read serves: at most 200, the most recently written.")
    stored: int = Field(description="How many facts the cell holds (more than `facts` when it is over-full).")
    problem: Optional[str] = Field(description="Set when the cell holds more facts than a customer may have.")
    removals: list[Removal] = Field(description="The last 20 facts operators removed, newest first: who, when, why.")


class Trimmed(MemoryCell):
    removed: int = Field(description="How many facts were removed (those no read served).")


class Reset(BaseModel):
    confirm: str = Field(max_length=CUSTOMER_ID_MAX,
                         description="The customer id again: every fact of the unreadable cell is lost.")


class FactEdit(BaseModel):
    value: str = Field(min_length=1, max_length=VALUE_MAX)
    revision: Optional[StrictInt] = Field(ge=1, description="The fact's revision as read; null when it is a new fact.")
    personal_data: list[Literal[PERSONAL_DATA_KINDS]] = Field(  # type: ignore[valid-type]
        default_factory=list, max_length=len(PERSONAL_DATA_KINDS),
        description="The kinds of personal data the operator confirms this value holds, after a 422 personal_data "
                    "named them (payment card data is refused whatever is confirmed).")


class FactRemoval(BaseModel):
    reason: Optional[str] = Field(None, max_length=REASON_MAX, description="Why (optional), kept in the cell.")


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class WentStale(ErrorBody):
    proposal: ProposalView


class UndoRefused(ErrorBody):
    current: Optional[FactView] = Field(description="cannot_undo: the fact now; null when it was removed.")


class Stale(ErrorBody):
    current: Optional[FactView] = Field(description="The fact now; null when it was removed.")


class PersonalDataFound(ErrorBody):
    kinds: list[str] = Field(description="The kinds of personal data found in the value (never the value).")
    can_confirm: bool = Field(description="Whether saving again with these kinds in personal_data keeps it.")


def answers(model: Any, *also: int) -> dict[int, dict[str, Any]]:
    def body(kind: Any) -> dict[str, Any]:
        return {"content": {"application/json": {"model": kind}}}

    errors = {400: ("A tenant, agent, customer, proposal or fact name that cannot be one", ErrorBody),
              401: ("No valid token", ErrorBody), 403: ("The operator is not a member of the tenant", ErrorBody),
              404: ("No such proposal, route or agent (unknown_agent: neither a knowledge.yaml nor any concept)",
                    ErrorBody),
              409: (("Already decided otherwise, the fact changed (the proposal went stale), or the customer's "
                     "memory cell is unreadable (record_unreadable: restore or reset it), or an undo refused "
                     "(cannot_undo: the fact changed since the approval)"), Union[WentStale, UndoRefused, ErrorBody]),
              410: ("gone: the proposal no longer exists (its customer was forgotten, or it aged out)", ErrorBody),
              412: ("The fact changed since it was read", Stale),
              422: ("The request is invalid (personal_data: the value holds personal data, said with its kinds)",
                    Union[PersonalDataFound, ErrorBody]),
              503: ("Storage is busy", ErrorBody)}
    out = {200: {"description": "Success", **body(model)}}
    for code in sorted({400, 401, 403, 404, 422, 503, *also}):
        out[code] = {"description": errors[code][0], **body(errors[code][1])}
    return out
