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
from typing import Optional

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
OTHER_SESSION, OTHER_CUSTOMER = "sess_mcp_other", "cus-9931"
OTHER_SAID = "Entregamos aos domingos em Natal, sem taxa extra."
CPF = "529.982.247-25"
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
    # Another conversation of the same agent, with another customer: never this server's to quote.
    TurnArchive(s3, sessions_bucket).put(Turn.model_validate({
        "tenant": T, "agent": A, "session_id": OTHER_SESSION, "turn_id": "turn_0001", "completed_at": moment,
        "messages": [{"role": "user", "content": "Vocês entregam no domingo?"},
                     {"role": "assistant", "content": OTHER_SAID}]}))
    env = dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"], SESSIONS_BUCKET=sessions_bucket,
               CANDIDATES_QUEUE_URL=candidates_queue)
    retrieve = load_handler("retrieve", monkeypatch, env,
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    memory = load_handler("memory", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket))
    memory.lambda_handler({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "cidade",
                           "value": "Natal"}, LambdaContext())
    memory.lambda_handler({"action": "remember", "tenant": T, "customer_id": OTHER_CUSTOMER, "name": "endereco",
                           "value": "Rua das Flores 12"}, LambdaContext())
    endpoint = LambdaEndpoint({"retrieve": (retrieve.lambda_handler, 10_000),
                               "memory": (memory.lambda_handler, 10_000)}).start()
    yield endpoint, env
    endpoint.stop()


def server_args(endpoint, agent: str = A) -> list[str]:
    return ["-m", "knowledge_client.mcp_server", "--agent", agent, "--endpoint-url", endpoint.url,
            "--region", "us-east-1"]


BOUND = ["--customer", CUSTOMER, "--session", SESSION]


def server_env() -> dict[str, str]:
    return {**os.environ, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "KNOWLEDGE_MCP_TOKEN": TOKEN}


async def walk(session: ClientSession, settle) -> dict:
    await session.initialize()
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    seen = {"tools": listed}
    seen["search"] = await session.call_tool("search_knowledge", {"query": "frete grátis Campinas", "limit": 3})
    seen["load"] = await session.call_tool("load_knowledge", {"name": "cep-sudeste-cd-campinas"})
    seen["save"] = await session.call_tool("save_knowledge", {
        "name": "retirada-natal-2h", "description": "Store pickup in Natal is ready in 2 hours.",
        "type": "fact", "body": "Pickup at the Natal store is ready within 2 hours, free of charge.",
        "evidence": "a retirada na loja de Natal fica pronta em 2 horas"})
    saved = structured(seen["save"])["save_id"]
    seen["status"] = await session.call_tool("save_status", {"save_id": saved})
    await anyio.to_thread.run_sync(settle)  # the real ConsolidateFunction applies the saved sighting
    seen["settled"] = await session.call_tool("save_status", {"save_id": saved})
    other_id = OTHER_SESSION + saved[len(SESSION):]  # another conversation's id: never this server's to ask
    seen["other_status"] = await session.call_tool("save_status", {"save_id": other_id})
    seen["memory"] = await session.call_tool("read_memory", {})
    # The model names another customer: the bound one's memory is what it gets.
    seen["other_memory"] = await session.call_tool("read_memory", {"customer_id": OTHER_CUSTOMER})
    # A quote from another conversation of the agent, even naming it: not this conversation's to quote.
    seen["other_quote"] = await session.call_tool("save_knowledge", {
        "name": "entrega-domingo-natal", "description": "We deliver on Sundays in Natal.", "type": "fact",
        "body": "Sunday deliveries in Natal.", "evidence": OTHER_SAID, "session_id": OTHER_SESSION})
    seen["bad_input"] = await session.call_tool("load_knowledge", {"name": "Not A Slug"})
    seen["bad_limit"] = await session.call_tool("search_knowledge", {"query": "frete", "limit": 500})
    seen["cpf_arg"] = await session.call_tool("search_knowledge", {"query": f"cpf {CPF}", "limit": 500})
    seen["cpf_name"] = await session.call_tool("load_knowledge", {"name": f"cpf {CPF}"})
    seen["cpf_slug"] = await session.call_tool("load_knowledge", {"name": "cpf-52998224725"})
    seen["ungrounded"] = await session.call_tool("save_knowledge", {
        "name": "entrega-domingo", "description": "We deliver on Sundays.", "type": "fact",
        "body": "Deliveries on Sundays.", "evidence": "entregamos aos domingos em todo o Brasil"})
    seen["missing"] = await session.call_tool("load_knowledge", {"name": "nao-existe"})
    seen["list"] = await session.call_tool("list_knowledge", {"limit": 2})
    seen["list_more"] = await session.call_tool("list_knowledge", {
        "limit": 100, "after": structured(seen["list"])["next_after"]})
    seen["history"] = await session.call_tool("knowledge_history", {"name": "cep-sudeste-cd-campinas"})
    version = structured(seen["history"])["versions"][0]["version_id"]
    seen["version"] = await session.call_tool("knowledge_history", {"name": "cep-sudeste-cd-campinas",
                                                                    "version_id": version})
    return seen


