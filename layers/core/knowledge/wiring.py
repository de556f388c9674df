"""Building the real parts from settings: the one place that knows which adapter goes where.

Imports are inside the builders so a function loads only what it uses (cold start); this
module itself imports nothing heavy, so a handler can import it and build later.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Callable, Generic, Mapping, Optional, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from .settings import Settings
    from .adapters import Redelivery, TurnArchive
    from .consolidate import Consolidator
    from .extract import Extractor, SessionRecorder
    from shared.model import ModelCache
    from .retrieve import Retriever
    from .studio import Studio


def model_cache(settings: Settings) -> "ModelCache":
    from shared.model import ModelCache

    return ModelCache({"OPENAI_BASE_URL": settings.openai_base_url or "",
                       "OPENAI_API_KEY": settings.openai_api_key or ""})


def extractor(settings: Settings, sessions: Optional["SessionRecorder"] = None) -> "Extractor":
    """ExtractFunction's service; `sessions` is told of turns archived for agents that distil."""
    from shared.aws import client
    from .adapters import ConfigCache, ExtractionLedger, SqsCandidates, TurnArchive
    from .extract import Extractor
    from .known import KnownConcepts
    from .store import ConceptStore
    from shared.telemetry import Counters
    from .usage import daily_cap

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
    from shared.aws import client
    from .adapters import Redelivery

    return Redelivery(client("sqs"), dead_letter_url)


def turn_archive(settings: Settings) -> "TurnArchive":
    from shared.aws import client
    from .adapters import TurnArchive

    return TurnArchive(client("s3"), settings.sessions_bucket)


def consolidator(settings: Settings) -> "Consolidator":
    from shared.aws import client
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
    from shared.aws import client
    from .events import EventBridgeEvents
    from .retrieve import Retriever
    from .store import ConceptStore

    # A cold start fetches every concept: a wider pool than the default (S3 GETs are latency-bound).
    return Retriever(ConceptStore(client("s3"), settings.knowledge_bucket, max_workers=32),
                     EventBridgeEvents(lambda: client("events"), settings.event_bus_name),
                     refresh_seconds=settings.refresh_seconds, fetch_budget_seconds=settings.fetch_budget_seconds)


def studio(settings: Settings) -> "Studio":
    from .adapters import TurnArchive
    from shared.aws import client
    from .store import ConceptStore
    from .studio import Studio

    s3 = client("s3")
    # The archive answers the evidence of a version; without SESSIONS_BUCKET that one route says so.
    archive = TurnArchive(s3, settings.sessions_bucket) if settings.sessions_bucket else None
    return Studio(ConceptStore(s3, settings.knowledge_bucket), archive)


def retriever_from_env() -> "Retriever":
    """RetrieveFunction's service, from its environment (a bad environment raises SettingsError)."""
    from .settings import Settings

    return retriever(Settings.from_env(require=("EVENT_BUS_NAME",)))


T = TypeVar("T")

# Lambda's documented values of AWS_LAMBDA_INITIALIZATION_TYPE for which the init phase runs
# before, and apart from, any request.
AHEAD_OF_REQUESTS = frozenset({"provisioned-concurrency", "snap-start"})


class Deferred(Generic[T]):
    """A part built once per container, on first use, thread-safe.

    An on-demand cold start then imports only the handler's wiring, and the first call pays
    for the rest (settings, boto3, numpy, the clients): the cost moves, it does not go away.
    When initialisation runs ahead of requests (provisioned concurrency, SnapStart), nothing
    is gained by waiting, so `build_now_if_init_is_ahead` builds it during init.
    """

    def __init__(self, build: Callable[[], T]):
        self._build = build
        self._value: Optional[T] = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
        return self._value

    def build_now_if_init_is_ahead(self, environ: Optional[Mapping[str, str]] = None) -> "Deferred[T]":
        environ = os.environ if environ is None else environ
        if environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") in AHEAD_OF_REQUESTS:
            self.get()
        return self
