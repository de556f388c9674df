"""RetrieveFunction: invoked directly by the engine on every turn — the block, and the actions
load_knowledge, search_knowledge and save_knowledge. It imports only the Logger and the wiring: the
service is built by the first call on an on-demand cold start, or during init under provisioned
concurrency or SnapStart. docs/retrieval.md, "The request and the answer"
(events/retrieve.json, load-knowledge.json, save-knowledge.json)."""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared.errors import KnowledgeError, refusal

logger = Logger()
# The tools whose answer names one concept, and what their log line says.
LOGGED = {"load_knowledge": "knowledge loaded", "save_knowledge": "knowledge saved"}
service = wiring.Deferred(wiring.retriever_from_env).build_now_if_init_is_ahead()


@logger.inject_lambda_context
def lambda_handler(event, context):
    # Outside the try: a misconfigured function fails the invocation, loudly, not as an answer.
    retriever = service.get()
    try:
        answer = retriever.handle(event, remaining_seconds=context.get_remaining_time_in_millis() / 1000)
        said = LOGGED.get(event.get("action"))
        if said:  # validated by handle(): identifiers only, for the dashboard
            logger.info(said, extra={"tenant": event.get("tenant", "default"), "agent": event["agent"],
                                     "session_id": event["session_id"], "concept": answer["name"]})
        return answer
    except KnowledgeError as exc:
        logger.info("retrieve refused", extra={"error_code": exc.code})
        return refusal(exc)
    finally:
        retriever.counters.flush(service="knowledge-retrieve")
