"""The gates a distillation answer passes before anything is proposed (each rejection counted).

The model may write only `name`, `value`, `confidence` and `evidence`. Scope is the engine's:
any model-authored scope, tenant, customer or origin (or another engine-stamped key) rejects
that proposal, so an answer cannot aim a fact at another tenant's or customer's cell.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from shared.language import other_language
from shared.pii import find
from shared.validation import unfence

from .fact import NAME_MAX, VALUE_MAX, name_problem, value_problem

ANSWER_MAX_CHARS = 256 * 1024
EVIDENCE_MAX = 20

ANSWER_NOT_JSON, ANSWER_NOT_ARRAY, ANSWER_TOO_LARGE = "answer_not_json", "answer_not_array", "answer_too_large"
NOT_OBJECT, SCHEMA, FORBIDDEN_KEY, UNKNOWN_KEY = "not_object", "schema", "forbidden_key", "unknown_key"
BAD_NAME, NAME_TOO_LARGE, VALUE_TOO_LARGE = "bad_name", "name_too_large", "value_too_large"
PII_IN_NAME, CARD_IN_VALUE = "pii_in_name", "card_in_value"
EVIDENCE_MISSING, EVIDENCE_OUT_OF_RANGE = "evidence_missing", "evidence_out_of_range"
DUPLICATE_NAME, TOO_MANY = "duplicate_name", "too_many"


ALLOWED_KEYS = frozenset({"name", "value", "confidence", "evidence"})
# What the engine decides: where a fact lands, who wrote it, its state. Any of them from the
# model is an attempt to choose the landing cell (or to pass for someone else) — never a typo.
FORBIDDEN_KEYS = frozenset({"scope", "tenant", "tenant_id", "customer", "customer_id", "origin", "agent",
                            "session", "session_id", "cell", "status", "revision", "proposal_id"})


@dataclass(frozen=True)
class Proposed:
    name: str
    value: str
    confidence: Optional[float]
    evidence: tuple[int, ...]  # transcript message indexes, ascending


@dataclass
class GateReport:
    proposals: list[Proposed] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    other_language: int = 0  # kept proposals plainly in another language than the expected one


def parse_answer(answer: str) -> tuple[Optional[list], Optional[str]]:
    if len(answer) > ANSWER_MAX_CHARS:
        return None, ANSWER_TOO_LARGE
    try:
        data = json.loads(unfence(answer))
    except (ValueError, RecursionError):
        return None, ANSWER_NOT_JSON
    return (data, None) if isinstance(data, list) else (None, ANSWER_NOT_ARRAY)


def gate(answer: str, transcript_length: int, max_proposals: int,
         expected_language: Optional[str] = None) -> GateReport:
    """The proposals that survive, in answer order, at most `max_proposals`; those plainly written
    in another language than `expected_language` (a code; None: not checked) are counted."""
    report = GateReport()
    items, problem = parse_answer(answer)
    if problem:
        report.rejected[problem] += 1
        return report
    names: set[str] = set()
    for item in items:  # type: ignore[union-attr]
        proposed, reason = _check(item, transcript_length)
        if reason is None and proposed.name in names:
            reason = DUPLICATE_NAME
        if reason is None and len(report.proposals) >= max_proposals:
            reason = TOO_MANY
        if reason:
            report.rejected[reason] += 1
            continue
        names.add(proposed.name)
        report.proposals.append(proposed)
        report.other_language += other_language(proposed.value, expected_language)
    return report


def _check(item: object, transcript_length: int) -> tuple[Optional[Proposed], Optional[str]]:
    if not isinstance(item, dict):
        return None, NOT_OBJECT
    if FORBIDDEN_KEYS & set(item):
        return None, FORBIDDEN_KEY
    if set(item) - ALLOWED_KEYS:
        return None, UNKNOWN_KEY
    name, value = item.get("name"), item.get("value")
    confidence, evidence = item.get("confidence"), item.get("evidence")
    if not isinstance(name, str) or not isinstance(value, str):
        return None, SCHEMA
    if confidence is not None and (isinstance(confidence, bool) or not isinstance(confidence, (int, float))
                                   or not 0 <= confidence <= 1):
        return None, SCHEMA
    name = name.strip().lower()
    if len(name) > NAME_MAX:
        return None, NAME_TOO_LARGE
    if name_problem(name):
        return None, BAD_NAME
    if find(name.replace("_", " ").replace("-", " ")):
        return None, PII_IN_NAME
    if len(value) > VALUE_MAX:
        return None, VALUE_TOO_LARGE
    if value_problem(value):
        return None, SCHEMA
    # A card number is never customer memory, whoever approves it.
    if any(f.kind == "card" for f in find(value)):
        return None, CARD_IN_VALUE
    if not isinstance(evidence, list) or not evidence:
        return None, EVIDENCE_MISSING
    if len(evidence) > EVIDENCE_MAX or not all(isinstance(i, int) and not isinstance(i, bool) for i in evidence):
        return None, SCHEMA
    if not all(0 <= i < transcript_length for i in evidence):
        return None, EVIDENCE_OUT_OF_RANGE
    return Proposed(name, " ".join(value.split()),
                    None if confidence is None else round(float(confidence), 4),
                    tuple(sorted(set(evidence)))), None
