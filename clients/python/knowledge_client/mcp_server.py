"""An MCP server exposing one agent's knowledge tools, bound to one conversation (search, load and save
knowledge, the customer's memory read), on the official `mcp` SDK over stdio or streamable HTTP
(bearer token KNOWLEDGE_MCP_TOKEN), reaching RetrieveFunction and MemoryFunction through
KnowledgeClient. The engine binds the customer and session, never the model: no tool argument names
either. docs/integrations.md, "Knowledge as MCP tools"."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from typing import Annotated, Any, Callable, Optional, Sequence

from mcp.server.mcpserver import Context  # the SDK reads the tools' annotations from this module
from pydantic import Field, ValidationError

from . import models
from .client import KnowledgeClient, describe
from .errors import KnowledgeClientError, Refused, RequestInvalid
from .mcp_http import Binding, Bindings, BoundFront
from .tools import TOOLS

TOKEN_ENV = "KNOWLEDGE_MCP_TOKEN"
TOKEN_MIN = 32
_DESCRIBED = {tool["name"]: tool for tool in TOOLS}
SAVE_UNBOUND = ("session_not_bound: save_knowledge quotes only the conversation this server is bound to, and none "
                "is (stdio: start the server with --session; HTTP: start the MCP session with a Knowledge-Session "
                "header)")
MEMORY_UNBOUND = ("customer_not_bound: read_memory reads only the customer this server is bound to, and none is "
                  "(stdio: --customer; HTTP: a Knowledge-Customer header when the MCP session starts)")


def _told(tool: str, field: str) -> str:
    """What the published tool definition tells the model about `field`."""
    return _DESCRIBED[tool]["input_schema"]["properties"][field]["description"]


def _scrubbed(message: str, arguments: dict[str, Any]) -> str:
    """The service's message without any argument's value in it (a name can carry a CPF too)."""
    for value in arguments.values():
        if isinstance(value, str) and len(value) >= 3:
            message = message.replace(value, "(the argument)")
    return message


def build_server(client: KnowledgeClient, *, name: str = "knowledge", binding: Optional[Binding] = None,
                 bindings: Optional[Bindings] = None) -> Any:
    """The MCP server for `client`'s agent. `binding`: the one conversation of a stdio server;
    `bindings`: each MCP session's, for HTTP (knowledge_client.mcp_http). Neither: nothing bound."""
    from anyio import to_thread
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

    class Server(MCPServer):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError) and not isinstance(exc, UnexpectedToolError):
                    # The SDK's own text quotes each rejected value: the fields and the rules only.
                    raise ToolError(f"invalid arguments: {describe(exc.__cause__)}") from exc.__cause__
                raise

    per_session = bindings is not None
    fixed = binding or Binding()
    server = Server(name, instructions=(
        f"Knowledge for agent {client.agent!r} (tenant {client.tenant!r}): search what the store learned from "
        "past conversations, load a concept's full text, save an insight quoted from this conversation, and "
        "read this customer's memory. Learned concepts are observations, not policy."))
    own_session = f"mcp-{uuid.uuid4().hex[:12]}"

    def bound(ctx: Any) -> Binding:
        if not per_session:
            return fixed
        headers = ctx.headers or {}
        return bindings.of(headers.get("mcp-session-id"))  # type: ignore[union-attr]

    async def through(call: Callable[..., Any], arguments: dict[str, Any], *args: Any, **kwargs: Any) -> dict:
        try:
            answer = await to_thread.run_sync(lambda: call(*args, **kwargs))
        except RequestInvalid as exc:
            raise ToolError(f"invalid arguments: {_scrubbed(str(exc), arguments)}") from None
        except Refused as exc:
            raise ToolError(f"{exc.code}: {_scrubbed(exc.message, arguments)}") from None
        except KnowledgeClientError as exc:
            raise ToolError(f"the knowledge service failed: {_scrubbed(str(exc), arguments)}") from None
        return answer.model_dump(mode="json")

    @server.tool(name="search_knowledge", description=_DESCRIBED["search_knowledge"]["description"])
    async def search_knowledge(
            ctx: Context,
            query: Annotated[str, Field(min_length=1, max_length=models.RETRIEVE_MESSAGE_MAX,
                                        description=_told("search_knowledge", "query"))],
            limit: Annotated[int, Field(ge=1, le=models.SEARCH_MAX_HITS,
                                        description=_told("search_knowledge", "limit"))] = 10) -> dict[str, Any]:
        session = bound(ctx).session_id or own_session
        return await through(client.search_knowledge, {"query": query}, session, query, limit)

    @server.tool(name="load_knowledge", description=_DESCRIBED["load_knowledge"]["description"])
    async def load_knowledge(
            ctx: Context,
            name: Annotated[str, Field(max_length=models.SLUG_MAX, pattern=models.SLUG_PATTERN,
                                       description=_told("load_knowledge", "name"))]) -> dict[str, Any]:
        return await through(client.load_knowledge, {"name": name}, bound(ctx).session_id or own_session, name)

    @server.tool(name="save_knowledge", description=_DESCRIBED["save_knowledge"]["description"])
    async def save_knowledge(
            ctx: Context,
            name: Annotated[str, Field(min_length=1, max_length=200, description=_told("save_knowledge", "name"))],
            description: Annotated[str, Field(min_length=1, max_length=300,
                                              description=_told("save_knowledge", "description"))],
            type: Annotated[models.ConceptType, Field(description=_told("save_knowledge", "type"))],
            body: Annotated[str, Field(min_length=1, max_length=16 * 1024,
                                       description=_told("save_knowledge", "body"))],
            evidence: Annotated[str, Field(min_length=1, max_length=1000,
                                           description=_told("save_knowledge", "evidence"))],
            turn_id: Annotated[Optional[str], Field(default=None, max_length=128, pattern=models.ID_PATTERN,
                                                    description="the turn of this conversation quoted (default: "
                                                                "its recent turns)")] = None) -> dict[str, Any]:
        session = bound(ctx).session_id
        if session is None:
            raise ToolError(SAVE_UNBOUND)
        arguments = {"name": name, "description": description, "body": body, "evidence": evidence,
                     "turn_id": turn_id}
        return await through(client.save_knowledge, arguments, session, name, description, type, body, evidence,
                             turn_id=turn_id)

    @server.tool(name="save_status", description=(
        "What became of an insight saved in this conversation (save_knowledge's save_id): queued, then created, "
        "confirmed, merged, kept_beside, waiting (for an operator's verdict), contradiction, echoed or replayed."))
    async def save_status(
            ctx: Context,
            save_id: Annotated[str, Field(max_length=200, pattern=models.SAVE_ID_PATTERN,
                                          description="the save_id save_knowledge answered")]) -> dict[str, Any]:
        session = bound(ctx).session_id
        if session is None or save_id.split("~", 1)[0] != session:
            raise ToolError("not_found: no such save in this conversation")
        return await through(client.save_status, {"save_id": save_id}, save_id)

    @server.tool(name="list_knowledge", description=(
        "List what this store has learned, by name, a page at a time (read-only): each concept's summary, "
        "whether it is out of the <knowledge> block and why, and the words customers taught it."))
    async def list_knowledge(
            type: Annotated[Optional[models.ConceptType], Field(description="only this type")] = None,
            provenance: Annotated[Optional[models.Provenance], Field(description="observed or policy")] = None,
            recall: Annotated[Optional[models.RecallFilter], Field(description=(
                "in_recall, expired, not_started, stale, retired, waiting (pairs waiting for a verdict) or "
                "conflict"))] = None,
            since: Annotated[Optional[str], Field(pattern=models.DAY_OR_MOMENT, description=(
                "only concepts updated since this UTC day (YYYY-MM-DD) or moment"))] = None,
            limit: Annotated[int, Field(ge=1, le=models.LIST_MAX, description="a page's size (1 to 100)")] = 50,
            after: Annotated[Optional[str], Field(max_length=models.SLUG_MAX, pattern=models.SLUG_PATTERN,
                                                  description="the previous page's next_after")] = None
    ) -> dict[str, Any]:
        return await through(client.list_knowledge, {"since": since, "after": after}, type=type,
                             provenance=provenance, recall=recall, since=since, limit=limit, after=after)

    @server.tool(name="knowledge_history", description=(
        "A concept's versions, newest first: who wrote each (the engine or an operator), why and when "
        "(read-only); with version_id, that version's text."))
    async def knowledge_history(
            name: Annotated[str, Field(max_length=models.SLUG_MAX, pattern=models.SLUG_PATTERN,
                                       description="the concept's name")],
            version_id: Annotated[Optional[str], Field(min_length=1, max_length=1024, description=(
                "a version from the list, to read its text"))] = None) -> dict[str, Any]:
        return await through(client.knowledge_history, {"name": name, "version_id": version_id}, name, version_id)

    if per_session or fixed.customer_id is not None:
        @server.tool(name="read_memory", description=(
            "Read what this conversation's customer's memory holds (facts the engine remembered or an operator "
            "approved), as a <memory> block and a list."))
        async def read_memory(ctx: Context) -> dict[str, Any]:
            now = bound(ctx)
            if now.customer_id is None:
                raise ToolError(MEMORY_UNBOUND)
            return await through(client.read_memory, {}, now.customer_id, session_id=now.session_id)

    return server


