"""The utility model, reached through real client code: Bedrock Converse (boto3) or any
OpenAI-compatible chat-completions endpoint (httpx). Timeouts everywhere; bounded retries
with backoff on throttling and server errors; a model that keeps failing raises
ModelUnavailable so the caller can fail the work item and let the queue retry it.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from .errors import KnowledgeError

MODEL_REF = re.compile(r"(bedrock|openai):([A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199})")
DEFAULT_TIMEOUT = 30.0
DEFAULT_ATTEMPTS = 3
MAX_TOKENS = 2048
_RETRYABLE_BEDROCK = {"ThrottlingException", "ServiceUnavailableException", "InternalServerException",
                      "ModelTimeoutException", "ModelNotReadyException", "TooManyRequestsException"}


class ModelError(KnowledgeError):
    code = "model_error"


class ModelUnavailable(ModelError):
    """The model kept failing (timeouts, throttling, server errors) after bounded retries."""

    code = "model_unavailable"


class ModelConfigError(ModelError):
    code = "model_config"


class Model(Protocol):
    ref: str

    def complete(self, system: str, user: str) -> str: ...


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


def _backoff(attempt: int, retry_after: Optional[float] = None, sleep: Callable[[float], None] = time.sleep) -> None:
    delay = min(8.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2)
    if retry_after is not None:
        delay = max(delay, min(retry_after, 10.0))
    sleep(delay)


class OpenAICompatible:
    """POST {base_url}/chat/completions with httpx."""

    def __init__(self, model: str, base_url: str, api_key: Optional[str], *, http: Any = None,
                 timeout: float = DEFAULT_TIMEOUT, attempts: int = DEFAULT_ATTEMPTS,
                 sleep: Callable[[float], None] = time.sleep):
        import httpx

        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ModelConfigError("OPENAI_BASE_URL must be set to the endpoint's http(s) base URL")
        self.ref = f"openai:{model}"
        self._model, self._url = model, base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = http or httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0))
        self._attempts, self._sleep = attempts, sleep
        self._httpx = httpx

    def complete(self, system: str, user: str) -> str:
        payload = {"model": self._model, "temperature": 0, "max_tokens": MAX_TOKENS,
                   "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        last = "no attempt"
        for attempt in range(self._attempts):
            retry_after = None
            try:
                response = self._http.post(self._url, json=payload, headers=self._headers)
            except self._httpx.TimeoutException:
                last = "timeout"
            except self._httpx.TransportError as exc:
                last = f"transport error ({type(exc).__name__})"
            else:
                if response.status_code == 200:
                    return _openai_text(response)
                last = f"HTTP {response.status_code}"
                if response.status_code != 429 and response.status_code < 500:
                    raise ModelError(f"model endpoint refused the request ({last})")
                retry_after = _seconds(response.headers.get("retry-after"))
            if attempt + 1 < self._attempts:
                _backoff(attempt, retry_after, self._sleep)
        raise ModelUnavailable(f"model {self.ref} failed {self._attempts} times (last: {last})")


def _seconds(value: Optional[str]) -> Optional[float]:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _openai_text(response: Any) -> str:
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ModelError("model endpoint answered without choices[0].message.content") from None
    if not isinstance(content, str):
        raise ModelError("model endpoint answered with non-text content")
    return content


class Bedrock:
    """Bedrock Converse through boto3's bedrock-runtime client."""

    def __init__(self, model_id: str, client: Any, *, attempts: int = DEFAULT_ATTEMPTS,
                 sleep: Callable[[float], None] = time.sleep):
        self.ref = f"bedrock:{model_id}"
        self._model_id, self._client = model_id, client
        self._attempts, self._sleep = attempts, sleep

    def complete(self, system: str, user: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        last = "no attempt"
        for attempt in range(self._attempts):
            try:
                answer = self._client.converse(
                    modelId=self._model_id,
                    system=[{"text": system}],
                    messages=[{"role": "user", "content": [{"text": user}]}],
                    inferenceConfig={"temperature": 0, "maxTokens": MAX_TOKENS},
                )
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code not in _RETRYABLE_BEDROCK:
                    raise ModelError(f"bedrock refused the request ({code})") from None
                last = code
            except BotoCoreError as exc:  # timeouts and connection errors
                last = type(exc).__name__
            else:
                return _bedrock_text(answer)
            if attempt + 1 < self._attempts:
                _backoff(attempt, None, self._sleep)
        raise ModelUnavailable(f"model {self.ref} failed {self._attempts} times (last: {last})")


def _bedrock_text(answer: dict) -> str:
    try:
        blocks = answer["output"]["message"]["content"]
        return "".join(block["text"] for block in blocks if "text" in block)
    except (KeyError, TypeError):
        raise ModelError("bedrock answered without output.message.content") from None


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
