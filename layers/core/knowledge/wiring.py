"""Building the real parts from settings: the one place that knows which adapter goes where. Every handler
builds its service one way, `<service>_from_env()` (the settings it needs named beside it), at import or
through `Deferred`; imports are inside the builders, so a function loads only what it uses.
docs/development.md, "The rooms". Over 500 lines on purpose: it is the one map of which adapter each
function, the CLI and the studio get; split, a handler's parts would be looked for in two places."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple, Optional, Sequence

from shared.coldstart import Deferred  # noqa: F401 - the handlers build their service through it

if TYPE_CHECKING:  # pragma: no cover
    from knowledge.curation.bulk import Bulk
    from knowledge.curation.compare import VersionPairs
    from knowledge.curation.config_check import ConfigCheck
    from knowledge.curation.export import Exporter
    from knowledge.curation.imports import ConceptImport, Importer
    from knowledge.curation.recreate import Recreation
    from knowledge.curation.reviews import ReviewQueue
    from knowledge.curation.sharing import Sharing
    from knowledge.curation.studio import Studio
    from knowledge.curation.studio_import import StudioImport
    from knowledge.curation.vocabulary import VocabularyEditor
    from knowledge.learning.consolidate import Consolidator
    from knowledge.learning.extract import Extractor, SessionRecorder
    from knowledge.learning.jobs import PolicyReviewJobs, SightingJobs, TurnJobs
    from knowledge.learning.policy_review import PolicyReviewer, PolicyReviewQueue
    from knowledge.learning.model_words import WordProposer
    from knowledge.learning.save import Saver
    from knowledge.learning.tools import AgentTools
    from knowledge.operation.backfill import Backfiller
    from knowledge.operation.model_words import Backfill, PendingWordsPass
    from knowledge.operation.purge import CustomerShare, TenantPart, TenantPurge
    from knowledge.operation.repair import Repairer
    from knowledge.operation.snapshots import SnapshotPass
    from knowledge.recall.reads import Reader
    from knowledge.recall.retrieve import Retriever
    from knowledge.store.archive import TurnArchive
    from knowledge.store.queues import Redelivery
    from shared.model import ModelCache
    from shared.settings import Settings
    from shared.telemetry import Counters


def model_cache(settings: Settings) -> "ModelCache":
    from shared.model import ModelCache

    return ModelCache({"OPENAI_BASE_URL": settings.openai_base_url or "",
                       "OPENAI_API_KEY": settings.openai_api_key or ""})


def extractor(settings: Settings, sessions: Optional["SessionRecorder"] = None) -> "Extractor":
    """ExtractFunction's service; `sessions` is told of turns archived for agents that distil."""
    from knowledge.learning.extract import Extractor
    from knowledge.learning.known import KnownConcepts
    from knowledge.learning.traffic_words import Teacher
    from knowledge.learning.usage import daily_cap
    from knowledge.store.archive import TurnArchive
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.config_cache import ConfigCache
    from knowledge.store.ledgers import ExtractionLedger
    from knowledge.store.queues import SqsCandidates
    from knowledge.store.learning_ledger import WordLedger
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
        teacher=Teacher(store, WordLedger(s3, settings.sessions_bucket, settings.knowledge_bucket), counters),
    )


def turn_jobs_from_env(sessions: Optional[Callable[[Settings], "SessionRecorder"]] = None) -> "TurnJobs":
    """ExtractFunction's queue: each turn through the extractor; an invalid one to TURN_DLQ_URL at once.
    Settings: SESSIONS_BUCKET, CANDIDATES_QUEUE_URL; `sessions` builds the recorder of sessions (Facts')."""
    from knowledge.learning.jobs import TurnJobs
    from shared.settings import Settings

    settings = Settings.from_env(require=("SESSIONS_BUCKET", "CANDIDATES_QUEUE_URL"))
    return TurnJobs(extractor(settings, sessions=sessions(settings) if sessions else None),
                    redelivery(settings.turn_dlq_url))


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


def sighting_jobs_from_env() -> "SightingJobs":
    """ConsolidateFunction's queue: each sighting consolidated; an invalid one to CANDIDATES_DLQ_URL at once.
    Settings: SESSIONS_BUCKET (the sighting ledger), EVENT_BUS_NAME; POLICY_REVIEW_QUEUE_URL (a concept
    created is queued there for the model's words; unset: it is not)."""
    from knowledge.learning.jobs import SightingJobs
    from shared.settings import Settings

    from knowledge.store.saves import SaveRecords
    from shared.aws import client
    from shared.events import EventBridgeEvents

    settings = Settings.from_env(require=("SESSIONS_BUCKET", "EVENT_BUS_NAME"))
    built = consolidator(settings)
    return SightingJobs(built, redelivery(settings.candidates_dlq_url),
                        SaveRecords(client("s3"), settings.sessions_bucket),  # type: ignore[arg-type]
                        EventBridgeEvents(lambda: client("events"), settings.event_bus_name),
                        words=policy_review_queue(settings))


