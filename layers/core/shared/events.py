"""Publishing on the EventBridge bus, for both loops: identifiers only, never what a concept or a fact says."""

from __future__ import annotations

import json
from typing import Any, Callable, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from shared.errors import EventPublishError

SOURCE = "knowledge"  # the stack's source on the bus, for both loops' events


class Events(Protocol):
    def publish(self, detail_type: str, detail: dict[str, str]) -> None: ...


class EventBridgeEvents:
    """Publishes to one bus. The client is built on the first publish (retrieval publishes only
    on load_knowledge, so its cold start need not build one)."""

    def __init__(self, client_factory: Callable[[], Any], bus_name: str):
        self._factory, self._events, self.bus_name = client_factory, None, bus_name

    def publish(self, detail_type: str, detail: dict[str, str]) -> None:
        if self._events is None:
            self._events = self._factory()
        try:
            answer = self._events.put_events(Entries=[{
                "Source": SOURCE, "DetailType": detail_type, "Detail": json.dumps(detail),
                "EventBusName": self.bus_name,
            }])
        except ClientError as exc:
            raise EventPublishError(f"event not published ({exc.response.get('Error', {}).get('Code', '?')})") from None
        except BotoCoreError as exc:
            raise EventPublishError(f"event not published ({type(exc).__name__})") from None
        if answer.get("FailedEntryCount"):
            codes = sorted({e.get("ErrorCode", "?") for e in answer.get("Entries", []) if e.get("ErrorCode")})
            raise EventPublishError(f"event not published ({', '.join(codes)})")
