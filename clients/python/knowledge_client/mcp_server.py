"""An MCP server exposing one agent's knowledge tools: search, load and save knowledge, and the
customer's memory read. On the official `mcp` SDK, over stdio or streamable HTTP, reaching
RetrieveFunction and MemoryFunction through KnowledgeClient.

    knowledge-mcp --agent store-support [--tenant default]                       # stdio
    KNOWLEDGE_MCP_TOKEN=... knowledge-mcp --agent store-support --http --port 8765   # HTTP, bearer token

Over HTTP every request must carry `Authorization: Bearer <token>`, the token the operator sets in
KNOWLEDGE_MCP_TOKEN (at least 32 characters); without one the server does not start, and a
request without it, or with another, is answered 401 before it reaches MCP. Every argument is
checked against the service's published schema; a refusal is a tool error naming the field or the
reason, never quoting a customer's words.
"""

from __future__ import annotations

import argparse
import hmac
import os
import sys
import uuid
from typing import Annotated, Any, Optional, Sequence

from pydantic import Field

from . import models
from .client import KnowledgeClient
from .errors import KnowledgeClientError, Refused, RequestInvalid
from .tools import TOOLS

TOKEN_ENV = "KNOWLEDGE_MCP_TOKEN"
TOKEN_MIN = 32
_DESCRIBED = {tool["name"]: tool for tool in TOOLS}


def _told(tool: str, field: str) -> str:
    """What the published tool definition tells the model about `field`."""
    return _DESCRIBED[tool]["input_schema"]["properties"][field]["description"]


SessionArg = Annotated[Optional[str], Field(
    default=None, max_length=128, pattern=models.ID_PATTERN,
    description="the support conversation's session id (default: this MCP session's own)")]