def policy_reviewer(settings: Settings) -> "PolicyReviewer":
    """PolicyReviewFunction's service: the agent's index (as retrieval holds it) and the judge; a shared
    policy's reviews fanned out on POLICY_REVIEW_QUEUE_URL (its own queue) where it is set."""
    from knowledge.learning.policy_review import PolicyReviewer, PolicyReviewQueue
    from knowledge.recall.warm import WarmIndexes
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.config_cache import ConfigCache
    from shared.aws import client
    from shared.events import EventBridgeEvents
    from shared.telemetry import Counters

    store, counters = ConceptStore(client("s3"), settings.knowledge_bucket, max_workers=32), Counters()
    queue = (PolicyReviewQueue(client("sqs"), settings.policy_review_queue_url, counters, words=False)
             if settings.policy_review_queue_url else None)
    return PolicyReviewer(store, WarmIndexes(store, lambda config: True), ConfigCache(store), model_cache(settings),
                          settings.utility_model, EventBridgeEvents(lambda: client("events"), settings.event_bus_name),
                          counters, queue)


def word_proposer(settings: Settings) -> "WordProposer":
    """PolicyReviewFunction's `words` job: the model's words for concepts that entered, within the tenant's
    daily model budget (KNOWLEDGE_TENANT_DAILY_MODEL_CALLS, kept in SESSIONS_BUCKET, when set); the concepts
    it defers wait in KNOWLEDGE_BUCKET (knowledge.store.pending_words)."""
    from knowledge.learning.model_words import WordProposer
    from knowledge.learning.usage import daily_cap
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.config_cache import ConfigCache
    from shared.aws import client

    from knowledge.store.pending_words import PendingWords

    store = ConceptStore(client("s3"), settings.knowledge_bucket)
    return WordProposer(store, ConfigCache(store), model_cache(settings), settings.utility_model,
                        quota=daily_cap(client("s3"), settings.sessions_bucket),
                        pending=PendingWords(client("s3"), settings.knowledge_bucket))


def policy_review_jobs_from_env() -> "PolicyReviewJobs":
    """PolicyReviewFunction's queue: a saved policy's review, or a saved concept's words (`job` words).
    Settings: EVENT_BUS_NAME; POLICY_REVIEW_QUEUE_URL (a shared policy's fan-out), SESSIONS_BUCKET (the cap)."""
    from knowledge.learning.jobs import PolicyReviewJobs
    from shared.settings import Settings

    settings = Settings.from_env(require=("EVENT_BUS_NAME",))
    return PolicyReviewJobs(policy_reviewer(settings), word_proposer(settings))


def pending_words_pass(settings: Settings) -> "PendingWordsPass":
    """WordsPendingFunction's service: the concepts whose words waited, queued again on PolicyReviewQueue."""
    from knowledge.learning.policy_review import PolicyReviewQueue
    from knowledge.operation.model_words import PendingWordsPass
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.pending_words import PendingWords
    from shared.aws import client

    s3 = client("s3")
    return PendingWordsPass(ConceptStore(s3, settings.knowledge_bucket), PendingWords(s3, settings.knowledge_bucket),
                            PolicyReviewQueue(client("sqs"), settings.policy_review_queue_url))


def pending_words_pass_from_env() -> "PendingWordsPass":
    """WordsPendingFunction's service. Settings: POLICY_REVIEW_QUEUE_URL."""
    from shared.settings import Settings

    return pending_words_pass(Settings.from_env(require=("POLICY_REVIEW_QUEUE_URL",)))


def words_backfill(settings: Settings) -> Callable[[str, str, bool], "Backfill"]:
    """The CLI's and the studio's words backfill: an agent's concepts with no model words, queued (or, in a
    dry run, planned) as batched words jobs on POLICY_REVIEW_QUEUE_URL."""
    from knowledge.learning.policy_review import PolicyReviewQueue
    from knowledge.operation.model_words import backfill
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    store = ConceptStore(client("s3"), settings.knowledge_bucket)
    queue = PolicyReviewQueue(client("sqs"), settings.policy_review_queue_url or "")
    return lambda tenant, agent, dry_run: backfill(store, queue, tenant, agent, dry_run=dry_run)


