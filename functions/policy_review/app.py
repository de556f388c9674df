"""PolicyReviewFunction: PolicyReviewQueue -> the observed concepts a saved policy contradicts, retired;
and, for a `words` job, the words customers use for a saved concept, proposed by the model
(knowledge.learning.proposal).

Each message names a policy concept an operator saved (never its text). The agent's observed
concepts its text ranks closest to (at most 5) are judged against it, one model call each
(knowledge.learning.policy_review). A model that gives no answer fails the message, and the
queue brings it back; a message that is not one the studio sends goes to the dead-letter queue.
"""

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from knowledge import wiring
from knowledge.errors import InvalidPolicyReview
from shared import deadline
from shared.errors import KnowledgeError
from shared.settings import Settings

logger = Logger()
settings = Settings.from_env(require=("EVENT_BUS_NAME",))
reviewer = wiring.policy_reviewer(settings)
proposer = wiring.word_proposer(settings)
processor = BatchProcessor(event_type=EventType.SQS)
processor.raise_on_entire_batch_failure = False


def record_handler(record: SQSRecord) -> None:
    try:
        saved = wiring.parse_policy_saved(record.body)
    except InvalidPolicyReview:
        # Never one the studio sends: counted, and let the queue's redrive move it aside.
        reviewer.counters.count("PolicyReviewRejected", reason="invalid_message")
        logger.warning("policy review message rejected", extra={"message_id": record.message_id})
        raise
    if saved.job == "words":
        run(saved, record, "word proposal", proposer.counters, "WordProposalFailed", propose_words)
    else:
        run(saved, record, "policy review", reviewer.counters, "PolicyReviewFailed", review_policy)


def review_policy(saved, record: SQSRecord) -> dict:
    review = reviewer.review(saved, delivery=int(record.attributes.approximate_receive_count or 1))
    return {"outcomes": dict(review.outcomes), "skipped": review.skipped}


def propose_words(saved, record: SQSRecord) -> dict:
    delivery = int(record.attributes.approximate_receive_count or 1)
    return {"outcome": proposer.propose(saved.tenant, saved.agent, saved.name, delivery=delivery)}


def run(saved, record: SQSRecord, what: str, counters, failed: str, job) -> None:
    """One job, logged with its names and what it did (counts and outcomes only, never a concept's
    words); a KnowledgeError is counted and fails the message, so the queue asks again."""
    logger.append_keys(tenant=saved.tenant, agent=saved.agent, name=saved.name)
    try:
        logger.info(f"{what} done", extra=job(saved, record))
    except KnowledgeError as exc:
        counters.count(failed, reason=exc.code)
        logger.warning(f"{what} failed; the queue will retry it", extra={"message_id": record.message_id,
                                                                       "error_code": exc.code})
        raise
    finally:
        logger.remove_keys(["tenant", "agent", "name"])


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        with deadline.until(deadline.at_the_latest(context)):
            return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                            context=context)
    finally:
        reviewer.counters.flush(service="knowledge-policy-review")
        proposer.counters.flush(service="knowledge-policy-review")
