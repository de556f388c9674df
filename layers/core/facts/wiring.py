"""Building Facts' parts from the environment (imports inside, so a handler loads only what it uses).

Settings each builder needs: KNOWLEDGE_BUCKET (cells, latches, agent configs); SESSIONS_BUCKET
(session states, proposals; the archive) for distillation and review; the Facts key, as
FACTS_KEY (text, at least 32 bytes: local stack, tests) or FACTS_KEY_SECRET_ARN (the Secrets
Manager secret template.yaml creates); UTILITY_MODEL / OPENAI_* and EVENT_BUS_NAME as knowledge's.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from shared.coldstart import Deferred  # noqa: F401 - the handlers build their service through it

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.operation.purge import TenantPart
    from shared.settings import Settings

    from .distill import Distiller
    from .keyed_hashes import FactKeys
    from .memory import Memory
    from .purge import CustomerPart, CustomerPurge
    from .review import Review
    from .sessions import SessionStates
    from .studio import FactsStudio


def facts_keys(environ: Optional[Mapping[str, str]] = None) -> "FactKeys":
    """The key from FACTS_KEY, else from the secret FACTS_KEY_SECRET_ARN names (read once)."""
    from shared.errors import SettingsError

    from .keyed_hashes import FactKeys

    environ = os.environ if environ is None else environ
    if environ.get("FACTS_KEY"):
        return FactKeys(environ["FACTS_KEY"])
    arn = environ.get("FACTS_KEY_SECRET_ARN")
    if not arn:
        raise SettingsError("set FACTS_KEY_SECRET_ARN (or FACTS_KEY locally): latches and pseudonyms are keyed")
    from botocore.exceptions import BotoCoreError, ClientError

    from shared.aws import client

    try:
        secret = client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    except (ClientError, BotoCoreError, KeyError) as exc:
        raise SettingsError(f"the Facts key secret could not be read ({type(exc).__name__})") from None
    return FactKeys(secret)


def _events(settings: "Settings"):
    from shared.aws import client
    from shared.events import EventBridgeEvents

    return EventBridgeEvents(lambda: client("events"), settings.event_bus_name) if settings.event_bus_name else None


def distiller_from_env() -> "Distiller":
    from shared.aws import client
    from shared.model import ModelCache
    from shared.settings import Settings

    from .distill import Distiller

    settings = Settings.from_env(require=("SESSIONS_BUCKET",))
    return Distiller(client("s3"), knowledge_bucket=settings.knowledge_bucket,
                     sessions_bucket=settings.sessions_bucket,
                     models=ModelCache({"OPENAI_BASE_URL": settings.openai_base_url or "",
                                        "OPENAI_API_KEY": settings.openai_api_key or ""}),
                     utility_model=settings.utility_model, keys=facts_keys(), events=_events(settings),
                     switch_seconds=settings.distill_switch_seconds)


def memory_from_env() -> "Memory":
    from shared.aws import client
    from shared.settings import Settings

    from .cells import MemoryCells
    from .memory import Memory

    settings = Settings.from_env()
    return Memory(MemoryCells(client("s3"), settings.knowledge_bucket))


def review_from_env() -> "Review":
    """The operator's decisions (for the studio API)."""
    from shared.aws import client
    from shared.settings import Settings

    from .cells import MemoryCells
    from .proposals import ProposalStore
    from .review import Review

    settings = Settings.from_env(require=("SESSIONS_BUCKET",))
    s3 = client("s3")
    return Review(ProposalStore(s3, settings.sessions_bucket), MemoryCells(s3, settings.knowledge_bucket),
                  facts_keys(), _events(settings))


def studio_from_env() -> "FactsStudio":
    """Settings: KNOWLEDGE_BUCKET (cells, latches), SESSIONS_BUCKET (proposals, the archive), the
    Facts key (FACTS_KEY or FACTS_KEY_SECRET_ARN), EVENT_BUS_NAME (decisions are published)."""
    from knowledge.store.archive import TurnArchive
    from shared.aws import client
    from shared.events import EventBridgeEvents
    from shared.settings import Settings

    from .cells import MemoryCells
    from .proposals import ProposalStore
    from .review import Review
    from .studio import FactsStudio

    settings = Settings.from_env(require=("SESSIONS_BUCKET",))
    s3 = client("s3")
    events = (EventBridgeEvents(lambda: client("events"), settings.event_bus_name)
              if settings.event_bus_name else None)
    proposals = ProposalStore(s3, settings.sessions_bucket)
    cells = MemoryCells(s3, settings.knowledge_bucket)
    return FactsStudio(s3, sessions_bucket=settings.sessions_bucket, proposals=proposals, cells=cells,
                       review=Review(proposals, cells, facts_keys(), events),
                       archive=TurnArchive(s3, settings.sessions_bucket))


# ------------------------------------------------------------------ what each handler takes from here


def session_states(settings: "Settings") -> "SessionStates":
    """Where extraction and backfill record the sessions of agents that distil (SESSIONS_BUCKET)."""
    from shared.aws import client

    from .sessions import SessionStates

    return SessionStates(client("s3"), settings.sessions_bucket)


def customer_purge(settings: "Settings", parts: Sequence["CustomerPart"] = ()) -> "CustomerPurge":
    """PurgeFunction's forget_customer, with the other loop's share of a customer (`parts`)."""
    from shared.aws import client

    from .purge import CustomerPurge

    return CustomerPurge(client("s3"), knowledge_bucket=settings.knowledge_bucket,
                         sessions_bucket=settings.sessions_bucket, parts=parts)


def customer_purge_from_env(parts: Sequence["CustomerPart"] = ()) -> "CustomerPurge":
    """PurgeFunction's forget_customer. Settings: KNOWLEDGE_BUCKET, SESSIONS_BUCKET."""
    from shared.settings import Settings

    return customer_purge(Settings.from_env(require=("SESSIONS_BUCKET",)), parts=parts)


def tenant_part() -> "TenantPart":
    """Facts' share of a tenant, for knowledge's delete_tenant_data."""
    from .purge import TENANT_PART

    return TENANT_PART
