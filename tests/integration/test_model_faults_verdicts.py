"""A model that gives no answer is an outage, never a verdict; an answer that is no array is retried.

Through the real ConsolidateFunction, ExtractFunction and BackfillFunction handlers, moto's S3, SQS
and EventBridge, and the scripted model server misbehaving over real HTTP: a status other than
200, a bad, cut or empty envelope, or an answer over the cap fails the sighting (the queue brings
it back, then dead-letters it), where it used to write `## Contradiction` and `knowledge_conflict`;
an extraction answer that is not a JSON array fails the turn until its third delivery, and only
then is dropped, counted where an alarm looks.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest
from helpers.aws import drain, new_queue
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.operations import alarms_watching, emitted, the
from helpers.paths import DEMO

from knowledge.format.sighting import Sighting, parse_sighting
from knowledge_dev.poller import Poller
from knowledge_dev.scripted_model import completion, rules_responder, truncated
from shared.model import ANSWER_ATTEMPTS, MAX_ANSWER_BYTES

T, A = "default", "store-support"
FRETE = {"description": "Free shipping above R$199 in the Southeast.",
         "body": "Orders above R$199 ship free to the South and Southeast regions."}
DIFFERENT = {"description": "Free shipping above R$299.", "body": "Orders above R$299 ship free."}
GOOD_VERDICT = '{"verdict": "same"}'
DEMO_RULES = json.loads((DEMO / "model_script.json").read_text())["rules"]


@pytest.fixture
def metrics_on(monkeypatch):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)


# ------------------------------------------------------------------ the consolidation judge


def sighting(session: str, **fields) -> Sighting:
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=UTC)
    concept = make_concept("frete-gratis", sources=(session,), created_at=moment, updated_at=moment,
                           **{**FRETE, **fields})
    return Sighting.of(T, A, session, "t1", concept)


def sighting_event(s: Sighting, receives: int = 1) -> dict:
    return {"Records": [{
        "messageId": "m0", "receiptHandle": "r0", "body": s.body(),
        "attributes": {"MessageGroupId": s.group_id(), "MessageDeduplicationId": s.dedup_id(),
                       "ApproximateReceiveCount": str(receives), "SentTimestamp": "0", "SenderId": "x",
                       "ApproximateFirstReceiveTimestamp": "0", "SequenceNumber": "1"},
        "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo", "awsRegion": "us-east-1",
    }]}


@pytest.fixture
def consolidate_env(bucket, sessions_bucket, bus, model):
    return {"KNOWLEDGE_BUCKET": bucket, "SESSIONS_BUCKET": sessions_bucket, "EVENT_BUS_NAME": bus["name"],
            "UTILITY_MODEL": "openai:judge", "OPENAI_BASE_URL": model.base_url}


@pytest.fixture
def consolidate(monkeypatch, consolidate_env, store):
    handler = load_handler("consolidate", monkeypatch, consolidate_env)
    assert handler.lambda_handler(sighting_event(sighting("sess_1")), LambdaContext()) == {"batchItemFailures": []}
    return handler


def event_kinds(sqs, bus) -> list[str]:
    return [json.loads(m["Body"])["detail-type"] for m in drain(sqs, bus["queue"])]


HTML = "<!DOCTYPE html><html><head><title>Sign in</title></head><body><h1>Sign in to continue</h1></body></html>"
NO_ANSWER = {
    "400": (400, {"error": {"message": "bad request"}}),
    "401": (401, {"error": {"message": "invalid api key"}}),
    "403": (403, {"error": {"message": "forbidden"}}),
    "404": (404, {"error": {"message": "no such model"}}),
    "html-error-page": (200, HTML),
    "truncated-envelope": truncated(GOOD_VERDICT),
    "empty-content": "",
    "blank-content": " \n\t ",
    "answer-over-the-cap": (200, completion('{"verdict": "same", "note": "' + "x" * (MAX_ANSWER_BYTES + 1) + '"}')),
    "garbage-body": (200, "\x00\x13garbage\ufffd{{{"),
}


@pytest.mark.parametrize("fault", sorted(NO_ANSWER))
def test_a_judge_that_gives_no_answer_fails_the_sighting_and_writes_no_verdict(
        fault, metrics_on, consolidate, store, script, model, sqs, bus, capsys):
    event_kinds(sqs, bus)  # the creation's event
    model.requests.clear()
    script.default = NO_ANSWER[fault]
    answer = consolidate.lambda_handler(sighting_event(sighting("sess_2", **DIFFERENT)), LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}  # the queue brings it back
    concept = store.get(T, A, "frete-gratis").concept
    assert not concept.in_conflict and "## Contradiction" not in concept.body
    assert (concept.confidence, concept.occurrences) == (0.6, 1)
    assert [v.reason for v in store.versions(T, A, "frete-gratis")] == ["created"]
    assert event_kinds(sqs, bus) == []  # no knowledge_conflict
    assert len(model.requests) == 1  # refused or answered badly: asked once per delivery
    failed = the("ConsolidationFailed", capsys.readouterr().out)
    assert failed.dimensions["reason"] in ("model_refused", "model_bad_answer")
    assert alarms_watching(failed) == ["ConsolidationFailedAlarm"]


def test_a_truncated_answer_is_judged_again_on_the_next_delivery_and_the_good_answer_counts(
        consolidate, store, script, sqs, bus):
    event_kinds(sqs, bus)
    script.replies += [truncated('{"verdict": "contradicting"}'), GOOD_VERDICT]
    different = sighting("sess_2", **DIFFERENT)
    assert consolidate.lambda_handler(sighting_event(different, 1), LambdaContext())["batchItemFailures"]
    assert consolidate.lambda_handler(sighting_event(different, 2), LambdaContext()) == {"batchItemFailures": []}
    concept = store.get(T, A, "frete-gratis").concept
    assert not concept.in_conflict and (concept.occurrences, concept.sources) == (2, ("sess_1", "sess_2"))
    assert [v.reason for v in store.versions(T, A, "frete-gratis")] == ["confirmed", "created"]
    assert event_kinds(sqs, bus) == ["knowledge_learned"]


def test_a_complete_answer_that_is_no_verdict_is_still_judged_contradicting(consolidate, store, script, sqs, bus):
    script.default = "I think they are basically the same, merge them!"
    assert consolidate.lambda_handler(sighting_event(sighting("sess_2", **DIFFERENT)),
                                      LambdaContext()) == {"batchItemFailures": []}
    concept = store.get(T, A, "frete-gratis").concept
    assert concept.in_conflict and concept.confidence == 0.4
    assert event_kinds(sqs, bus)[-1] == "knowledge_conflict"


def test_a_judge_that_keeps_refusing_sends_the_sighting_to_the_dead_letter_queue_unjudged(
        monkeypatch, consolidate_env, store, script, model, sqs):
    dlq = new_queue(sqs, fifo=True)
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    candidates = new_queue(sqs, fifo=True, VisibilityTimeout="0",
                           RedrivePolicy=json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 2}))
    handler = load_handler("consolidate", monkeypatch, consolidate_env)
    handler.redelivery.later = lambda records: None  # the back-off would hold each receive for minutes
    poller = Poller(sqs, candidates, handler.lambda_handler, "consolidate")
    for s in (sighting("sess_1"), sighting("sess_2", **DIFFERENT)):
        sqs.send_message(QueueUrl=candidates, MessageBody=s.body(), MessageGroupId=s.group_id(),
                         MessageDeduplicationId=s.dedup_id())
    script.default = (401, {"error": {"message": "invalid api key"}})
    for _ in range(6):  # the first sighting, the second's two receives, then SQS moves it
        poller.poll_once(wait_seconds=0)
    [dead] = drain(sqs, dlq)
    assert parse_sighting(dead["Body"]).session_id == "sess_2"
    assert len(model.requests) == 2  # asked on each of its maxReceiveCount receives, then dead-lettered
    assert drain(sqs, candidates) == []
    assert [v.reason for v in store.versions(T, A, "frete-gratis")] == ["created"]
    assert not store.get(T, A, "frete-gratis").concept.in_conflict


# ------------------------------------------------------------------ extraction: an answer that is no array


def turn_event(receives: int = 1) -> dict:
    event = copy.deepcopy(load_event("turn-complete.json"))
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = str(receives)
    return event


def answering(*bad: str):
    """The scripted model: `bad` answers first, in order, then the demo's good ones."""
    rules, queue = rules_responder(DEMO_RULES), list(bad)
    return lambda request: queue.pop(0) if queue else rules(request)


