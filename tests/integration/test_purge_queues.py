"""forget_customer and the dead-letter queues: a turn the real ExtractFunction failed (the model was down)
or refused (malformed), and a sighting of the customer's session, wait on the DLQs with the customer's
id, e-mail and phone. PurgeFunction deletes them where they wait, so `knowledge redrive` has nothing of
the customer to send back; everything else on the queues stays, visible."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

from helpers.aws import drain, new_queue
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.turns import turn_body

from knowledge.format.sighting import Sighting
from knowledge_cli.main import main
from knowledge_dev.scripted_model import server_error

T, A = "default", "store-support"
CUSTOMER, OTHER = "cus_20931", "cus_77104"
SAID = "sou a cliente, meu email é joana.prado@example.com e o whats (84) 98765-4321"


def customer_turn(session: str, customer: str, said: str = SAID, **overrides) -> str:
    return turn_body(session_id=session, customer_id=customer, turn_id="turn_0001", completed_at="2026-11-20T14:05:31Z",
                     messages=[{"role": "user", "content": said}, {"role": "assistant", "content": "Anotado!"}],
                     **overrides)


def fail_through_the_queue(sqs, extract, source: str, body: str) -> None:
    """The turn's one receive fails in ExtractFunction; SQS then moves it to the DLQ (maxReceiveCount 1)."""
    sqs.send_message(QueueUrl=source, MessageBody=body)
    received = sqs.receive_message(QueueUrl=source, AttributeNames=["All"])["Messages"][0]
    record = load_event("turn-complete.json")["Records"][0]
    record.update(messageId=received["MessageId"], receiptHandle=received["ReceiptHandle"], body=received["Body"])
    answer = extract.lambda_handler({"Records": [record]}, LambdaContext())
    if answer["batchItemFailures"]:
        sqs.change_message_visibility(QueueUrl=source, ReceiptHandle=received["ReceiptHandle"], VisibilityTimeout=0)
        assert "Messages" not in sqs.receive_message(QueueUrl=source)


def sighting_body(session: str) -> tuple[str, str, str]:
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    sighting = Sighting.of(T, A, session, "turn_0001", make_concept("frete-gratis", sources=(session,),
                                                                     created_at=moment, updated_at=moment))
    return sighting.body(), sighting.group_id(), sighting.dedup_id()


def test_forget_customer_deletes_their_dead_letters_so_a_redrive_cannot_send_them_back(
        monkeypatch, sqs, store, bucket, sessions_bucket, candidates_queue, model, capsys):
    store.put_config(T, A, "knowledge:\n  extract: true\n", actor="operator:demo")
    model.responder = lambda request: server_error(503)  # the model is down
    dlq = new_queue(sqs)
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    source = new_queue(sqs, RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1}))
    sightings_dlq = new_queue(sqs, fifo=True)
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
               UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url, TURN_DLQ_URL=dlq,
               CANDIDATES_DLQ_URL=sightings_dlq, POWERTOOLS_SERVICE_NAME=f"extract-{uuid.uuid4().hex[:6]}")
    extract = load_handler("extract", monkeypatch, env)
    fail_through_the_queue(sqs, extract, source, customer_turn("sess_joana", CUSTOMER))  # model down
    fail_through_the_queue(sqs, extract, source, customer_turn("sess_joana_2", CUSTOMER, agent="Not A Slug"))
    fail_through_the_queue(sqs, extract, source, customer_turn("sess_outro", OTHER, "quando chega meu pedido?"))
    for session in ("sess_joana", "sess_outro"):
        body, group, dedup = sighting_body(session)
        sqs.send_message(QueueUrl=sightings_dlq, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=dedup)
    assert int(sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"]["ApproximateNumberOfMessages"]) == 3

    purge = load_handler("purge", monkeypatch, env)
    dry = purge.lambda_handler({**load_event("forget-customer.json"), "dry_run": True}, LambdaContext())
    assert (dry["removed"]["dead_letter_turns"], dry["removed"]["dead_letter_sightings"]) == (2, 1)
    answer = purge.lambda_handler(load_event("forget-customer.json"), LambdaContext())
    assert answer["complete"] is True
    assert (answer["removed"]["dead_letter_turns"], answer["removed"]["dead_letter_sightings"]) == (2, 1)
    assert CUSTOMER not in json.dumps(answer)

    # What a redrive now finds: the other customer's turn alone, and nothing names the forgotten one.
    monkeypatch.setenv("TURN_QUEUE_URL", source)
    capsys.readouterr()
    assert main(["redrive", "turns", "--dry-run"]) == 0
    assert "1 message(s) seen" in capsys.readouterr().out
    left = drain(sqs, dlq)
    assert [json.loads(m["Body"])["customer_id"] for m in left] == [OTHER]
    assert all("joana" not in m["Body"] for m in left)
    assert [json.loads(m["Body"])["session_id"] for m in drain(sqs, sightings_dlq)] == ["sess_outro"]
    again = purge.lambda_handler(load_event("forget-customer.json"), LambdaContext())
    assert again["total"] == 0
