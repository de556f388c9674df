"""The concept format: one markdown document with a YAML frontmatter block.

Parsing is strict (every problem names its field and, when known, its line) and rendering
is canonical: the same concept always renders to the same bytes, and a canonical document
parses and re-renders byte for byte.

Over 500 lines because the document's fields, their validation, parsing and canonical rendering
(and what a concept's own fields say about when it is recalled) change together: one format.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional

import yaml

from knowledge.format.learned_words import (
    LEARNED_FIELD,
    REMOVED_FIELD,
    LearnedWord,
    parse_learned,
    parse_removed,
    render_lines,
)
from knowledge.format.learned_words import validate as validate_learned
from shared.errors import FieldError, InvalidConcept, YamlProblem
from shared.names import is_session_id, slug_problem
from shared.validation import YamlDocument, read_yaml

TYPES = ("fact", "entity", "procedure", "policy", "objection")
PROVENANCES = ("observed", "policy")
FIELDS = (
    "name",
    "description",
    "type",
    "provenance",
    "confidence",
    "sources",
    "occurrences",
    "created_at",
    "updated_at",
    "valid_from",
    "valid_until",
    "retired_by",
    LEARNED_FIELD,
    REMOVED_FIELD,
)
# Fields a document may leave out: when the concept's claim is true (inclusive local dates).
OPTIONAL_FIELDS = ("valid_from", "valid_until")
# The policy concept whose text retired this observed one from recall (docs/contract.md), kept.
RETIRED_BY = "retired_by"
DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")
EARLIEST_DATE, LATEST_DATE = date(2000, 1, 1), date(2199, 12, 31)
DESCRIPTION_MAX = 300
BODY_MAX_BYTES = 16 * 1024
SOURCES_MAX = 5000
# Far above any real count, and exact in the studio page's JavaScript numbers.
OCCURRENCES_MAX = 10**12
# Guards the YAML parser against oversized input before it does any work.
DOCUMENT_MAX_BYTES = BODY_MAX_BYTES + SOURCES_MAX * (128 + 4) + 4096

FIRST_SIGHTING_CONFIDENCE = 0.6
CONTRADICTION_CONFIDENCE = 0.4
MAX_CONFIDENCE = 0.95
CONFLICT_HEADING = "## Contradiction"
RELATED_HEADING = "## Related claims"
RELATED_SECTION = re.compile(r"^## Related claims[ \t]*$", re.MULTILINE)
_SECTION_AFTER = re.compile(r"^## ", re.MULTILINE)
_SESSION_ENTRY = re.compile(r"Session \S+ \(\d{4}-\d{2}-\d{2}\): ")
_ENGINE_SECTIONS = re.compile(r"^## (?:Related claims|Contradiction)[ \t]*$", re.MULTILINE)

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_LINK = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")
_CONFLICT = re.compile(r"^## Contradiction[ \t]*$", re.MULTILINE)
# Words other YAML parsers (1.1 and 1.2) read as something other than text.
_YAML_WORDS = {
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~",
    ".nan", ".inf", "-.inf", "+.inf", "nan", "inf",
}
_PLAIN_FIRST_FORBIDDEN = set("-?:,[]{}#&*!|>'\"%@`=<+.~ \t0123456789")


def confidence_for_sources(distinct_sources: int) -> float:
    """Confidence after a repeat sighting: min(0.95, 0.5 + 0.1 × distinct sources)."""
    return round(min(MAX_CONFIDENCE, 0.5 + 0.1 * max(0, distinct_sources)), 2)


def links(body: str) -> list[str]:
    """The distinct `[[name]]` links of a body that are valid names, in order of appearance."""
    seen: dict[str, None] = {}
    for match in _LINK.finditer(body):
        name = match.group(1).strip()
        if slug_problem(name) is None:
            seen.setdefault(name, None)
    return list(seen)


def hop_links(body: str) -> list[str]:
    """The links retrieval's one hop follows: those of the body above its first `## Related claims` or
    `## Contradiction` heading. An engine-written entry (a claim kept beside, a contradiction, a flag)
    is no one's statement that the concepts belong together, so its links are never followed."""
    heading = _ENGINE_SECTIONS.search(body)
    return links(body[:heading.start()] if heading else body)


