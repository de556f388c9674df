"""BackfillFunction: replay an agent's archived turns since a date through the live extractor."""

from aws_lambda_powertools import Logger

from knowledge import wiring
from knowledge.backfill import backfill, parse_backfill_request
from knowledge.errors import KnowledgeError
from knowledge.settings import Settings

logger = Logger()
settings = Settings.from_env(require=("SESSIONS_BUCKET", "CANDIDATES_QUEUE_URL"))
extractor = wiring.extractor(settings)
archive = wiring.turn_archive(settings)
# Stop early enough to answer before Lambda's timeout; the answer says where to resume.
SAFETY_MS = 60_000


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        request = parse_backfill_request(event)
        report = backfill(extractor, archive, request.tenant, request.agent, request.since, request.until,
                          dry_run=request.dry_run, start_after=request.start_after,
                          keep_going=lambda: context.get_remaining_time_in_millis() > SAFETY_MS)
    except KnowledgeError as exc:
        logger.warning("backfill refused", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    finally:
        extractor.counters.flush(service="knowledge-backfill")
    logger.info("backfill done", extra=report.as_dict())
    return {"ok": True, "dry_run": request.dry_run, **report.as_dict()}
