"""One fact about one customer, and the customer's memory cell that holds them.

A cell is a JSON document: every fact has its value, its origin (`engine`, `operator`,
`legacy`, `distilled:<session>`), when it was written and its own revision. Revisions come
from the cell's sequence, so a fact deleted and written again never repeats an old revision
(an approval compares the fact's revision, and must not be fooled by an A-B-A).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Optional

from shared.names import is_session_id

from .errors import InvalidFact, RecordUnreadable

NAME_MAX = 64
VALUE_MAX = 500
FACTS_MAX = 200  # per customer: a <memory> block is injected on every turn
_NAME = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ORIGIN = re.compile(r"engine|operator|legacy|distilled:[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
CELL_VERSION = 1


def name_problem(name: object) -> Optional[str]:
    if not isinstance(name, str):
        return "must be a string"
    if len(name) > NAME_MAX:
        return f"must be at most {NAME_MAX} characters"
    if not _NAME.fullmatch(name):
        return "must be lowercase letters and digits joined by single '-' or '_' (e.g. shoe_size)"
    return None


def value_problem(value: object) -> Optional[str]:
    if not isinstance(value, str):
        return "must be a string"
    if not value.strip():
        return "must not be empty"
    if len(value) > VALUE_MAX:
        return f"must be at most {VALUE_MAX} characters"
    if _CONTROL.search(value):
        return "must be one line of text (no control characters)"
    return None


def check_fact(name: object, value: object) -> tuple[str, str]:
    for field_name, problem in (("name", name_problem(name)), ("value", value_problem(value))):
        if problem:
            raise InvalidFact(f"{field_name}: {problem}")
    return name, value.strip()  # type: ignore[union-attr, return-value]


def check_customer(customer_id: object) -> str:
    if not is_session_id(customer_id):
        raise InvalidFact("customer_id: letters, digits, '.', '_', ':', '-'; at most 128")
    return customer_id  # type: ignore[return-value]


def same_value(a: str, b: str) -> bool:
    """Equal once Unicode form, case and runs of whitespace are ignored ("M" is "m", not "L")."""
    return fold(a) == fold(b)


def fold(value: str) -> str:
    return " ".join(unicodedata.normalize("NFC", value).split()).casefold()


def distilled_origin(session_id: str) -> str:
    return f"distilled:{session_id}"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_iso(text: object) -> datetime:
    if not isinstance(text, str):
        raise ValueError("not a time")
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("time without a zone")
    return moment.astimezone(timezone.utc)


@dataclass(frozen=True)
class Fact:
    value: str
    origin: str
    at: datetime
    revision: int

    def as_json(self) -> dict:
        return {"value": self.value, "origin": self.origin, "at": iso(self.at), "revision": self.revision}


@dataclass(frozen=True)
class Cell:
    """A customer's memory cell; `seq` is the last revision handed out."""

    tenant: str
    customer_id: str
    facts: dict[str, Fact] = field(default_factory=dict)
    seq: int = 0

    def with_fact(self, name: str, value: str, origin: str, at: datetime) -> "Cell":
        if name not in self.facts and len(self.facts) >= FACTS_MAX:
            raise InvalidFact(f"a customer's memory holds at most {FACTS_MAX} facts: remove one first")
        facts = dict(self.facts)
        facts[name] = Fact(value, origin, at, self.seq + 1)
        return replace(self, facts=facts, seq=self.seq + 1)

    def without(self, name: str) -> "Cell":
        """The cell with `name` removed (no revision is handed out: `seq` still rules out an A-B-A)."""
        return replace(self, facts={n: f for n, f in self.facts.items() if n != name})

    @property
    def over_full(self) -> bool:
        """More facts than a customer may have (a cell written outside the engine)."""
        return len(self.facts) > FACTS_MAX

    def served(self) -> dict[str, Fact]:
        """What a read serves: every fact, or of an over-full cell the FACTS_MAX most recently
        written (time, then revision), so a <memory> block stays bounded."""
        if not self.over_full:
            return dict(self.facts)
        newest = sorted(self.facts.items(), key=lambda item: (item[1].at, item[1].revision), reverse=True)
        return dict(newest[:FACTS_MAX])

    def trimmed(self) -> "Cell":
        """The cell holding only what a read serves."""
        return replace(self, facts=self.served())

    def body(self) -> bytes:
        return json.dumps({"v": CELL_VERSION, "tenant": self.tenant, "customer_id": self.customer_id,
                           "seq": self.seq, "facts": {n: f.as_json() for n, f in sorted(self.facts.items())}},
                          ensure_ascii=False, separators=(",", ":")).encode()


def parse_cell(body: bytes, tenant: str, customer_id: str) -> Cell:
    """A stored cell; RecordUnreadable (never a guess) when it does not follow the format."""
    try:
        data = json.loads(body)
        if not isinstance(data, dict) or data.get("v") != CELL_VERSION:
            raise ValueError("version")
        if data.get("tenant") != tenant or data.get("customer_id") != customer_id:
            raise ValueError("scope")
        seq = data["seq"]
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise ValueError("seq")
        facts = {}
        for name, raw in data["facts"].items():
            check_fact(name, raw["value"])
            revision = raw["revision"]
            if (not isinstance(revision, int) or isinstance(revision, bool) or not 0 < revision <= seq
                    or not isinstance(raw["origin"], str) or not _ORIGIN.fullmatch(raw["origin"])):
                raise ValueError("fact")
            facts[name] = Fact(raw["value"], raw["origin"], parse_iso(raw["at"]), revision)
    except (ValueError, KeyError, TypeError, AttributeError, InvalidFact, RecursionError):
        raise RecordUnreadable("memory cell does not follow the format") from None
    return Cell(tenant, customer_id, facts, seq)