def without_claims_kept_beside(body: str) -> str:
    """`body` without the sightings' claims kept under its `## Related claims` (`Session … (date): …` and
    the quote under each), the heading gone with its last entry: what another agent is served of a shared
    concept, whose unreviewed claims only a human may approve. The text above stays byte for byte."""
    heading = RELATED_SECTION.search(body)
    if heading is None:
        return body
    following = _SECTION_AFTER.search(body, heading.end())
    section = body[heading.end():following.start() if following else len(body)]
    kept: list[str] = []
    dropping = False
    for paragraph in (p.strip("\n") for p in re.split(r"\n[ \t]*\n", section) if p.strip()):
        if paragraph.startswith(">"):
            if not dropping:
                kept.append(paragraph)
            continue
        dropping = _SESSION_ENTRY.match(paragraph) is not None
        if not dropping:
            kept.append(paragraph)
    head = body[:heading.start()].rstrip()
    tail = body[following.start():] if following else ""
    middle = f"\n\n{RELATED_HEADING}\n\n" + "\n\n".join(kept) if kept else ""
    return head + middle + ("\n\n" + tail if tail else "")


def in_conflict(body: str) -> bool:
    """A concept is in conflict exactly when its body holds a `## Contradiction` heading."""
    return _CONFLICT.search(body) is not None


# The head of an entry the engine writes there: a sighting kept beside (`Session … (date): `), or a
# policy a review noted beside a human's text (`Policy [[name]] (date), …: `).
_ENTRY = re.compile(r"^(?:Session \S+|Policy \[\[[^\]\n]+\]\]) \(\d{4}-\d{2}-\d{2}\)[:,] ", re.MULTILINE)


def related_waiting(body: str) -> int:
    """How many claims wait under `## Related claims` for an operator: the section's entries (a sighting
    kept beside, a policy noted beside), or 1 when it holds text in another shape (an operator's own)."""
    heading = RELATED_SECTION.search(body)
    if heading is None:
        return 0
    conflict = _CONFLICT.search(body, heading.end())
    section = body[heading.end():conflict.start() if conflict else len(body)]
    return len(_ENTRY.findall(section)) or (1 if section.strip() else 0)


def format_timestamp(moment: datetime) -> str:
    moment = moment.astimezone(timezone.utc)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def first_sighting(*, name: str, description: str, type: str, body: str, session_id: str,
                   moment: datetime, valid_from: Optional[date] = None, valid_until: Optional[date] = None) -> Concept:
    """A candidate as its first sighting. Name, description, type and body are what extraction
    chose; every other field is the engine's own: observed (what a conversation shows is never
    policy), the first sighting's confidence, one occurrence from this one session, dated when
    the turn completed (to the second)."""
    stamp = moment.astimezone(timezone.utc).replace(microsecond=0)
    return Concept(name=name, description=description, type=type, provenance="observed",
                   confidence=FIRST_SIGHTING_CONFIDENCE, sources=(session_id,), occurrences=1,
                   created_at=stamp, updated_at=stamp, body=body, valid_from=valid_from, valid_until=valid_until)


# What keeps a concept out of recall while it is kept (docs/retrieval.md).
EXPIRED, NOT_STARTED, STALE, RETIRED = "expired", "not_started", "stale", "retired"
OUT_OF_RECALL = (EXPIRED, NOT_STARTED, STALE, RETIRED)
DEFAULT_STALE_AFTER_DAYS = 180


def out_of_recall(*, valid_from: Optional[date], valid_until: Optional[date], provenance: Optional[str],
                  updated_at: Optional[datetime], now: datetime, stale_after_days: int = DEFAULT_STALE_AFTER_DAYS,
                  utc_offset: timedelta = timedelta(0), retired_by: Optional[str] = None) -> Optional[str]:
    """Why a concept is not recalled at `now`, or None: retired (a policy's text contradicts it),
    expired (past its valid_until, a local date at `utc_offset`), not_started (before its
    valid_from), stale (observed, and nothing has seen or saved it for `stale_after_days`; 0:
    never). A policy concept is never stale."""
    if retired_by:
        return RETIRED
    today = (now.astimezone(timezone.utc) + utc_offset).date()
    if valid_until is not None and today > valid_until:
        return EXPIRED
    if valid_from is not None and today < valid_from:
        return NOT_STARTED
    if (stale_after_days and provenance == "observed" and updated_at is not None
            and now - updated_at > timedelta(days=stale_after_days)):
        return STALE
    return None


