"""PII redaction: e-mail, cards (Luhn), CNPJ and CPF (check digits), IPs, phones, RG numbers, a
person's address and a person's name.

Each finding is replaced by a typed placeholder such as `[email]`, `[address]`, `[name]` or `[rg]`.
Detectors run in a fixed order and a later detector never looks inside an earlier finding (nor
inside a store's address), so an 11-digit CPF is not also read as a phone number. What is kept:

- A **store's address** is knowledge, not PII. A street address is the store's when the nearest
  cue before it in the same sentence (or, failing that, after it) names the store's side — loja,
  filial, unidade, showroom, CD, centro de distribuição, depósito, galpão, retirada, ponto de
  coleta, locker, "nossa"/"nosso", store, warehouse, pickup, "our" — rather than the customer's
  (moro, casa, meu endereço, entrega, coleta, ship to, deliver, my address...). No cue: a person's.
- A **product** named like a street or a person ("Sofá Avenida 3 lugares", "Cadeira Dona Flor",
  "Sr. Frio ar-condicionado"): the honorific or street word follows a capitalised word inside the
  sentence or a product noun, or the number is a quantity (followed by a unit or a noun).
- A **name** needs an honorific (Sr., Dona, Dr., Mrs....), a role (cliente, porteiro, vizinha...)
  followed by capitalised words, or "meu nome é"/"my name is"/"aos cuidados de" (any case).
- An **RG** is 2.3.3-D with its check digit, or, after RG/identidade/documento, 7 to 10 digits:
  "RG6" cables, "RGB" and Rio Grande (RG) stay. A phone is not read where an identifier word
  (pedido, ticket, ref, CEP...) names the number, nor in two years side by side.

Every pattern is linear: bounded repetitions between literal separators, no nested quantifier.
The labelled sets in tests/data/ and scripts/pii_report.py measure recall and near misses kept.

The detectors are shared.pii.identifiers, shared.pii.addresses and shared.pii.names, what they read
around a match shared.pii.context; find and redact run them here, in their fixed order.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

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
    find_phones,
    find_rg,
    finder,
    ip_ok,
    luhn,
    phone_intl_ok,
)
from shared.pii.names import find_names

KINDS = ("email", "card", "cnpj", "cpf", "ip", "phone", "rg", "address", "name")


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
    ("card", "digits", finder(CARD, lambda s: 13 <= len(digits(s)) <= 19 and luhn(digits(s)))),
    ("cnpj", "digits", finder(CNPJ, lambda s: cnpj_ok(digits(s)))),
    ("cpf", "digits", finder(CPF, lambda s: cpf_ok(digits(s)))),
    ("ip", "digits", finder(IPV4, ip_ok)),
    ("ip", "colons", finder(IPV6, ip_ok)),
    ("phone", "digits", finder(PHONE_INTL, phone_intl_ok)),
    ("rg", "digits", find_rg),
    ("phone", "digits", find_phones),
    ("phone", "digits", finder(PHONE_BR_PLAIN, lambda s: True)),
    ("address", _ALWAYS, find_addresses),
    ("name", _ALWAYS, find_names),
)


def find(text: str) -> list[Finding]:
    """Every PII finding in `text`, in order, never overlapping."""
    holds = {"at": "@" in text, "colons": text.count(":") >= 2, "digits": _NUMERIC_HINT.search(text) is not None,
             _ALWAYS: True}
    context = Context(text)
    # Occupied spans, disjoint and sorted by start, so an overlap check is one bisection.
    starts: list[int] = []
    spans: list[tuple[int, int, str | None]] = []
    for kind, needs, detector in _DETECTORS:
        if not holds[needs]:
            continue
        for start, end, redact_it in detector(context):
            at = bisect.bisect_left(starts, start)
            if (at < len(spans) and spans[at][0] < end) or (at and spans[at - 1][1] > start):
                continue
            starts.insert(at, start)
            spans.insert(at, (start, end, kind if redact_it else None))
    return [Finding(kind, start, end) for start, end, kind in spans if kind is not None]


def redact(text: str, *, placeholder: Callable[[str], str] = lambda kind: f"[{kind}]") -> Redaction:
    """`text` with each finding replaced by a typed placeholder, and the count of each kind."""
    findings = find(text)
    if not findings:
        return Redaction(text)
    out, last = [], 0
    for finding in findings:
        out.append(text[last:finding.start])
        out.append(placeholder(finding.kind))
        last = finding.end
    out.append(text[last:])
    return Redaction("".join(out), Counter(f.kind for f in findings))
