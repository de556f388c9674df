"""RetrieveFunction: invoked directly by the engine on every turn (and for load_knowledge).

{tenant, agent, message, session_id} -> {block, concepts, priority, tool}
{action: "load_knowledge", tenant, agent, name, session_id} -> the concept, and an event.
"""

from aws_lambda_powertools import Logger

from knowledge import wiring
from knowledge.errors import KnowledgeError
from knowledge.retrieve import LoadRequest, parse_request
from knowledge.settings import Settings

logger = Logger()
settings = Settings.from_env(require=("EVENT_BUS_NAME",))
retriever = wiring.retriever(settings)


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        request = parse_request(event)
        if isinstance(request, LoadRequest):
            return retriever.load(request)
        return retriever.retrieve(request)
    except KnowledgeError as exc:
        logger.info("retrieve refused", extra={"error_code": exc.code})
        return {"error": {"code": exc.code, "message": str(exc)}}
    finally:
        retriever.counters.flush(service="knowledge-retrieve")