def policy_review_queue(settings: Settings) -> Optional["PolicyReviewQueue"]:
    """The studio's sender of saved policies to review; None where no queue is configured."""
    from knowledge.learning.policy_review import PolicyReviewQueue
    from shared.aws import client

    if not settings.policy_review_queue_url:
        return None
    return PolicyReviewQueue(client("sqs"), settings.policy_review_queue_url)



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


def vocabulary_editor(settings: Settings) -> "VocabularyEditor":
    """The studio's editor of an agent's vocabulary.yaml."""
    from knowledge.curation.vocabulary import VocabularyEditor
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    return VocabularyEditor(ConceptStore(client("s3"), settings.knowledge_bucket))


def snapshot_pass(settings: Settings) -> "SnapshotPass":
    """SnapshotFunction's service: the studio's catch-up over every agent, writing each snapshot."""
    from knowledge.curation.studio import Studio
    from knowledge.operation.snapshots import SnapshotPass
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    # As wide a pool as retrieval's cold start: reading what changed is latency-bound.
    store = ConceptStore(client("s3"), settings.knowledge_bucket, max_workers=32)
    return SnapshotPass(Studio(store), store)


def snapshot_pass_from_env() -> "SnapshotPass":
    from shared.settings import Settings

    return snapshot_pass(Settings.from_env())


def agent_tools(settings: Settings) -> "AgentTools":
    """RetrieveFunction's service: retrieval (retrieve, load_knowledge, search_knowledge) and
    save_knowledge, which needs SESSIONS_BUCKET and CANDIDATES_QUEUE_URL (without them a save says so)."""
    from knowledge.learning.tools import AgentTools

    tools = retriever(settings)
    return AgentTools(tools, lambda: saver(settings, tools.counters), lambda: reader(tools))


def reader(tools: "Retriever") -> "Reader":
    """The builders' reads (list_knowledge, knowledge_history) on retrieval's own warm index."""
    from knowledge.recall.reads import Reader

    return Reader(tools, tools.store)


def saver(settings: Settings, counters: "Optional[Counters]" = None) -> "Saver":
    from knowledge.learning.save import Saver
    from knowledge.store.archive import TurnArchive
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.config_cache import ConfigCache
    from knowledge.store.queues import SqsCandidates
    from shared.aws import client
    from shared.events import EventBridgeEvents

    s3 = client("s3")
    archive = TurnArchive(s3, settings.sessions_bucket) if settings.sessions_bucket else None
    candidates = SqsCandidates(client("sqs"), settings.candidates_queue_url) if settings.candidates_queue_url else None
    from knowledge.store.saves import SaveRecords

    store = ConceptStore(s3, settings.knowledge_bucket)
    saves = SaveRecords(s3, settings.sessions_bucket) if settings.sessions_bucket else None
    return Saver(ConfigCache(store), archive, candidates,
                 EventBridgeEvents(lambda: client("events"), settings.event_bus_name), counters=counters,
                 exists=lambda tenant, agent: store.agent_exists(tenant, agent, current_only=True), saves=saves,
                 saves_per_session=settings.saves_per_session)


def retriever_from_env() -> "AgentTools":
    """RetrieveFunction's service, from its environment (a bad environment raises SettingsError)."""
    from shared.settings import Settings

    return agent_tools(Settings.from_env(require=("EVENT_BUS_NAME",)))


# ------------------------------------------------------------------ the operator's functions and the studio




def backfiller(settings: Settings, sessions: Optional["SessionRecorder"] = None) -> "Backfiller":
    """BackfillFunction's service: the live extractor (with its tenant daily cap) over the archive."""
    from knowledge.operation.backfill import Backfiller
    from shared.aws import client

    return Backfiller(extractor(settings), turn_archive(settings), client("s3"), settings.sessions_bucket,
                      sessions=sessions)


def backfiller_from_env(sessions: Optional[Callable[[Settings], "SessionRecorder"]] = None) -> "Backfiller":
    """BackfillFunction's service. Settings: SESSIONS_BUCKET, CANDIDATES_QUEUE_URL; `sessions` builds the
    recorder of the sessions of agents that distil (Facts')."""
    from shared.settings import Settings

    settings = Settings.from_env(require=("SESSIONS_BUCKET", "CANDIDATES_QUEUE_URL"))
    return backfiller(settings, sessions=sessions(settings) if sessions else None)


