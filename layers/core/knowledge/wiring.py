"""Building the real parts from settings: the one place that knows which adapter goes where."""

from __future__ import annotations

from .aws import client
from .consolidate import Consolidator, SightingLedger
from .events import EventBridgeEvents
from .extract import ConfigCache, Extractor, SqsCandidates, TurnArchive
from .retrieve import Retriever
from .model import ModelCache
from .settings import Settings
from .store import ConceptStore


def model_cache(settings: Settings) -> ModelCache:
    return ModelCache({"OPENAI_BASE_URL": settings.openai_base_url or "",
                       "OPENAI_API_KEY": settings.openai_api_key or ""})


def extractor(settings: Settings) -> Extractor:
    s3 = client("s3")
    store = ConceptStore(s3, settings.knowledge_bucket)
    return Extractor(
        configs=ConfigCache(store),
        archive=TurnArchive(s3, settings.sessions_bucket),
        candidates=SqsCandidates(client("sqs"), settings.candidates_queue_url),
        models=model_cache(settings),
        utility_model=settings.utility_model,
    )


def turn_archive(settings: Settings) -> TurnArchive:
    return TurnArchive(client("s3"), settings.sessions_bucket)


def consolidator(settings: Settings) -> Consolidator:
    s3 = client("s3")
    store = ConceptStore(s3, settings.knowledge_bucket)
    return Consolidator(
        store=store,
        ledger=SightingLedger(s3, settings.sessions_bucket),
        events=EventBridgeEvents(client("events"), settings.event_bus_name),
        configs=ConfigCache(store),
        models=model_cache(settings),
        utility_model=settings.utility_model,
    )


def retriever(settings: Settings) -> Retriever:
    return Retriever(ConceptStore(client("s3"), settings.knowledge_bucket),
                     EventBridgeEvents(client("events"), settings.event_bus_name),
                     refresh_seconds=settings.refresh_seconds)
