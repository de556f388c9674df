"""BackfillFunction: replay an agent's turns since a date through the live extractor, from this
stack's archive or from the engine's session exports (`from_export`)."""

from aws_lambda_powertools import Logger

from facts.sessions import SessionStates
from knowledge import wiring
from knowledge.learning.usage import daily_cap
from knowledge.operation.backfill import backfill, parse_backfill_request
from knowledge.store.archive import expiry_days
from knowledge.store.session_export import SessionExport
from shared.aws import client
from shared.errors import KnowledgeError
from shared.settings import Settings

logger = Logger()
settings = Settings.from_env(require=("SESSIONS_BUCKET", "CANDIDATES_QUEUE_URL"))
extractor = wiring.extractor(settings)
# A backfill of months spends the same per-tenant daily cap as live turns (when one is set).
extractor.quota = daily_cap(client("s3"), settings.sessions_bucket)
archive = wiring.turn_archive(settings)
s3 = client("s3")
# Facts is told of each replayed turn of an agent that distils, as ExtractFunction is of live ones.
sessions = SessionStates(s3, settings.sessions_bucket)
# Stop early enough to answer before Lambda's timeout; the answer says where to resume.
SAFETY_MS = 60_000


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        request = parse_backfill_request(event)
        export = SessionExport(s3, request.export) if request.export else None
        # How long SESSIONS_BUCKET keeps sighting markers: an export replay must not reach further back.
        retention = expiry_days(s3, settings.sessions_bucket) if export else None
        report = backfill(extractor, archive, request.tenant, request.agent, request.since, request.until,
                          dry_run=request.dry_run, start_after=request.start_after, export=export,
                          retention_days=retention, sessions=sessions,
                          keep_going=lambda: context.get_remaining_time_in_millis() > SAFETY_MS)
    except KnowledgeError as exc:
        logger.warning("backfill refused", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    finally:
        extractor.counters.flush(service="knowledge-backfill")
    logger.info("backfill done", extra=report.as_dict())
    return {"ok": True, "dry_run": request.dry_run, "from_export": request.from_export, **report.as_dict()}
