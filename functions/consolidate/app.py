"""ConsolidateFunction: CandidatesQueue (FIFO) -> the agent's concepts, by compare-and-swap.

Each SQS record is one sighting (knowledge.learning.jobs). FIFO order is kept per concept: when a
sighting fails, it and the later sightings of the same concept (message group) in the batch are
reported as failures, so nothing overtakes it; other concepts go on (shared.consumer).
"""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared.consumer import QueueConsumer

logger = Logger()
sightings = wiring.sighting_jobs_from_env()
consolidator, redelivery = sightings.consolidator, sightings.redelivery  # the parts a loaded handler shows
consumer = QueueConsumer(sightings, logger, service="knowledge-consolidate", fifo=True)


@logger.inject_lambda_context
def lambda_handler(event, context):
    return consumer.process(event, context)
