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

from shared import pii
from shared.names import is_session_id

from .errors import InvalidFact, RecordUnreadable

NAME_MAX = 64
VALUE_MAX = 500
REASON_MAX = 500  # an operator's reason: for rejecting a proposal, for removing a fact
FACTS_MAX = 200  # per customer: a <memory> block is injected on every turn
_NAME = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ORIGIN = re.compile(r"engine|operator|legacy|distilled:[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
CELL_VERSION = 1
REMOVALS_KEPT = 20  # who removed which fact, and why: the newest kept in the cell
_OPERATOR = re.compile(r"[A-Za-z0-9._@+:-]{1,128}")
# What a fact name may be, in words (the API's and the page's answer to a bad one).
NAME_RULE = (f"a fact name is lowercase letters (a-z, no accents) and digits, its words joined by a single "
             f"'-' or '_' (no spaces), at most {NAME_MAX} characters: for example shoe_size or preferred-payment")


def suggested_name(name: str) -> Optional[str]:
    """A name that follows the rule, made from one that does not ("Tamanho Calçado" -> tamanho_calcado)."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", plain)
    suggestion = "_".join(words)[:NAME_MAX].strip("_")
    return suggestion if suggestion and suggestion != name and _NAME.fullmatch(suggestion) else None


def name_problem(name: object) -> Optional[str]:
    if not isinstance(name, str):
        return "must be a string"
    if len(name) <= NAME_MAX and _NAME.fullmatch(name):
        return None
    suggestion = suggested_name(name)
    return NAME_RULE + (f" ({suggestion} would do)" if suggestion else "")


# Personal data an operator types into memory, in the write path's rules (shared.pii), said in words.
PERSONAL_DATA_WORDS = {
    "email": "an e-mail address", "pix": "a Pix key", "card": "a payment card number", "cnpj": "a CNPJ",
    "cpf": "a CPF", "voter_id": "a voter id (título de eleitor)", "ip": "an IP address", "phone": "a phone number",
    "rg": "an RG number", "cvv": "a card's security code", "address": "a person's address", "name": "a person's name",
}
NEVER_KEPT = frozenset({"card", "cvv"})  # payment card data is never memory, whoever confirms it


def personal_data_in(text: str) -> tuple[str, ...]:
    """The kinds of personal data the write path's redaction finds in `text`, in order, each once."""
    return tuple(dict.fromkeys(finding.kind for finding in pii.find(text)))


def name_holds_personal_data(name: str) -> bool:
    """A fact name that carries personal data (a person's name, an e-mail...): names reach events."""
    return bool(pii.find(name.replace("_", " ").replace("-", " ")))


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
class Removal:
    """Who removed a fact from the cell, when, and why (the operator's reason, optional). The value
    is not kept here: the cell's earlier version in the versioned bucket still holds it."""

    name: str
    by: str
    at: datetime
    revision: int  # the removed fact's
    reason: Optional[str] = None

    def as_json(self) -> dict:
        out = {"name": self.name, "by": self.by, "at": iso(self.at), "revision": self.revision}
        return out | ({"reason": self.reason} if self.reason else {})


@dataclass(frozen=True)
class Cell:
    """A customer's memory cell; `seq` is the last revision handed out; `removed`, newest first,
    the last REMOVALS_KEPT removals by an operator."""

    tenant: str
    customer_id: str
    facts: dict[str, Fact] = field(default_factory=dict)
    seq: int = 0
    removed: tuple[Removal, ...] = ()

    def with_fact(self, name: str, value: str, origin: str, at: datetime) -> "Cell":
        if name not in self.facts and len(self.facts) >= FACTS_MAX:
            raise InvalidFact(f"a customer's memory holds at most {FACTS_MAX} facts: remove one first")
        facts = dict(self.facts)
        facts[name] = Fact(value, origin, at, self.seq + 1)
        return replace(self, facts=facts, seq=self.seq + 1)

    def without(self, name: str, removal: Optional[Removal] = None) -> "Cell":
        """The cell with `name` removed (no revision is handed out: `seq` still rules out an A-B-A),
        and `removal` recorded when given."""
        removed = self.removed if removal is None else ((removal,) + self.removed)[:REMOVALS_KEPT]
        return replace(self, facts={n: f for n, f in self.facts.items() if n != name}, removed=removed)

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
        data = {"v": CELL_VERSION, "tenant": self.tenant, "customer_id": self.customer_id,
                "seq": self.seq, "facts": {n: f.as_json() for n, f in sorted(self.facts.items())}}
        if self.removed:
            data["removed"] = [r.as_json() for r in self.removed]
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def check_reason(reason: object, field_name: str = "reason") -> Optional[str]:
    """An operator's optional reason: one line of at most REASON_MAX characters (blank: none)."""
    if reason is None:
        return None
    if not isinstance(reason, str) or len(reason) > REASON_MAX or _CONTROL.search(reason):
        raise InvalidFact(f"{field_name}: one line of text, at most {REASON_MAX} characters")
    return reason.strip() or None


def _removal(raw: object, seq: int) -> Removal:
    if not isinstance(raw, dict) or set(raw) - {"name", "by", "at", "revision", "reason"}:
        raise ValueError("removal")
    name, by, revision = raw["name"], raw["by"], raw["revision"]
    if (name_problem(name) or not isinstance(by, str) or not _OPERATOR.fullmatch(by)
            or not isinstance(revision, int) or isinstance(revision, bool) or not 0 < revision <= seq):
        raise ValueError("removal")
    reason = raw.get("reason")
    if reason is not None and check_reason(reason) != reason:
        raise ValueError("removal")
    return Removal(name, by, parse_iso(raw["at"]), revision, reason)


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
        removals = data.get("removed", [])
        if not isinstance(removals, list) or len(removals) > REMOVALS_KEPT:
            raise ValueError("removed")
        removed = tuple(_removal(raw, seq) for raw in removals)
    except (ValueError, KeyError, TypeError, AttributeError, InvalidFact, RecursionError):
        raise RecordUnreadable("memory cell does not follow the format") from None
    return Cell(tenant, customer_id, facts, seq, removed)
