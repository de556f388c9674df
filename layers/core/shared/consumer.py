"""The one shape of a queue's Lambda handler (Powertools' batch processing): a QueueConsumer runs each
record as the job its service says (`Jobs`) and owns what every consumer does alike — the shared
deadline, the partial batch response, dead-lettering a body that can never be valid, the back-off,
the logger keys and the counters flushed after every batch. The body is parsed by the service, not a
Powertools parser model, so no validation error can quote message content into a log.
docs/contract.md, "Faults, deadlines and redelivery"; docs/development.md, "The rooms"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Protocol, Sequence

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared import deadline
from shared.errors import KnowledgeError
from shared.telemetry import Counters


def no_wait(error: KnowledgeError) -> Optional[int]:
    return None


@dataclass(frozen=True)
class Job:
    """One message's work, as its service names it."""

    what: str  # its name in the log: "turn" -> "turn failed; the queue will retry it"
    run: Callable[[], Mapping[str, Any]]  # the work; answers its log line's fields (counts and outcomes only)
    done: str  # the log line of a success: "turn processed"
    failed: str  # the metric a failure counts, its error code as `reason`: "TurnFailed"
    counters: Counters  # where the job's service counts
    # A failure's log line also says `why` (the error's text): only where every text is written never to
    # quote content or a name.
    says_why: bool = False
    # Seconds a failure must wait before it can succeed (a daily cap's next day), instead of the back-off.
    wait: Callable[[KnowledgeError], Optional[int]] = no_wait


class Redelivery(Protocol):
    """What becomes of a record that did not succeed (knowledge.store.queues.Redelivery)."""

    def dead_letter(self, record: dict, reason: Optional[str] = None) -> bool: ...

    def hold(self, record: dict, seconds: int) -> None: ...

    def back_off_failures(self, event: dict, response: dict) -> None: ...


class Jobs(Protocol):
    """What a queue carries and the job each of its messages is: the service's side of a consumer."""

    what: str  # its messages' name in the log: "turn" -> "turn message rejected"
    rejected: str  # the metric of a body that can never be valid (reason invalid_message)
    counters: Sequence[Counters]  # the services' counters, flushed after each batch; the first counts rejections
    # None: nothing is dead-lettered by hand or backed off (the queue's redrive and visibility timeout apply).
    redelivery: Optional[Redelivery]

    def parse(self, body: str) -> Any: ...  # the message, or a KnowledgeError: it can never be valid

    def keys(self, message: Any) -> Mapping[str, str]: ...  # the log's correlation keys while it is handled

    def job(self, message: Any, delivery: int) -> Job: ...


def delivery(record: SQSRecord) -> int:
    """The record's receive count (SQS's ApproximateReceiveCount); 1 when it says nothing usable."""
    try:
        count = int(record.attributes.approximate_receive_count)
    except (KeyError, TypeError, ValueError):
        return 1
    return max(count, 1)


class QueueConsumer:
    """A queue's records through their service's jobs, one batch per invocation. `logger` is the handler's
    (made at its import, as Powertools' examples make it); `service` names the metrics' `service`."""

    def __init__(self, jobs: Jobs, logger: Logger, service: str, fifo: bool = False):
        self.jobs, self.logger, self.service = jobs, logger, service
        # A batch whose every record failed is answered like any other (all items listed) rather than
        # raised: the outcome for the queue is the same, and the log stays free of tracebacks.
        if fifo:
            self.processor = SqsFifoPartialProcessor(skip_group_on_error=True)
            self.processor.raise_on_entire_batch_failure = False
        else:
            self.processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    @property
    def redelivery(self) -> Optional[Redelivery]:
        return self.jobs.redelivery

    def process(self, event: dict, context: Any) -> dict:
        """The partial batch response (`batchItemFailures`); the failed records backed off."""
        try:
            with deadline.until(deadline.at_the_latest(context)):
                response = process_partial_response(event=event, record_handler=self.record, processor=self.processor,
                                                    context=context)
            if self.redelivery is not None:
                self.redelivery.back_off_failures(event, response)
            return response
        finally:
            for counters in self.jobs.counters:
                counters.flush(service=self.service)

    def record(self, record: SQSRecord) -> None:
        """One record: rejected when it can never be valid, else its job; a failure raises (listed failed)."""
        try:
            message = self.jobs.parse(record.body)
        except KnowledgeError as exc:
            self.reject(record, exc)
            return
        keys = dict(self.jobs.keys(message))
        self.logger.append_keys(**keys)
        try:
            job = self.jobs.job(message, delivery(record))
            try:
                self.logger.info(job.done, extra=dict(job.run()))
            except KnowledgeError as exc:
                job.counters.count(job.failed, reason=exc.code)
                wait = job.wait(exc)
                if wait and self.redelivery is not None:
                    self.redelivery.hold(record.raw_event, wait)
                # The message id finds this reason again once the record is in the dead-letter queue
                # (`knowledge redrive --dry-run` lists the ids).
                said = {"message_id": record.message_id, "error_code": exc.code}
                self.logger.warning(f"{job.what} failed; the queue will retry it",
                                    extra={**said, "why": str(exc)} if job.says_why else said)
                raise
        finally:
            self.logger.remove_keys(list(keys))

    def reject(self, record: SQSRecord, exc: KnowledgeError) -> None:
        """A body that can never be valid: counted, and straight to the dead-letter queue instead of every
        receive; raises (the record listed failed) when it could not be moved, so the queue's redrive does."""
        self.jobs.counters[0].count(self.jobs.rejected, reason="invalid_message")
        moved = self.redelivery.dead_letter(record.raw_event, exc.code) if self.redelivery is not None else False
        self.logger.warning(f"{self.jobs.what} message rejected", extra={
            "message_id": record.message_id, "error_code": exc.code, "why": str(exc), "dead_lettered": moved})
        if not moved:
            raise exc
