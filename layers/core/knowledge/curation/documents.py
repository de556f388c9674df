"""What an operator types into the studio: a concept written by hand, its size checked, and each
problem the concept format finds put on the line an operator should look at; what a quote shows;
what a stored file is sent to the page as, and when it is too large to send."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Iterator, Optional

from knowledge.errors import TooLargeToOpen
from knowledge.format.concept import DOCUMENT_MAX_BYTES, FIELDS, Concept, format_timestamp, parse, related_waiting
from knowledge.format.learned_words import REMOVED_MAX, fold_word, folded_words
from knowledge.store.concepts import StoredConcept
from shared import pii
from shared.errors import Conflict, FieldError, InvalidConcept

MARKDOWN_MAX_BYTES = 128 * 1024
HAND_DEFAULTS = {"provenance": "policy", "confidence": 0.95, "sources": [], "occurrences": 1}


def excerpt(content: str, start: int, end: int) -> str:
    """content[start:end] as an operator may see it: personal data found in the whole message
    (whose context a span alone can lack) is replaced where it overlaps, then the span again."""
    out, at = [], start
    for finding in pii.find(content):
        if finding.end <= at or finding.start >= end:
            continue
        out.append(content[at:max(finding.start, at)])
        out.append(f"[{finding.kind}]")
        at = min(finding.end, end)
    out.append(content[at:end])
    return pii.redact("".join(out)).text


def removals_kept(previous: Optional[StoredConcept], edited: Concept) -> Concept:
    """An operator's edit with each learned word they deleted from `learned_words` recorded in
    `removed_words` (never learned again for the concept); a word they kept, or wrote back, stays
    learned. The newest REMOVED_MAX removals are kept."""
    if previous is None:
        return edited
    try:
        before = previous.concept.learned_words
    except (InvalidConcept, ValueError):
        return edited
    kept = folded_words(edited.learned_words) | {fold_word(w) for w in edited.removed_words}
    gone = tuple(dict.fromkeys(e.word for e in before if fold_word(e.word) not in kept))
    if not gone:
        return edited
    return edited.replace(removed_words=(*edited.removed_words, *gone)[-REMOVED_MAX:])


def checked_size(markdown: str) -> str:
    if len(markdown) > MARKDOWN_MAX_BYTES or len(markdown.encode("utf-8", "surrogatepass")) > MARKDOWN_MAX_BYTES:
        raise InvalidConcept([FieldError("document", f"must be at most {MARKDOWN_MAX_BYTES} bytes")])
    return markdown


def concept_by_hand(markdown: str, now: datetime) -> Concept:
    """A concept an operator writes from scratch: name, description, type and body are theirs;
    missing engine fields default to a curated concept (provenance policy); both stamps are now."""
    stamp = format_timestamp(now)
    with located(markdown):
        concept = parse(checked_size(markdown), defaults=HAND_DEFAULTS, overrides={"created_at": stamp, "updated_at": stamp})
    # The name is the object key and outlives forget_customer: a person's name or number never goes there.
    kind = pii.pii_in_slug(concept.name)
    if kind is not None:
        raise InvalidConcept([FieldError("name", name_pii_problem(kind), name_line(markdown))])
    return concept


def name_pii_problem(kind: str) -> str:
    """What an operator reads when a concept's name carries personal data of this kind (pii.pii_in_slug)."""
    what = pii.SLUG_KINDS.get(kind, "personal data")
    spelled = "" if kind == "name" else " (its digits, read together)"
    return f"holds {what}{spelled}: name the concept for what it says, not for a customer"


# What the concept format refuses in a body, as concept.py's check does: the line holding it is marked.
_REFUSED_IN_BODY = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\ufeff\ufffe\uffff\r]")


def _closing_line(lines: list[str]) -> Optional[int]:
    """The 1-based line of the frontmatter's closing '---', or None when it has none."""
    if not lines or lines[0] != "---":
        return None
    return next((number for number, line in enumerate(lines[1:], start=2) if line == "---"), None)


def locate(errors: list[FieldError], markdown: str) -> list[FieldError]:
    """The line an operator should look at for each error: a character refused in the body is
    marked where it is, another body problem at the body's first line, and a field the
    frontmatter leaves out at its closing '---' (where it goes)."""
    lines = markdown.split("\n")
    closing = _closing_line(lines)
    out = []
    for error in errors:
        line = error.line
        if closing is not None and error.field == "body":
            body = list(enumerate(lines[closing:], start=closing + 1))
            line = (next((n for n, text in body if _REFUSED_IN_BODY.search(text)), None)
                    or next((n for n, text in body if text.strip()), None) or line)
        elif closing is not None and line is None and error.field in FIELDS:
            line = closing
        out.append(FieldError(error.field, error.message, line))
    return out


@contextmanager
def located(markdown: str) -> Iterator[None]:
    """Re-raises InvalidConcept with the lines `locate` finds in `markdown`."""
    try:
        yield
    except InvalidConcept as exc:
        raise InvalidConcept(locate(exc.errors, markdown)) from None


def name_line(markdown: str) -> Optional[int]:
    return next((n for n, line in enumerate(markdown.split("\n"), start=1) if line.startswith("name:")), None)


# The most a concept's markdown may take in an answer, JSON-encoded: under Lambda's 6 MB response
# limit with room for the rest of the answer (an answer over it reaches the page as a 5xx).
ANSWER_MARKDOWN_MAX_BYTES = 4 * 1024 * 1024


def too_large_to_open(name: str, size: int) -> TooLargeToOpen:
    """The refusal of a stored file of `size` bytes too large to send whole (the concept format's limit)."""
    return TooLargeToOpen(name, size, DOCUMENT_MAX_BYTES)


def too_large_to_send(data: bytes) -> bool:
    """Whether this stored file's markdown, JSON-encoded as the API answers it, is over the budget
    (at most 12 bytes per stored byte, so most files are cleared without encoding them)."""
    if len(data) <= DOCUMENT_MAX_BYTES or len(data) * 12 <= ANSWER_MARKDOWN_MAX_BYTES:
        return False
    return len(json.dumps(data.decode("utf-8", "replace"))) > ANSWER_MARKDOWN_MAX_BYTES


def related_in(data: bytes) -> int:
    try:
        return related_waiting(parse(data).body)
    except InvalidConcept:
        return 0


def servable(item: StoredConcept) -> StoredConcept:
    if too_large_to_send(item.data):
        raise too_large_to_open(item.name, len(item.data))
    return item


@contextmanager
def bounded_conflicts() -> Iterator[None]:
    """A lost race answers what is stored now (412 with `current`), unless that is over the format's
    size and too large to send: then the problem the list shows, never a body over Lambda's response limit."""
    try:
        yield
    except Conflict as exc:
        current = exc.current
        if isinstance(current, StoredConcept) and too_large_to_send(current.data):
            raise too_large_to_open(current.name, len(current.data)) from None
        raise


def stored_answer(item: StoredConcept) -> dict[str, Any]:
    # A stored file that is not UTF-8 is still shown (its bad bytes as U+FFFD) so an operator can fix it;
    # one too large to send is refused with the problem the list shows (TooLargeToOpen).
    servable(item)
    return {"name": item.name, "markdown": item.data.decode("utf-8", "replace"), "etag": item.etag,
            "version_id": item.version_id, "related": related_in(item.data)}
