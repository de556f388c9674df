"""KnowledgeClient: the engine's calls to Knowledge on boto3 (SQS for the turn, Lambda Invoke for the rest).

Every request is checked against its published schema before it is sent (RequestInvalid names the
field, never the value); every refusal is a typed error (knowledge_client.errors). Retried, with
back-off: the reads (retrieve, load, search, memory read), which change nothing; send_turn, whose
turn carries its own identity (session_id, turn_id) that the service archives once and extracts
once; and save_knowledge, whose sighting's identity is (name, session, turn), applied once. A
remember is sent once: it writes a new revision each time, so after a lost answer the caller decides.
"""

from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping, Optional, TypeVar, Union

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ValidationError

from . import models
from .errors import FunctionFailed, KnowledgeClientError, Refused, RequestInvalid, Unreachable, refused

A = TypeVar("A", bound=BaseModel)
# Lambda's and SQS's answers that mean "try again later".
_TRANSIENT = frozenset({"TooManyRequestsException", "ThrottlingException", "Throttling", "ServiceException",
                        "ServiceUnavailable", "ServiceUnavailableException", "InternalError", "InternalFailure",
                        "RequestTimeout", "RequestTimeoutException", "EC2ThrottledException",
                        "ResourceNotReadyException", "ResourceConflictException",
                        "AWS.SimpleQueueService.Throttling"})
MessageLike = Union[models.Message, Mapping[str, str], tuple[str, str]]


def describe(exc: ValidationError) -> str:
    """`field: problem` for each error, as the service words them; never the value."""
    out = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error.get("loc", ()))
        problem = "unknown key" if error.get("type") == "extra_forbidden" else str(error.get("msg", "invalid"))
        out.append(f"{where}: {problem}" if where else problem)
    return "; ".join(out)


def checked(model: type[A], data: dict[str, Any]) -> A:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestInvalid(describe(exc)) from None