def build_server(client: KnowledgeClient, *, name: str = "knowledge") -> Any:
    """The MCP server for `client`'s agent: its four tools, each a call through the client."""
    from anyio import to_thread
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name, instructions=(
        f"Knowledge for agent {client.agent!r} (tenant {client.tenant!r}): search what the store learned from "
        "past conversations, load a concept's full text, save an insight quoted from this conversation, and "
        "read the customer's memory. Learned concepts are observations, not policy."))
    own_session = f"mcp-{uuid.uuid4().hex[:12]}"

    async def through(call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            answer = await to_thread.run_sync(lambda: call(*args, **kwargs))
        except RequestInvalid as exc:
            raise ToolError(f"invalid arguments: {exc}") from None
        except Refused as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        except KnowledgeClientError as exc:
            raise ToolError(f"the knowledge service failed: {exc}") from None
        return answer.model_dump(mode="json")

    @server.tool(name="search_knowledge", description=_DESCRIBED["search_knowledge"]["description"])
    async def search_knowledge(
            query: Annotated[str, Field(min_length=1, max_length=models.RETRIEVE_MESSAGE_MAX,
                                        description=_told("search_knowledge", "query"))],
            limit: Annotated[int, Field(ge=1, le=models.SEARCH_MAX_HITS,
                                        description=_told("search_knowledge", "limit"))] = 10,
            session_id: SessionArg = None) -> dict[str, Any]:
        return await through(client.search_knowledge, session_id or own_session, query, limit)

    @server.tool(name="load_knowledge", description=_DESCRIBED["load_knowledge"]["description"])
    async def load_knowledge(
            name: Annotated[str, Field(max_length=models.SLUG_MAX, pattern=models.SLUG_PATTERN,
                                       description=_told("load_knowledge", "name"))],
            session_id: SessionArg = None) -> dict[str, Any]:
        return await through(client.load_knowledge, session_id or own_session, name)

    @server.tool(name="save_knowledge", description=_DESCRIBED["save_knowledge"]["description"])
    async def save_knowledge(
            session_id: Annotated[str, Field(max_length=128, pattern=models.ID_PATTERN, description=(
                "the support conversation's session id: the evidence is quoted from its turns"))],
            name: Annotated[str, Field(min_length=1, max_length=200, description=_told("save_knowledge", "name"))],
            description: Annotated[str, Field(min_length=1, max_length=300,
                                              description=_told("save_knowledge", "description"))],
            type: Annotated[models.ConceptType, Field(description=_told("save_knowledge", "type"))],
            body: Annotated[str, Field(min_length=1, max_length=16 * 1024,
                                       description=_told("save_knowledge", "body"))],
            evidence: Annotated[str, Field(min_length=1, max_length=1000,
                                           description=_told("save_knowledge", "evidence"))],
            turn_id: Annotated[Optional[str], Field(default=None, max_length=128, pattern=models.ID_PATTERN,
                                                    description="the turn quoted (default: the session's recent "
                                                                "turns)")] = None) -> dict[str, Any]:
        return await through(client.save_knowledge, session_id, name, description, type, body, evidence,
                             turn_id=turn_id)

    @server.tool(name="read_memory", description=(
        "Read what this customer's memory holds (facts the engine remembered or an operator approved), "
        "as a <memory> block and a list."))
    async def read_memory(
            customer_id: Annotated[str, Field(min_length=1, max_length=128, pattern=models.ID_PATTERN,
                                              description="the customer's id, as the engine knows it")],
            session_id: SessionArg = None) -> dict[str, Any]:
        return await through(client.read_memory, customer_id, session_id=session_id)

    return server


class BearerToken:
    """ASGI middleware: every HTTP request carries `Authorization: Bearer <token>`, or is answered 401."""

    def __init__(self, app: Any, token: str):
        self.app, self._token = app, token.encode("utf-8")

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            sent = dict(scope.get("headers") or []).get(b"authorization", b"")
            given = sent[7:] if sent[:7].lower() == b"bearer " else b""
            if not given or not hmac.compare_digest(given, self._token):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="knowledge-mcp"')]})
                await send({"type": "http.response.body", "body": b'{"error": "a valid bearer token is required"}'})
                return
        await self.app(scope, receive, send)


def http_app(server: Any, token: str, host: str = "127.0.0.1") -> Any:
    """The streamable HTTP app (at /mcp) behind the bearer token."""
    if len(token) < TOKEN_MIN:
        raise ValueError(f"the bearer token must be at least {TOKEN_MIN} characters")
    return BearerToken(server.streamable_http_app(host=host), token)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="knowledge-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--http", action="store_true", help="streamable HTTP (at /mcp) instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--endpoint-url", default=os.environ.get("KNOWLEDGE_LAMBDA_ENDPOINT"),
                        help="Lambda's endpoint (the local stack's Invoke API; default: AWS)")
    parser.add_argument("--retrieve-function", default=os.environ.get("KNOWLEDGE_RETRIEVE_FUNCTION", "RetrieveFunction"))
    parser.add_argument("--memory-function", default=os.environ.get("KNOWLEDGE_MEMORY_FUNCTION", "MemoryFunction"))
    parser.add_argument("--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"))
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV, "")
    if args.http and len(token) < TOKEN_MIN:
        parser.error(f"--http needs {TOKEN_ENV}: a bearer token of at least {TOKEN_MIN} characters "
                     "(no anonymous access)")
    try:
        client = KnowledgeClient(args.agent, args.tenant, endpoint_url=args.endpoint_url, region_name=args.region,
                                 retrieve_function=args.retrieve_function, memory_function=args.memory_function)
    except RequestInvalid as exc:
        parser.error(str(exc))
    server = build_server(client)
    if not args.http:
        server.run("stdio")
        return 0
    import uvicorn

    print(f"knowledge-mcp: agent {args.agent!r} on http://{args.host}:{args.port}/mcp (bearer token required)",
          file=sys.stderr, flush=True)
    uvicorn.run(http_app(server, token, args.host), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