@pytest.fixture
def extract(monkeypatch, extract_env):
    return load_handler("extract", monkeypatch, extract_env)


NOT_AN_ARRAY = {
    "answer_not_json": "Sorry, I cannot find any durable concept in this conversation.",
    "answer_not_array": json.dumps({"concepts": [{"name": "frete-gratis"}]}),
    "answer_too_large": json.dumps(["x" * (300 * 1024)]),
}


@pytest.mark.parametrize("reason", sorted(NOT_AN_ARRAY))
def test_an_answer_that_is_not_an_array_fails_the_turn_and_the_next_delivery_learns(
        reason, extract, model, sqs, candidates_queue):
    model.responder = answering(NOT_AN_ARRAY[reason])
    [failed] = extract.lambda_handler(turn_event(1), LambdaContext())["batchItemFailures"]
    assert failed["itemIdentifier"] == turn_event()["Records"][0]["messageId"]
    assert drain(sqs, candidates_queue) == []
    assert extract.lambda_handler(turn_event(2), LambdaContext()) == {"batchItemFailures": []}
    learned = {parse_sighting(m["Body"]).name for m in drain(sqs, candidates_queue)}
    assert learned == {"cep-sudeste-cd-campinas", "despacho-no-mesmo-dia"}
    assert len(model.requests) == 2


