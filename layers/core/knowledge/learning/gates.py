"""The write path's gates: nothing the model answers is trusted.

The answer must be a JSON array of objects (a fenced code block is tolerated, nothing
looser). Each candidate must pass the schema, carry only the keys a model may write, use
an allowed type, quote its evidence verbatim from the turn (from the store's side of it for a
claim about the store), and fit the size limits. PII is redacted from what survives. Every
rejection is counted by reason. A survivor keeps where its evidence is, never the quote.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional, Protocol, Sequence

from knowledge.format.concept import BODY_MAX_BYTES, DESCRIPTION_MAX, TYPES
from shared.language import detect, other_language
from shared.names import is_slug
from shared.pii import names_in, pii_in_slug, redact
from shared.validation import unfence

MODEL_KEYS = ("name", "description", "type", "body", "evidence")
ENGINE_KEYS = frozenset({"provenance", "confidence", "sources", "occurrences", "created_at", "updated_at",
                         "valid_from", "valid_until"})
ANSWER_MAX_CHARS = 256 * 1024
CANDIDATES_MAX = 20
EVIDENCE_MIN = 12
EVIDENCE_MAX = 1000
NAME_RAW_MAX = 200
# Whose words are evidence for which type. A claim about the store (what it sells, charges,
# does or allows) stands only on what the store said: its agent and its tools. A customer's
# words are evidence of what customers say (an objection), never of what the store does;
# otherwise one customer's claim would reach every other customer. The system prompt is
# never evidence.
STORE_ROLES = frozenset({"assistant", "tool"})
CUSTOMER_ROLES = frozenset({"user"})
CUSTOMER_EVIDENCE_TYPES = frozenset({"objection"})
EVIDENCE_ROLES = STORE_ROLES | CUSTOMER_ROLES

# Reasons, each a metric dimension.
ANSWER_NOT_JSON = "answer_not_json"
ANSWER_NOT_ARRAY = "answer_not_array"
ANSWER_TOO_LARGE = "answer_too_large"
NOT_OBJECT = "not_object"
FORBIDDEN_KEY = "forbidden_key"
UNKNOWN_KEY = "unknown_key"
SCHEMA = "schema"
TYPE_NOT_ALLOWED = "type_not_allowed"
BAD_NAME = "bad_name"
PII_IN_NAME = "pii_in_name"
TOO_LARGE = "too_large"
EVIDENCE_MISSING = "evidence_missing"
EVIDENCE_NOT_FOUND = "evidence_not_found"
EVIDENCE_NOT_FROM_STORE = "evidence_not_from_store"
EVIDENCE_NEGATED = "evidence_negated"
# A quote cut from just after one of these ("não | aceitamos devolução…") supports the opposite claim.
_NEGATIONS = frozenset("nao nunca jamais nem sem not no never without cannot can't don't doesn't won't".split())
_CLAUSE_END = re.compile(r"[.;!?:\n]")
DUPLICATE = "duplicate_name"
TOO_MANY = "too_many"

_PATH_CHARS = re.compile(r"[/\\.~:]")


class Said(Protocol):
    """One message of the turn, as the gates read it (turn.Message)."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...


class EvidenceSpan(NamedTuple):
    """Where a quote is: turn.messages[message].content[start:end], in the original characters."""

    message: int
    start: int
    end: int


@dataclass(frozen=True)
class Candidate:
    """A gated, redacted candidate concept: only what the model may write, and where (not what) its evidence is."""

    name: str
    description: str
    type: str
    body: str
    evidence_at: EvidenceSpan


@dataclass
class GateReport:
    candidates: list[Candidate] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    redacted: Counter = field(default_factory=Counter)
    answer_dropped: Optional[str] = None
    # Survivors plainly written in another language than the agent's `language:` (or, without
    # one, the conversation's): kept, and counted so an operator sees the model ignore the rule.
    other_language: int = 0


def squash(text: str) -> str:
    """Whitespace collapsed and case folded: the only normalisation evidence gets."""
    return " ".join(text.split()).casefold()


def evidence_roles(type_: str) -> frozenset[str]:
    """The roles whose words may evidence a candidate of this type."""
    return EVIDENCE_ROLES if type_ in CUSTOMER_EVIDENCE_TYPES else STORE_ROLES


def locate(text: str, needle: str) -> Optional[tuple[int, int]]:
    """[start, end) in `text`'s original characters of the first match of `needle` (squashed, as
    squash makes it) in squash(text); None when there is none."""
    if not needle:
        return None
    folded = text.casefold()
    if len(folded) == len(text):
        # Casefolding never drops a character, so equal lengths mean one for one: offsets in
        # `folded` are offsets in `text`, and only whitespace runs differ from squash.
        pattern = r"\s+".join(re.escape(word) for word in needle.split(" "))
        match = re.search(pattern, folded)
        return match.span() if match else None
    return locate_folding(text, needle)


def locate_folding(text: str, needle: str) -> Optional[tuple[int, int]]:
    """locate() for a text whose folding changes lengths ("ß" is "ss"): each folded character
    remembers the original one it came from."""
    folded: list[str] = []
    origin: list[int] = []
    space_pending = False
    for index, char in enumerate(text):
        if char.isspace():  # what str.split() splits on
            space_pending = bool(folded)
            continue
        if space_pending:
            folded.append(" ")
            origin.append(index)
            space_pending = False
        for piece in char.casefold():
            folded.append(piece)
            origin.append(index)
    at = "".join(folded).find(needle)
    if at < 0:
        return None
    return origin[at], origin[at + len(needle) - 1] + 1