def http_app(server: Any, token: str, bindings: Bindings, host: str = "127.0.0.1") -> Any:
    """The streamable HTTP app (at /mcp) behind the bearer token, each MCP session bound when it starts."""
    if len(token) < TOKEN_MIN:
        raise ValueError(f"the bearer token must be at least {TOKEN_MIN} characters")
    return BoundFront(server.streamable_http_app(host=host), token, bindings)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="knowledge-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--customer", help="stdio: the customer this conversation is with (read_memory reads only "
                                           "theirs; without it read_memory is off)")
    parser.add_argument("--session", help="stdio: the conversation's session id (save_knowledge quotes only its "
                                          "turns; without it save_knowledge is refused)")
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
    if args.http and (args.customer or args.session):
        parser.error("--customer and --session bind a stdio server; over HTTP each MCP session is bound by the "
                     "Knowledge-Customer and Knowledge-Session headers of its first request")
    try:
        binding = Binding.checked(args.customer, args.session)
    except ValueError as exc:
        parser.error(str(exc))
    if not args.http:
        build_server(client, binding=binding).run("stdio")
        return 0
    bindings = Bindings()
    server = build_server(client, bindings=bindings)
    import uvicorn

    print(f"knowledge-mcp: agent {args.agent!r} on http://{args.host}:{args.port}/mcp (bearer token required)",
          file=sys.stderr, flush=True)
    uvicorn.run(http_app(server, token, bindings, args.host), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
