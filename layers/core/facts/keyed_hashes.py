"""Keyed hashes: the latch of a (name, value) and the customer's pseudonym in events, HMAC-SHA256 under
sub-keys derived from one secret (FACTS_KEY, or FACTS_KEY_SECRET_ARN's secret); and what makes two
values the same tuple (`fold_value`, with `tuple_ids` answering the `legacy` fold's id too).
Rotating the secret forgets every latch. docs/facts.md (the fold, the latch, the secret)."""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata

from shared.errors import SettingsError

from .fact import fold as legacy_fold

KEY_MIN_BYTES = 32

# Small Portuguese number words, written as digits (whole words, after accents are removed).
_NUMBER_WORDS = {
    "zero": "0", "um": "1", "uma": "1", "dois": "2", "duas": "2", "tres": "3", "quatro": "4", "cinco": "5",
    "seis": "6", "sete": "7", "oito": "8", "nove": "9", "dez": "10", "onze": "11", "doze": "12", "treze": "13",
    "catorze": "14", "quatorze": "14", "quinze": "15", "dezesseis": "16", "dezasseis": "16", "dezessete": "17",
    "dezassete": "17", "dezoito": "18", "dezenove": "19", "dezanove": "19", "vinte": "20",
}
_WORD = re.compile(r"[^\W\d_]+")
# Numbers as Brazil writes them: '.' groups thousands (2.500, 1.234.567), ',' is the decimal mark
# (1,5 is 1.5; 2.500,00 is 2500). "1,500" stays 1.5, never 1500: a different value is a different tuple.
_THOUSANDS = re.compile(r"(?<=\d)\.(?=\d{3}(?!\d))")
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")
_DECIMALS = re.compile(r"(?<=\d)\.(?=\d)(\d*?)0*(?!\d)")  # trailing zeros of a decimal part go
_SYMBOL_SPACE = re.compile(r"(?<=[$€£¥%])\s+(?=\d)|(?<=\d)\s+(?=%)")
_TRAILING = ".,;:!?…"


def fold_value(value: str) -> str:
    """A value as the ledger compares it (see the module's docstring)."""
    text = unicodedata.normalize("NFKD", value)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = " ".join(text.split()).rstrip(_TRAILING + " ")
    text = _WORD.sub(lambda word: _NUMBER_WORDS.get(word.group(), word.group()), text)
    text = _THOUSANDS.sub("", text)
    text = _DECIMAL_COMMA.sub(".", text)
    text = _DECIMALS.sub(lambda digits: "." + digits.group(1) if digits.group(1) else "", text)
    return _SYMBOL_SPACE.sub("", text)


def same_value(a: str, b: str) -> bool:
    """The same value for the ledger, the latch and an approval (`fold_value`)."""
    return fold_value(a) == fold_value(b)


class FactKeys:
    def __init__(self, secret: bytes | str):
        secret = secret.encode() if isinstance(secret, str) else secret
        if len(secret) < KEY_MIN_BYTES:
            raise SettingsError(f"the Facts key must be at least {KEY_MIN_BYTES} bytes")
        self._latch = hmac.new(secret, b"facts/latch/v1", hashlib.sha256).digest()
        self._pseudonym = hmac.new(secret, b"facts/pseudonym/v1", hashlib.sha256).digest()

    def tuple_id(self, tenant: str, customer_id: str, name: str, value: str) -> str:
        """One (name, value) for one customer: the proposal's id and its latch."""
        return self._hash(tenant, customer_id, name, fold_value(value))

    def tuple_ids(self, tenant: str, customer_id: str, name: str, value: str) -> tuple[str, ...]:
        """Every id this tuple may be stored under: `tuple_id` first, then the id the legacy fold
        gave it when that differs (a latch or a proposal written before `fold_value`)."""
        current = self.tuple_id(tenant, customer_id, name, value)
        legacy = self._hash(tenant, customer_id, name, legacy_fold(value))
        return (current,) if legacy == current else (current, legacy)

    def pseudonym(self, tenant: str, customer_id: str) -> str:
        message = f"{tenant}\x1f{customer_id}".encode()
        return "c-" + hmac.new(self._pseudonym, message, hashlib.sha256).hexdigest()[:24]

    def _hash(self, tenant: str, customer_id: str, name: str, folded: str) -> str:
        message = f"{tenant}\x1f{customer_id}\x1f{name}\x1f{folded}".encode()
        return hmac.new(self._latch, message, hashlib.sha256).hexdigest()[:32]
