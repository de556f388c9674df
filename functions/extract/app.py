"""ExtractFunction: TurnCompleteQueue -> gated, redacted sightings on the CandidatesQueue.

Each SQS record is one turn (knowledge.learning.jobs); shared.consumer answers the batch: a turn that
cannot be processed is reported as a batch item failure (backed off, retried, then the DLQ) without
failing the rest, one that can never be valid goes to TURN_DLQ_URL at once.
"""

from aws_lambda_powertools import Logger

from facts import wiring as facts_wiring
from knowledge import wiring
from shared.consumer import QueueConsumer

logger = Logger()
# Facts keeps a small state per session for the agents that distil (told of each archived turn).
turns = wiring.turn_jobs_from_env(sessions=facts_wiring.session_states)
extractor, redelivery = turns.extractor, turns.redelivery  # the parts a loaded handler shows
consumer = QueueConsumer(turns, logger, service="knowledge-extract")


@logger.inject_lambda_context
def lambda_handler(event, context):
    return consumer.process(event, context)
