"""The model clients: the real httpx client against a local HTTP server (answering, or
misbehaving), Bedrock through Stubber and through a real boto3 client against a silent endpoint.
Every fault is timed: a call returns or raises within a second of its deadline."""

from __future__ import annotations

import json
import socket
import threading
import time

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from knowledge_dev.scripted_model import ScriptedModel, hang, reset, server_error, throttled, trickle, truncated
from shared import deadline
from shared.errors import ModelBadAnswer, ModelConfigError, ModelError, ModelRefused, ModelTimeout, ModelUnavailable
from shared.model import Bedrock, OpenAICompatible, build_model


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
    with ScriptedModel(lambda request: "[]") as server:
        OpenAICompatible("m", server.base_url, "sk-secret").complete("s", "u")
    assert server.authorizations == ["Bearer sk-secret"]


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


@pytest.mark.parametrize("status, error", [(400, "ModelRefused"), (401, "ModelRefused"), (403, "ModelRefused"),
                                           (404, "ModelRefused")])
def test_a_status_the_call_does_not_retry_is_a_refusal_never_an_answer(model, script, status, error):
    script.default = (status, {"error": {"message": "no"}})
    with pytest.raises(ModelError, match=f"HTTP {status}") as caught:
        client(model)[0].complete("s", "u")
    assert type(caught.value).__name__ == error and caught.value.code == "model_refused"


@pytest.mark.parametrize("reply", ["", "  \n ", (200, "<html><body>Sign in</body></html>"), (200, "garbage{{"),
                                   (200, {"choices": [{"message": {"content": None}}]})],
                         ids=["empty", "blank", "html", "garbage", "null-content"])
def test_a_200_that_is_no_complete_answer_is_a_bad_answer_never_an_empty_one(model, script, reply):
    script.default = reply
    with pytest.raises(ModelBadAnswer) as caught:
        client(model)[0].complete("s", "u")
    assert caught.value.code == "model_bad_answer" and len(model.requests) == 1


