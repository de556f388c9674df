"""ImportFunction: import the concept files and FAQs under an agent's imports/ prefix of SESSIONS_BUCKET
into the agent, each through the studio's create and save, with the named operator as the actor; each
policy concept written is queued for its policy review (PolicyReviewQueue), as a studio save queues it."""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared.errors import KnowledgeError

logger = Logger()
importer = wiring.importer_from_env()
PROGRESS_EVERY = 500  # concepts between two progress lines (counts only)


def progress(done: int, total: int) -> None:
    if done and (done % PROGRESS_EVERY == 0 or done == total):
        logger.info("import progress", extra={"done": done, "total": total})


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        request, report = importer.run(event, progress=progress)
    except KnowledgeError as exc:
        logger.warning("import refused", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    finally:
        if importer.reviews is not None:  # PolicyReviewQueued / PolicyReviewNotQueued, one per policy written
            importer.reviews.counters.flush(service="knowledge-import")
    answer = report.as_dict()
    logger.info("import done", extra={"tenant": request.tenant, "agent": request.scope, "dry_run": request.dry_run,
                                      # `created` is a LogRecord field: each count is named for its outcome.
                                      **{f"concepts_{k}": answer[k] for k in ("created", "changed", "unchanged",
                                                                              "skipped", "refused")}})
    return {"ok": True, "prefix": request.prefix, **answer}