def exporter(settings: Settings) -> "Exporter":
    """ExportFunction's service: the agent's concepts to a prefix of SESSIONS_BUCKET."""
    from knowledge.curation.export import Exporter
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    s3 = client("s3")
    return Exporter(ConceptStore(s3, settings.knowledge_bucket), s3, settings.sessions_bucket)


def exporter_from_env() -> "Exporter":
    """ExportFunction's service. Settings: SESSIONS_BUCKET (where exports are written)."""
    from shared.settings import Settings

    return exporter(Settings.from_env(require=("SESSIONS_BUCKET",)))


def repairer(settings: Settings) -> "Repairer":
    """RepairFunction's service (and the CLI's `repair-related`): unjudged entries moved to the waiting pairs."""
    from knowledge.operation.repair import Repairer
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    return Repairer(ConceptStore(client("s3"), settings.knowledge_bucket))


def repairer_from_env() -> "Repairer":
    """RepairFunction's service. Settings: KNOWLEDGE_BUCKET only."""
    from shared.settings import Settings

    return repairer(Settings.from_env())


def concept_import(settings: Settings) -> "ConceptImport":
    """Import into an agent through the studio's create and save (the CLI's `knowledge import`);
    each policy concept written is queued for its policy review where POLICY_REVIEW_QUEUE_URL is set."""
    from knowledge.curation.imports import ConceptImport
    from knowledge.curation.studio import Studio
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    store = ConceptStore(client("s3"), settings.knowledge_bucket)
    return ConceptImport(Studio(store), store, reviews=policy_review_queue(settings))


def studio_import(settings: Settings, studio: "Studio",
                  reviews: Optional["PolicyReviewQueue"] = None) -> "StudioImport":
    """The studio API's import: the files an operator sent, through the API's own studio; each
    policy written is queued on `reviews` (the API's own queue, whose counters it flushes)."""
    from knowledge.curation.imports import ConceptImport
    from knowledge.curation.studio_import import StudioImport
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    return StudioImport(ConceptImport(studio, ConceptStore(client("s3"), settings.knowledge_bucket), reviews=reviews))


def recreation(settings: Settings, studio: "Studio") -> "Recreation":
    """The studio API's create: a deleted concept's name is said, not silently started over."""
    from knowledge.curation.recreate import Recreation
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    return Recreation(studio, ConceptStore(client("s3"), settings.knowledge_bucket))


def sharing(settings: Settings) -> "Sharing":
    """The studio's Copy and Move to the tenant's shared knowledge."""
    from knowledge.curation.sharing import Sharing
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    return Sharing(ConceptStore(client("s3"), settings.knowledge_bucket))


class StudioApi(NamedTuple):
    """StudioApiFunction's services, over one studio."""

    studio: "Studio"
    reviews: "ReviewQueue"
    policy_reviews: Optional["PolicyReviewQueue"]  # the API's own queue, whose counters it flushes
    vocabularies: "VocabularyEditor"
    importing: "StudioImport"
    config_checks: "ConfigCheck"
    recreation: "Recreation"
    sharing: "Sharing"
    # The studio's "Teach words": a words backfill of the scope's concepts (tenant, scope, dry_run); None
    # where no queue is configured.
    words_backfill: Optional[Callable[[str, str, bool], "Backfill"]]
    words: tuple["LearnedWords", "WordsRemoval"]  # the words page and its removal, over the studio's list


def studio_api_from_env() -> StudioApi:
    """StudioApiFunction's services. Settings: KNOWLEDGE_BUCKET; SESSIONS_BUCKET (a version's evidence, else
    that route says so), POLICY_REVIEW_QUEUE_URL (a saved policy's review, a concept's words; else none)."""
    from shared.settings import Settings

    settings = Settings.from_env()
    built = studio(settings)
    queue = policy_review_queue(settings)
    return StudioApi(built, reviews(settings, built), queue, vocabulary_editor(settings),
                     studio_import(settings, built, queue), config_check(settings), recreation(settings, built),
                     sharing(settings), words_backfill(settings) if queue is not None else None,
                     words_page(settings, built))


def words_page(settings: Settings, studio: "Studio") -> tuple["LearnedWords", "WordsRemoval"]:
    """The studio's words page (with the list's tenancy check; the list tells it what it reads), and the
    removal that tells it what it wrote."""
    from knowledge.curation.words_page import LearnedWords
    from knowledge.curation.words_removal import WordsRemoval
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    store = ConceptStore(client("s3"), settings.knowledge_bucket)
    page = LearnedWords(store, studio.check_agent)
    studio.readers.append(page.told)
    return page, WordsRemoval(store, page.told)


