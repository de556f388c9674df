"""The knowledge loop's typed errors, each named once here: what a handler maps to an answer (a dead
letter, a retry, an HTTP status), each with its code. The rooms raise them; handlers catch them by type.
The errors both loops raise (a bad request, a missing concept, a lost race...) are in shared/errors.py.
"""

from __future__ import annotations

from typing import Optional

from shared.errors import FieldError, InvalidConcept, InvalidRequest, KnowledgeError, NotFound


class InvalidTurn(KnowledgeError, ValueError):
    """A turn-complete message that cannot be processed. The text never quotes message content."""

    code = "invalid_turn"


class InvalidSighting(KnowledgeError, ValueError):
    code = "invalid_sighting"


class Unindexable(InvalidConcept):
    """A concept that parses but whose text the index could not read (a fault of the analyzer): it is
    skipped and shown as unreadable, never allowed to take its agent's recall or learning down."""

    code = "unindexable"

    def __init__(self) -> None:
        super().__init__([FieldError("body", "its text could not be indexed; the other concepts still answer")])


class InvalidPolicyReview(KnowledgeError, ValueError):
    """A PolicyReviewQueue message that is not one the studio sends: it can never succeed."""

    code = "invalid_policy_review"


class ReviewsNotQueued(KnowledgeError):
    """A shared policy's reviews the queue refused some of: the message is received again."""

    code = "reviews_not_queued"


class DailyCapReached(KnowledgeError):
    """The tenant has spent its extraction calls for the day: the turn is retried later, never dropped."""

    code = "daily_cap_reached"


class PreconditionRequired(KnowledgeError):
    code = "precondition_required"


class ArchiveNotConfigured(KnowledgeError):
    code = "archive_not_configured"


class WordsNotConfigured(KnowledgeError):
    """The studio's "Teach words" where no queue for the words jobs is configured."""

    code = "words_not_configured"


class NameTaken(KnowledgeError):
    """A create whose name is already a concept: the operator may open that one instead (`shared`: the
    tenant's shared knowledge holds it, where a share or a move would have put it)."""

    code = "name_taken"

    def __init__(self, name: str, *, shared: bool = False):
        super().__init__(f"the tenant's shared knowledge already has a concept named {name!r}: open it there to edit "
                         "it, or rename this one first" if shared else
                         f"a concept named {name!r} already exists: open it to edit it, or choose another name")
        self.name = name


class NameDeleted(KnowledgeError):
    """A create whose name is a deleted concept's: the operator may restore that one, or start a new
    concept under the name knowingly (`new_history`)."""

    code = "name_deleted"

    def __init__(self, name: str, deleted_at: str, deleted_by: "str | None"):
        super().__init__(f"a concept named {name!r} was deleted ({deleted_at}): restore it to go on with its "
                         "history, or create a new concept under the name knowingly")
        self.name, self.deleted_at, self.deleted_by = name, deleted_at, deleted_by


class InvalidSeenAt(KnowledgeError, ValueError):
    code = "invalid_seen_at"


class InvalidReviewed(KnowledgeError, ValueError):
    """Marking one concept reviewed: a written_at that is not a UTC time, or too many marked one by one."""

    code = "invalid_reviewed"


class InvalidSince(KnowledgeError, ValueError):
    """Asking what was written behind a list: a `since` that is no time a list's `as_of` gives."""

    code = "invalid_since"


class NothingToUndo(KnowledgeError):
    """Undo of "mark all as seen" when the state is no longer what that mark left (undone already,
    or marked again since, from this browser or another)."""

    code = "nothing_to_undo"


class InvalidVocabulary(KnowledgeError, ValueError):
    """A vocabulary.yaml outside its format (knowledge.format.vocabulary); `line` counts from 1
    (None: the whole file)."""

    code = "invalid_vocabulary"

    def __init__(self, message: str, line: Optional[int] = None):
        super().__init__(message)
        self.line = line


class UnknownOrigin(KnowledgeError, ValueError):
    """The words page asked to filter by an origin no learned word has (knowledge.curation.words_page)."""

    code = "unknown_origin"


class InvalidRemoval(KnowledgeError, ValueError):
    """A removal of learned words the words page did not send: nothing is written."""

    code = "invalid_removal"


class TooManyWords(InvalidRemoval):
    code = "too_many_words"


class InvalidBulk(KnowledgeError, ValueError):
    """A bulk action on the list's rows the studio did not send (knowledge.curation.bulk): nothing is done."""

    code = "invalid_bulk"


