"""The utility model through real client code: Bedrock Converse (boto3) or any OpenAI-compatible
chat-completions endpoint (httpx), each call under one wall-clock deadline that covers every attempt,
backoff and Retry-After. `complete()` returns only a complete answer; anything else is a ModelError
(ModelTimeout, ModelUnavailable, ModelRefused, ModelBadAnswer, ModelConfigError): an outage, never a
verdict, so the caller fails the work item and the queue retries it. Whether an answer is what was
asked is the caller's parser's to say. docs/contract.md, "Faults, deadlines and redelivery"."""

from __future__ import annotations

import contextvars
import json
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Iterator, Optional, Protocol

from .deadline import current as invocation_deadline
from .errors import ModelBadAnswer, ModelConfigError, ModelRefused, ModelTimeout, ModelUnavailable
from .names import MODEL_REF

DEFAULT_BUDGET = 45.0  # a whole call without a deadline: under a 60 s function timeout
DEFAULT_TIMEOUT = 30.0  # one attempt, so a hung first attempt leaves time for a second
DEFAULT_ATTEMPTS = 3
CONNECT_TIMEOUT = 5.0
MAX_TOKENS = 2048
MAX_ANSWER_BYTES = 4 * 1024 * 1024
# Lambda's longest timeout; a deadline further away was almost surely written with time.time().
LONGEST_DEADLINE = 900.0
_RETRYABLE_BEDROCK = {"ThrottlingException", "ServiceUnavailableException", "InternalServerException",
                      "ModelTimeoutException", "ModelNotReadyException", "TooManyRequestsException"}


# Deliveries of one work item (or asks, where no queue brings it back) that may end in a complete
# but unusable answer before the caller takes its conservative outcome.
ANSWER_ATTEMPTS = 3


def answer_attempts_left(delivery: int) -> bool:
    """Whether a work item on its `delivery`-th receive (SQS's ApproximateReceiveCount) may still
    be retried for an unusable answer."""
    return delivery < ANSWER_ATTEMPTS


@dataclass(frozen=True)
class Usage:
    """Tokens one answered call cost, as the provider reported them (OpenAI `usage`, Bedrock `usage`)."""

    input_tokens: int
    output_tokens: int


class Meter:
    """What the calls made inside `metered()` reported; `usage` stays None when the client said nothing."""

    usage: Optional[Usage] = None


_METER: contextvars.ContextVar[Optional[Meter]] = contextvars.ContextVar("knowledge_model_meter", default=None)


@contextmanager
def metered() -> Iterator[Meter]:
    """Read the provider's usage of the calls made inside, without changing what `complete()` returns."""
    meter = Meter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def _report(usage: Optional[Usage]) -> None:
    # Called in the caller's thread with the accepted attempt's usage: an abandoned attempt that
    # finishes late on its worker thread never reaches the meter.
    meter = _METER.get()
    if meter is not None and usage is not None:
        meter.usage = usage


def _tokens(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(input_tokens: Any, output_tokens: Any) -> Optional[Usage]:
    given = _tokens(input_tokens), _tokens(output_tokens)
    return Usage(given[0], given[1]) if given[0] is not None and given[1] is not None else None


class Model(Protocol):
    ref: str

    def complete(self, system: str, user: str, *, deadline: Optional[float] = None) -> str:
        """The model's answer, returned or raised by `deadline` (a time.monotonic() value)."""
        ...


@dataclass(frozen=True)
class ModelRef:
    provider: str
    name: str

    @classmethod
    def parse(cls, ref: str) -> "ModelRef":
        match = MODEL_REF.fullmatch(ref or "")
        if not match:
            raise ModelConfigError("a model is written bedrock:<model-id> or openai:<model-name>")
        return cls(match.group(1), match.group(2))

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


class _Overdue(Exception):
    """An attempt was still running at its own deadline."""


def _deadline(given: Optional[float], budget: float) -> float:
    """The earlier of the caller's deadline and the invocation's (shared.deadline); with
    neither, `budget` seconds from now."""
    now = time.monotonic()
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, (int, float)) or given != given:
            raise ModelConfigError("deadline must be a time.monotonic() value")
        if given - now > LONGEST_DEADLINE:
            raise ModelConfigError("deadline is more than 900 s away: pass a time.monotonic() value, not time.time()")
    known = [float(moment) for moment in (given, invocation_deadline()) if moment is not None]
    return min(known) if known else now + budget