class KnowledgeClient:
    """One agent's calls. `endpoint_url` points Lambda and SQS elsewhere (the local stack's
    Invoke endpoint, `./run local`); the function names are the stack's Outputs
    (RetrieveFunctionName, MemoryFunctionName) or, locally, the template's logical ids."""

    def __init__(self, agent: str, tenant: str = "default", *, turn_queue_url: Optional[str] = None,
                 retrieve_function: str = "RetrieveFunction", memory_function: str = "MemoryFunction",
                 endpoint_url: Optional[str] = None, sqs_endpoint_url: Optional[str] = None,
                 region_name: Optional[str] = None, session: Optional[boto3.session.Session] = None,
                 lambda_client: Any = None, sqs_client: Any = None, attempts: int = 3,
                 timeout_seconds: float = 15.0, sleep: Callable[[float], None] = time.sleep):
        # Fail here, not on the first call, when the agent or tenant could never be valid.
        checked(models.RetrieveRequest, {"tenant": tenant, "agent": agent, "session_id": "s", "message": ""})
        if attempts < 1:
            raise ValueError("attempts must be 1 or more")
        self.agent, self.tenant = agent, tenant
        self.turn_queue_url = turn_queue_url
        self.retrieve_function, self.memory_function = retrieve_function, memory_function
        self.attempts, self._sleep = attempts, sleep
        session = session or boto3.session.Session()
        # botocore's own retries off: which calls are retried is decided here, call by call.
        config = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=timeout_seconds,
                        connect_timeout=min(timeout_seconds, 5.0))
        self._lambda = lambda_client or session.client("lambda", endpoint_url=endpoint_url,
                                                       region_name=region_name, config=config)
        self._sqs_client = sqs_client
        self._sqs_args = {"endpoint_url": sqs_endpoint_url, "region_name": region_name, "config": config}
        self._session = session

    # ------------------------------------------------------------ the turn
    def send_turn(self, session_id: str, turn_id: str, messages: Iterable[MessageLike], *,
                  completed_at: Union[datetime, str, None] = None, customer_id: Optional[str] = None,
                  retrieved: Iterable[str] = (), loaded: Iterable[str] = (),
                  shown: Optional[bool] = None) -> str:
        """Send one completed turn to the TurnCompleteQueue; returns the SQS message id.

        `retrieved`/`loaded`: the names this session was shown by retrieve and loaded so far, this
        turn included (the echo guard); `shown=False` sends no record at all."""
        if not self.turn_queue_url:
            raise RequestInvalid("turn_queue_url: the client was made without the TurnCompleteQueue's URL")
        when = completed_at or datetime.now(timezone.utc)
        if isinstance(when, datetime):
            if when.tzinfo is None:
                raise RequestInvalid("completed_at: must carry a time zone")
            when = when.isoformat(timespec="microseconds").replace("+00:00", "Z")
        body: dict[str, Any] = {"tenant": self.tenant, "agent": self.agent, "session_id": session_id,
                                "turn_id": turn_id, "completed_at": when,
                                "messages": [_message(m) for m in messages]}
        if customer_id is not None:
            body["customer_id"] = customer_id
        if shown is not False:
            # Repeats folded, the most recent 50 kept (the contract's limit).
            body["shown"] = {"retrieved": _recent(retrieved), "loaded": _recent(loaded)}
        turn = checked(models.TurnComplete, body)
        text = turn.model_dump_json(exclude_none=True)
        if len(text.encode("utf-8")) > models.TURN_MAX_BYTES:
            raise RequestInvalid(f"the turn is larger than {models.TURN_MAX_BYTES} bytes")
        answer = self._retrying(lambda: self._sqs().send_message(QueueUrl=self.turn_queue_url, MessageBody=text))
        return answer["MessageId"]

    # ------------------------------------------------------------ RetrieveFunction
    def retrieve(self, session_id: str, message: str) -> models.RetrieveAnswer:
        """The <knowledge> block for this turn's message, the concepts in it and the tool to offer."""
        request = checked(models.RetrieveRequest, {"tenant": self.tenant, "agent": self.agent,
                                                   "session_id": session_id, "message": message})
        return self._invoke(self.retrieve_function, request, models.RetrieveAnswer, retry=True)

    def load_knowledge(self, session_id: str, name: str) -> models.LoadAnswer:
        """One concept's full text (the model's load_knowledge call); counted as adoption."""
        request = checked(models.LoadRequest, {"action": "load_knowledge", "tenant": self.tenant,
                                               "agent": self.agent, "session_id": session_id, "name": name})
        return self._invoke(self.retrieve_function, request, models.LoadAnswer, retry=True)

    def search_knowledge(self, session_id: str, query: str, limit: int = 10) -> models.SearchAnswer:
        """The agent's concepts ranked for `query`, past the block's floor, each saying whether the
        block would carry it."""
        request = checked(models.SearchRequest, {"action": "search_knowledge", "tenant": self.tenant,
                                                 "agent": self.agent, "session_id": session_id, "query": query,
                                                 "limit": limit})
        return self._invoke(self.retrieve_function, request, models.SearchAnswer, retry=True)

    def save_knowledge(self, session_id: str, name: str, description: str, type: str, body: str, evidence: str,
                       *, turn_id: Optional[str] = None) -> models.SaveAnswer:
        """Save an insight grounded on a verbatim quote (`evidence`) from the session's archived turns;
        learned as extraction learns (observed, gated, consolidated). Retried: the same insight from
        the same turn is one sighting, however often it is sent."""
        request = checked(models.SaveRequest, {"action": "save_knowledge", "tenant": self.tenant,
                                               "agent": self.agent, "session_id": session_id, "name": name,
                                               "description": description, "type": type, "body": body,
                                               "evidence": evidence, "turn_id": turn_id})
        return self._invoke(self.retrieve_function, request, models.SaveAnswer, retry=True)

    def save_status(self, save_id: str) -> models.StatusAnswer:
        """What became of a save (its answer's `save_id`): queued until consolidation applies it, then
        created, confirmed, merged, kept_beside, waiting, contradiction, echoed or replayed."""
        request = checked(models.StatusRequest, {"action": "save_status", "tenant": self.tenant, "agent": self.agent,
                                                 "save_id": save_id})
        return self._invoke(self.retrieve_function, request, models.StatusAnswer, retry=True)

    # ------------------------------------------------------------ the builders' reads (read-only)
    def list_knowledge(self, *, type: Optional[str] = None, provenance: Optional[str] = None,
                       recall: Optional[str] = None, since: Union[datetime, str, None] = None, limit: int = 50,
                       after: Optional[str] = None) -> models.ListAnswer:
        """One page of the agent's concepts by name, as load_knowledge may serve them, with each one's
        recall state and learned words; pass `next_after` back as `after` for the next page."""
        if isinstance(since, datetime):
            if since.tzinfo is None:
                raise RequestInvalid("since: must carry a time zone")
            since = since.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        request = checked(models.ListRequest, {"action": "list_knowledge", "tenant": self.tenant,
                                               "agent": self.agent, "type": type, "provenance": provenance,
                                               "recall": recall, "since": since, "limit": limit, "after": after})
        return self._invoke(self.retrieve_function, request, models.ListAnswer, retry=True)

    def iter_knowledge(self, **filters: Any) -> Iterable[models.ListEntry]:
        """Every concept the filters match, page after page."""
        after = None
        while True:
            page = self.list_knowledge(**filters, after=after)
            yield from page.concepts
            if page.next_after is None:
                return
            after = page.next_after

    def knowledge_history(self, name: str, version_id: Optional[str] = None) -> models.HistoryAnswer:
        """A concept's versions, newest first (who wrote each, why, when); with `version_id`, its text."""
        request = checked(models.HistoryRequest, {"action": "knowledge_history", "tenant": self.tenant,
                                                  "agent": self.agent, "name": name, "version_id": version_id})
        return self._invoke(self.retrieve_function, request, models.HistoryAnswer, retry=True)

    # ------------------------------------------------------------ MemoryFunction
    def read_memory(self, customer_id: str, *, session_id: Optional[str] = None) -> models.MemoryAnswer:
        """The customer's memory cell and its <memory> block."""
        request = checked(models.MemoryReadRequest, {"action": "read", "tenant": self.tenant,
                                                     "customer_id": customer_id, "agent": self.agent,
                                                     "session_id": session_id})
        return self._invoke(self.memory_function, request, models.MemoryAnswer, retry=True)

    def remember(self, customer_id: str, name: str, value: str, *,
                 session_id: Optional[str] = None) -> models.RememberAnswer:
        """Write one fact to the customer's memory (origin engine). Sent once: never retried."""
        request = checked(models.RememberRequest, {"action": "remember", "tenant": self.tenant,
                                                   "customer_id": customer_id, "agent": self.agent,
                                                   "session_id": session_id, "name": name, "value": value})
        return self._invoke(self.memory_function, request, models.RememberAnswer, retry=False)

    # ------------------------------------------------------------ the wire
    def _sqs(self) -> Any:
        if self._sqs_client is None:
            self._sqs_client = self._session.client("sqs", **self._sqs_args)
        return self._sqs_client

    def _invoke(self, function: str, request: BaseModel, answer: type[A], *, retry: bool) -> A:
        payload = request.model_dump_json(exclude_none=True).encode("utf-8")

        def once() -> A:
            response = self._lambda.invoke(FunctionName=function, InvocationType="RequestResponse",
                                           Payload=payload)
            body = response["Payload"].read()
            if response.get("FunctionError"):
                raise FunctionFailed(f"{function} failed ({response['FunctionError']}): {_error_text(body)}")
            try:
                data = json.loads(body)
            except ValueError:
                raise FunctionFailed(f"{function} answered something that is not JSON") from None
            if isinstance(data, dict) and set(data) == {"error"}:
                error = models.Refusal.model_validate(data).error
                raise refused(error.code, error.message)
            try:
                return answer.model_validate(data)
            except ValidationError as exc:
                raise FunctionFailed(f"{function} answered outside its schema: {describe(exc)}") from None

        return self._retrying(once) if retry else self._translated(once)

    def _retrying(self, call: Callable[[], Any]) -> Any:
        for attempt in range(1, self.attempts + 1):
            try:
                return self._translated(call)
            except (Unreachable, Refused) as exc:
                if isinstance(exc, Refused) and not exc.retryable or attempt == self.attempts:
                    raise
            # Full jitter: N engines retrying together do not arrive together.
            self._sleep(random.uniform(0, min(2.0, 0.1 * 2 ** attempt)))
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _translated(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code, status = error.get("Code", ""), exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if code in _TRANSIENT or status >= 500 or status == 429:
                raise Unreachable(f"{code or status}: try again later") from None
            raise FunctionFailed(f"{code or status}: {error.get('Message', '')}") from None
        except BotoCoreError as exc:
            raise Unreachable(f"{type(exc).__name__}: the service could not be reached") from None


def _message(message: MessageLike) -> Any:
    if isinstance(message, models.Message):
        return message.model_dump()
    if isinstance(message, tuple) and len(message) == 2:
        return {"role": message[0], "content": message[1]}
    return message


def _recent(names: Iterable[str]) -> list[str]:
    folded = list(dict.fromkeys(names))
    return folded[-models.SHOWN_MAX:]


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
        return str(data.get("errorType") or data.get("errorMessage") or "")[:200]
    except (ValueError, AttributeError):
        return ""


__all__ = ["KnowledgeClient", "KnowledgeClientError"]
