"""ExtractFunction: TurnCompleteQueue -> gated, redacted sightings on the CandidatesQueue.

Each SQS record is one turn; a turn that cannot be processed is reported as a batch item
failure (retried, then the DLQ) without failing the rest of the batch. The body is parsed
here rather than by a Powertools parser model so that no validation error can quote
message content into a log.
"""

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from facts import wiring as facts_wiring
from knowledge import wiring
from knowledge.errors import DailyCapReached, InvalidTurn
from shared import deadline
from shared.errors import KnowledgeError
from shared.settings import Settings

logger = Logger()
settings = Settings.from_env(require=("SESSIONS_BUCKET", "CANDIDATES_QUEUE_URL"))
# Facts keeps a small state per session for the agents that distil (told of each archived turn).
extractor = wiring.extractor(settings, sessions=facts_wiring.session_states(settings))
redelivery = wiring.redelivery(settings.turn_dlq_url)
# A batch whose every turn failed is answered like any other (all items listed) rather than
# raised: the outcome for the queue is the same, and the log stays free of tracebacks.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> None:
    try:
        turn = wiring.parse_turn(record.body)
    except InvalidTurn as exc:
        extractor.counters.count("TurnRejected", reason="invalid_message")
        # It can never succeed: straight to the dead-letter queue instead of five receives.
        moved = redelivery.dead_letter(record.raw_event, exc.code)
        logger.warning("turn message rejected", extra={"message_id": record.message_id, "error_code": exc.code,
                                                      "why": str(exc), "dead_lettered": moved})
        if moved:
            return
        raise
    logger.append_keys(tenant=turn.tenant, agent=turn.agent, session_id=turn.session_id, turn_id=turn.turn_id)
    try:
        # The receive count bounds how often an unusable answer is asked again (shared.model.ANSWER_ATTEMPTS).
        outcome = extractor.process(turn, delivery=delivery(record))
        logger.info("turn processed", extra=outcome.log_fields())
    except KnowledgeError as exc:
        extractor.counters.count("TurnFailed", reason=exc.code)
        if isinstance(exc, DailyCapReached):
            redelivery.next_day(record.raw_event)  # the tenant's cap resets at 00:00 UTC
        # The message id finds this reason again once the record is in the dead-letter queue
        # (`knowledge redrive --dry-run` lists the ids).
        logger.warning("turn failed; the queue will retry it", extra={"message_id": record.message_id,
                                                                     "error_code": exc.code, "why": str(exc)})
        raise
    finally:
        logger.remove_keys(["tenant", "agent", "session_id", "turn_id"])


def delivery(record: SQSRecord) -> int:
    """The record's receive count (SQS's ApproximateReceiveCount); 1 when it says nothing usable."""
    try:
        count = int(record.attributes.approximate_receive_count)
    except (KeyError, TypeError, ValueError):
        return 1
    return max(count, 1)


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        # Every record shares the invocation's deadline: one that cannot finish in time is
        # reported failed before the timeout, never by it.
        with deadline.until(deadline.at_the_latest(context)):
            response = process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                                context=context)
        redelivery.back_off_failures(event, response)
        return response
    finally:
        extractor.counters.flush(service="knowledge-extract")
