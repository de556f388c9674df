"""The studio API's requests and answers (StudioApiFunction), as its OpenAPI document states them, status
by status (studio_web/openapi.json is written from them), and the limits its paths and queries declare.
The routes, and the map of errors to statuses, stay in functions/studio_api/app.py.
"""

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, Field

from knowledge.curation.documents import MARKDOWN_MAX_BYTES
from knowledge.curation.listing import SORTS  # noqa: F401 - the columns a list sorts by
from knowledge.curation.studio_import import ImportAnswer, ImportBody  # noqa: F401 - the import route's
from knowledge.curation.words_api import PAGE_MAX, WordsPage, WordsRemovalBody, WordsRemoved  # noqa: F401
from knowledge.format.vocabulary import VOCABULARY_MAX_BYTES
from knowledge.store.keys import SHARED
from shared.names import SLUG_MAX, SLUG_SCHEMA  # noqa: F401 - SLUG_MAX: a name's length in a path

SLUG_PATTERN: str = SLUG_SCHEMA["pattern"]  # a tenant's or an agent's name in a path


class Markdown(BaseModel):
    markdown: str = Field(max_length=MARKDOWN_MAX_BYTES, description="The whole concept document.")


class ConfigText(BaseModel):
    yaml: str = Field(max_length=32 * 1024, description="knowledge.yaml, with its `knowledge:` key.")


class SearchMatch(BaseModel):
    source: Literal["description", "body"] = Field(description="Where the snippet comes from: the description, "
                                                              "or the body when only the body holds the words "
                                                              "and the API holds its text.")
    snippet: str = Field(description="At most 160 characters around the first matched word.")
    marks: list[list[int]] = Field(description="[start, end) character ranges of the matched words in snippet.")
    name_marks: list[list[int]] = Field(description="[start, end) ranges of the name's words the query begins.")


class ConceptSummary(BaseModel):
    name: str
    type: Optional[str]
    provenance: Optional[str]
    confidence: Optional[float]
    occurrences: Optional[int]
    updated_at: Optional[str]
    conflict: bool = Field(description="The body holds a `## Contradiction` for a human to resolve.")
    related: int = Field(description="Claims kept under `## Related claims` beside an operator's body, "
                                     "waiting to be folded in.")
    etag: str
    problem: Optional[str] = Field(description="Why the stored file does not parse (the other fields are empty).")
    description: Optional[str]
    written_at: Optional[str] = Field(description="When the current version was written (S3), whoever wrote it; "
                                                  "updated_at is the time of what it says.")
    written_by: Optional[str] = Field(description="Who wrote the current version: engine or operator:<id> "
                                                  "(null when its writer is not recorded).")
    reason: Optional[str] = Field(description="Why the current version was written: created, confirmed, merged, "
                                              "kept_beside, contradiction, retired, edit, restore or purged (null when not "
                                              "recorded).")
    new: bool = Field(description="New to this operator (GET /review): written since the operator last looked by "
                                  "the engine or another operator, and not marked reviewed at this version.")
    valid_from: Optional[str] = Field(default=None, description="The first day its claim is true (YYYY-MM-DD, the "
                                                                "store's local date), when stated.")
    valid_until: Optional[str] = Field(default=None, description="The last day its claim is true (YYYY-MM-DD), "
                                                                 "when stated.")
    retired_by: Optional[str] = Field(default=None, description="The policy concept whose text retired this "
                                                                "observed one from recall (restore its previous "
                                                                "version to bring it back).")
    recall: Optional[Literal["expired", "not_started", "stale", "retired"]] = Field(
        default=None, description="Why retrieval leaves it out now, kept: past valid_until, before valid_from, "
                                  "observed and unseen for stale_after_days, or retired by a policy; null: recalled.")
    match: Optional[SearchMatch] = Field(default=None, description="With `q`: what matched in this row.")
    words_pending: bool = Field(default=False, description="Its model words wait for the tenant's next daily model "
                                                           "budget (as the last full listing found it).")
    scope: Literal["agent", "shared"] = Field(default="agent", description="Whose concept this is: the agent's own, "
                                                                           "or the tenant's shared knowledge.")
    shadows_shared: bool = Field(default=False, description="An agent's concept whose name is also a shared "
                                                            "concept's: the agent recalls this one, not the "
                                                            "shared one (it opts in to shared knowledge).")