def test_bedrock_refusals_and_empty_answers_are_no_answer(bedrock):
    runtime, stubber = bedrock
    stubber.add_client_error("converse", "AccessDeniedException", http_status_code=403)
    stubber.add_response("converse", converse_answer(""))
    stubber.add_response("converse", {"output": {"message": {"role": "assistant", "content": [{"image": {
        "format": "png", "source": {"bytes": b"x"}}}]}}, "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}})
    llm = Bedrock("m", runtime, sleep=lambda s: None)
    with pytest.raises(ModelRefused, match="AccessDeniedException"):
        llm.complete("s", "u")
    for _ in range(2):
        with pytest.raises(ModelBadAnswer, match="empty content"):
            llm.complete("s", "u")
    stubber.assert_no_pending_responses()


def test_bedrock_that_keeps_throttling_is_unavailable(bedrock):
    runtime, stubber = bedrock
    for _ in range(3):
        stubber.add_client_error("converse", "ThrottlingException", http_status_code=429)
    with pytest.raises(ModelUnavailable):
        Bedrock("m", runtime, sleep=lambda s: None).complete("s", "u")


# Deadlines: every model call is capped by the wall clock, whatever the server does.

LATE = 2.5  # how far past its deadline a call may return, on a loaded two-core machine


def call_with_deadline(llm, seconds):
    """(answer or raised error, elapsed seconds) for one call whose deadline is `seconds` away."""
    started = time.monotonic()
    try:
        result = llm.complete("s", "u", deadline=started + seconds)
    except ModelError as exc:
        result = exc
    return result, time.monotonic() - started


def test_a_model_that_never_answers_times_out_at_the_deadline(model, script):
    script.default = hang()
    error, elapsed = call_with_deadline(client(model)[0], 1.5)
    assert isinstance(error, ModelTimeout) and error.code == "model_timeout"
    assert 1.5 <= elapsed < 1.5 + LATE


def test_an_answer_due_after_the_deadline_is_not_waited_for(model, script):
    script.default = hang(seconds=4, content="[]")
    error, elapsed = call_with_deadline(client(model)[0], 1.0)
    assert isinstance(error, ModelTimeout) and elapsed < 1.0 + LATE


@pytest.mark.parametrize("every", [0.05, 1.0])
def test_an_endless_trickle_times_out_at_the_deadline_though_no_read_ever_times_out(model, script, every):
    script.default = trickle(every=every)
    error, elapsed = call_with_deadline(client(model)[0], 2.0)
    assert isinstance(error, ModelTimeout) and 2.0 <= elapsed < 2.0 + LATE
    assert len(model.requests) == 1  # the deadline went to one attempt; no retry could fit


def test_a_slow_answer_that_ends_before_the_deadline_is_read(model, script):
    script.replies.append(trickle(every=0.002, content='[{"name": "x"}]', lead=50))
    answer, elapsed = call_with_deadline(client(model)[0], 3.0)
    assert answer == '[{"name": "x"}]' and elapsed < 3.0 + LATE


def test_an_attempt_that_hangs_is_retried_while_the_deadline_allows(model, script):
    script.replies.append(hang())
    llm = OpenAICompatible("m", model.base_url, None, timeout=0.5, sleep=lambda s: None)
    answer, elapsed = call_with_deadline(llm, 3.0)
    assert answer == "[]" and len(model.requests) == 2 and 0.5 <= elapsed < 3.0 + LATE


def test_a_retry_after_that_fits_in_the_deadline_is_honoured(model, script):
    script.replies += [throttled(retry_after=1), "[]"]
    llm = OpenAICompatible("m", model.base_url, None)
    answer, elapsed = call_with_deadline(llm, 3.0)
    assert answer == "[]" and len(model.requests) == 2 and 1.0 <= elapsed < 3.0 + LATE


def test_a_retry_after_past_the_deadline_fails_at_once_without_waiting(model, script):
    script.default = throttled(retry_after=30)
    sleeps = []
    llm = OpenAICompatible("m", model.base_url, None, sleep=sleeps.append)
    error, elapsed = call_with_deadline(llm, 2.0)
    assert isinstance(error, ModelTimeout) and elapsed < 2.0 + LATE  # not the 30 s it was told to wait
    assert sleeps == [] and len(model.requests) == 1


def test_a_retry_after_given_as_an_http_date_is_honoured(model, script):
    from email.utils import formatdate

    script.replies.append(throttled(retry_after=formatdate(time.time() + 60, usegmt=True)))
    sleeps = []
    llm = OpenAICompatible("m", model.base_url, None, sleep=sleeps.append)
    error, _ = call_with_deadline(llm, 30.0)
    assert isinstance(error, ModelTimeout) and sleeps == []  # a minute's wait does not fit in 30 s
    script.replies += [throttled(retry_after=formatdate(time.time() + 10, usegmt=True)), "[]"]
    answer, _ = call_with_deadline(llm, 30.0)
    assert answer == "[]" and 8 <= sleeps[0] <= 10


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_retried_with_real_backoff_within_the_deadline(model, script, status):
    script.default = server_error(status)
    error, elapsed = call_with_deadline(OpenAICompatible("m", model.base_url, None), 3.0)
    assert isinstance(error, ModelUnavailable) and len(model.requests) == 3 and elapsed < 3.0 + LATE


def test_a_backoff_that_would_pass_the_deadline_is_not_slept(model, script):
    script.default = server_error(503)
    sleeps = []
    llm = OpenAICompatible("m", model.base_url, None, sleep=sleeps.append)
    error, elapsed = call_with_deadline(llm, 0.2)  # the first backoff is at least 0.25 s
    assert isinstance(error, ModelTimeout) and sleeps == [] and len(model.requests) == 1 and elapsed < 0.2 + LATE


def test_a_request_timeout_is_retried_like_throttling(model, script):
    script.replies += [(408, {"error": "request timeout"}), "[]"]
    answer, _ = call_with_deadline(client(model)[0], 3.0)
    assert answer == "[]" and len(model.requests) == 2


def test_a_truncated_answer_is_a_bad_answer_that_is_not_retried(model, script):
    script.default = truncated('[{"name": "x"}]')
    error, elapsed = call_with_deadline(client(model)[0], 2.0)
    assert type(error) is ModelBadAnswer and "choices" in str(error)
    assert len(model.requests) == 1 and elapsed < 2.0 + LATE


def test_a_reset_connection_is_retried_then_answered(model, script):
    script.replies += [reset(), "[]"]
    answer, _ = call_with_deadline(client(model)[0], 2.0)
    assert answer == "[]" and len(model.requests) == 2


def test_a_connection_that_keeps_resetting_is_unavailable_within_the_deadline(model, script):
    script.default = reset()
    error, elapsed = call_with_deadline(OpenAICompatible("m", model.base_url, None), 3.0)
    assert isinstance(error, ModelUnavailable) and "transport error" in str(error)
    assert len(model.requests) == 3 and elapsed < 3.0 + LATE


@pytest.fixture
def silent_endpoint():
    from knowledge_dev.scripted_model import silent_endpoint as endpoint

    with endpoint() as url:
        yield url


def test_an_endpoint_that_accepts_and_never_reads_times_out_at_the_deadline(silent_endpoint):
    llm = OpenAICompatible("m", silent_endpoint + "/v1", None)
    error, elapsed = call_with_deadline(llm, 1.5)
    assert isinstance(error, ModelTimeout) and 1.5 <= elapsed < 1.5 + LATE


def test_a_call_without_a_deadline_is_capped_by_the_default_budget(model, script):
    script.default = hang()
    llm = OpenAICompatible("m", model.base_url, None, budget=1.0)
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        llm.complete("s", "u")
    assert time.monotonic() - started < 1.0 + LATE


def test_the_invocations_deadline_caps_a_call_that_names_none(model, script):
    script.default = hang()
    started = time.monotonic()
    with deadline.until(started + 1.0), pytest.raises(ModelTimeout):
        client(model)[0].complete("s", "u")
    assert time.monotonic() - started < 1.0 + LATE


def test_a_deadline_later_than_the_invocations_is_cut_to_it(model, script):
    script.default = trickle(every=0.1)
    started = time.monotonic()
    with deadline.until(started + 1.0), pytest.raises(ModelTimeout):
        client(model)[0].complete("s", "u", deadline=started + 20)
    assert time.monotonic() - started < 1.0 + LATE


def test_a_deadline_already_past_sends_nothing(model, script):
    with pytest.raises(ModelTimeout):
        client(model)[0].complete("s", "u", deadline=time.monotonic() - 1)
    assert model.requests == []


@pytest.mark.parametrize("deadline", ["soon", True, float("nan")])
def test_a_deadline_that_is_not_a_monotonic_time_is_refused(model, deadline):
    with pytest.raises(ModelConfigError, match="monotonic"):
        client(model)[0].complete("s", "u", deadline=deadline)
    assert model.requests == []


def test_a_wall_clock_time_given_as_the_deadline_is_refused(model):
    with pytest.raises(ModelConfigError, match="time.time"):
        client(model)[0].complete("s", "u", deadline=time.time() + 30)
    assert model.requests == []


def test_the_server_stops_promptly_while_replies_are_hung_or_trickling(script):
    server = ScriptedModel(script).start()
    script.replies += [hang(), trickle(every=0.5)]
    connections = []
    for _ in range(2):
        conn = socket.create_connection(("127.0.0.1", server.port))
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     b"content-length: 2\r\n\r\n{}")
        connections.append(conn)
    while len(server.requests) < 2:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 1.0 + LATE  # not as long as the hung replies last
    for conn in connections:
        conn.settimeout(2)
        while conn.recv(4096):  # each connection is closed by the server, not left hanging
            pass
        conn.close()


class HangingConverse:
    """A boto3-like bedrock-runtime client whose converse never returns until released."""

    def __init__(self):
        self.calls, self.release = 0, threading.Event()

    def converse(self, **request):
        self.calls += 1
        self.release.wait(30)
        return converse_answer("[]")


def test_bedrock_that_never_answers_times_out_at_the_deadline():
    runtime = HangingConverse()
    try:
        error, elapsed = call_with_deadline(Bedrock("m", runtime), 1.5)
    finally:
        runtime.release.set()
    assert isinstance(error, ModelTimeout) and runtime.calls == 1 and 1.5 <= elapsed < 1.5 + LATE


def test_bedrock_retries_an_attempt_that_hangs_while_the_deadline_allows():
    runtime = HangingConverse()
    answers = iter([lambda: runtime.release.wait(30), lambda: None])

    class FirstHangs(HangingConverse):
        def converse(self, **request):
            self.calls += 1
            next(answers)()
            return converse_answer("[]")

    first_hangs = FirstHangs()
    try:
        answer, elapsed = call_with_deadline(Bedrock("m", first_hangs, timeout=0.5, sleep=lambda s: None), 3.0)
    finally:
        runtime.release.set()
    assert answer == "[]" and first_hangs.calls == 2 and elapsed < 3.0 + LATE


def test_a_real_boto3_client_configured_as_deployed_is_capped_by_the_deadline(silent_endpoint):
    # aws.py's bedrock-runtime settings: reads of up to 60 s and botocore's own retries.
    runtime = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=silent_endpoint,
                           aws_access_key_id="x", aws_secret_access_key="x",
                           config=Config(connect_timeout=3, read_timeout=60,
                                         retries={"mode": "standard", "max_attempts": 2}))
    error, elapsed = call_with_deadline(Bedrock("m", runtime), 1.5)
    assert isinstance(error, ModelTimeout) and 1.5 <= elapsed < 1.5 + LATE


def test_bedrock_throttling_whose_backoff_would_pass_the_deadline_fails_at_once(bedrock):
    runtime, stubber = bedrock
    stubber.add_client_error("converse", "ThrottlingException", http_status_code=429)
    sleeps = []
    error, elapsed = call_with_deadline(Bedrock("m", runtime, sleep=sleeps.append), 0.2)
    assert isinstance(error, ModelTimeout) and sleeps == [] and elapsed < 0.2 + LATE
