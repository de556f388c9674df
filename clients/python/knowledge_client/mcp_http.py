"""The MCP server's HTTP front (knowledge_client.mcp_server): the operator's bearer token, and each
MCP session's binding to one conversation.

The engine that holds the bearer token binds an MCP session when it starts it: the `initialize`
request (the one without an `Mcp-Session-Id`) may carry `Knowledge-Customer` and `Knowledge-Session`
headers, and the session the server opens is bound to them for its whole life. A later request
cannot change the binding: one that carries either header with another value is answered 409
before it reaches MCP. The model never sees or sets a header; tool arguments name no customer and
no session.
"""

from __future__ import annotations

import hmac
import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional

from . import models

CUSTOMER_HEADER, SESSION_HEADER = b"knowledge-customer", b"knowledge-session"
MCP_SESSION_HEADER = b"mcp-session-id"
HELD = 10_000  # bindings remembered: the SDK ends idle sessions, this only bounds a runaway client
_ID = re.compile(models.ID_PATTERN)


@dataclass(frozen=True)
class Binding:
    """The conversation an MCP server or session may read and quote: the customer whose memory
    read_memory reads, the session save_knowledge quotes (and search and load are counted under)."""

    customer_id: Optional[str] = None
    session_id: Optional[str] = None

    @classmethod
    def checked(cls, customer_id: Optional[str], session_id: Optional[str]) -> "Binding":
        """A ValueError naming the field (never quoting it) when an id breaks the contract's rule."""
        for field, value in (("customer", customer_id), ("session", session_id)):
            if value is not None and (not 1 <= len(value) <= 128 or not _ID.match(value)):
                raise ValueError(f"the {field} binding must be 1-128 letters, digits, '.', '_', ':' or '-'")
        return cls(customer_id, session_id)


class Bindings:
    """Each MCP session's binding, set once when the session starts."""

    def __init__(self) -> None:
        self._by_session: OrderedDict[str, Binding] = OrderedDict()

    def set(self, mcp_session: str, binding: Binding) -> None:
        self._by_session[mcp_session] = binding
        while len(self._by_session) > HELD:
            self._by_session.popitem(last=False)

    def of(self, mcp_session: Optional[str]) -> Binding:
        return self._by_session.get(mcp_session or "", Binding())


async def _answer(send: Any, status: int, message: str, extra: tuple = ()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *extra]})
    await send({"type": "http.response.body", "body": json.dumps({"error": message}).encode()})


def _text(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else value.decode("latin-1")


class BoundFront:
    """ASGI middleware: the bearer token on every request, then each MCP session's binding."""

    def __init__(self, app: Any, token: str, bindings: Bindings):
        self.app, self._token, self.bindings = app, token.encode("utf-8"), bindings

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        sent = headers.get(b"authorization", b"")
        given = sent[7:] if sent[:7].lower() == b"bearer " else b""
        if not given or not hmac.compare_digest(given, self._token):
            await _answer(send, 401, "a valid bearer token is required",
                          ((b"www-authenticate", b'Bearer realm="knowledge-mcp"'),))
            return
        try:
            asked = Binding.checked(_text(headers.get(CUSTOMER_HEADER)), _text(headers.get(SESSION_HEADER)))
        except ValueError as exc:
            await _answer(send, 400, str(exc))
            return
        session = _text(headers.get(MCP_SESSION_HEADER))
        if session is not None:
            bound = self.bindings.of(session)
            if (asked.customer_id not in (None, bound.customer_id)
                    or asked.session_id not in (None, bound.session_id)):
                await _answer(send, 409, "an MCP session's binding is fixed when it starts: open a new MCP "
                                         "session for another conversation")
                return
            await self.app(scope, receive, send)
            return

        async def binding_send(message: dict) -> None:
            # The session the SDK opens for this initialize: its id is in the answer's headers.
            if message["type"] == "http.response.start":
                opened = dict(message.get("headers") or []).get(MCP_SESSION_HEADER)
                if opened is not None:
                    self.bindings.set(opened.decode("latin-1"), asked)
            await send(message)

        await self.app(scope, receive, binding_send)
