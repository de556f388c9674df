"""The knowledge loop's typed errors that leave it: what a handler maps to an answer (a dead letter,
a retry, an HTTP status), each with its code. The rooms raise them; handlers catch them by type.
"""

from __future__ import annotations

from typing import Optional

from shared.errors import FieldError, InvalidConcept, KnowledgeError


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


class InvalidRepair(KnowledgeError, ValueError):
    """A RepairFunction event that breaks the contract (docs/contract.md, "Waiting pairs")."""

    code = "invalid_request"


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
    """A create whose name is already a concept: the operator may open that one instead."""

    code = "name_taken"

    def __init__(self, name: str):
        super().__init__(f"a concept named {name!r} already exists: open it to edit it, or choose another name")
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


class InvalidCursor(KnowledgeError):
    """A page cursor this code did not hand out (or for another concept)."""

    code = "invalid_cursor"


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
