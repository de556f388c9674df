"""Model cost per tenant: calls and tokens as EMF metrics with a tenant dimension, and the daily cap
that defers extraction (the turn fails for the queue to bring back; it is never dropped)."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from helpers.aws import drain
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO

from knowledge.format.sighting import Sighting
from knowledge.learning.usage import DailyModelCalls, block_size, daily_cap_from_env, estimate_tokens
from shared.errors import SettingsError
from knowledge_dev.scripted_model import completion, rules_responder
from shared.model import Bedrock, build_model, metered

T, A = "default", "store-support"
RULES = json.loads((DEMO / "model_script.json").read_text())["rules"]


def emitted(output: str) -> list[tuple[str, float, dict]]:
    """Every EMF metric in captured stdout: (name, value, its dimensions)."""
    out = []
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        for declared in entry.get("_aws", {}).get("CloudWatchMetrics", []):
            dimensions = {key: entry[key] for group in declared["Dimensions"] for key in group}
            for metric in declared["Metrics"]:
                value = entry[metric["Name"]]
                out.append((metric["Name"], sum(value) if isinstance(value, list) else value, dimensions))
    return out


def metric(output: str, name: str, **dimensions: str) -> float:
    return sum(value for metric_name, value, dims in emitted(output)
               if metric_name == name and all(dims.get(k) == v for k, v in dimensions.items()))


def with_usage(responder, prompt_tokens=1234, completion_tokens=56):
    """The OpenAI-compatible answer with the provider's `usage` block, as real endpoints send it."""

    def respond(request):
        body = completion(responder(request), request.get("model", "scripted"))
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + completion_tokens}
        return 200, body

    return respond


def turn_event(tenant: str = T, session: str = "sess_demo_01", turn: str = "turn_0004") -> dict:
    event = load_event("turn-complete.json")
    body = json.loads(event["Records"][0]["body"])
    body.update(tenant=tenant, session_id=session, turn_id=turn)
    event["Records"][0]["body"] = json.dumps(body, ensure_ascii=False)
    event["Records"][0]["messageId"] = f"msg-{session}-{turn}"
    return event


