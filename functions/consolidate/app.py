"""ConsolidateFunction: CandidatesQueue (FIFO) -> the agent's concepts, by compare-and-swap.

FIFO order is kept per concept: when a sighting fails, it and the later sightings of the
same concept (message group) in the batch are reported as failures, so nothing overtakes
it; other concepts go on.
"""

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from knowledge import wiring
from knowledge.errors import InvalidSighting
from shared import deadline
from shared.errors import KnowledgeError
from shared.settings import Settings

logger = Logger()
settings = Settings.from_env(require=("SESSIONS_BUCKET", "EVENT_BUS_NAME"))
consolidator = wiring.consolidator(settings)
redelivery = wiring.redelivery(settings.candidates_dlq_url)
processor = SqsFifoPartialProcessor(skip_group_on_error=True)
# As in ExtractFunction: a wholly failed batch is answered, not raised.
processor.raise_on_entire_batch_failure = False


def record_handler(record: SQSRecord) -> None:
    try:
        sighting = wiring.parse_sighting(record.body)
    except InvalidSighting as exc:
        consolidator.counters.count("SightingRejected", reason="invalid_message")
        # It can never succeed: straight to the dead-letter queue instead of five receives.
        moved = redelivery.dead_letter(record.raw_event, exc.code)
        logger.warning("sighting message rejected", extra={"message_id": record.message_id,
                                                          "error_code": exc.code, "why": str(exc),
                                                          "dead_lettered": moved})
        if moved:
            return
        raise
    logger.append_keys(tenant=sighting.tenant, agent=sighting.agent, session_id=sighting.session_id,
                       turn_id=sighting.turn_id)
    try:
        # The receive count bounds how often an answer that is no verdict is asked again (ANSWER_ATTEMPTS).
        outcome = consolidator.apply(sighting, delivery=int(record.attributes.approximate_receive_count or 1))
        logger.info("sighting consolidated", extra={"outcome": outcome.kind, "attempts": outcome.attempts,
                                                    "verdict": outcome.verdict})
    except KnowledgeError as exc:
        consolidator.counters.count("ConsolidationFailed", reason=exc.code)
        # The message id finds this reason again once the record is in the dead-letter queue.
        logger.warning("sighting failed; the queue will retry it", extra={"message_id": record.message_id,
                                                                         "error_code": exc.code})
        raise
    finally:
        logger.remove_keys(["tenant", "agent", "session_id", "turn_id"])


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
        consolidator.counters.flush(service="knowledge-consolidate")
