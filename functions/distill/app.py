"""DistillFunction: a scheduled pass over the sessions due for distillation (Facts).

{} (the schedule's event), or {"tenant"[, "agent"]} to run one tenant or agent by hand.
Answers counts only: never a value.
"""

from aws_lambda_powertools import Logger

from facts import wiring
from shared import deadline
from shared.errors import KnowledgeError

logger = Logger()
service = wiring.Deferred(wiring.distiller_from_env).build_now_if_init_is_ahead()


@logger.inject_lambda_context
def lambda_handler(event, context):
    # Outside the try: a misconfigured function fails the invocation, loudly, not as an answer.
    distiller = service.get()
    try:
        with deadline.until(deadline.at_the_latest(context)):
            report = distiller.handle(event, remaining_seconds=lambda: context.get_remaining_time_in_millis() / 1000)
    except KnowledgeError as exc:
        logger.warning("distill pass stopped", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    finally:
        distiller.counters.flush(service="facts-distill")
    logger.info("distill pass", extra=report.as_dict())
    return {"ok": True, **report.as_dict()}