def recall_changes_at(*, valid_from: Optional[date], valid_until: Optional[date], provenance: Optional[str],
                      updated_at: Optional[datetime], now: datetime, stale_after_days: int = DEFAULT_STALE_AFTER_DAYS,
                      utc_offset: timedelta = timedelta(0)) -> Optional[datetime]:
    """The next moment after `now` at which `out_of_recall` may answer otherwise (None: never)."""
    moments = []
    for day in (valid_from, valid_until + timedelta(days=1) if valid_until is not None else None):
        if day is not None:
            moments.append(datetime(day.year, day.month, day.day, tzinfo=timezone.utc) - utc_offset)
    if stale_after_days and provenance == "observed" and updated_at is not None:
        moments.append(updated_at + timedelta(days=stale_after_days, seconds=1))
    later = [m for m in moments if m > now]
    return min(later) if later else None


@dataclass(frozen=True)
class Concept:
    """A valid concept. Constructing one validates it; confidence is kept to 4 decimals."""

    name: str
    description: str
    type: str
    provenance: str
    confidence: float
    sources: tuple[str, ...]
    occurrences: int
    created_at: datetime
    updated_at: datetime
    body: str
    valid_from: Optional[date] = None
    valid_until: Optional[date] = None
    retired_by: Optional[str] = None
    # What its store's customers call it, learned from traffic (knowledge.format.learned_words), and the
    # words an operator removed from that list (never learned again).
    learned_words: tuple[LearnedWord, ...] = ()
    removed_words: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.sources, list):
            object.__setattr__(self, "sources", tuple(self.sources))
        for field in (LEARNED_FIELD, REMOVED_FIELD):
            if isinstance(getattr(self, field), list):
                object.__setattr__(self, field, tuple(getattr(self, field)))
        if isinstance(self.confidence, (int, float)) and not isinstance(self.confidence, bool):
            try:
                object.__setattr__(self, "confidence", round(float(self.confidence), 4))
            except OverflowError:  # an int too large for a float: reported as out of range below
                object.__setattr__(self, "confidence", float("inf"))
        errors = _validate(self)
        if errors:
            raise InvalidConcept(errors)

    @property
    def links(self) -> list[str]:
        return links(self.body)

    @property
    def hop_links(self) -> list[str]:
        return hop_links(self.body)

    @property
    def in_conflict(self) -> bool:
        return in_conflict(self.body)

    def replace(self, **changes: Any) -> "Concept":
        return dataclasses.replace(self, **changes)

    def render(self) -> str:
        return render(self)


# ---------------------------------------------------------------- validation


# Control characters (Cc), surrogates (Cs), line and paragraph separators (Zl, Zp), BOM and
# non-characters: never valid in a concept. Tab and newline are allowed where noted.
_BAD_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\ufeff\ufffe\uffff"
_BAD_IN_LINE = re.compile(f"[{_BAD_CHARS}\\n]")
_BAD_IN_BODY = re.compile(f"[{_BAD_CHARS}]")


def _bad_char(text: str, pattern: re.Pattern) -> Optional[str]:
    found = pattern.search(text)
    return f"must not contain the control character U+{ord(found.group()):04X}" if found else None


def _validate(c: Concept) -> list[FieldError]:
    """Every problem of a concept, field by field in the frontmatter's order, then its body."""
    return [problem for check in _CHECKS for problem in check(c)]


def _name_problems(c: Concept) -> Iterator[FieldError]:
    problem = slug_problem(c.name)
    if problem:
        yield FieldError("name", problem + (" (quote it if YAML reads it as a number)"
                                            if not isinstance(c.name, str) else ""))


def _description_problems(c: Concept) -> Iterator[FieldError]:
    if not isinstance(c.description, str):
        yield FieldError("description", "must be text (quote it if YAML reads it as something else)")
    elif not c.description.strip():
        yield FieldError("description", "must not be empty")
    elif c.description != c.description.strip():
        yield FieldError("description", "must not start or end with whitespace")
    elif "\n" in c.description or "\r" in c.description:
        yield FieldError("description", "must be a single line")
    elif len(c.description) > DESCRIPTION_MAX:
        yield FieldError("description", f"must be at most {DESCRIPTION_MAX} characters (has {len(c.description)})")
    elif _bad_char(c.description, _BAD_IN_LINE):
        yield FieldError("description", _bad_char(c.description, _BAD_IN_LINE) or "")


