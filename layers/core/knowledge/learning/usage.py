"""Model cost per tenant: calls and tokens as metrics (the provider's figures, else estimated and counted
ModelUsageEstimated; the tenant the only dimension beside `service`), and the optional daily cap on
extraction calls, one count per tenant and UTC day shared by every container by compare-and-swap,
reserved a block of calls at a time. docs/contract.md, "Metrics and logs" and "Storage layout"."""

from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Optional, Protocol

from knowledge.errors import CapContended
from shared import awscall
from shared.errors import Conflict, NotFound, SettingsError
from shared.model import Usage
from shared.names import check_slug
from shared.telemetry import Counters

CHARS_PER_TOKEN = 4
DAILY_CAP_SETTING = "KNOWLEDGE_TENANT_DAILY_MODEL_CALLS"
DAILY_CAP_MAX = 1_000_000_000
# The most calls a container reserves at once: what a recycled container may leave unused.
BLOCK_MAX = 20
CAS_ATTEMPTS = 8


def estimate_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def record_model_call(counters: Counters, tenant: str, usage: Optional[Usage], prompt_chars: int,
                      answer_chars: int) -> None:
    """Count one answered model call for `tenant`: the provider's tokens, else an estimate."""
    counters.count("ModelCalls", tenant=tenant)
    if usage is None:
        counters.count("ModelUsageEstimated", tenant=tenant)
        usage = Usage(estimate_tokens(prompt_chars), estimate_tokens(answer_chars))
    counters.count("ModelInputTokens", usage.input_tokens, tenant=tenant)
    counters.count("ModelOutputTokens", usage.output_tokens, tenant=tenant)


class ModelQuota(Protocol):
    def take(self, tenant: str) -> bool:
        """True when one more model call may be made for `tenant` today (and counts it)."""
        ...


def daily_cap_from_env(environ: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """KNOWLEDGE_TENANT_DAILY_MODEL_CALLS as a whole number of calls; None (no cap) when unset or empty."""
    environ = os.environ if environ is None else environ
    raw = (environ.get(DAILY_CAP_SETTING) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= DAILY_CAP_MAX:
        raise SettingsError(f"{DAILY_CAP_SETTING} must be a whole number from 1 to {DAILY_CAP_MAX} "
                                "(or empty for no cap)")
    return int(raw)


def block_size(limit: int) -> int:
    """About 1 % of the cap, 1 to BLOCK_MAX: a small cap is counted call by call."""
    return max(1, min(BLOCK_MAX, limit // 100))


class DailyModelCalls:
    """The per-tenant daily cap on extraction calls, shared through S3 by compare-and-swap."""

    def __init__(self, s3: Any, bucket: str, limit: int, *, block: Optional[int] = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 sleep: Callable[[float], None] = time.sleep):
        if limit < 1:
            raise SettingsError("the daily cap must be at least 1")
        self._s3, self.bucket, self.limit = s3, bucket, limit
        self.block = block or block_size(limit)
        self._clock, self._sleep = clock, sleep
        self._held: dict[tuple[str, str], int] = {}  # (tenant, day) -> calls reserved and not yet made
        self._spent: set[tuple[str, str]] = set()  # the count only grows within a day
        self._lock = threading.Lock()

    @staticmethod
    def key(tenant: str, day: str) -> str:
        # `_usage` cannot be an agent slug, so it never meets an agent's keys.
        return f"{check_slug('tenant', tenant)}/_usage/model-calls/{day}.json"

    def take(self, tenant: str) -> bool:
        day = self._clock().astimezone(timezone.utc).strftime("%Y-%m-%d")
        slot = (tenant, day)
        with self._lock:
            for stale in [s for s in self._held if s[1] != day]:
                del self._held[stale]
            self._spent = {s for s in self._spent if s[1] == day}
            if self._held.get(slot, 0) > 0:
                self._held[slot] -= 1
                return True
            if slot in self._spent:
                return False
            granted = self._reserve(tenant, day)
            if granted == 0:
                self._spent.add(slot)
                return False
            self._held[slot] = granted - 1
            return True

    def used(self, tenant: str, day: str) -> int:
        """Calls reserved so far for `tenant` on `day` (YYYY-MM-DD), by every container."""
        return self._read(self.key(tenant, day))[0]

    def _reserve(self, tenant: str, day: str) -> int:
        key = self.key(tenant, day)
        for attempt in range(CAS_ATTEMPTS):
            used, etag = self._read(key)
            granted = max(0, min(self.block, self.limit - used))
            if granted == 0:
                return 0
            body = json.dumps({"calls": used + granted, "limit": self.limit}).encode()
            condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
            if awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket, Key=key, Body=body,
                                ContentType="application/json", **condition):
                return granted
            self._sleep(random.uniform(0, min(0.5, 0.02 * 2 ** attempt)))
        raise CapContended(f"the daily model-call count of tenant {tenant!r} kept changing")

    def _read(self, key: str) -> tuple[int, Optional[str]]:
        try:
            answer = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key, read_body=True)
        except NotFound:
            return 0, None
        try:
            calls = json.loads(answer["Body"])["calls"]
        except (ValueError, KeyError, TypeError):
            calls = None
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
            # Rewritten over by the next reservation; until then the day counts as spent, not free.
            return self.limit, answer.get("ETag")
        return calls, answer.get("ETag")


def daily_cap(s3: Any, bucket: Optional[str], environ: Optional[Mapping[str, str]] = None
              ) -> Optional[DailyModelCalls]:
    """The cap the environment asks for (KNOWLEDGE_TENANT_DAILY_MODEL_CALLS), or None."""
    limit = daily_cap_from_env(environ)
    if limit is None:
        return None
    if not bucket:
        raise SettingsError(f"{DAILY_CAP_SETTING} needs SESSIONS_BUCKET, where the daily counts are kept")
    return DailyModelCalls(s3, bucket, limit)
