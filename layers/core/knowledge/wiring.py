"""Building the real parts from settings: the one place that knows which adapter goes where.

Imports are inside the builders so a function loads only what it uses (cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from .adapters import TurnArchive
    from .consolidate import Consolidator
    from .extract import Extractor
    from .model import ModelCache
    from .retrieve import Retriever


def model_cache(settings: Settings) -> "ModelCache":
    from .model import ModelCache

    return ModelCache({"OPENAI_BASE_URL": settings.openai_base_url or "",
                       "OPENAI_API_KEY": settings.openai_api_key or ""})


def extractor(settings: Settings) -> "Extractor":
    from .aws import client
    from .adapters import ConfigCache, SqsCandidates, TurnArchive
    from .extract import Extractor
    from .store import ConceptStore

    s3 = client("s3")
    store = ConceptStore(s3, settings.knowledge_bucket)
    return Extractor(
        configs=ConfigCache(store),
        archive=TurnArchive(s3, settings.sessions_bucket),
        candidates=SqsCandidates(client("sqs"), settings.candidates_queue_url),
        models=model_cache(settings),
        utility_model=settings.utility_model,
    )


def turn_archive(settings: Settings) -> "TurnArchive":
    from .aws import client
    from .adapters import TurnArchive

    return TurnArchive(client("s3"), settings.sessions_bucket)


def consolidator(settings: Settings) -> "Consolidator":
    from .aws import client
    from .adapters import ConfigCache, SightingLedger
    from .consolidate import Consolidator
    from .events import EventBridgeEvents
    from .store import ConceptStore

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
    from .aws import client
    from .events import EventBridgeEvents
    from .retrieve import Retriever
    from .store import ConceptStore

    # A cold start fetches every concept: a wider pool than the default (S3 GETs are latency-bound).
    return Retriever(ConceptStore(client("s3"), settings.knowledge_bucket, max_workers=32),
                     EventBridgeEvents(lambda: client("events"), settings.event_bus_name),
                     refresh_seconds=settings.refresh_seconds)