@pytest.fixture
def make_extract(monkeypatch, store, bucket, sessions_bucket, candidates_queue, model):
    for tenant in (T, "loja-b"):
        store.put_config(tenant, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    model.responder = rules_responder(RULES)

    def make(**env):
        return load_handler("extract", monkeypatch, dict(
            KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
            UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url),
            POWERTOOLS_SERVICE_NAME=f"knowledge-extract-{uuid.uuid4().hex[:6]}", **env)

    return make


# ------------------------------------------------------------------ tokens


def test_extraction_counts_the_providers_tokens_per_tenant(make_extract, model, capsys, monkeypatch):
    monkeypatch.delenv("KNOWLEDGE_TENANT_DAILY_MODEL_CALLS", raising=False)
    model.responder = with_usage(rules_responder(RULES), prompt_tokens=1234, completion_tokens=56)
    extract = make_extract()
    assert extract.lambda_handler(turn_event(tenant="loja-b"), LambdaContext()) == {"batchItemFailures": []}
    output = capsys.readouterr().out
    assert metric(output, "ModelCalls", tenant="loja-b", service="knowledge-extract") == 1
    assert metric(output, "ModelInputTokens", tenant="loja-b") == 1234
    assert metric(output, "ModelOutputTokens", tenant="loja-b") == 56
    assert metric(output, "ModelUsageEstimated") == 0
    assert metric(output, "ModelCalls", tenant=T) == 0  # another tenant's bill is untouched


def test_without_a_usage_block_tokens_are_estimated_at_four_characters_and_flagged(make_extract, model, capsys):
    extract = make_extract()
    extract.lambda_handler(turn_event(), LambdaContext())
    output = capsys.readouterr().out
    request = model.requests[-1]
    prompt_chars = sum(len(m["content"]) for m in request["messages"])
    answer = rules_responder(RULES)(request)
    assert metric(output, "ModelUsageEstimated", tenant=T) == 1
    assert metric(output, "ModelInputTokens", tenant=T) == math.ceil(prompt_chars / 4)
    assert metric(output, "ModelOutputTokens", tenant=T) == math.ceil(len(answer) / 4)


def test_the_judge_counts_its_call_for_the_sightings_tenant(monkeypatch, bucket, sessions_bucket, bus, model,
                                                            store, capsys):
    model.responder = with_usage(lambda request: json.dumps({"verdict": "contradicting"}), 300, 7)
    consolidate = load_handler("consolidate", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
        UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url),
        POWERTOOLS_SERVICE_NAME=f"knowledge-consolidate-{uuid.uuid4().hex[:6]}")
    store.create("loja-b", A, make_concept(), actor="engine", reason="created")
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    other = Sighting.of("loja-b", A, "sess_9", "t1", make_concept(
        description="Frete gratis acima de R$ 299 so para o Sul.", body="Acima de R$ 299, so Sul.",
        sources=("sess_9",), created_at=moment, updated_at=moment))
    record = {"messageId": "m0", "receiptHandle": "r0", "body": other.body(), "md5OfBody": "0",
              "attributes": {"MessageGroupId": other.group_id(), "MessageDeduplicationId": other.dedup_id(),
                             "ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                             "ApproximateFirstReceiveTimestamp": "0", "SequenceNumber": "0"},
              "messageAttributes": {}, "eventSource": "aws:sqs", "awsRegion": "us-east-1",
              "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo"}
    assert consolidate.lambda_handler({"Records": [record]}, LambdaContext()) == {"batchItemFailures": []}
    output = capsys.readouterr().out
    assert len(model.requests) == 1
    assert metric(output, "ModelCalls", tenant="loja-b", service="knowledge-consolidate") == 1
    assert (metric(output, "ModelInputTokens", tenant="loja-b"), metric(output, "ModelOutputTokens")) == (300, 7)


def test_bedrock_usage_is_read_from_the_converse_answer():
    import boto3
    from botocore.stub import Stubber

    runtime = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url="https://bedrock.invalid",
                           aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(runtime) as stubber:
        stubber.add_response("converse", {
            "output": {"message": {"role": "assistant", "content": [{"text": "[]"}]}}, "stopReason": "end_turn",
            "usage": {"inputTokens": 812, "outputTokens": 3, "totalTokens": 815}, "metrics": {"latencyMs": 1}})
        with metered() as meter:
            assert Bedrock("m", runtime).complete("s", "u") == "[]"
    assert (meter.usage.input_tokens, meter.usage.output_tokens) == (812, 3)


def test_a_call_outside_a_meter_answers_as_before(model):
    model.responder = with_usage(lambda request: "[]")
    llm = build_model("openai:x", environ={"OPENAI_BASE_URL": model.base_url})
    assert llm.complete("s", "u") == "[]"
    with metered() as meter:
        pass
    assert meter.usage is None  # nothing leaks from a call made before the meter


# ------------------------------------------------------------------ the daily cap


def test_the_cap_defers_the_turn_after_the_limit_and_leaves_other_tenants_alone(make_extract, model, sqs,
                                                                               candidates_queue, capsys, s3,
                                                                               sessions_bucket):
    extract = make_extract(KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="2")
    for turn in ("t1", "t2"):
        assert extract.lambda_handler(turn_event(turn=turn), LambdaContext()) == {"batchItemFailures": []}
    capsys.readouterr()
    calls = len(model.requests)
    deferred = turn_event(turn="t3")
    assert extract.lambda_handler(deferred, LambdaContext()) == {
        "batchItemFailures": [{"itemIdentifier": "msg-sess_demo_01-t3"}]}
    output = capsys.readouterr().out
    assert len(model.requests) == calls  # no model call was made for it
    assert metric(output, "ExtractionDeferred", tenant=T) == 1
    assert metric(output, "TurnFailed", reason="daily_cap_reached") == 1
    failed = next(json.loads(line) for line in output.splitlines()
                  if line.startswith("{") and json.loads(line).get("message", "").startswith("turn failed"))
    assert (failed["message_id"], failed["error_code"]) == ("msg-sess_demo_01-t3", "daily_cap_reached")
    # Another tenant has its own count.
    assert extract.lambda_handler(turn_event(tenant="loja-b", turn="t3"), LambdaContext()) == {"batchItemFailures": []}
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    stored = json.loads(s3.get_object(Bucket=sessions_bucket, Key=f"{T}/_usage/model-calls/{day}.json")["Body"].read())
    assert stored == {"calls": 2, "limit": 2}
    assert {(s["Body"].count("sess_demo_01")) > 0 for s in drain(sqs, candidates_queue)} == {True}


def test_containers_share_one_count(make_extract, model):
    first, second = make_extract(KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="3"), make_extract(
        KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="3")
    answers = [handler.lambda_handler(turn_event(turn=f"t{n}"), LambdaContext())
               for n, handler in enumerate([first, second, first, second, first])]
    assert [bool(a["batchItemFailures"]) for a in answers] == [False, False, False, True, True]
    assert len(model.requests) == 3


def test_a_new_day_has_calls_again_and_blocks_reserve_ahead(s3, sessions_bucket):
    now = [datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc)]
    cap = DailyModelCalls(s3, sessions_bucket, limit=500, clock=lambda: now[0])
    assert cap.block == 5
    assert all(cap.take(T) for _ in range(500)) and not cap.take(T)
    assert cap.used(T, "2026-11-20") == 500
    requests_per_call = (500 // cap.block) * 2 / 500  # one GET and one PUT per block
    assert requests_per_call == pytest.approx(0.4)
    now[0] += timedelta(minutes=2)
    assert cap.take(T) and cap.used(T, "2026-11-21") == 5


def test_a_recycled_container_leaves_at_most_a_block_unused(s3, sessions_bucket):
    lost = DailyModelCalls(s3, sessions_bucket, limit=40, block=4)
    assert lost.take(T)  # reserves 4, spends 1, then the container is gone
    survivor = DailyModelCalls(s3, sessions_bucket, limit=40, block=4)
    taken = 0
    while survivor.take(T):
        taken += 1
    assert taken == 36  # 3 of the lost container's block are never spent: the cap is never exceeded


@pytest.mark.parametrize("value", ["0", "-1", "ten", "1.5", "10000000000"])
def test_a_bad_cap_setting_is_refused_at_cold_start(value):
    with pytest.raises(SettingsError, match="KNOWLEDGE_TENANT_DAILY_MODEL_CALLS"):
        daily_cap_from_env({"KNOWLEDGE_TENANT_DAILY_MODEL_CALLS": value})


def test_no_setting_means_no_cap_and_blocks_scale_with_the_cap():
    assert daily_cap_from_env({}) is None and daily_cap_from_env({"KNOWLEDGE_TENANT_DAILY_MODEL_CALLS": ""}) is None
    assert [block_size(n) for n in (1, 99, 100, 1000, 100000)] == [1, 1, 1, 10, 20]
    assert estimate_tokens(9) == 3