def _kind_problems(c: Concept) -> Iterator[FieldError]:
    """Type, provenance and confidence."""
    if c.type not in TYPES:
        yield FieldError("type", f"must be one of {', '.join(TYPES)}")
    if c.provenance not in PROVENANCES:
        yield FieldError("provenance", f"must be one of {', '.join(PROVENANCES)}")
    if isinstance(c.confidence, bool) or not isinstance(c.confidence, float):
        yield FieldError("confidence", "must be a number between 0 and 1")
    elif not 0.0 <= c.confidence <= 1.0:  # also false for NaN
        yield FieldError("confidence", "must be between 0 and 1")


def _sighting_problems(c: Concept) -> Iterator[FieldError]:
    """The sessions it was seen in, and how often."""
    if not isinstance(c.sources, tuple):
        yield FieldError("sources", "must be a list of session ids")
    else:
        if len(c.sources) > SOURCES_MAX:
            yield FieldError("sources", f"must hold at most {SOURCES_MAX} session ids")
        wrong = next((source for source in c.sources if not is_session_id(source)), None)
        if wrong is not None:
            shown = repr(wrong[:130]) if isinstance(wrong, str) else "an item that is not text"
            yield FieldError("sources", f"{shown} is not a session id "
                                        "(letters, digits, '.', '_', ':', '-'; at most 128)")
        elif len(set(c.sources)) != len(c.sources):
            yield FieldError("sources", "must not repeat a session id")
    if isinstance(c.occurrences, bool) or not isinstance(c.occurrences, int):
        yield FieldError("occurrences", "must be a whole number")
    elif c.occurrences < 1:
        yield FieldError("occurrences", "must be at least 1")
    elif c.occurrences > OCCURRENCES_MAX:
        yield FieldError("occurrences", f"must be at most {OCCURRENCES_MAX}")


def _timestamp_problems(c: Concept) -> Iterator[FieldError]:
    stamps_ok = True
    for field in ("created_at", "updated_at"):
        value = getattr(c, field)
        if not isinstance(value, datetime) or value.tzinfo is None:
            yield FieldError(field, "must be a UTC timestamp like 2026-08-24T18:02:11Z")
            stamps_ok = False
        elif value.utcoffset().total_seconds() != 0 or value.microsecond or value.year < 1970:
            yield FieldError(field, "must be a UTC timestamp like 2026-08-24T18:02:11Z "
                                    "(whole seconds, year 1970 or later)")
            stamps_ok = False
    if stamps_ok and c.created_at > c.updated_at:
        yield FieldError("updated_at", "must not be earlier than created_at")


def _validity_problems(c: Concept) -> Iterator[FieldError]:
    """When its claim is true (valid_from, valid_until), and the policy that retired it."""
    for field in OPTIONAL_FIELDS:
        value = getattr(c, field)
        if value is not None and (not isinstance(value, date) or isinstance(value, datetime)):
            yield FieldError(field, "must be a date like 2026-11-30")
        elif value is not None and not EARLIEST_DATE <= value <= LATEST_DATE:
            yield FieldError(field, f"must be a date from {EARLIEST_DATE} to {LATEST_DATE}")
    if (isinstance(c.valid_from, date) and isinstance(c.valid_until, date)
            and not isinstance(c.valid_from, datetime) and not isinstance(c.valid_until, datetime)
            and c.valid_from > c.valid_until):
        yield FieldError("valid_until", "must not be earlier than valid_from")
    if c.retired_by is not None:
        problem = slug_problem(c.retired_by)
        if problem:
            yield FieldError(RETIRED_BY, f"must name the policy concept that retired it: {problem}")
        elif c.retired_by == c.name:
            yield FieldError(RETIRED_BY, "must name another concept")
        elif c.provenance != "observed":
            yield FieldError(RETIRED_BY, "only an observed concept is retired by a policy (delete the line to keep "
                                         "this one)")


def _word_problems(c: Concept) -> Iterator[FieldError]:
    for field, message in validate_learned(c.learned_words, c.removed_words):
        yield FieldError(field, message)