class ConfigProblem(BaseModel):
    message: str = Field(description="Why knowledge.yaml does not parse: the agent's retrieval and extraction are "
                                     "off until it does.")
    line: Optional[int] = Field(description="The file's line to look at, when one is known.")


class QueryNotes(BaseModel):
    read: list[str] = Field(description="The words of `q` read, as typed (at most 8).")
    ignored: list[str] = Field(description="The words past the 8 read: not looked for.")
    unmatched: list[str] = Field(description="When nothing matched: each word (as typed) no concept holds on its "
                                             "own, which every word must; search without it.")


class ConceptList(BaseModel):
    concepts: list[ConceptSummary]
    query: Optional[QueryNotes] = Field(None, description="With `q`: what of it was read and, when nothing "
                                                          "matched, the words that matched nothing.")
    total: int = Field(description="Rows matching the filters (and `q`: every word of it), over all pages.")
    next: Optional[str] = Field(description="The cursor of the next page; null on the last.")
    new: int = Field(description="Concepts of the whole agent (not only this page or filter) new to this operator: "
                                 "written since the operator last looked by the engine or another operator.")
    since: str = Field(description="What `new` counts from (see GET /review).")
    as_of: str = Field(description="When this page was listed: PUT it to /review as seen_at to mark what was "
                                   "shown seen.")
    catching_up: int = Field(description="Changes this answer has not read yet (0: the list is current): "
                                         "their rows are as last known and a new concept is missing until "
                                         "a later request reads them.")
    config_problem: Optional[ConfigProblem] = Field(None, description="Set while the agent's knowledge.yaml does "
                                                                      "not parse (checked every 10 s).")
    shared_recalled: Optional[int] = Field(None, description="How many of the tenant's shared concepts the agent "
                                                             "has beside these (those its own do not shadow; each "
                                                             "recalled unless out of recall by its rules); null "
                                                             "when it does not opt in (`shared: true`) and in the "
                                                             "shared scope itself.")


class ChangesBehind(BaseModel):
    changes: int = Field(description="Concepts written (created, changed or deleted, by anyone) after `since`, as the "
                                     "agent's change journal says: each counted once however often written.")
    more: bool = Field(description="At least `changes`: the service keeps the newest 10,000 journal entries.")
    since: str = Field(description="The `since` asked (a list's `as_of`).")


class StoredConcept(BaseModel):
    name: str
    markdown: str = Field(description="The whole document as stored.")
    etag: str
    version_id: Optional[str]
    related: int = Field(description="Claims waiting under `## Related claims`.")
    words_pending: bool = Field(default=False, description="Its model words wait for the tenant's next daily model "
                                                           "budget.")


class WaitingPair(BaseModel):
    agent: str = Field(description="The agent whose traffic or review set it aside.")
    concept: str
    kind: Literal["policy", "sighting", "conflict"] = Field(
        description="A policy review, or a sighting's claim, no judge decided; or a policy judged to contradict it.")
    why: str = Field(description="no_model, unusable (the answer was no verdict), not_judged (beside a shared "
                                 "concept, or set aside before judgments were kept); contradicting (a conflict).")
    since: str = Field(description="The day it was set aside (YYYY-MM-DD).")
    policy: Optional[str] = Field(default=None, description="The policy it was reviewed against (kind policy).")
    description: Optional[str] = Field(default=None, description="The sighting's claim, redacted (kind sighting).")
    body: Optional[str] = None
    session_id: Optional[str] = None
    turn_id: Optional[str] = None
    evidence: Optional[str] = Field(default=None, description="Where the sighting's quote is (its evidence link).")
    shared: bool = Field(default=False, description="Beside the tenant's shared concept of the name.")


class WaitingList(BaseModel):
    pairs: list[WaitingPair]


class WaitingDismissed(BaseModel):
    dismissed: int = Field(description="How many pairs were taken out of the waiting list.")


class EvidenceLink(BaseModel):
    session_id: str
    turn_id: str
    completed_at: str = Field(description="When the turn completed (UTC).")


class Version(BaseModel):
    version_id: str
    time: str
    actor: Optional[str] = Field(description="engine, or operator:<id>.")
    reason: Optional[str] = Field(description="created, confirmed, merged, contradiction, edit, restore, delete.")
    size: int
    deleted: bool
    latest: bool
    evidence: Optional[EvidenceLink] = Field(description="Where the sighting that wrote this version was learned: "
                                                         "a link, never the quote.")