class TooManyRows(InvalidBulk):
    """More rows in one bulk action than it takes: nothing is done, the operator sends them in batches."""

    code = "too_many_rows"


# ------------------------------------------------------------------ the store's
class LedgerUnreadable(KnowledgeError):
    """A sighting marker (knowledge.store.ledgers) that vanished while read or does not parse."""

    code = "ledger_unreadable"


class CandidateSendError(KnowledgeError):
    """The candidates queue refused some sightings (knowledge.store.queues): the turn is retried."""

    code = "candidate_send_failed"


class InvalidLimit(KnowledgeError):
    """A page of a concept's history asked with a limit outside 1–1000 (knowledge.store.history)."""

    code = "invalid_limit"


class InvalidExport(KnowledgeError):
    """A session export to replay (knowledge.store.session_export) whose location, position or objects
    cannot be read as one."""

    code = "invalid_export"


# ------------------------------------------------------------------ recall's
class SnapshotUnreadable(KnowledgeError):
    """The stored snapshot is not one this code wrote for this agent: rebuilt from the concepts."""

    code = "snapshot_unreadable"


# ------------------------------------------------------------------ learning's
class CapContended(KnowledgeError):
    """Every attempt to reserve the tenant's daily model calls lost a race; the turn is retried by the queue."""

    code = "cap_contended"


class ConsolidationGaveUp(KnowledgeError):
    """Still losing the race after every attempt; the queue will redeliver the sighting."""

    code = "consolidation_contended"


class LearningOff(KnowledgeError):
    """save_knowledge for an agent that does not learn: no knowledge.yaml, or `extract: false`."""

    code = "disabled"


class SaveLimit(KnowledgeError):
    """The session has saved as many insights as a session may (KNOWLEDGE_SAVES_PER_SESSION)."""

    code = "save_limit"


class Gated(KnowledgeError):
    """A gate refused a saved insight; `reason` is the gate's, as CandidateRejected counts it, and `help`
    says what it asks for (knowledge.learning.save words each gate)."""

    code = "gated"

    def __init__(self, reason: str, help: str):
        super().__init__(f"refused by the {reason} gate: {help}")
        self.reason = reason


# ------------------------------------------------------------------ curation's
class TooLargeToOpen(InvalidConcept):
    """A stored file too large to send whole: over the concept format's size (`limit`, which the list
    shows as its problem) and, JSON-encoded, over what an answer can carry. One over the format's size
    that fits is still sent, so an operator can repair it in the editor."""

    code = "too_large"

    def __init__(self, name: str, size: int, limit: int):
        super().__init__([FieldError("document", f"must be at most {limit} bytes")])
        message = (f"{name} is {size} bytes, over the {limit} a concept may hold and too large to "
                   "send to the page: restore an earlier version (its history) or delete it")
        self.args = (message,)


class NoEvidence(NotFound):
    """A version's evidence asked for where the version was not learned from a sighting."""

    code = "no_evidence"


class NotDeleted(NotFound):
    """A restore of a deleted concept whose name is not deleted."""

    code = "not_deleted"


class InvalidImport(KnowledgeError):
    """An import that cannot be done as asked: too many concepts or bytes, a root that is not there, an
    unknown provenance, nothing to import."""

    code = "invalid_import"


class OutsideImportPrefix(KnowledgeError):
    """An import asked to read outside the agent's imports folder of the sessions bucket."""

    code = "outside_import_prefix"


class FaqUnreadable(ValueError):
    """The whole file cannot be read as an FAQ (not text, no header, quotes that do not pair, not a list of
    rows); `line` is where, when one line says it. Not a refusal of its own: the import lists it as the
    file's problem."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(f"line {line}: {reason}" if line else reason)
        self.reason, self.line = reason, line


class NothingToExport(KnowledgeError):
    """An export of an agent without concepts."""

    code = "no_concepts"


class SinkError(KnowledgeError):
    """An export's files could not be written where they were asked for."""

    code = "sink_error"


# ------------------------------------------------------------------ operation's
class BeyondRetention(KnowledgeError):
    """An export replay reaching back past the time sighting markers are kept."""

    code = "beyond_retention"


class RedriveError(KnowledgeError):
    """A redrive of dead-lettered messages that cannot be done as asked."""

    code = "redrive_refused"


class NotConfirmed(InvalidRequest):
    """delete_tenant_data without the tenant's name typed again: nothing is touched."""

    code = "not_confirmed"
