"""The model clients: the real httpx client against a local HTTP server, Bedrock through Stubber."""

from __future__ import annotations

import json
import threading
import time

import boto3
import pytest
from botocore.stub import Stubber

from knowledge.model import Bedrock, ModelConfigError, ModelError, ModelUnavailable, OpenAICompatible, build_model
from knowledge_dev.scripted_model import ScriptedModel


def client(model, **kwargs):
    sleeps = []
    kwargs.setdefault("sleep", sleeps.append)
    return OpenAICompatible("demo-model", model.base_url, "sk-test", **kwargs), sleeps


def test_openai_compatible_sends_the_prompt_and_reads_the_answer(model, script):
    script.replies.append('[{"name": "x"}]')
    llm, _ = client(model)
    assert llm.complete("system text", "user text") == '[{"name": "x"}]'
    request = model.requests[-1]
    assert request["model"] == "demo-model" and request["temperature"] == 0
    assert request["messages"] == [{"role": "system", "content": "system text"},
                                   {"role": "user", "content": "user text"}]


def test_the_api_key_is_sent_as_a_bearer_token():
    seen = {}
    server = ScriptedModel(lambda request: "[]")
    original = server._server.RequestHandlerClass.do_POST

    def do_post(handler):
        seen["auth"] = handler.headers.get("authorization")
        original(handler)

    server._server.RequestHandlerClass.do_POST = do_post
    with server:
        OpenAICompatible("m", server.base_url, "sk-secret").complete("s", "u")
    assert seen["auth"] == "Bearer sk-secret"


def test_throttling_is_retried_with_backoff_honouring_retry_after(model, script):
    script.replies += [(429, {"error": "slow down"}, {"retry-after": "2"}), (503, {"error": "busy"}), "[]"]
    llm, sleeps = client(model)
    assert llm.complete("s", "u") == "[]"
    assert len(model.requests) == 3 and len(sleeps) == 2 and sleeps[0] >= 2


def test_a_model_that_keeps_failing_is_unavailable_after_bounded_retries(model, script):
    script.default = (500, {"error": "boom"})
    llm, sleeps = client(model, attempts=3)
    with pytest.raises(ModelUnavailable, match="failed 3 times"):
        llm.complete("s", "u")
    assert len(model.requests) == 3 and len(sleeps) == 2


def test_a_client_error_is_not_retried(model, script):
    script.default = (400, {"error": "bad request"})
    llm, sleeps = client(model)
    with pytest.raises(ModelError, match="HTTP 400") as caught:
        llm.complete("s", "u")
    assert not isinstance(caught.value, ModelUnavailable) and len(model.requests) == 1


def test_a_slow_model_times_out(script):
    release = threading.Event()

    def slow(request):
        release.wait(5)
        return "[]"

    with ScriptedModel(slow) as server:
        llm = OpenAICompatible("m", server.base_url, None, timeout=0.3, attempts=2, sleep=lambda s: None)
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match="timeout"):
            llm.complete("s", "u")
        release.set()
    assert time.monotonic() - started < 4


def test_an_answer_without_choices_is_a_model_error(model, script):
    script.replies.append((200, {"unexpected": True}))
    with pytest.raises(ModelError, match="choices"):
        client(model)[0].complete("s", "u")


def test_an_unreachable_endpoint_is_unavailable():
    llm = OpenAICompatible("m", "http://127.0.0.1:9/v1", None, attempts=2, sleep=lambda s: None)
    with pytest.raises(ModelUnavailable, match="transport error"):
        llm.complete("s", "u")


def test_build_model_checks_the_reference_and_the_endpoint():
    with pytest.raises(ModelConfigError):
        build_model("gpt-4", environ={})
    with pytest.raises(ModelConfigError, match="OPENAI_BASE_URL"):
        build_model("openai:x", environ={})


@pytest.fixture
def bedrock():
    runtime = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url="https://bedrock.invalid",
                           aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(runtime) as stubber:
        yield runtime, stubber


def converse_answer(text):
    return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}


def test_bedrock_converse_request_and_answer(bedrock):
    runtime, stubber = bedrock
    stubber.add_response("converse", converse_answer("[]"), {
        "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
        "system": [{"text": "system text"}],
        "messages": [{"role": "user", "content": [{"text": "user text"}]}],
        "inferenceConfig": {"temperature": 0, "maxTokens": 2048},
    })
    llm = build_model("bedrock:anthropic.claude-3-haiku-20240307-v1:0", environ={}, bedrock_client=lambda: runtime)
    assert llm.complete("system text", "user text") == "[]"
    stubber.assert_no_pending_responses()


def test_bedrock_throttling_is_retried_and_a_validation_error_is_not(bedrock):
    runtime, stubber = bedrock
    stubber.add_client_error("converse", "ThrottlingException", http_status_code=429)
    stubber.add_response("converse", converse_answer(json.dumps([{"name": "a"}])))
    sleeps = []
    llm = Bedrock("m", runtime, sleep=sleeps.append)
    assert json.loads(llm.complete("s", "u")) == [{"name": "a"}] and len(sleeps) == 1
    stubber.add_client_error("converse", "ValidationException", http_status_code=400)
    with pytest.raises(ModelError, match="ValidationException"):
        llm.complete("s", "u")


def test_bedrock_that_keeps_throttling_is_unavailable(bedrock):
    runtime, stubber = bedrock
    for _ in range(3):
        stubber.add_client_error("converse", "ThrottlingException", http_status_code=429)
    with pytest.raises(ModelUnavailable):
        Bedrock("m", runtime, sleep=lambda s: None).complete("s", "u")
