"""Every key Facts writes, in one place: a session's state, its idle marker, the customer's sessions and
the proposals in SESSIONS_BUCKET (expiring with it); the memory cell and its latches in KNOWLEDGE_BUCKET.
Stamps are the archive's (YYYYMMDDTHHMMSS.ffffffZ), so a listing of idle/ is in time order.
docs/contract.md, "Storage layout"."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Optional

from knowledge.format.evidence import STAMP
from knowledge.store.archive import TurnArchive
from shared.errors import InvalidName
from shared.names import check_slug, is_session_id

_ID = re.compile(r"[0-9a-f]{32}")
STAMP_LENGTH = len("20260101T000000.000000Z")


def _session(session_id: str) -> str:
    if not is_session_id(session_id):
        raise InvalidName("session_id", "letters, digits, '.', '_', ':', '-'; at most 128")
    return session_id


def _customer(customer_id: str) -> str:
    if not is_session_id(customer_id):
        raise InvalidName("customer_id", "letters, digits, '.', '_', ':', '-'; at most 128")
    return customer_id


def facts_prefix(tenant: str, agent: str) -> str:
    return f"{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/facts/"


def session_key(tenant: str, agent: str, session_id: str) -> str:
    return f"{facts_prefix(tenant, agent)}sessions/{_session(session_id)}.json"


def idle_prefix(tenant: str, agent: str) -> str:
    return f"{facts_prefix(tenant, agent)}idle/"


def stamp(moment: datetime) -> str:
    return TurnArchive.stamp(moment)


def idle_key(tenant: str, agent: str, last_at: datetime, session_id: str) -> str:
    return f"{idle_prefix(tenant, agent)}{stamp(last_at)}/{_session(session_id)}"


def read_idle_key(prefix: str, key: str) -> Optional[tuple[str, str]]:
    """(stamp, session_id) of an idle marker key, or None for a key that is not one."""
    rest = key[len(prefix):]
    moment, _, session_id = rest.partition("/")
    if len(moment) != STAMP_LENGTH or not is_session_id(session_id):
        return None
    return moment, session_id


def customer_session_key(tenant: str, agent: str, customer_id: str, session_id: str) -> str:
    return f"{customer_sessions_prefix(tenant, agent, customer_id)}{_session(session_id)}"


def customer_sessions_prefix(tenant: str, agent: str, customer_id: str) -> str:
    return f"{facts_prefix(tenant, agent)}customers/{_customer(customer_id)}/"


def proposals_prefix(tenant: str, agent: str, customer_id: Optional[str] = None) -> str:
    base = f"{facts_prefix(tenant, agent)}proposals/"
    return base if customer_id is None else f"{base}{_customer(customer_id)}/"


def proposal_key(tenant: str, agent: str, customer_id: str, proposal_id: str) -> str:
    if not isinstance(proposal_id, str) or not _ID.fullmatch(proposal_id):
        raise InvalidName("proposal_id", "must be 32 lowercase hex digits")
    return f"{proposals_prefix(tenant, agent, customer_id)}{proposal_id}.json"


def tenant_memory_prefix(tenant: str) -> str:
    return f"memory/{check_slug('tenant', tenant)}/"


def memory_prefix(tenant: str, customer_id: str) -> str:
    return f"memory/{check_slug('tenant', tenant)}/{_customer(customer_id)}/"


def cell_key(tenant: str, customer_id: str) -> str:
    return f"{memory_prefix(tenant, customer_id)}cell.json"


def latch_prefix(tenant: str, customer_id: str) -> str:
    return f"{memory_prefix(tenant, customer_id)}latch/"


def latch_key(tenant: str, customer_id: str, tuple_id: str) -> str:
    if not _ID.fullmatch(tuple_id):
        raise InvalidName("tuple_id", "must be 32 lowercase hex digits")
    return f"{latch_prefix(tenant, customer_id)}{tuple_id}"


def parse_stamp(text: str) -> datetime:
    return datetime.strptime(text, STAMP).replace(tzinfo=timezone.utc)
