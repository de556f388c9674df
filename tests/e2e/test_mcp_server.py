"""The MCP server (knowledge_client.mcp_server) as an MCP-speaking agent meets it: a real server
process, over stdio and streamable HTTP, spoken to by the SDK's own client, reaching the real
RetrieveFunction and MemoryFunction handlers through the local stack's Lambda Invoke endpoint.
The walkthrough: the agent searches, loads and saves; the saved insight is consolidated by the
real ConsolidateFunction and the studio shows it with its evidence."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

import anyio
import httpx
import pytest
from helpers.aws import drain
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO, ROOT
from helpers.studio import request
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from knowledge.format.concept import parse
from knowledge.format.turn import Turn
from knowledge.store.archive import TurnArchive
from knowledge_dev.lambda_endpoint import LambdaEndpoint
from knowledge_dev.local_aws import free_port
from knowledge_dev.poller import sqs_event

T, A, SESSION, CUSTOMER = "default", "store-support", "sess_mcp_1", "cus-5120"
TOKEN = "t" * 16 + uuid.uuid4().hex
SAID = "Sim: a retirada na loja de Natal fica pronta em 2 horas, sem custo."


@pytest.fixture
def stack(monkeypatch, store, bucket, bus, sessions_bucket, candidates_queue, s3):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    moment = (datetime.now(timezone.utc) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    TurnArchive(s3, sessions_bucket).put(Turn.model_validate({
        "tenant": T, "agent": A, "session_id": SESSION, "turn_id": "turn_0001", "completed_at": moment,
        "messages": [{"role": "user", "content": "Posso retirar na loja de Natal?"},
                     {"role": "assistant", "content": SAID}]}))
    env = dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"], SESSIONS_BUCKET=sessions_bucket,
               CANDIDATES_QUEUE_URL=candidates_queue)
    retrieve = load_handler("retrieve", monkeypatch, **env,
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    memory = load_handler("memory", monkeypatch, KNOWLEDGE_BUCKET=bucket)
    memory.lambda_handler({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "cidade",
                           "value": "Natal"}, LambdaContext())
    endpoint = LambdaEndpoint({"retrieve": (retrieve.lambda_handler, 10_000),
                               "memory": (memory.lambda_handler, 10_000)}).start()
    yield endpoint, env
    endpoint.stop()


def server_args(endpoint) -> list[str]:
    return ["-m", "knowledge_client.mcp_server", "--agent", A, "--endpoint-url", endpoint.url, "--region", "us-east-1"]


def server_env() -> dict[str, str]:
    return {**os.environ, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "KNOWLEDGE_MCP_TOKEN": TOKEN}


async def walk(session: ClientSession) -> dict:
    await session.initialize()
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    seen = {"tools": listed}
    seen["search"] = await session.call_tool("search_knowledge", {"query": "frete grátis Campinas", "limit": 3,
                                                                  "session_id": SESSION})
    seen["load"] = await session.call_tool("load_knowledge", {"name": "cep-sudeste-cd-campinas",
                                                              "session_id": SESSION})
    seen["save"] = await session.call_tool("save_knowledge", {
        "session_id": SESSION, "name": "retirada-natal-2h", "description": "Store pickup in Natal is ready in 2 hours.",
        "type": "fact", "body": "Pickup at the Natal store is ready within 2 hours, free of charge.",
        "evidence": "a retirada na loja de Natal fica pronta em 2 horas"})
    seen["memory"] = await session.call_tool("read_memory", {"customer_id": CUSTOMER})
    seen["bad_input"] = await session.call_tool("load_knowledge", {"name": "Not A Slug"})
    seen["bad_limit"] = await session.call_tool("search_knowledge", {"query": "frete", "limit": 500})
    seen["ungrounded"] = await session.call_tool("save_knowledge", {
        "session_id": SESSION, "name": "entrega-domingo", "description": "We deliver on Sundays.", "type": "fact",
        "body": "Deliveries on Sundays.", "evidence": "entregamos aos domingos em todo o Brasil"})
    seen["missing"] = await session.call_tool("load_knowledge", {"name": "nao-existe"})
    return seen


def structured(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


def text_of(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def check(seen: dict) -> None:
    assert set(seen["tools"]) == {"search_knowledge", "load_knowledge", "save_knowledge", "read_memory"}
    published = {tool["name"]: tool for tool in json.loads((ROOT / "schemas" / "tools.json").read_text())["tools"]}
    for name in ("search_knowledge", "load_knowledge", "save_knowledge"):
        schema = seen["tools"][name].input_schema
        assert set(published[name]["input_schema"]["properties"]) <= set(schema["properties"])
        assert seen["tools"][name].description == published[name]["description"]
    hits = structured(seen["search"])["hits"]
    assert 0 < len(hits) <= 3 and any(hit["injected"] for hit in hits)
    assert structured(seen["load"])["concept"]["name"] == "cep-sudeste-cd-campinas"
    assert structured(seen["save"])["status"] == "queued"
    assert structured(seen["memory"])["block"] == '<memory>\n  <fact name="cidade">Natal</fact>\n</memory>'
    for refused, words in (("bad_input", "name"), ("bad_limit", "limit"), ("ungrounded", "evidence_not_found"),
                           ("missing", "not_found")):
        assert seen[refused].is_error and words in text_of(seen[refused]), (refused, text_of(seen[refused]))


async def over_stdio(endpoint) -> dict:
    params = StdioServerParameters(command=sys.executable, args=server_args(endpoint), env=server_env(), cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        return await walk(session)


def test_an_mcp_client_searches_loads_saves_and_reads_memory_over_stdio(stack, monkeypatch, sqs, candidates_queue,
                                                                         store):
    endpoint, env = stack
    seen = anyio.run(over_stdio, endpoint)
    check(seen)
    # The saved insight, consolidated by the real ConsolidateFunction, is in the studio with its evidence.
    messages = drain(sqs, candidates_queue)
    assert len(messages) == 1
    consolidate = load_handler("consolidate", monkeypatch, **env)
    consolidate.lambda_handler(sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:c.fifo"), LambdaContext())
    studio = load_handler("studio_api", monkeypatch, **env, STUDIO_ORIGIN="http://127.0.0.1")
    base = f"/tenants/{T}/agents/{A}/concepts/retirada-natal-2h"
    history = studio.lambda_handler(request("GET", f"{base}/versions"), LambdaContext())
    assert history["statusCode"] == 200, history
    [version] = json.loads(history["body"])["versions"]
    assert version["evidence"]["session_id"] == SESSION and version["evidence"]["turn_id"] == "turn_0001"
    evidence = studio.lambda_handler(request("GET", f"{base}/versions/{version['version_id']}/evidence"),
                                     LambdaContext())
    assert evidence["statusCode"] == 200, evidence
    assert "a retirada na loja de Natal fica pronta em 2 horas" in json.loads(evidence["body"])["excerpt"]


def wait_for(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("the MCP server did not listen")


@pytest.fixture
def http_server(stack):
    endpoint, _ = stack
    port = free_port()
    process = subprocess.Popen([sys.executable, *server_args(endpoint), "--http", "--port", str(port)], cwd=ROOT,
                               env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(port, process)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


async def over_http(url: str, token: str) -> dict:
    import httpx2

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        return await walk(session)


def test_an_mcp_client_with_the_token_uses_every_tool_over_streamable_http(http_server):
    check(anyio.run(over_http, http_server, TOKEN))


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token-" + "x" * 40},
                                     {"Authorization": f"Basic {TOKEN}"}])
def test_http_refuses_a_request_without_the_token(http_server, headers):
    answer = httpx.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"Accept": "application/json, text/event-stream", **headers})
    assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")


def test_the_sdk_client_with_a_wrong_token_gets_nothing(http_server):
    # The server answers 401 (above); the SDK's client fails its initialize with an MCPError.
    with pytest.raises(ExceptionGroup) as caught:
        anyio.run(over_http, http_server, "wrong-" + TOKEN)
    assert caught.group_contains(MCPError)


def test_http_never_starts_without_an_operator_token(stack):
    endpoint, _ = stack
    env = {**server_env(), "KNOWLEDGE_MCP_TOKEN": ""}
    result = subprocess.run([sys.executable, *server_args(endpoint), "--http", "--port", str(free_port())], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "KNOWLEDGE_MCP_TOKEN" in result.stderr
