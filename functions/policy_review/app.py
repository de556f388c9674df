"""PolicyReviewFunction: PolicyReviewQueue -> the observed concepts a saved policy contradicts, retired;
and, for a `words` job, the words customers use for a saved concept, proposed by the model
(knowledge.learning.model_words).

Each message names a policy concept an operator saved (never its text). The agent's observed
concepts its text ranks closest to (at most 5) are judged against it, one model call each
(knowledge.learning.policy_review). A model that gives no answer fails the message, and the
queue brings it back; a message that is not one the studio sends goes to the dead-letter queue
by the queue's redrive (knowledge.learning.jobs, shared.consumer).
"""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared.consumer import QueueConsumer

logger = Logger()
consumer = QueueConsumer(wiring.policy_review_jobs_from_env(), logger, service="knowledge-policy-review")


@logger.inject_lambda_context
def lambda_handler(event, context):
    return consumer.process(event, context)
