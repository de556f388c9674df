"""What becomes of a queue record that did not succeed: dead-lettered at once when it can never
succeed, pushed back (time, not receives) when it may, reported failed before the deadline."""

from __future__ import annotations

import json
import time

import pytest
from helpers.aws import new_queue
from helpers.handlers import load_event, load_handler
from helpers.paths import DEMO

from knowledge.store.queues import backoff_seconds
from knowledge_dev.poller import Poller

T, A = "default", "store-support"


def queue_with_dlq(sqs, fifo: bool = False, **attributes: str) -> tuple[str, str]:
    dlq = new_queue(sqs, fifo=fifo)
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    source = new_queue(sqs, fifo=fifo, RedrivePolicy=json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 10}),
                       **attributes)
    return source, dlq


def counts(sqs, url: str) -> tuple[int, int]:
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]), int(attrs["ApproximateNumberOfMessagesNotVisible"])


@pytest.fixture
def extract_on_queue(monkeypatch, sqs, store, bucket, sessions_bucket, candidates_queue, model):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    # Visibility 0: without the handler's back-off a failed turn would be visible again at once.
    turns, dlq = queue_with_dlq(sqs, VisibilityTimeout="0")
    handler = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        TURN_DLQ_URL=dlq, UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url))
    return Poller(sqs, turns, handler.lambda_handler, "extract"), turns, dlq, handler


def test_a_turn_that_can_never_be_valid_is_dead_lettered_on_first_sight(extract_on_queue, sqs):
    poller, turns, dlq, _ = extract_on_queue
    sqs.send_message(QueueUrl=turns, MessageBody='{"tenant": "default", "agent": "store-support"}')
    assert poller.poll_once(wait_seconds=0) == 1
    assert counts(sqs, turns) == (0, 0)
    [moved] = sqs.receive_message(QueueUrl=dlq, AttributeNames=["All"], MessageAttributeNames=["All"])["Messages"]
    assert moved["Body"] == '{"tenant": "default", "agent": "store-support"}'
    assert moved["MessageAttributes"]["error_code"]["StringValue"] == "invalid_turn"
    assert moved["MessageAttributes"]["source_message_id"]["StringValue"]


def test_a_turn_that_failed_for_now_comes_back_after_the_backoff_not_at_once(extract_on_queue, sqs, script):
    poller, turns, dlq, handler = extract_on_queue
    script.default = (503, {"error": "overloaded"})
    sqs.send_message(QueueUrl=turns, MessageBody=load_event("turn-complete.json")["Records"][0]["body"])
    poller.poll_once(wait_seconds=0)
    assert counts(sqs, turns) == (0, 1)  # in flight for the back-off, though the queue's visibility is 0
    assert sqs.receive_message(QueueUrl=turns, WaitTimeSeconds=0).get("Messages") is None
    assert counts(sqs, dlq) == (0, 0)


def test_the_backoff_spends_at_least_an_hour_before_the_templates_receive_count_is_reached():
    from knowledge_dev.template import queue_specs

    for spec in queue_specs():
        if spec.dead_letter:
            assert sum(backoff_seconds(n) for n in range(1, spec.max_receive_count)) >= 3600


def test_records_that_cannot_finish_before_the_deadline_are_reported_failed_not_timed_out(
        monkeypatch, bucket, sessions_bucket, candidates_queue, model, store):
    from helpers.handlers import LambdaContext

    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    handler = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url))

    class AlmostOut(LambdaContext):
        def get_remaining_time_in_millis(self) -> int:
            return 1500  # less than the reserve the handler keeps for its answer

    records = load_event("turn-complete.json")
    started = time.monotonic()
    answer = handler.lambda_handler(records, AlmostOut())
    assert answer == {"batchItemFailures": [{"itemIdentifier": records["Records"][0]["messageId"]}]}
    assert time.monotonic() - started < 1.5
    assert model.requests == []


def test_a_redelivered_turn_already_extracted_is_not_read_by_the_model_again(extract_on_queue, sqs, model):
    poller, turns, dlq, handler = extract_on_queue
    body = load_event("turn-complete.json")["Records"][0]["body"]
    for _ in range(2):  # the engine's send retried, or SQS delivering twice
        sqs.send_message(QueueUrl=turns, MessageBody=body)
        poller.poll_once(wait_seconds=0)
    assert len(model.requests) == 1
    assert counts(sqs, turns) == (0, 0) and counts(sqs, dlq) == (0, 0)


def test_backfill_re_reads_a_turn_the_live_path_already_extracted(monkeypatch, store, bucket, sessions_bucket,
                                                                  candidates_queue, model):
    from knowledge.format.turn import parse_turn

    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    handler = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url))
    turn = parse_turn(load_event("turn-complete.json")["Records"][0]["body"])
    assert handler.extractor.process(turn).status == "processed"
    assert handler.extractor.process(turn).status == "already_extracted"
    assert handler.extractor.process(turn, archive=False).status == "processed"
    assert len(model.requests) == 2


def test_a_turn_deferred_by_its_tenants_daily_cap_waits_for_the_next_utc_day_not_the_backoff(
        monkeypatch, sqs, store, bucket, sessions_bucket, candidates_queue, model):
    from shared.aws import client

    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    turns, dlq = queue_with_dlq(sqs)
    handler = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        TURN_DLQ_URL=dlq, UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url),
        KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="1")
    waits = []
    watch = lambda params, **kwargs: waits.append(params["VisibilityTimeout"])  # noqa: E731
    body = json.loads(load_event("turn-complete.json")["Records"][0]["body"])
    for turn_id in ("turn_a", "turn_b"):
        sqs.send_message(QueueUrl=turns, MessageBody=json.dumps({**body, "turn_id": turn_id}))
    poller = Poller(sqs, turns, handler.lambda_handler, "extract", batch_size=1)
    # What the handler's SQS client sends (the redelivery's back-off or hold), watched where boto3 calls it.
    client("sqs").meta.events.register("provide-client-params.sqs.ChangeMessageVisibility", watch)
    try:
        poller.poll_once(wait_seconds=0)
        poller.poll_once(wait_seconds=0)
    finally:
        client("sqs").meta.events.unregister("provide-client-params.sqs.ChangeMessageVisibility", watch)
    assert len(model.requests) == 1
    assert len(waits) == 1 and waits[0] > backoff_seconds(1)


@pytest.mark.parametrize("now, seconds", [("2026-11-20T23:00:00", 3660), ("2026-11-20T08:00:00", 43200),
                                          ("2026-11-20T23:59:30", 90)])
def test_the_wait_for_the_next_utc_day_is_capped_at_sqs_s_twelve_hours(now, seconds):
    from datetime import datetime, timezone

    from knowledge.store.queues import seconds_to_next_utc_day

    assert seconds_to_next_utc_day(datetime.fromisoformat(now).replace(tzinfo=timezone.utc)) == seconds