def _body_problems(c: Concept) -> Iterator[FieldError]:
    if not isinstance(c.body, str):
        yield FieldError("body", "must be text")
    elif not c.body.strip():
        yield FieldError("body", "must not be empty")
    elif c.body != c.body.lstrip("\n").rstrip():
        yield FieldError("body", "must not start with a blank line or end with whitespace")
    elif "\r" in c.body:
        yield FieldError("body", "must use \\n line endings")
    elif len(c.body.encode("utf-8", "surrogatepass")) > BODY_MAX_BYTES:
        yield FieldError("body", f"must be at most {BODY_MAX_BYTES} bytes")
    elif _bad_char(c.body, _BAD_IN_BODY):
        yield FieldError("body", _bad_char(c.body, _BAD_IN_BODY) or "")


# In the order the problems are reported.
_CHECKS: tuple[Callable[[Concept], Iterator[FieldError]], ...] = (
    _name_problems, _description_problems, _kind_problems, _sighting_problems, _timestamp_problems,
    _validity_problems, _word_problems, _body_problems)


# ------------------------------------------------------------------- render


# Starts with a letter and holds no ':', '#', quote, backslash, flow bracket or tab: such
# text is a plain scalar in block context, and only the words below would resolve to non-text.
_SURELY_PLAIN = re.compile(r"[^\W\d_][^:#'\"\\\t\n\r{}\[\]]*")


def _plain_ok(text: str) -> bool:
    """True when `text` reads back as the same string, unquoted, in any common YAML parser."""
    if _SURELY_PLAIN.fullmatch(text) and text[-1] != " " and text.lower() not in _YAML_WORDS:
        return True
    if not text or text[0] in _PLAIN_FIRST_FORBIDDEN or text[-1] in ": \t":
        return False
    if ": " in text or " #" in text or "\t" in text or text.lower() in _YAML_WORDS:
        return False
    try:
        return read_yaml(f"d: {text}\n", max_depth=1, max_items=1).data == {"d": text} and yaml.load(
            f"d: {text}\n", Loader=_SafeLoader
        ) == {"d": text}
    except (yaml.YAMLError, YamlProblem):
        return False


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t") + '"'


def _scalar(text: str) -> str:
    return text if _plain_ok(text) else _quoted(text)


def _number(value: float) -> str:
    text = f"{value:.4f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def render(concept: Concept) -> str:
    """The canonical text of a concept."""
    lines = [
        "---",
        f"name: {_scalar(concept.name)}",
        f"description: {_scalar(concept.description)}",
        f"type: {concept.type}",
        f"provenance: {concept.provenance}",
        f"confidence: {_number(concept.confidence)}",
        "sources: [" + ", ".join(f'"{s}"' for s in concept.sources) + "]",
        f"occurrences: {concept.occurrences}",
        f"created_at: {format_timestamp(concept.created_at)}",
        f"updated_at: {format_timestamp(concept.updated_at)}",
        *(f"{field}: {getattr(concept, field).isoformat()}" for field in OPTIONAL_FIELDS
          if getattr(concept, field) is not None),
        *([f"{RETIRED_BY}: {concept.retired_by}"] if concept.retired_by else []),
        *render_lines(concept.learned_words, concept.removed_words),
        "---",
        "",
        concept.body,
    ]
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------- parse

_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# A frontmatter is one mapping of fields; `sources` and `removed_words` hold flat lists, and
# `learned_words` a list of flat mappings.
_FRONTMATTER_DEPTH = 3
_FRONTMATTER_KEYS = 32
_SHOWN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def _split(text: str) -> tuple[str, str]:
    if not text.startswith("---\n"):
        raise InvalidConcept([FieldError("frontmatter", "the document must start with a '---' line", 1)])
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise InvalidConcept(
                [FieldError("frontmatter", "the frontmatter has no closing '---' line", None)]
            )
    return text[4 : end + 1], text[end + 5 :]


def _parse_timestamp(value: object) -> Optional[datetime]:
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        try:
            return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        except ValueError:
            return None
    return None


def _parse_date(value: object) -> Optional[date]:
    if isinstance(value, str) and DATE_PATTERN.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


