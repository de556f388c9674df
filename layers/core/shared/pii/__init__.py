"""PII redaction: `find` and `redact` run the detectors (shared.pii.identifiers, addresses, names; what
they read around a match: shared.pii.context) in their fixed order, each finding replaced by a typed
placeholder such as `[email]`, `[address]`, `[name]` or `[rg]`.

What is redacted: docs/contract.md, "The gates"; what is kept (a store's address, a product named
like a street, the store's published contacts) and why: docs/personal-data.md, "What the redactor keeps"."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterator, Sequence

from shared.pii.addresses import find_addresses
from shared.pii.context import Context, Span
from shared.pii.identifiers import (
    CARD,
    CNPJ,
    CPF,
    EMAIL,
    IPV4,
    IPV6,
    PHONE_BR_PLAIN,
    PHONE_INTL,
    cnpj_ok,
    cpf_ok,
    digits,
    find_cvv,
    find_phones,
    find_pix_keys,
    find_rg,
    find_voter_ids,
    finder,
    ip_ok,
    luhn,
    phone_intl_ok,
)
from shared.pii.bare_names import find_bare_names, known_finder
from shared.pii.names import find_names

KINDS = ("email", "pix", "card", "cnpj", "cpf", "voter_id", "ip", "phone", "rg", "cvv", "address", "name")
# What a published contact is compared by: e-mail folded, numbers by their digits, an address squashed.
_BY_DIGITS = frozenset({"phone", "cnpj", "cpf"})


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


@dataclass
class Redaction:
    text: str
    counts: Counter = field(default_factory=Counter)


# --- Detectors ---------------------------------------------------------------------------------


# Cheap pre-check: every number detector needs a run of at least seven digits and
# separators (e-mail needs an '@', IPv6 two colons). Most text fails all three.
_NUMERIC_HINT = re.compile(r"\d[\d .()/+-]{5,}\d")
_ALWAYS = "always"

# (kind, what the text must hold for the detector to run, detector)
_DETECTORS: tuple[tuple[str, str, Callable[[Context], Iterator[Span]]], ...] = (
    ("email", "at", finder(EMAIL, lambda s: True)),
    ("pix", "uuid", find_pix_keys),
    ("card", "digits", finder(CARD, lambda s: 13 <= len(digits(s)) <= 19 and luhn(digits(s)))),
    ("cnpj", "digits", finder(CNPJ, lambda s: cnpj_ok(digits(s)))),
    ("cpf", "digits", finder(CPF, lambda s: cpf_ok(digits(s)))),
    ("voter_id", "digits", find_voter_ids),
    ("ip", "digits", finder(IPV4, ip_ok)),
    ("ip", "colons", finder(IPV6, ip_ok)),
    ("phone", "digits", finder(PHONE_INTL, phone_intl_ok)),
    ("rg", "digits", find_rg),
    ("phone", "digits", find_phones),
    ("phone", "digits", finder(PHONE_BR_PLAIN, lambda s: True)),
    ("cvv", "cvv", find_cvv),
    ("address", _ALWAYS, find_addresses),
    ("name", _ALWAYS, find_names),
    ("name", _ALWAYS, find_bare_names),
)


def _cvv_hint(text: str) -> bool:
    low = text.lower()
    return "cv" in low or "cid" in low or "segur" in low or "security" in low


def _folded(kind: str, value: str) -> str:
    return digits(value) if kind in _BY_DIGITS else " ".join(value.split()).casefold()


@lru_cache(maxsize=256)
def _published(contacts: tuple[str, ...]) -> frozenset[str]:
    """Each published contact as every kind would compare it (its digits, its folded text)."""
    out = set()
    for contact in contacts:
        out.add(_folded("email", contact))
        if len(digits(contact)) >= 8:
            out.add(digits(contact))
    return frozenset(out)


def find(text: str, published: Sequence[str] = (), known: Sequence[str] = ()) -> list[Finding]:
    """Every PII finding in `text`, in order, never overlapping; an exact repeat of one of the store's
    `published` contacts is not one, and a word of a `known` name (one the turn gives a person) is one."""
    holds = {"at": "@" in text, "colons": text.count(":") >= 2, "digits": _NUMERIC_HINT.search(text) is not None,
             "uuid": text.count("-") >= 4, "cvv": _cvv_hint(text), _ALWAYS: True}
    context = Context(text)
    # Occupied spans, disjoint and sorted by start, so an overlap check is one bisection.
    starts: list[int] = []
    spans: list[tuple[int, int, str | None]] = []

    def taken(start: int, end: int) -> bool:
        at = bisect.bisect_left(starts, start)
        return (at < len(spans) and spans[at][0] < end) or (at > 0 and spans[at - 1][1] > start)

    context.taken = taken  # a late detector skips what an earlier one holds
    detectors = _DETECTORS if not known else _DETECTORS + (("name", _ALWAYS, known_finder(tuple(known))),)
    for kind, needs, detector in detectors:
        if not holds[needs]:
            continue
        for start, end, redact_it in detector(context):
            if taken(start, end):
                continue
            at = bisect.bisect_left(starts, start)
            starts.insert(at, start)
            spans.insert(at, (start, end, kind if redact_it else None))
    findings = [Finding(kind, start, end) for start, end, kind in spans if kind is not None]
    if published:
        keep = _published(tuple(published))
        findings = [f for f in findings if _folded(f.kind, text[f.start:f.end]) not in keep]
    return findings


def names_in(messages: Sequence[str]) -> tuple[str, ...]:
    """The persons' names a conversation itself gives (its greeting, "meu nome é", a signature...), as
    written: `known` for what is learned from it."""
    found: list[str] = []
    for text in messages:
        found += [text[f.start:f.end] for f in find(text) if f.kind == "name"]
    return tuple(dict.fromkeys(found))


def person_in_slug(slug: str, known: Sequence[str] = ()) -> bool:
    """Whether a concept's or a fact's name (a slug: "cliente-joana-prado-vip", "joana_prado_email") carries
    a person's name."""
    words = slug.replace("-", " ").replace("_", " ")
    return any(f.kind == "name" for f in find(words, known=known))


