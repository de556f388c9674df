"""Building the real parts from settings: the one place that knows which adapter goes where.

Imports are inside the builders so a function loads only what it uses (cold start); this
module itself imports nothing heavy, so a handler can import it and build later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from shared.coldstart import Deferred  # noqa: F401 - the handlers build their service through it

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.curation.studio import Studio
    from knowledge.learning.consolidate import Consolidator
    from knowledge.learning.extract import Extractor, SessionRecorder
    from knowledge.recall.retrieve import Retriever
    from knowledge.store.archive import TurnArchive
    from knowledge.store.queues import Redelivery
    from shared.model import ModelCache
    from shared.settings import Settings


def model_cache(settings: Settings) -> "ModelCache":
    from shared.model import ModelCache

    return ModelCache({"OPENAI_BASE_URL": settings.openai_base_url or "",
                       "OPENAI_API_KEY": settings.openai_api_key or ""})


def extractor(settings: Settings, sessions: Optional["SessionRecorder"] = None) -> "Extractor":
    """ExtractFunction's service; `sessions` is told of turns archived for agents that distil."""
    from knowledge.learning.extract import Extractor
    from knowledge.learning.known import KnownConcepts
    from knowledge.learning.usage import daily_cap
    from knowledge.store.archive import TurnArchive
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.config_cache import ConfigCache
    from knowledge.store.ledgers import ExtractionLedger
    from knowledge.store.queues import SqsCandidates
    from shared.aws import client
    from shared.telemetry import Counters

    s3 = client("s3")
    # A cold start fetches every concept for the known list: a pool as wide as retrieval's.
    store = ConceptStore(s3, settings.knowledge_bucket, max_workers=32)
    counters = Counters()
    return Extractor(
        configs=ConfigCache(store),
        archive=TurnArchive(s3, settings.sessions_bucket),
        candidates=SqsCandidates(client("sqs"), settings.candidates_queue_url),
        models=model_cache(settings),
        utility_model=settings.utility_model,
        counters=counters,
        known=KnownConcepts(store, refresh_seconds=settings.refresh_seconds,
                            fetch_budget_seconds=settings.fetch_budget_seconds, counters=counters),
        extracted=ExtractionLedger(s3, settings.sessions_bucket),
        sessions=sessions,
        quota=daily_cap(s3, settings.sessions_bucket),  # KNOWLEDGE_TENANT_DAILY_MODEL_CALLS; None: no cap
    )


def redelivery(dead_letter_url: Optional[str]) -> "Redelivery":
    """How a queue consumer backs off failed records and dead-letters invalid ones."""
    from knowledge.store.queues import Redelivery
    from shared.aws import client

    return Redelivery(client("sqs"), dead_letter_url)


def turn_archive(settings: Settings) -> "TurnArchive":
    from knowledge.store.archive import TurnArchive
    from shared.aws import client

    return TurnArchive(client("s3"), settings.sessions_bucket)


def consolidator(settings: Settings) -> "Consolidator":
    from knowledge.learning.consolidate import Consolidator
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.config_cache import ConfigCache
    from knowledge.store.ledgers import SightingLedger
    from shared.aws import client
    from shared.events import EventBridgeEvents

    s3 = client("s3")
    store = ConceptStore(s3, settings.knowledge_bucket)
    return Consolidator(
        store=store,
        ledger=SightingLedger(s3, settings.sessions_bucket),
        events=EventBridgeEvents(lambda: client("events"), settings.event_bus_name),
        configs=ConfigCache(store),
        models=model_cache(settings),
        utility_model=settings.utility_model,
    )


def retriever(settings: Settings) -> "Retriever":
    from knowledge.recall.retrieve import Retriever
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client
    from shared.events import EventBridgeEvents

    # A cold start fetches every concept: a wider pool than the default (S3 GETs are latency-bound).
    return Retriever(ConceptStore(client("s3"), settings.knowledge_bucket, max_workers=32),
                     EventBridgeEvents(lambda: client("events"), settings.event_bus_name),
                     refresh_seconds=settings.refresh_seconds, fetch_budget_seconds=settings.fetch_budget_seconds)


def studio(settings: Settings) -> "Studio":
    from knowledge.curation.studio import Studio
    from knowledge.store.archive import TurnArchive
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    s3 = client("s3")
    # The archive answers the evidence of a version; without SESSIONS_BUCKET that one route says so.
    archive = TurnArchive(s3, settings.sessions_bucket) if settings.sessions_bucket else None
    return Studio(ConceptStore(s3, settings.knowledge_bucket), archive)


def retriever_from_env() -> "Retriever":
    """RetrieveFunction's service, from its environment (a bad environment raises SettingsError)."""
    from shared.settings import Settings

    return retriever(Settings.from_env(require=("EVENT_BUS_NAME",)))