def _backoff_delay(attempt: int, retry_after: Optional[float]) -> float:
    delay = min(8.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2)
    return delay if retry_after is None else max(delay, retry_after)


def _run_until(deadline: float, work: Callable[[], Any]) -> Any:
    """`work()`'s result or exception, or _Overdue once `deadline` passes. The work runs on a
    daemon thread that is left to end on its own timeouts: a blocked socket read cannot be
    interrupted from here, but the caller need not wait for it."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller, who decides
            box["error"] = exc
        finally:
            done.set()

    # The caller's context (its deadline, its logger's keys) goes with the work.
    threading.Thread(target=contextvars.copy_context().run, args=(run,), name="model-call", daemon=True).start()
    if not done.wait(max(0.0, deadline - time.monotonic())):
        raise _Overdue
    if "error" in box:
        raise box["error"]
    return box["value"]


@dataclass(frozen=True)
class _Retry:
    """An attempt that failed in a way worth trying again (after `retry_after`, when the server says)."""

    reason: str
    retry_after: Optional[float] = None


class _Attempts:
    """The retry loop both clients share: attempts capped by `timeout` each and by the deadline
    in total, with backoff (or the server's Retry-After) only when it fits before the deadline."""

    def __init__(self, ref: str, attempts: int, timeout: float, budget: float, sleep: Callable[[float], None]):
        if attempts < 1 or timeout <= 0 or budget <= 0:
            raise ModelConfigError("attempts, timeout and budget must be positive")
        self.ref, self.attempts, self.timeout, self.budget, self.sleep = ref, attempts, timeout, budget, sleep

    def run(self, deadline: Optional[float], attempt: Callable[[float], Any]) -> Any:
        """`attempt(attempt_deadline)` returns the answer, or a `_Retry` to try again."""
        deadline = _deadline(deadline, self.budget)
        last = "no attempt"
        for number in range(self.attempts):
            now = time.monotonic()
            if now >= deadline:
                raise self._timeout(last)
            until = min(deadline, now + self.timeout)
            try:
                outcome = _run_until(until, lambda until=until: attempt(until))
            except _Overdue:
                if until >= deadline:
                    raise self._timeout("timeout") from None
                outcome = _Retry("timeout")
            if not isinstance(outcome, _Retry):
                return outcome
            last = outcome.reason
            if time.monotonic() >= deadline:
                raise self._timeout(last)
            if number + 1 < self.attempts:
                delay = _backoff_delay(number, outcome.retry_after)
                if time.monotonic() + delay >= deadline:
                    raise self._timeout(f"{last}; a {delay:.1f} s wait would pass the deadline")
                self.sleep(delay)
        raise ModelUnavailable(f"model {self.ref} failed {self.attempts} times (last: {last})")

    def _timeout(self, last: str) -> ModelTimeout:
        return ModelTimeout(f"model {self.ref} could not answer by its deadline (last: {last})")


class OpenAICompatible:
    """POST {base_url}/chat/completions with httpx, reading the answer as a stream so the clock
    is checked between chunks."""

    def __init__(self, model: str, base_url: str, api_key: Optional[str], *, http: Any = None,
                 timeout: float = DEFAULT_TIMEOUT, attempts: int = DEFAULT_ATTEMPTS,
                 budget: float = DEFAULT_BUDGET, sleep: Callable[[float], None] = time.sleep):
        import httpx

        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ModelConfigError("OPENAI_BASE_URL must be set to the endpoint's http(s) base URL")
        self.ref = f"openai:{model}"
        self._model, self._url = model, base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = http or httpx.Client(timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT))
        self._loop = _Attempts(self.ref, attempts, timeout, budget, sleep)
        self._httpx = httpx

    def complete(self, system: str, user: str, *, deadline: Optional[float] = None) -> str:
        payload = {"model": self._model, "temperature": 0, "max_tokens": MAX_TOKENS,
                   "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        text, usage = self._loop.run(deadline, lambda until: self._attempt(payload, until))
        _report(usage)
        return text

    def _attempt(self, payload: dict, until: float) -> Any:
        httpx = self._httpx
        left = until - time.monotonic()
        # Each socket read waits at most what is left of the attempt; the chunk loop below
        # catches a server that keeps every single read short.
        timeout = httpx.Timeout(max(left, 0.001), connect=max(min(CONNECT_TIMEOUT, left), 0.001))
        try:
            with self._http.stream("POST", self._url, json=payload, headers=self._headers,
                                   timeout=timeout) as response:
                status = response.status_code
                if status != 200:
                    if status in (408, 429) or status >= 500:
                        return _Retry(f"HTTP {status}", _retry_after(response.headers.get("retry-after")))
                    raise ModelRefused(f"model endpoint refused the request (HTTP {status})")
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if time.monotonic() >= until:
                        return _Retry("timeout")
                    if len(body) > MAX_ANSWER_BYTES:
                        raise ModelBadAnswer("model endpoint answered with more than 4 MiB")
        except httpx.TimeoutException:
            return _Retry("timeout")
        except httpx.TransportError as exc:
            return _Retry(f"transport error ({type(exc).__name__})")
        return _openai_text(bytes(body)), _openai_usage(bytes(body))


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds from now: a number of seconds or an HTTP date."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _openai_usage(body: bytes) -> Optional[Usage]:
    try:
        usage = json.loads(body).get("usage")
    except (ValueError, AttributeError):
        return None
    return _usage(usage.get("prompt_tokens"), usage.get("completion_tokens")) if isinstance(usage, dict) else None


def _openai_text(body: bytes) -> str:
    try:
        content = json.loads(body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ModelBadAnswer("model endpoint answered without choices[0].message.content") from None
    if not isinstance(content, str):
        raise ModelBadAnswer("model endpoint answered with non-text content")
    return _answered(content)


def _answered(text: str) -> str:
    if not text.strip():
        raise ModelBadAnswer("model answered with empty content")
    return text


class Bedrock:
    """Bedrock Converse through boto3's bedrock-runtime client. botocore's timeouts are per read
    and its retries are its own, so each attempt runs on a worker thread the caller stops
    waiting for at the deadline."""

    def __init__(self, model_id: str, client: Any, *, timeout: float = DEFAULT_TIMEOUT,
                 attempts: int = DEFAULT_ATTEMPTS, budget: float = DEFAULT_BUDGET,
                 sleep: Callable[[float], None] = time.sleep):
        self.ref = f"bedrock:{model_id}"
        self._model_id, self._client = model_id, client
        self._loop = _Attempts(self.ref, attempts, timeout, budget, sleep)

    def complete(self, system: str, user: str, *, deadline: Optional[float] = None) -> str:
        request = {"modelId": self._model_id, "system": [{"text": system}],
                   "messages": [{"role": "user", "content": [{"text": user}]}],
                   "inferenceConfig": {"temperature": 0, "maxTokens": MAX_TOKENS}}
        text, usage = self._loop.run(deadline, lambda until: self._attempt(request))
        _report(usage)
        return text

    def _attempt(self, request: dict) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self._client.converse(**request)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code not in _RETRYABLE_BEDROCK:
                raise ModelRefused(f"bedrock refused the request ({code})") from None
            return _Retry(code)
        except BotoCoreError as exc:  # timeouts and connection errors
            return _Retry(type(exc).__name__)
        usage = answer.get("usage") if isinstance(answer, dict) else None
        return _bedrock_text(answer), (_usage(usage.get("inputTokens"), usage.get("outputTokens"))
                                       if isinstance(usage, dict) else None)


def _bedrock_text(answer: dict) -> str:
    try:
        blocks = answer["output"]["message"]["content"]
        text = "".join(block["text"] for block in blocks if "text" in block)
    except (KeyError, TypeError):
        raise ModelBadAnswer("bedrock answered without output.message.content") from None
    return _answered(text)


def build_model(ref: str, *, environ: dict, bedrock_client: Optional[Callable[[], Any]] = None,
                http: Any = None, sleep: Callable[[float], None] = time.sleep) -> Model:
    """The client for `ref` (`bedrock:<id>` or `openai:<name>`), configured from `environ`."""
    parsed = ModelRef.parse(ref)
    if parsed.provider == "openai":
        return OpenAICompatible(parsed.name, environ.get("OPENAI_BASE_URL", ""), environ.get("OPENAI_API_KEY"),
                                http=http, sleep=sleep)
    if bedrock_client is None:
        from .aws import client

        bedrock_client = lambda: client("bedrock-runtime")  # noqa: E731
    return Bedrock(parsed.name, bedrock_client(), sleep=sleep)


class ModelCache:
    """One client per model reference per container."""

    def __init__(self, environ: dict, **kwargs: Any):
        self._environ, self._kwargs, self._models = environ, kwargs, {}

    def get(self, ref: str) -> Model:
        if ref not in self._models:
            self._models[ref] = build_model(ref, environ=self._environ, **self._kwargs)
        return self._models[ref]