def config_check(settings: Settings) -> "ConfigCheck":
    """The studio's check that each agent's knowledge.yaml parses (its banner when one does not)."""
    from knowledge.curation.config_check import ConfigCheck
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client

    return ConfigCheck(ConceptStore(client("s3"), settings.knowledge_bucket))


def importer(settings: Settings) -> "Importer":
    """ImportFunction's service: the files under an imports/ prefix of SESSIONS_BUCKET, imported."""
    from knowledge.curation.imports import Importer, S3Files
    from shared.aws import client

    return Importer(concept_import(settings), S3Files(client("s3"), settings.sessions_bucket))


def importer_from_env() -> "Importer":
    """ImportFunction's service. Settings: SESSIONS_BUCKET (the imports/ prefixes); POLICY_REVIEW_QUEUE_URL."""
    from shared.settings import Settings

    return importer(Settings.from_env(require=("SESSIONS_BUCKET",)))


def bulk_actions(studio: "Studio", reviews: "ReviewQueue", sharing: Optional["Sharing"] = None,
                 queue: Optional["PolicyReviewQueue"] = None) -> "Bulk":
    """The studio list's actions on many rows at once (mark reviewed, delete and undo, change type, move to
    shared: over `sharing`, queueing the words of what enters on `queue`; UTILITY_MODEL, when set, is the
    model that teaches them, so the move can say what it costs)."""
    from knowledge.curation.bulk import Bulk
    from shared.settings import Settings

    return Bulk(studio, reviews, sharing=sharing, queue=queue, utility_model=Settings.from_env().utility_model)


def version_pairs(studio: "Studio") -> "VersionPairs":
    """The history's diffs: two versions of a concept in one answer, each read through the studio."""
    from knowledge.curation.compare import VersionPairs

    return VersionPairs(studio)


def reviews(settings: Settings, studio: "Studio") -> "ReviewQueue":
    """Each operator's review state, kept in KNOWLEDGE_BUCKET, over the studio's list."""
    from knowledge.curation.reviews import ReviewQueue, ReviewStore
    from shared.aws import client

    return ReviewQueue(ReviewStore(client("s3"), settings.knowledge_bucket), studio)



def tenant_purge(settings: Settings, parts: Sequence["TenantPart"] = ()) -> "TenantPurge":
    """PurgeFunction's delete_tenant_data, with the other loops' shares of a tenant (`parts`)."""
    from knowledge.operation.purge import TenantPurge
    from shared.aws import client

    return TenantPurge(client("s3"), knowledge_bucket=settings.knowledge_bucket,
                       sessions_bucket=settings.sessions_bucket, parts=parts)


def tenant_purge_from_env(parts: Sequence["TenantPart"] = ()) -> "TenantPurge":
    """PurgeFunction's delete_tenant_data. Settings: SESSIONS_BUCKET."""
    from shared.settings import Settings

    return tenant_purge(Settings.from_env(require=("SESSIONS_BUCKET",)), parts=parts)


def customer_share(settings: Settings) -> "CustomerShare":
    """Knowledge's share of PurgeFunction's forget_customer: the customer's dead letters
    (TURN_DLQ_URL, CANDIDATES_DLQ_URL; a queue not set is skipped), the concepts citing their sessions,
    and the words they taught (pending in SESSIONS_BUCKET, when it is set, and learned)."""
    from knowledge.operation.purge import CustomerShare
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.learning_ledger import WordLedger
    from shared.aws import client

    ledger = WordLedger(client("s3"), settings.sessions_bucket, settings.knowledge_bucket) \
        if settings.sessions_bucket else None
    return CustomerShare(client("sqs"), turn_dlq_url=settings.turn_dlq_url,
                         candidates_dlq_url=settings.candidates_dlq_url,
                         concepts=ConceptStore(client("s3"), settings.knowledge_bucket), ledger=ledger)


def customer_share_from_env() -> "CustomerShare":
    """Knowledge's share of PurgeFunction's forget_customer. Settings: TURN_DLQ_URL, CANDIDATES_DLQ_URL."""
    from shared.settings import Settings

    return customer_share(Settings.from_env())


def counters() -> "Counters":
    """A function's own metrics (flushed as EMF by the handler)."""
    from shared.telemetry import Counters

    return Counters()