class Kept(BaseModel):
    newest: int = Field(description="Past versions always kept, newest first.")
    days: int = Field(description="Any other past version is kept this many days, then expired by the lifecycle rule.")


class VersionList(BaseModel):
    versions: list[Version] = Field(description="One page, newest first.")
    next: Optional[str] = Field(description="The cursor of the page of older versions; null on the last.")
    kept: Kept = Field(description="How long the history lasts: older versions are gone.")


class VersionPair(BaseModel):
    version: StoredConcept = Field(description="The version named first in the path.")
    against: StoredConcept = Field(description="The version it is compared against (the one before it, or an older "
                                               "one against the current).")


class Evidence(BaseModel):
    session_id: str
    turn_id: str
    completed_at: str
    status: Literal["available", "expired"] = Field(
        description="expired: the archived turn is gone (retention, purge) or no longer holds the quoted span.")
    excerpt: Optional[str] = Field(description="The quote, read from the archived turn now and redacted; "
                                               "null when expired.")


class DeletedPreview(BaseModel):
    name: str
    deleted_at: str
    deleted_by: Optional[str] = Field(description="operator:<id> or engine; null when the record is gone.")
    version_id: str = Field(description="The version an undelete brings back.")
    markdown: str = Field(description="That version's document.")


class AgentSummary(BaseModel):
    name: str
    concepts: int = Field(description="Current concepts (deleted ones not counted).")
    conflicts: int = Field(description="Concepts holding a `## Contradiction` for a human to resolve.")
    related: int = Field(description="Concepts with related claims waiting to be folded in.")
    new: int = Field(description="Concepts new to this operator (as the list's `new` counts them).")
    catching_up: int = Field(description="Changes not read yet: the counts are as last known (0: current).")
    config_problem: Optional[ConfigProblem] = Field(None, description="Set while its knowledge.yaml does not parse.")


class AgentList(BaseModel):
    agents: list[AgentSummary]
    shared: AgentSummary = Field(description=f"The tenant's shared concepts (name {SHARED}), counted as an agent's: "
                                             "what every agent that opts in recalls as its own.")


class ShareRequest(BaseModel):
    move: bool = Field(False, description="Also delete the agent's concept (restorable), so that the agents that "
                                          "opt in recall the shared one.")


class WordsProposeRequest(BaseModel):
    dry_run: bool = Field(True, description="Say what would be asked and what it costs; queue nothing.")


class WordsProposal(BaseModel):
    concepts: int = Field(description="Concepts with no model word yet: each is asked for its customers' words.")
    calls: int = Field(description="The model calls they cost (ten concepts to a call), within the tenant's daily "
                                   "model calls: what the budget cannot pay today waits for the next day.")
    taught_already: int = Field(description="Concepts that have model words: not asked again.")
    unreadable: int = Field(description="Concepts that do not parse: not asked.")
    queued: int = Field(description="Concepts whose words job was queued (0 in a dry run).")


class SharedCopy(StoredConcept):
    moved: bool = Field(description="Whether the agent's concept was deleted (a move); false for a copy, and for "
                                    "a move whose concept was written since it was copied (it stays).")


class DeletedItem(BaseModel):
    name: str
    deleted_at: str
    deleted_by: Optional[str] = Field(description="operator:<id> or engine; null when the record is gone.")
    version_id: str = Field(description="The delete marker's version id.")


class DeletedList(BaseModel):
    deleted: list[DeletedItem]


class Removed(BaseModel):
    name: str
    version_id: str = Field(description="The delete marker's version id.")


class ConfigFile(BaseModel):
    yaml: Optional[str] = Field(description="knowledge.yaml as stored; null when the agent has none yet.")
    etag: Optional[str]
    config: Optional[dict[str, Any]] = Field(description="The `knowledge:` block as read, with defaults; null when off.")


class VocabularyText(BaseModel):
    yaml: str = Field(max_length=VOCABULARY_MAX_BYTES, description="vocabulary.yaml: `readings:`, each with "
                                                                   "`customers` (phrases) and `store` (words).")


class VocabularyProblem(BaseModel):
    message: str = Field(description="The rule broken, naming the line and the reading.")
    line: Optional[int] = Field(description="The line (from 1), when the problem has one.")


