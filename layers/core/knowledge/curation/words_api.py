"""The words page's requests and answers (StudioApiFunction's /words routes), as its OpenAPI document
states them. The routes live in functions/studio_api/words.py, the work in
knowledge.curation.words_page and knowledge.curation.words_removal."""

from typing import Literal, Optional

from pydantic import BaseModel, Field

from knowledge.curation.words_page import ORIGIN_FILTERS, PAGE_MAX  # noqa: F401 - the route's limits
from knowledge.curation.words_removal import ETAG_MAX, REMOVE_MAX  # noqa: F401
from knowledge.format.learned_words import WORD_MAX
from shared.names import SLUG_MAX, SLUG_SCHEMA


class LearnedWordRow(BaseModel):
    concept: str
    word: str
    origin: str = Field(description="As stored: loaded or sighting (the traffic taught it), model or operator.")
    source: Literal["model", "traffic", "operator"] = Field(description=(
        "Where it came from: the model proposed it, the store's traffic taught it, or an operator added it."))
    sessions: int = Field(description="How many sessions taught it (0 for the model and an operator).")
    at: str = Field(description="The day it was learned, YYYY-MM-DD.")
    etag: str = Field(description="The concept's ETag as this page read it: send it back to remove the word.")
    description: Optional[str] = Field(description="The concept's description (null when it does not parse).")


class WordsPage(BaseModel):
    words: list[LearnedWordRow]
    total: int = Field(description="Words matching the filters, across the agent's concepts.")
    next: Optional[str] = Field(description="The cursor of the next page; null on the last.")
    concepts: int = Field(description="How many of the concepts matching the filter hold learned words.")
    catching_up: int = Field(description="Concepts changed since the words were last read and not read yet "
                                         "(0: the page is current).")


class WordToRemove(BaseModel):
    concept: str = Field(pattern=SLUG_SCHEMA["pattern"], max_length=SLUG_MAX)
    word: str = Field(max_length=WORD_MAX)
    etag: str = Field(max_length=ETAG_MAX, description="The concept's ETag as the page listed the word.")


class WordsRemovalBody(BaseModel):
    words: list[WordToRemove] = Field(description=f"At most {REMOVE_MAX}, across any of the agent's concepts "
                                                  "(more is 422 too_many_words).")


class ConceptRemoval(BaseModel):
    concept: str
    status: Literal["removed", "unchanged", "changed", "gone", "unreadable"] = Field(description=(
        "removed: one new version written (actor the operator, reason words_removed); unchanged: none of the "
        "words was learned any more; changed: the concept was written since the page read it (nothing written: "
        "read the page again); gone: deleted meanwhile; unreadable: it does not parse (edit it)."))
    removed: list[str] = Field(description="The words taken out, now in its removed_words.")
    not_learned: list[str] = Field(description="Words asked for that it did not hold.")
    etag: Optional[str] = Field(description="Its ETag now (null when gone).")
    version_id: Optional[str] = Field(description="The version written (removed only).")


class WordsRemoved(BaseModel):
    concepts: list[ConceptRemoval]
    removed: int = Field(description="Words removed across the concepts.")
    complete: bool = Field(description="Every concept was removed from or held none of the words: false when "
                                       "any was changed, gone or unreadable.")
