"""Keyed hashes: the latch of a (name, value) and the customer's pseudonym in events.

Both are HMAC-SHA256 under sub-keys derived from one secret (FACTS_KEY, or the Secrets
Manager secret FACTS_KEY_SECRET_ARN names; template.yaml creates it). The latch keeps no
value in clear and outlives the proposal; the pseudonym lets an event say "the same customer"
without naming them. Rotating the secret forgets every latch: keep it.
"""

from __future__ import annotations

import hashlib
import hmac

from .errors import KeyUnavailable
from .fact import fold

KEY_MIN_BYTES = 32


class FactKeys:
    def __init__(self, secret: bytes | str):
        secret = secret.encode() if isinstance(secret, str) else secret
        if len(secret) < KEY_MIN_BYTES:
            raise KeyUnavailable(f"the Facts key must be at least {KEY_MIN_BYTES} bytes")
        self._latch = hmac.new(secret, b"facts/latch/v1", hashlib.sha256).digest()
        self._pseudonym = hmac.new(secret, b"facts/pseudonym/v1", hashlib.sha256).digest()

    def tuple_id(self, tenant: str, customer_id: str, name: str, value: str) -> str:
        """One (name, value) for one customer: the proposal's id and its latch."""
        message = "\x1f".join((tenant, customer_id, name, fold(value))).encode()
        return hmac.new(self._latch, message, hashlib.sha256).hexdigest()[:32]

    def pseudonym(self, tenant: str, customer_id: str) -> str:
        message = f"{tenant}\x1f{customer_id}".encode()
        return "c-" + hmac.new(self._pseudonym, message, hashlib.sha256).hexdigest()[:24]
