"""SnapshotFunction: a scheduled pass that brings every agent's snapshot up to date.

{} (the schedule's event), or {"tenant": "<slug>"} to run one tenant by hand. Answers counts only.
"""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared import deadline
from shared.errors import KnowledgeError

logger = Logger()
service = wiring.Deferred(wiring.snapshot_pass_from_env).build_now_if_init_is_ahead()


@logger.inject_lambda_context
def lambda_handler(event, context):
    # Outside the try: a misconfigured function fails the invocation, loudly, not as an answer.
    snapshots = service.get()
    try:
        with deadline.until(deadline.at_the_latest(context)):
            report = snapshots.handle(event)
    except KnowledgeError as exc:
        logger.warning("snapshot pass stopped", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    logger.info("snapshot pass", extra=report.as_dict())
    return {"ok": True, **report.as_dict()}
