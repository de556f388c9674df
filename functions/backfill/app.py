"""BackfillFunction: replay an agent's turns since a date through the live extractor, from this
stack's archive or from the engine's session exports (`from_export`)."""

from aws_lambda_powertools import Logger

from facts import wiring as facts_wiring
from knowledge import wiring
from shared.errors import KnowledgeError

logger = Logger()
# A backfill of months spends the same per-tenant daily cap as live turns (when one is set); Facts is
# told of each replayed turn of an agent that distils, as ExtractFunction is of live ones.
backfiller = wiring.backfiller_from_env(sessions=facts_wiring.session_states)
extractor, archive = backfiller.extractor, backfiller.archive
# Stop early enough to answer before Lambda's timeout; the answer says where to resume.
SAFETY_MS = 60_000


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        request, report = backfiller.run(event, keep_going=lambda: context.get_remaining_time_in_millis() > SAFETY_MS)
    except KnowledgeError as exc:
        logger.warning("backfill refused", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    finally:
        extractor.counters.flush(service="knowledge-backfill")
    logger.info("backfill done", extra=report.as_dict())
    return {"ok": True, "dry_run": request.dry_run, "from_export": request.from_export, **report.as_dict()}
