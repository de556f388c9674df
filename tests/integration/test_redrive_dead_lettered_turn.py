"""`knowledge redrive` after the real ExtractFunction failed a turn (the scripted model is down): SQS
dead-letters it under its id, the log names that id, and the redrive finds it there and sends it
back. The redrive itself on moto's SQS: tests/unit/operation/test_redrive.py."""

from __future__ import annotations

import json
import uuid

from helpers.aws import drain, new_queue
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO
from helpers.turns import SECRET, turn_body

from knowledge_cli.main import main
from knowledge_dev.scripted_model import server_error

T, A = "default", "store-support"


def test_a_turn_the_queue_dead_lettered_is_found_in_the_log_by_its_id_and_redriven(
        monkeypatch, sqs, store, bucket, sessions_bucket, candidates_queue, model, capsys):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    model.responder = lambda request: server_error(503)  # the model is down
    dlq = new_queue(sqs)
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    source = new_queue(sqs, RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1}))
    extract = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url),
        POWERTOOLS_SERVICE_NAME=f"knowledge-extract-{uuid.uuid4().hex[:6]}")
    message_id = sqs.send_message(QueueUrl=source, MessageBody=turn_body())["MessageId"]
    received = sqs.receive_message(QueueUrl=source, AttributeNames=["All"])["Messages"][0]
    record = load_event("turn-complete.json")["Records"][0]
    record.update(messageId=received["MessageId"], receiptHandle=received["ReceiptHandle"], body=received["Body"])
    answer = extract.lambda_handler({"Records": [record]}, LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": message_id}]}
    logged = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    failed = next(entry for entry in logged if entry.get("message", "").startswith("turn failed"))
    assert (failed["message_id"], failed["error_code"]) == (message_id, "model_unavailable")
    # Past maxReceiveCount, SQS moves it to the DLQ under the same id.
    sqs.change_message_visibility(QueueUrl=source, ReceiptHandle=received["ReceiptHandle"], VisibilityTimeout=0)
    assert "Messages" not in sqs.receive_message(QueueUrl=source)

    for key, value in dict(TURN_DLQ_URL=dlq, TURN_QUEUE_URL=source, KNOWLEDGE_BUCKET=bucket).items():
        monkeypatch.setenv(key, value)
    assert main(["redrive", "turns", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"ids (valid): {message_id}" in out and f'filter message_id in ["{message_id}"]' in out
    assert "would move 1" in out and SECRET not in out and "Campinas" not in out
    assert main(["redrive", "turns"]) == 0
    assert "moved 1" in capsys.readouterr().out
    back = drain(sqs, source)
    assert [m["Body"] for m in back] == [turn_body()] and drain(sqs, dlq) == []