def _text_of(document: str | bytes) -> str:
    """The document as text, refused when too large or not UTF-8; BOMs and CRLF normalised."""
    if not isinstance(document, (str, bytes)):
        raise InvalidConcept([FieldError("document", "must be text")])
    too_big = InvalidConcept([FieldError("document", f"must be at most {DOCUMENT_MAX_BYTES} bytes")])
    if len(document) > DOCUMENT_MAX_BYTES:
        raise too_big
    if isinstance(document, bytes):
        try:
            document = document.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidConcept([FieldError("document", f"is not UTF-8 text (byte {exc.start})")]) from None
    elif len(document) * 4 > DOCUMENT_MAX_BYTES and len(document.encode("utf-8", "surrogatepass")) > DOCUMENT_MAX_BYTES:
        raise too_big
    return document.lstrip("\ufeff").replace("\r\n", "\n")


def _shown(key: str) -> str:
    """A key as an error names it: a field-like key as is, anything else quoted and cut short."""
    return key if _SHOWN_KEY.fullmatch(key) else repr(key[:40])


def parse(
    document: str | bytes,
    *,
    defaults: Optional[Mapping[str, object]] = None,
    overrides: Optional[Mapping[str, object]] = None,
) -> Concept:
    """Parse a concept document; raise InvalidConcept (and nothing else) listing every problem found.

    `defaults` fill fields the document leaves out and `overrides` replace what it says,
    both as the frontmatter would write them (a concept written by hand uses them).
    """
    text = _text_of(document)
    frontmatter, rest = _split(text)
    read = _read_frontmatter(frontmatter)
    data = {**(defaults or {}), **read.data, **(overrides or {})}
    key_lines = {key: line + 2 for key, line in read.key_lines.items()}  # the frontmatter starts on line 2
    errors = _key_problems(data, key_lines)
    values = {field: data.get(field) for field in FIELDS}
    for read_field in (_read_timestamps, _read_dates, _read_sources, _read_word_lists):
        errors.extend(read_field(data, values, key_lines))
    if isinstance(values["description"], str):
        values["description"] = values["description"].strip()
    confidence = values["confidence"]
    if isinstance(confidence, int) and not isinstance(confidence, bool):
        values["confidence"] = float(confidence)  # at most NUMBER_MAX_CHARS digits: never overflows
    values["body"] = rest.lstrip("\n").rstrip()
    return _built(values, errors, key_lines, text)


def _read_frontmatter(frontmatter: str) -> YamlDocument:
    """The frontmatter as a mapping (and the line of each key), or InvalidConcept saying where it is not one."""
    try:
        read = read_yaml(frontmatter, max_depth=_FRONTMATTER_DEPTH, max_items=SOURCES_MAX,
                         max_keys=_FRONTMATTER_KEYS)
    except YamlProblem as exc:
        line = exc.line + 2 if exc.line is not None else None
        field = exc.path[0] if exc.path and exc.path[0] in FIELDS else "frontmatter"
        raise InvalidConcept([FieldError(field, exc.message, line)]) from None
    if not isinstance(read.data, dict):
        raise InvalidConcept([FieldError("frontmatter", "must be a YAML mapping of field: value", 2)])
    return read


def _key_problems(data: dict[str, Any], key_lines: dict[str, int]) -> list[FieldError]:
    """Keys that are no concept field, and fields that must be there and are not."""
    errors = [FieldError(_shown(key), "is not a concept field", key_lines.get(key)) for key in data
              if key not in FIELDS]
    for field in FIELDS:
        if field not in data and field not in OPTIONAL_FIELDS and field not in (RETIRED_BY, LEARNED_FIELD,
                                                                                 REMOVED_FIELD):
            errors.append(FieldError(field, "is missing"))
    return errors


# Each reads what the frontmatter wrote for its fields into `values` (None, or nothing, where it is
# unreadable) and returns the problems it found, with the line of the key.
def _read_timestamps(data: dict[str, Any], values: dict[str, Any], key_lines: dict[str, int]) -> list[FieldError]:
    errors = []
    for field in ("created_at", "updated_at"):
        if field in data:
            stamp = _parse_timestamp(data[field])
            if stamp is None:
                errors.append(
                    FieldError(field, "must be a UTC timestamp like 2026-08-24T18:02:11Z", key_lines.get(field))
                )
            values[field] = stamp
    return errors