class VocabularyFile(BaseModel):
    yaml: Optional[str] = Field(description="vocabulary.yaml as stored; null when the agent has none (no readings).")
    etag: Optional[str]
    readings: int = Field(description="Readings recall holds in force (0 when the file does not parse).")
    phrases: int
    in_force: bool = Field(description="Whether retrieval reads the agent's messages through it.")
    problem: Optional[VocabularyProblem] = Field(description="Why a stored file is not in force (written by hand "
                                                             "and not valid): recall runs without it.")
    starters: list[str] = Field(description="The starter vocabularies an operator may copy from.")


class VocabularyStarter(BaseModel):
    name: str
    yaml: str


SEEN_AT_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$"


class ReviewState(BaseModel):
    seen_at: Optional[str] = Field(description="When this operator last marked the agent's concepts seen (UTC); "
                                               "null when never.")
    since: str = Field(description="What `new` counts from: seen_at, or 24 hours before as_of when never looked.")
    new: int = Field(description="Concepts new to this operator since then: written by the engine or another "
                                 "operator, less those marked reviewed one by one.")
    as_of: str = Field(description="When this was counted: PUT it back as seen_at to mark what was shown as seen.")
    undo: bool = Field(description="The last \"mark all as seen\" can be undone (POST /review/undo with this seen_at).")


class SeenAt(BaseModel):
    seen_at: str = Field(pattern=SEEN_AT_PATTERN, max_length=32,
                         description="UTC; only moves forward (an earlier time changes nothing), never ahead of now.")


class UndoMark(BaseModel):
    seen_at: str = Field(pattern=SEEN_AT_PATTERN, max_length=32,
                         description="The seen_at the mark to undo stored (its answer's seen_at).")


class Reviewed(BaseModel):
    written_at: str = Field(pattern=SEEN_AT_PATTERN, max_length=32,
                            description="The row's written_at: the version reviewed (a later one is new again).")


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable, for programs: unknown_agent, not_found, stale, invalid_concept, ...")
    message: str = Field(description="For people.")


class ErrorBody(BaseModel):
    error: ErrorDetail


class GatewayRefusal(BaseModel):
    message: str = Field(description="API Gateway's own answer when the JWT authorizer refuses the token.")


class FieldProblem(BaseModel):
    field: str
    message: str
    line: Optional[int] = Field(description="The document's line to look at, when one is known.")


class Invalid(ErrorBody):
    errors: Optional[list[FieldProblem]] = Field(
        None, description="invalid_concept: each problem with its field and line.")


class StaleVersion(BaseModel):
    markdown: str
    etag: str
    version_id: Optional[str]


class Stale(ErrorBody):
    current: Optional[StaleVersion] = Field(description="What is stored now; null when it was deleted meanwhile.")


class Taken(ErrorBody):
    name: str = Field(description="The concept that already has this name (name_taken), or the deleted one's "
                                  "(name_deleted).")
    deleted_at: Optional[str] = Field(None, description="name_deleted: when it was deleted (UTC).")
    deleted_by: Optional[str] = Field(None, description="name_deleted: who deleted it (null when not recorded).")


def answers(status: int, model: Any, *also: int) -> dict[int, dict[str, Any]]:
    """The OpenAPI responses of a route: its success, the errors every route may answer, and `also`."""
    def body(kind: Any) -> dict[str, Any]:
        return {"content": {"application/json": {"model": kind}}}

    errors = {400: ("A tenant, agent or name that is not a slug, or a path with a control character", ErrorBody),
              401: ("No valid token", Union[ErrorBody, GatewayRefusal]),
              403: ("The operator is not a member of the tenant", ErrorBody),
              404: ("No such agent (unknown_agent), concept, version or route", ErrorBody),
              409: ("A concept with this name already exists (name_taken, with `name`), a deleted one has it "
                    "(name_deleted), or there is nothing to undo (nothing_to_undo)", Union[Taken, ErrorBody]),
              412: ("Stale: a newer version exists (If-Match no longer current)", Stale),
              422: ("The request or the document is invalid (a cursor this API did not hand out, "
                    "a seen_at that is not a UTC time or is ahead of now)", Invalid),
              428: ("If-Match is required", ErrorBody),
              503: ("Storage is busy, or the session archive is not configured", ErrorBody)}
    out = {status: {"description": "Success", **body(model)}}
    for code in sorted({400, 401, 403, 404, 422, 503, *also}):
        out[code] = {"description": errors[code][0], **body(errors[code][1])}
    return out
