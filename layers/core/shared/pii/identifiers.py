"""The PII detectors of numbers and identifiers: e-mail, cards (Luhn), CNPJ and CPF (check digits), IPs, phones and
RG numbers."""

from __future__ import annotations

import ipaddress
import re
from typing import Callable, Iterator

from shared.pii.context import Context, Span


def digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def luhn(number: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = int(char)
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def cpf_ok(number: str) -> bool:
    if len(number) != 11 or len(set(number)) == 1:
        return False
    for length in (9, 10):
        total = sum(int(d) * w for d, w in zip(number[:length], range(length + 1, 1, -1)))
        check = (total * 10) % 11 % 10
        if check != int(number[length]):
            return False
    return True


def cnpj_ok(number: str) -> bool:
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


def ip_ok(candidate: str) -> bool:
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return "." in candidate or "::" in candidate or candidate.count(":") == 7


# A number is "standalone" when no letter, digit or joining punctuation touches it:
# PED-48213 or BR123456789BR are identifiers, not PII.
_EDGE_L = r"(?<![\w@/\\.,-])"
_EDGE_R = r"(?![\w/\\-]|[.,]\d)"

EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}(?![\w-])")
CARD = re.compile(_EDGE_L + r"\d(?:[ -]?\d){12,18}" + _EDGE_R)
CNPJ = re.compile(_EDGE_L + r"\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}" + _EDGE_R)
CPF = re.compile(_EDGE_L + r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}" + _EDGE_R)
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
IPV6 = re.compile(r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
# +55 (11) 98765-4321, +1 415 555 0132, +44 20 7946 0958
PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){1,5}(?![\w-])")
# (11) 98765-4321, 11 3456 7890, 11 9 8765 4321, 98765-4321: the last four digits set off by a separator
_PHONE_BR = re.compile(_EDGE_L + r"(?:\(\d{2}\)\s?|\d{2}[ .-])?(?:9[ .])?\d{4,5}[ .-]\d{4}" + _EDGE_R)
# 11987654321: an area code (11-99, no zero) and a mobile number starting with 9
PHONE_BR_PLAIN = re.compile(_EDGE_L + r"\(?[1-9]{2}\)?9\d{8}" + _EDGE_R)
# A number that a word before it names as something else: pedido 2025 0042, ticket 4521-7788.
_IDENTIFIER_BEFORE = re.compile(
    r"(?i:\b(?:pedido|order|ticket|protocolo|chamado|nota|nf-?e?|ref|refer[eê]ncia|c[oó]digo|sku|lote|"
    r"rastreio|cep|zip|ordem|boleto|fatura|invoice|serial|s[eé]rie|modelo|vers[aã]o)\b\.?)"
    r"\s*(?:n[º°o]\.?\s*|n[uú]mero\s*|#\s*|:\s*)?$")
_TWO_YEARS = re.compile(r"(?:19|20)\d\d[ .-](?:19|20)\d\d")

# RG: 12.345.678-9 (or -X) on its own; after a cue word also 4.567.890, 34567890-1, 123456789.
_RG_STRONG = re.compile(r"(?<![\w.,/-])\d{2}\.\d{3}\.\d{3}-[\dXx](?![\w/-]|[.,]\d)")
_RG_LOOSE = re.compile(r"(?<![\w.,/])\d{1,2}\.\d{3}\.\d{3}(?:-[\dXx])?(?![\w/-]|[.,]\d)"
                       r"|(?<![\w.,/-])\d{7,9}(?:-[\dXx])?(?![\w/-]|[.,]\d)")
_RG_CUE = re.compile(r"(?i:\brg\b|\br\.g\.|\bidentidade\b|\bdocumento\b|\bssp\b)")
# MG-14.567.890: the issuing state written before the number.
_RG_STATE = re.compile(r"\b(?:AC|AL|AP|AM|BA|CE|DF|ES|GO|MA|MT|MS|MG|PA|PB|PR|PE|PI|RJ|RN|RS|RO|RR|SC|SP|SE|TO)[ -]?$")


