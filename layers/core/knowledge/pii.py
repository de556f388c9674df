"""PII redaction: e-mail, card numbers (Luhn), CNPJ and CPF (check digits), IP addresses, phones.

Each finding is replaced by a typed placeholder such as `[email]`. Detectors run in a fixed
order and a later detector never looks inside an earlier finding, so an 11-digit CPF is
not also read as a phone number. The labelled set in tests/data/pii_labelled.jsonl and
scripts/pii_report.py measure precision and recall.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

KINDS = ("email", "card", "cnpj", "cpf", "ip", "phone")


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


@dataclass
class Redaction:
    text: str
    counts: Counter = field(default_factory=Counter)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def _luhn(number: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = int(char)
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _cpf_ok(number: str) -> bool:
    if len(number) != 11 or len(set(number)) == 1:
        return False
    for length in (9, 10):
        total = sum(int(d) * w for d, w in zip(number[:length], range(length + 1, 1, -1)))
        check = (total * 10) % 11 % 10
        if check != int(number[length]):
            return False
    return True


def _cnpj_ok(number: str) -> bool:
    if len(number) != 14 or len(set(number)) == 1:
        return False
    weights = [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]
    for length in (12, 13):
        w = weights if length == 12 else [6] + weights
        total = sum(int(d) * k for d, k in zip(number[:length], w))
        check = 0 if total % 11 < 2 else 11 - total % 11
        if check != int(number[length]):
            return False
    return True


def _ip_ok(candidate: str) -> bool:
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return "." in candidate or "::" in candidate or candidate.count(":") == 7


# A number is "standalone" when no letter, digit or joining punctuation touches it:
# PED-48213 or BR123456789BR are identifiers, not PII.
_EDGE_L = r"(?<![\w@/\\.,-])"
_EDGE_R = r"(?![\w/\\-]|[.,]\d)"

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}(?![\w-])")
_CARD = re.compile(_EDGE_L + r"\d(?:[ -]?\d){12,18}" + _EDGE_R)
_CNPJ = re.compile(_EDGE_L + r"\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}" + _EDGE_R)
_CPF = re.compile(_EDGE_L + r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}" + _EDGE_R)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
# +55 (11) 98765-4321, +1 415 555 0132, +44 20 7946 0958
_PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){1,5}(?![\w-])")
# (11) 98765-4321, 11 3456-7890, 98765-4321: the last four digits set off by a separator
_PHONE_BR = re.compile(_EDGE_L + r"(?:\(\d{2}\)\s?|\d{2}[ .-])?9?\d{4}[ .-]\d{4}" + _EDGE_R)
# 11987654321: an area code (11-99, no zero) and a mobile number starting with 9
_PHONE_BR_PLAIN = re.compile(_EDGE_L + r"\(?[1-9]{2}\)?9\d{8}" + _EDGE_R)


def _finder(pattern: re.Pattern, accept: Callable[[str], bool]) -> Callable[[str], Iterator[tuple[int, int]]]:
    def find(text: str) -> Iterator[tuple[int, int]]:
        for match in pattern.finditer(text):
            if accept(match.group(0)):
                yield match.start(), match.end()

    return find


def _phone_intl_ok(text: str) -> bool:
    return 8 <= len(_digits(text)) <= 15


# Cheap pre-check: every number detector needs a run of at least seven digits and
# separators (e-mail needs an '@', IPv6 two colons). Most text fails all three.
_NUMERIC_HINT = re.compile(r"\d[\d .()/+-]{5,}\d")

# (kind, what the text must hold for the detector to run, detector)
_DETECTORS: tuple[tuple[str, str, Callable[[str], Iterator[tuple[int, int]]]], ...] = (
    ("email", "at", _finder(_EMAIL, lambda s: True)),
    ("card", "digits", _finder(_CARD, lambda s: 13 <= len(_digits(s)) <= 19 and _luhn(_digits(s)))),
    ("cnpj", "digits", _finder(_CNPJ, lambda s: _cnpj_ok(_digits(s)))),
    ("cpf", "digits", _finder(_CPF, lambda s: _cpf_ok(_digits(s)))),
    ("ip", "digits", _finder(_IPV4, _ip_ok)),
    ("ip", "colons", _finder(_IPV6, _ip_ok)),
    ("phone", "digits", _finder(_PHONE_INTL, _phone_intl_ok)),
    ("phone", "digits", _finder(_PHONE_BR, lambda s: True)),
    ("phone", "digits", _finder(_PHONE_BR_PLAIN, lambda s: True)),
)


def find(text: str) -> list[Finding]:
    """Every PII finding in `text`, in order, never overlapping."""
    holds = {"at": "@" in text, "colons": text.count(":") >= 2, "digits": _NUMERIC_HINT.search(text) is not None}
    taken: list[Finding] = []
    for kind, needs, detector in _DETECTORS:
        if not holds[needs]:
            continue
        for start, end in detector(text):
            if not any(start < f.end and f.start < end for f in taken):
                taken.append(Finding(kind, start, end))
    return sorted(taken, key=lambda f: f.start)


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