def _read_dates(data: dict[str, Any], values: dict[str, Any], key_lines: dict[str, int]) -> list[FieldError]:
    errors = []
    for field in OPTIONAL_FIELDS:
        if data.get(field) is not None:
            day = _parse_date(data[field])
            if day is None:
                errors.append(FieldError(field, "must be a date like 2026-11-30 (or the line left out)",
                                         key_lines.get(field)))
            values[field] = day
    return errors


def _read_sources(data: dict[str, Any], values: dict[str, Any], key_lines: dict[str, int]) -> list[FieldError]:
    sources = values["sources"]
    if isinstance(sources, list) and all(isinstance(s, str) for s in sources):
        values["sources"] = tuple(sources)
    elif isinstance(sources, list) and any(isinstance(s, (list, dict)) for s in sources):
        values["sources"] = ()
        return [FieldError("sources", "must not be nested: a flat list of session ids", key_lines.get("sources"))]
    elif "sources" in data:
        values["sources"] = ()
        return [FieldError("sources", "must be a list of session ids, each quoted text", key_lines.get("sources"))]
    return []


def _read_word_lists(data: dict[str, Any], values: dict[str, Any], key_lines: dict[str, int]) -> list[FieldError]:
    """The learned words and the removed ones."""
    errors = []
    learned, problem = parse_learned(data.get(LEARNED_FIELD), _parse_date)
    if problem:
        errors.append(FieldError(LEARNED_FIELD, problem, key_lines.get(LEARNED_FIELD)))
    values[LEARNED_FIELD] = learned or ()
    removed, problem = parse_removed(data.get(REMOVED_FIELD))
    if problem:
        errors.append(FieldError(REMOVED_FIELD, problem, key_lines.get(REMOVED_FIELD)))
    values[REMOVED_FIELD] = removed or ()
    return errors


def _built(values: dict[str, Any], errors: list[FieldError], key_lines: dict[str, int], text: str) -> Concept:
    """The concept, or InvalidConcept listing the problems read so far and those the constructor finds."""
    if errors:
        # Report the field errors the constructor would find too, so the operator sees them all.
        try:
            Concept(**_placeholders(values, errors))
        except InvalidConcept as more:
            errors.extend(_with_lines(more.errors, key_lines, text))
        raise InvalidConcept(errors)
    try:
        return Concept(**values)
    except InvalidConcept as exc:
        raise InvalidConcept(_with_lines(exc.errors, key_lines, text)) from None


def parse_stored(document: str | bytes, stored_as: str) -> Concept:
    """Parse a concept kept under the name `stored_as` (its key). A document whose `name` is
    another concept's is unreadable (InvalidConcept) like any other broken one: it would be
    served, announced and linked under a name that is not where it is kept."""
    concept = parse(document)
    if concept.name != stored_as:
        raise InvalidConcept([FieldError(
            "name", f"is {concept.name!r} but the concept is kept as {stored_as!r}: "
                    "the frontmatter's name must be the concept's own")])
    return concept


def _placeholders(values: dict[str, Any], errors: Iterable[FieldError]) -> dict[str, Any]:
    """Stand-ins for fields already reported, so the remaining fields can still be checked."""
    reported = {e.field for e in errors}
    stand_in = {
        "name": "x",
        "description": "x",
        "type": "fact",
        "provenance": "observed",
        "confidence": 0.5,
        "sources": (),
        "occurrences": 1,
        "created_at": datetime(1970, 1, 1, tzinfo=timezone.utc),
        "updated_at": datetime(1970, 1, 1, tzinfo=timezone.utc),
        "body": "x",
    }
    out = dict(values)
    for field in stand_in:
        if field in reported or out.get(field) is None:
            out[field] = stand_in[field]
    if "created_at" in reported or "updated_at" in reported:
        out["created_at"] = out["updated_at"] = stand_in["created_at"]
    return out


def _with_lines(errors: Iterable[FieldError], key_lines: dict[str, int], text: str) -> list[FieldError]:
    body_line = text.count("\n", 0, text.find("\n---\n", 3) + 5) + 1 if "\n---\n" in text else None
    out = []
    for error in errors:
        line = error.line or (body_line if error.field == "body" else key_lines.get(error.field))
        out.append(FieldError(error.field, error.message, line))
    return out