def _negated_before(text: str, start: int) -> bool:
    """True when one of the three words right before `start`, in the same clause, is a negation."""
    clause = _CLAUSE_END.split(text[:start])[-1]
    words = re.findall(r"[\w']+", "".join(c for c in unicodedata.normalize("NFKD", clause.casefold())
                                           if not unicodedata.combining(c)))
    return any(word in _NEGATIONS for word in words[-3:])


def normalize_name(raw: str) -> Optional[str]:
    """The slug for `raw` when that is unambiguous (case, accents, spaces); None otherwise."""
    if len(raw) > NAME_RAW_MAX or _PATH_CHARS.search(raw):
        return None
    stripped = "".join(c for c in unicodedata.normalize("NFKD", raw) if not unicodedata.combining(c))
    slug = re.sub(r"\s+", "-", stripped.strip().lower())
    return slug if is_slug(slug) else None


def parse_answer(answer: str) -> list:
    """The JSON array in a model's answer; ValueError(reason) when there is none."""
    if len(answer) > ANSWER_MAX_CHARS:
        raise ValueError(ANSWER_TOO_LARGE)
    try:
        data = json.loads(unfence(answer))
    except ValueError:
        raise ValueError(ANSWER_NOT_JSON) from None
    if not isinstance(data, list):
        raise ValueError(ANSWER_NOT_ARRAY)
    return data


def gate(answer: str, messages: Sequence[Said], allowed_types: Iterable[str],
         published: Sequence[str] = (), language: Optional[str] = None) -> GateReport:
    """Run every gate over a model's answer for one turn (`messages` are the turn's, in order);
    `published` are the store's own contacts, which redaction keeps; `language` the agent's
    (None: the language the conversation is plainly written in, if it is)."""
    report = GateReport()
    try:
        items = parse_answer(answer)
    except ValueError as exc:
        report.answer_dropped = str(exc)
        report.rejected[str(exc)] += 1
        return report
    allowed = frozenset(allowed_types)
    haystack = [(index, m.role, squash(m.content)) for index, m in enumerate(messages)
                if m.role in EVIDENCE_ROLES]
    # The names the turn itself gives people (the customer's greeting, a signature): redacted wherever
    # a candidate repeats them, in any case, and never part of a concept's name.
    known = names_in([m.content for m in messages if m.role in EVIDENCE_ROLES])
    expected = language or detect("\n".join(m.content for m in messages if m.role in EVIDENCE_ROLES))
    seen: set[str] = set()
    for index, item in enumerate(items):
        if index >= CANDIDATES_MAX:
            report.rejected[TOO_MANY] += len(items) - CANDIDATES_MAX
            break
        reason, candidate = _check(item, messages, haystack, allowed, report, published, known)
        if reason is None and candidate is not None and candidate.name in seen:
            reason = DUPLICATE
        if reason is not None:
            report.rejected[reason] += 1
            continue
        seen.add(candidate.name)
        report.candidates.append(candidate)
        report.other_language += other_language(f"{candidate.description}\n{candidate.body}", expected)
    return report


def _check(item: object, messages: Sequence[Said], haystack: list[tuple[int, str, str]], allowed: frozenset,
           report: GateReport, published: Sequence[str] = (),
           known: Sequence[str] = ()) -> tuple[Optional[str], Optional[Candidate]]:
    if not isinstance(item, dict):
        return NOT_OBJECT, None
    keys = set(item)
    if keys & ENGINE_KEYS:
        return FORBIDDEN_KEY, None
    if keys - set(MODEL_KEYS):
        return UNKNOWN_KEY, None
    if not all(isinstance(item.get(key), str) for key in ("name", "description", "type", "body")):
        return SCHEMA, None
    if item["type"] not in TYPES or item["type"] not in allowed:
        return TYPE_NOT_ALLOWED, None
    evidence = item.get("evidence")
    if not isinstance(evidence, str) or len(squash(evidence)) < EVIDENCE_MIN:
        return EVIDENCE_MISSING, None
    if len(evidence) > EVIDENCE_MAX:
        return TOO_LARGE, None
    needle = squash(evidence)
    roles = evidence_roles(item["type"])
    source, elsewhere = None, False
    for index, role, text in haystack:
        if needle in text:
            if role in roles:
                source = index
                break
            elsewhere = True
    if source is None:
        return (EVIDENCE_NOT_FROM_STORE if elsewhere else EVIDENCE_NOT_FOUND), None

    name = normalize_name(item["name"])
    if name is None:
        return BAD_NAME, None
    description, body = item["description"].strip(), item["body"].strip()
    if not description or not body or "\n" in description or "\r" in description:
        return SCHEMA, None
    if len(description) > DESCRIPTION_MAX or len(body.encode("utf-8", "surrogatepass")) > BODY_MAX_BYTES:
        return TOO_LARGE, None
    # In a slug, hyphens join what PII detectors need to see as separate words; a person's bare name
    # ("cliente-joana-prado-vip") or a CPF in digit groups ("cliente-529-982-247-25") is PII too, and
    # would outlive forget_customer as an object key.
    if pii_in_slug(name, known) is not None:
        return PII_IN_NAME, None
    span = locate(messages[source].content, needle)
    if span is None:  # cannot happen while locate folds as squash does; refused rather than trusted
        return EVIDENCE_NOT_FOUND, None
    if _negated_before(messages[source].content, span[0]):
        return EVIDENCE_NEGATED, None
    redacted_description = redact(description, published=published, known=known)
    redacted_body = redact(body, published=published, known=known)
    report.redacted.update(redacted_description.counts)
    report.redacted.update(redacted_body.counts)
    return None, Candidate(name, redacted_description.text, item["type"], redacted_body.text,
                           EvidenceSpan(source, *span))