# A slug's digit groups ("cliente-529-982-247-25"): hyphens and underscores are how a slug writes the
# dots, dashes and spaces a number is typed with, so the redactor's own patterns never see the number.
_DIGIT_GROUPS = re.compile(r"\d+(?:[-_]\d+)*")
_GROUP_SEPARATOR = re.compile(r"[-_]")
# What a slug is said to hold, for the refusal an operator reads.
SLUG_KINDS = {"name": "a person's name", "cpf": "a CPF", "cnpj": "a CNPJ", "phone": "a phone number",
              "card": "a card number", "voter_id": "a voter id", "rg": "an RG number", "ip": "an IP address",
              "email": "an e-mail", "pix": "a Pix key", "cvv": "a card's security code", "address": "an address"}


def _number_in_groups(slug: str) -> str | None:
    """'cpf', 'cnpj' or 'phone' when consecutive digit groups of a slug, read as one number, are one as
    the redactor reads its digits (a CPF's and a CNPJ's check digits, a mobile number with its area code)."""
    for run in _DIGIT_GROUPS.finditer(slug):
        groups = _GROUP_SEPARATOR.split(run.group())
        for first in range(len(groups)):
            number = ""
            for group in groups[first:]:
                number += group
                if len(number) == 11 and (cpf_ok(number) or PHONE_BR_PLAIN.fullmatch(number)):
                    return "cpf" if cpf_ok(number) else "phone"
                if len(number) == 14 and cnpj_ok(number):
                    return "cnpj"
                if len(number) > 14:
                    break
    return None


def pii_in_slug(slug: str, known: Sequence[str] = ()) -> str | None:
    """The kind of personal data a concept's name (a slug) carries, or None: a person's name, or any number
    the redactor reads — written with hyphens for spaces ("cliente-11-3456-7890"), or digit groups that
    spell a CPF, CNPJ or phone number ("cliente-529-982-247-25"). A name is an object key that outlives
    forget_customer."""
    found = find(slug.replace("-", " ").replace("_", " "), known=known)
    if found:
        return found[0].kind
    return _number_in_groups(slug)


def redact(text: str, *, placeholder: Callable[[str], str] = lambda kind: f"[{kind}]",
           published: Sequence[str] = (), known: Sequence[str] = ()) -> Redaction:
    """`text` with each finding replaced by a typed placeholder, and the count of each kind; the store's
    `published` contacts are kept, the turn's `known` names are redacted wherever they are."""
    findings = find(text, published, known)
    if not findings:
        return Redaction(text)
    out, last = [], 0
    for finding in findings:
        out.append(text[last:finding.start])
        out.append(placeholder(finding.kind))
        last = finding.end
    out.append(text[last:])
    return Redaction("".join(out), Counter(f.kind for f in findings))