def structured(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


def text_of(result) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def check(seen: dict) -> None:
    assert set(seen["tools"]) == {"search_knowledge", "load_knowledge", "save_knowledge", "read_memory",
                                  "list_knowledge", "knowledge_history", "save_status"}
    assert structured(seen["status"])["status"] == "queued"
    settled = structured(seen["settled"])
    assert settled["status"] == "created" and settled["name"] == "retirada-natal-2h" and settled["settled_at"]
    assert seen["other_status"].is_error and "not_found" in text_of(seen["other_status"])
    demo = sorted(path.stem for path in DEMO.glob("*.md"))
    assert [c["name"] for c in structured(seen["list"])["concepts"] + structured(seen["list_more"])["concepts"]] == demo
    assert structured(seen["list"])["total"] == len(demo)
    [created] = structured(seen["history"])["versions"]
    assert created["actor"] == "engine" and created["reason"] == "created"
    assert "name: cep-sudeste-cd-campinas\n" in structured(seen["version"])["markdown"]
    published = {tool["name"]: tool for tool in json.loads((ROOT / "schemas" / "tools.json").read_text())["tools"]}
    for name in ("search_knowledge", "load_knowledge", "save_knowledge"):
        schema = seen["tools"][name].input_schema
        assert set(published[name]["input_schema"]["properties"]) <= set(schema["properties"])
        assert seen["tools"][name].description == published[name]["description"]
        assert "session_id" not in schema["properties"], "the model never chooses the conversation"
    assert seen["tools"]["read_memory"].input_schema.get("properties", {}) == {}
    hits = structured(seen["search"])["hits"]
    assert 0 < len(hits) <= 3 and any(hit["injected"] for hit in hits)
    assert structured(seen["load"])["concept"]["name"] == "cep-sudeste-cd-campinas"
    assert structured(seen["save"])["status"] == "queued"
    mine = '<memory>\n  <fact name="cidade">Natal</fact>\n</memory>'
    assert structured(seen["memory"])["block"] == mine
    other = seen["other_memory"]
    assert other.is_error or structured(other)["block"] == mine
    assert "Rua das Flores" not in text_of(other) + json.dumps(other.structured_content or {})
    assert seen["other_quote"].is_error and "evidence_not_found" in text_of(seen["other_quote"])
    for refused, words in (("bad_input", "name"), ("bad_limit", "limit"), ("ungrounded", "evidence_not_found"),
                           ("missing", "not_found"), ("cpf_arg", "limit"), ("cpf_name", "name"),
                           ("cpf_slug", "not_found")):
        assert seen[refused].is_error and words in text_of(seen[refused]), (refused, text_of(seen[refused]))
    for refused in ("cpf_arg", "cpf_name", "cpf_slug"):
        said = text_of(seen[refused])
        assert CPF not in said and "52998224725" not in said and "input_value" not in said, said


@pytest.fixture
def settle(stack, monkeypatch, sqs, candidates_queue):
    """Drains the CandidatesQueue through the real ConsolidateFunction; what it applied is kept."""
    _, env = stack
    consolidate = load_handler("consolidate", monkeypatch, env)
    applied: list[dict] = []

    def run() -> None:
        messages = drain(sqs, candidates_queue)
        applied.extend(messages)
        if messages:
            consolidate.lambda_handler(sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:c.fifo"),
                                       LambdaContext())

    run.applied = applied
    return run


async def over_stdio(endpoint, settle) -> dict:
    params = StdioServerParameters(command=sys.executable, args=[*server_args(endpoint), *BOUND], env=server_env(),
                                   cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        return await walk(session, settle)


def test_an_mcp_client_searches_loads_saves_and_reads_memory_over_stdio(stack, monkeypatch, sqs, candidates_queue,
                                                                         store, settle):
    endpoint, env = stack
    seen = anyio.run(over_stdio, endpoint, settle)
    check(seen)
    # The saved insight, consolidated by the real ConsolidateFunction, is in the studio with its evidence.
    settle()
    assert len(settle.applied) == 1, "only the bound conversation's quote was saved"
    studio = load_handler("studio_api", monkeypatch, dict(env, STUDIO_ORIGIN="http://127.0.0.1"))
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


async def over_http(url: str, token: str, settle=lambda: None, bound: Optional[dict] = None) -> dict:
    import httpx2

    headers = {"Authorization": f"Bearer {token}",
               **({"Knowledge-Customer": CUSTOMER, "Knowledge-Session": SESSION} if bound is None else bound)}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        return await walk(session, settle)


def test_an_mcp_client_with_the_token_uses_every_tool_over_streamable_http(http_server, settle):
    check(anyio.run(over_http, http_server, TOKEN, settle))


def test_an_http_server_for_a_mistyped_agent_answers_unknown_agent(stack):
    endpoint, _ = stack
    port = free_port()
    process = subprocess.Popen([sys.executable, *server_args(endpoint, "store-suport"), "--http", "--port", str(port)],
                               cwd=ROOT, env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(port, process)

        async def run() -> tuple:
            import httpx2

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http, \
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                return (await session.call_tool("list_knowledge", {}),
                        await session.call_tool("load_knowledge", {"name": "cep-sudeste-cd-campinas"}))

        for result in anyio.run(run):
            assert result.is_error and "unknown_agent" in text_of(result), text_of(result)
    finally:
        process.terminate()
        process.wait(timeout=10)


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


async def unbound_calls(session: ClientSession) -> dict:
    await session.initialize()
    tools = {tool.name for tool in (await session.list_tools()).tools}
    seen = {"tools": tools, "search": await session.call_tool("search_knowledge", {"query": "frete"})}
    if "read_memory" in tools:
        seen["memory"] = await session.call_tool("read_memory", {"customer_id": OTHER_CUSTOMER})
    seen["save"] = await session.call_tool("save_knowledge", {
        "name": "retirada-natal-2h", "description": "Store pickup in Natal is ready in 2 hours.", "type": "fact",
        "body": "Pickup in 2 hours.", "evidence": "a retirada na loja de Natal fica pronta em 2 horas",
        "session_id": SESSION})
    return seen


def test_an_http_session_started_without_a_customer_reads_no_memory_and_quotes_no_session(http_server, sqs,
                                                                                         candidates_queue):
    async def run() -> dict:
        import httpx2

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http, \
                streamable_http_client(http_server, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            return await unbound_calls(session)

    seen = anyio.run(run)
    assert not seen["search"].is_error
    assert seen["memory"].is_error and "customer_not_bound" in text_of(seen["memory"])
    assert "Rua das Flores" not in text_of(seen["memory"])
    assert seen["save"].is_error and "session_not_bound" in text_of(seen["save"])
    assert drain(sqs, candidates_queue) == []


def test_an_http_sessions_binding_cannot_be_changed_by_a_later_request(http_server):
    base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
            "Knowledge-Customer": CUSTOMER, "Knowledge-Session": SESSION}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    started = httpx.post(http_server, json=init, headers=base)
    assert started.status_code == 200, started.text
    mcp_session = started.headers["mcp-session-id"]
    moved = httpx.post(http_server, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                       headers={**base, "Mcp-Session-Id": mcp_session, "Knowledge-Customer": OTHER_CUSTOMER})
    assert moved.status_code == 409 and OTHER_CUSTOMER not in moved.text
    bad = httpx.post(http_server, json=init, headers={**base, "Knowledge-Customer": f"cpf {CPF}"})
    assert bad.status_code == 400 and CPF not in bad.text


def test_a_stdio_server_without_a_customer_offers_no_read_memory_and_a_typo_is_unknown_agent(stack):
    endpoint, _ = stack

    async def run(agent: str) -> dict:
        params = StdioServerParameters(command=sys.executable, args=server_args(endpoint, agent), env=server_env(),
                                       cwd=str(ROOT))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await unbound_calls(session)

    seen = anyio.run(run, A)
    assert "read_memory" not in seen["tools"] and "memory" not in seen and "list_knowledge" in seen["tools"]
    assert seen["save"].is_error and "session_not_bound" in text_of(seen["save"])
    typo = anyio.run(run, "store-suport")
    assert typo["search"].is_error and "unknown_agent" in text_of(typo["search"])