def test_an_answer_that_stays_no_array_is_dropped_on_the_third_real_delivery_counted_where_an_alarm_looks(
        metrics_on, monkeypatch, extract_env, model, sqs, candidates_queue, capsys):
    dlq = new_queue(sqs)
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    turns = new_queue(sqs, VisibilityTimeout="0",
                      RedrivePolicy=json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 10}))
    handler = load_handler("extract", monkeypatch, dict(extract_env, TURN_DLQ_URL=dlq))
    handler.redelivery.later = lambda records: None  # the back-off would hold each receive for minutes
    poller = Poller(sqs, turns, handler.lambda_handler, "extract")
    model.responder = lambda request: NOT_AN_ARRAY["answer_not_array"]
    sqs.send_message(QueueUrl=turns, MessageBody=load_event("turn-complete.json")["Records"][0]["body"])
    for delivery in range(1, ANSWER_ATTEMPTS + 1):
        assert poller.poll_once(wait_seconds=0) == 1
        output = capsys.readouterr().out
        if delivery < ANSWER_ATTEMPTS:  # failed, and back on the queue
            assert the("TurnFailed", output).dimensions["reason"] == "model_answer_unusable"
            assert not [p for p in emitted(output) if p.metric == "TurnAnswerDropped"]
    dropped = the("TurnAnswerDropped", output)
    assert dropped.dimensions == {"service": "knowledge-extract", "reason": "answer_not_array"}
    assert dropped.value == 1 and alarms_watching(dropped) == ["TurnAnswerDroppedAlarm"]
    assert not [p for p in emitted(output) if p.metric == "TurnFailed"]
    assert "frete-gratis" not in output  # the reason is the gate's name, never the answer
    assert poller.poll_once(wait_seconds=0) == 0  # closed: off the queue, nothing dead-lettered
    assert drain(sqs, dlq) == [] and drain(sqs, candidates_queue) == []
    assert len(model.requests) == ANSWER_ATTEMPTS
    # Closed for good: a late duplicate of the message is not read by the model again.
    assert handler.lambda_handler(turn_event(1), LambdaContext()) == {"batchItemFailures": []}
    assert len(model.requests) == ANSWER_ATTEMPTS


@pytest.fixture
def backfill(monkeypatch, extract, extract_env, sqs, candidates_queue):
    assert extract.lambda_handler(turn_event(1), LambdaContext()) == {"batchItemFailures": []}  # archived
    drain(sqs, candidates_queue)
    return load_handler("backfill", monkeypatch, extract_env)


def test_backfill_asks_again_within_the_call_when_an_answer_is_no_array(backfill, model, sqs, candidates_queue):
    model.requests.clear()
    model.responder = answering(NOT_AN_ARRAY["answer_not_json"])
    answer = backfill.lambda_handler({"agent": A, "since": "2026-01-01T00:00:00Z"}, LambdaContext())
    assert answer["ok"] and answer["turns"] == 1 and answer["sent"] == 2
    assert "answer_not_json" not in answer["rejected"] and len(model.requests) == 2
    assert len(drain(sqs, candidates_queue)) == 2


def test_backfill_drops_an_answer_that_stays_no_array_after_its_attempts_and_counts_it(
        metrics_on, backfill, model, sqs, candidates_queue, capsys):
    model.requests.clear()
    model.responder = lambda request: NOT_AN_ARRAY["answer_not_json"]
    capsys.readouterr()
    answer = backfill.lambda_handler({"agent": A, "since": "2026-01-01T00:00:00Z"}, LambdaContext())
    assert answer["ok"] and answer["sent"] == 0 and answer["rejected"] == {"answer_not_json": 1}
    assert len(model.requests) == ANSWER_ATTEMPTS and drain(sqs, candidates_queue) == []
    dropped = the("TurnAnswerDropped", capsys.readouterr().out)
    assert dropped.dimensions == {"service": "knowledge-backfill", "reason": "answer_not_json"}
    assert alarms_watching(dropped) == ["TurnAnswerDroppedAlarm"]
