"""Facts' own typed errors, each named once here: callers branch on the type (and its `code`), never on
message text. The refusals both loops give (invalid_request, invalid_cursor, settings_error, not_found,
conflict) are shared/errors.py's.

Three here answer with their base's code on purpose, since to a caller they are that refusal — a proposal
that is not there is `not_found`, a lost race is `conflict` — while Facts' own code catches them by type
where it expects them (an aged-out proposal skipped, a fact that moved reported as stale)."""

from __future__ import annotations

from typing import Any, Optional

from shared.errors import Conflict, KnowledgeError, NotFound


class FactsError(KnowledgeError):
    code = "facts_error"


class InvalidFact(FactsError, ValueError):
    """A fact name or value outside the rules (fact.py)."""

    code = "invalid_fact"


class PersonalData(FactsError, ValueError):
    """A value an operator typed that holds personal data by the write path's rules (shared.pii):
    said before anything is saved, with the kinds found (never the value). `can_confirm`: saving
    again with these kinds confirmed keeps it; payment card data cannot be confirmed."""

    code = "personal_data"

    def __init__(self, message: str, kinds: tuple[str, ...], can_confirm: bool):
        super().__init__(message)
        self.kinds, self.can_confirm = list(kinds), can_confirm


class ProposalNotFound(NotFound):
    """No such proposal (never made, or aged out): answers `not_found`, NotFound's code."""


class NotPending(FactsError):
    """The proposal was already resolved in a way that excludes this action."""

    code = "not_pending"


class ProposalChanged(Conflict):
    """Someone else resolved the proposal between our read and our write: answers `conflict`, Conflict's code."""


class FactMoved(Conflict):
    """A write that expected a fact's revision found another one (the caller's view is old): answers
    `conflict`, Conflict's code."""


class RecordUnreadable(FactsError):
    """A stored Facts record (session state, proposal, cell) that no longer parses."""

    code = "record_unreadable"


class CellUnreadable(RecordUnreadable):
    """A customer's memory cell that does not follow the format (written outside the engine, or
    damaged): neither shown nor changed until an operator restores or resets it."""

    def __init__(self, etag: Optional[str] = None):
        self.etag = etag  # the unreadable version's: a repair is conditional on it
        super().__init__("this customer's memory cell does not follow the format, so it can be neither read nor "
                         "changed: restore its last readable version, or reset it to empty (docs/facts.md, "
                         "\"An unreadable memory cell\")")


class CellReadable(FactsError):
    """A restore or reset asked of a cell that reads fine: edit or remove its facts instead."""

    code = "cell_readable"


class NothingToRestore(FactsError):
    """An unreadable cell none of whose earlier versions reads either: only a reset is left."""

    code = "no_version_to_restore"


class Busy(FactsError):
    """A compare-and-swap kept losing its race within the attempts allowed; try again later."""

    code = "busy"


class ProposalWentStale(FactsError):
    """An approval found the target fact changed since distillation: nothing was written and the
    proposal is now stale, with both values (`proposal`)."""

    code = "fact_moved"

    def __init__(self, proposal: dict[str, Any]):
        super().__init__("the customer's fact changed since this was proposed: nothing was saved, and the "
                         "proposal moved to Stale with both values")
        self.proposal = proposal


class FactChanged(FactsError):
    """An operator's edit whose expected revision is no longer the fact's (`current`: the fact now)."""

    code = "stale"

    def __init__(self, current: Optional[dict[str, Any]]):
        super().__init__("someone changed this fact since you opened it: nothing was saved; "
                         "look at the current value and edit again")
        self.current = current


class Gone(FactsError):
    """An undo or a reopen of a proposal that no longer exists: its customer was forgotten (LGPD), or
    the record aged out. Nothing is left to undo, and nothing is recreated."""

    code = "gone"


class CannotUndo(FactsError):
    """An approval whose fact changed since it was written (`current`: the fact now, or None when it
    was removed): the cell keeps what the operator or the engine put there."""

    code = "cannot_undo"

    def __init__(self, message: str, current: Optional[dict[str, Any]] = None):
        super().__init__(message)
        self.current = current
