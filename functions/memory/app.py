"""MemoryFunction: the engine's direct invoke of a customer's memory cell (Facts).

{"action": "read", "tenant", "customer_id"} -> {customer_id, facts, block, priority}
{"action": "remember", "tenant", "customer_id", "name", "value"} -> {customer_id, fact} (origin engine)
A refusal answers {"error": {"code", "message"}}; the message never quotes a value.
"""

from aws_lambda_powertools import Logger

from facts import wiring
from shared import deadline
from shared.errors import KnowledgeError, refusal

logger = Logger()
service = wiring.Deferred(wiring.memory_from_env).build_now_if_init_is_ahead()


@logger.inject_lambda_context
def lambda_handler(event, context):
    memory = service.get()
    try:
        with deadline.until(deadline.at_the_latest(context, reserve=1.0)):
            return memory.handle(event)
    except KnowledgeError as exc:
        logger.info("memory refused", extra={"error_code": exc.code})
        return refusal(exc)
    finally:
        memory.counters.flush(service="facts-memory")