# --- Detectors ---------------------------------------------------------------------------------


def finder(pattern: re.Pattern, accept: Callable[[str], bool]) -> Callable[[Context], Iterator[Span]]:
    def find(context: Context) -> Iterator[Span]:
        for match in pattern.finditer(context.text):
            if accept(match.group(0)):
                yield match.start(), match.end(), True

    return find


def phone_intl_ok(text: str) -> bool:
    return 8 <= len(digits(text)) <= 15


def find_phones(context: Context) -> Iterator[Span]:
    text = context.text
    for match in _PHONE_BR.finditer(text):
        named = _IDENTIFIER_BEFORE.search(text, max(0, match.start() - 30), match.start())
        if named is None and not _TWO_YEARS.fullmatch(match.group()):
            yield match.start(), match.end(), True


def find_rg(context: Context) -> Iterator[Span]:
    text = context.text
    for match in _RG_STRONG.finditer(text):
        yield match.start(), match.end(), True
    for match in _RG_LOOSE.finditer(text):
        start, end = match.span()
        before = max(context.sentence_start(start), start - 40)
        after = min(context.sentence_end(end), end + 12)
        if (_RG_CUE.search(text, before, start) or _RG_STATE.search(text, max(0, start - 3), start)
                or _RG_CUE.search(text, end, after)):
            yield start, end, True


# --- A card's security code, a random Pix key, a voter id ----------------------------------------

# "cvv 123", "CVV: 4567", "código de segurança 123": only the digits a cue names, never a bare 3-digit number.
_CVV = re.compile(r"(?i:\b(?:cvv2?|cvc2?|cid|c[oó]d(?:igo|\.)?\s+(?:de\s+)?seguran[cç]a|security\s+code)\b)"
                  r"\s*(?:[:=#-]\s*|(?i:[ée]|eh|is)\s+)?(\d{3,4})(?![\w/-]|[.,]\d)")
# A random Pix key is a UUID; one an identifier word names ("protocolo 3f1c2b7e-…") is a reference.
UUID = re.compile(r"(?<![\w-])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![\w-])")
# A voter id (título de eleitor): 12 digits, plain or in groups of four; its last two are check
# digits over the first eight and the state code (01-28) in digits nine and ten.
_VOTER = re.compile(_EDGE_L + r"\d{4}[ .]?\d{4}[ .]?\d{4}" + _EDGE_R)
_VOTER_CUE = re.compile(r"(?i:t[íi]tulo(?:\s+de)?\s+eleitor(?:al)?|\beleitor(?:al)?\b|inscri[cç][aã]o\s+eleitoral)")


def voter_id_ok(number: str) -> bool:
    if len(number) != 12 or not 1 <= int(number[8:10]) <= 28:
        return False
    state_rule = number[8:10] in ("01", "02")  # SP and MG: a remainder of 0 gives 1
    first = sum(int(d) * w for d, w in zip(number[:8], range(2, 10))) % 11
    first = 0 if first == 10 else (1 if first == 0 and state_rule else first)
    second = (int(number[8]) * 7 + int(number[9]) * 8 + first * 9) % 11
    second = 0 if second == 10 else (1 if second == 0 and state_rule else second)
    return number[10:] == f"{first}{second}"


def find_cvv(context: Context) -> Iterator[Span]:
    for match in _CVV.finditer(context.text):
        yield match.start(1), match.end(1), True


def find_pix_keys(context: Context) -> Iterator[Span]:
    text = context.text
    for match in UUID.finditer(text):
        if _IDENTIFIER_BEFORE.search(text, max(0, match.start() - 30), match.start()) is None:
            yield match.start(), match.end(), True


def find_voter_ids(context: Context) -> Iterator[Span]:
    """A voter id with valid check digits, or any 12 digits a voter-id cue names in the sentence."""
    text = context.text
    for match in _VOTER.finditer(text):
        start, end = match.span()
        before = max(context.sentence_start(start), start - 40)
        if voter_id_ok(digits(match.group())) or _VOTER_CUE.search(text, before, start):
            yield start, end, True
