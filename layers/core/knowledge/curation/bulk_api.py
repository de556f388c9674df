"""The list's bulk actions (move to shared too), as the studio API's OpenAPI document states them (POST
.../concepts/bulk). The route lives in functions/studio_api/studio_bulk.py, the work in knowledge.curation.bulk."""

from typing import Literal, Optional

from pydantic import BaseModel, Field

from knowledge.curation.bulk import BULK_MAX
from shared.names import SLUG_MAX, SLUG_SCHEMA


class BulkRow(BaseModel):
    name: str = Field(pattern=SLUG_SCHEMA["pattern"], max_length=SLUG_MAX)
    written_at: Optional[str] = Field(default=None, max_length=32, description=(
        "reviewed only: the row's written_at, the version reviewed (a later one is new again)."))


class BulkRequest(BaseModel):
    action: Literal["reviewed", "delete", "undelete", "type", "share"] = Field(description=(
        "reviewed: mark the rows reviewed; delete: a restorable delete each; undelete: the undo of a bulk delete; "
        "type: change each row's type to `type`; share: move each of an agent's rows to the tenant's shared "
        "knowledge, as the editor's Move to shared does."))
    rows: list[BulkRow] = Field(description=f"At most {BULK_MAX}, each named once (more is 422 too_many_rows).")
    type: Optional[Literal["fact", "entity", "procedure", "policy", "objection"]] = Field(
        default=None, description="The new type (action type only).")
    dry_run: bool = Field(default=False, description=(
        "share only: say each row's outcome and the model calls the move would queue, writing nothing."))


class BulkOutcome(BaseModel):
    name: str
    outcome: Literal["reviewed", "unchanged", "deleted", "gone", "restored", "not_deleted", "changed",
                     "changed_meanwhile", "invalid", "moved", "ready", "name_taken", "name_deleted",
                     "not_done"] = Field(
        description=(
            "reviewed / unchanged (already reviewed at that version, or seen); deleted / gone (not there); "
            "restored / not_deleted; changed / unchanged (already that type) / changed_meanwhile (another writer "
            "came first: nothing written) / invalid (the concept does not validate with that type). share: moved / "
            "changed_meanwhile (copied to shared, but the agent's concept was written since it was read: it stays "
            "there too) / name_taken (shared knowledge has another concept of the name) / name_deleted (a deleted "
            "shared concept has it) / gone / invalid (it does not parse) / not_done (the request's time ran out, "
            "or the storage stayed busy, before it was done: ask again); in a dry run, ready (it would move) or "
            "the refusal it would meet."))


class BulkReview(BaseModel):
    new: int = Field(description="Concepts still new to this operator after the marks.")
    since: str
    as_of: str
    seen_at: Optional[str]
    undo: bool


class BulkAnswer(BaseModel):
    action: str
    rows: list[BulkOutcome] = Field(description="One per row asked for, in the order asked.")
    counts: dict[str, int] = Field(description="How many rows had each outcome.")
    complete: bool = Field(description="Every row was done (or was so already).")
    review: Optional[BulkReview] = Field(default=None, description="reviewed only: the review state after it.")
    dry_run: Optional[bool] = Field(default=None, description="share only: nothing was written.")
    model_calls: Optional[int] = Field(default=None, description=(
        "share only: the utility model's calls the words jobs of the concepts entering shared knowledge make (ten "
        "concepts to a call), within the tenant's daily model calls; 0 where no queue or no model is configured."))
    policies: Optional[int] = Field(default=None, description=(
        "share only: policies among them, each also reviewed against the agents that recall shared knowledge."))
    words_not_queued: Optional[int] = Field(default=None, description=(
        "share only: concepts whose words job the queue refused (Teach words asks for them later)."))
