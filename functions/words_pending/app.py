"""WordsPendingFunction: a daily pass queueing again the concepts whose model words waited for the tenant's
model budget (knowledge.operation.model_words.PendingWordsPass).

{} (the schedule's event), or {"tenant": "<slug>"} to run one tenant by hand. Answers counts only.
"""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared.errors import KnowledgeError

logger = Logger()
service = wiring.Deferred(wiring.pending_words_pass_from_env).build_now_if_init_is_ahead()


@logger.inject_lambda_context
def lambda_handler(event, context):
    # Outside the try: a misconfigured function fails the invocation, loudly, not as an answer.
    words = service.get()
    try:
        report = words.run((event or {}).get("tenant"))  # a tenant that is no slug is refused (invalid_name)
    except KnowledgeError as exc:
        logger.warning("words pending pass stopped", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    logger.info("words pending pass", extra=report.as_dict())
    return {"ok": True, **report.as_dict()}
