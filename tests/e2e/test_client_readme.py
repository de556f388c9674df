"""The README's "An engine's integration in ten lines", run as written (the ports moved to free ones)
against a real `./run local` process: the Python client reaches the real handlers through the local
stack's Lambda Invoke endpoint, and the turn it sends is extracted by the stack's own poller."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import boto3
import pytest
from helpers.paths import ROOT

from knowledge_dev.local_aws import free_port

READY = "Ctrl-C stops the stack"
MARK = "<!-- engine-in-ten-lines"


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(MARK):]
    return re.search(r"```python\n(.*?)```", after, re.DOTALL).group(1)


@pytest.fixture
def local_stack(tmp_path):
    ports = {"moto": free_port(), "model": free_port(), "studio": free_port(), "lambda": free_port()}
    env = {**os.environ, "KNOWLEDGE_LOCAL_STATE": str(tmp_path / "stack.json"), "PYTHONUNBUFFERED": "1"}
    for key in ("AWS_ENDPOINT_URL", "KNOWLEDGE_BUCKET", "SESSIONS_BUCKET", "UTILITY_MODEL", "OPENAI_BASE_URL"):
        env.pop(key, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "knowledge_dev.stack", "--port", str(ports["moto"]), "--data", str(tmp_path / "data"),
         "--model-port", str(ports["model"]), "--studio-port", str(ports["studio"]),
         "--lambda-port", str(ports["lambda"])],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = [""]
    deadline = time.monotonic() + 60
    while READY not in output[0]:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            raise AssertionError(f"the stack exited early:\n{output[0]}")
        output[0] += line
        assert time.monotonic() < deadline, output[0]

    def read() -> None:
        for line in process.stdout:
            output[0] += line

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    yield ports, env, output
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    reader.join(timeout=10)
    process.stdout.close()


def test_the_readmes_ten_lines_run_against_the_local_stack(local_stack, tmp_path):
    ports, env, output = local_stack
    assert f"endpoint_url=http://127.0.0.1:{ports['lambda']}" in output[0]
    code = readme_example().replace(":4598", f":{ports['lambda']}").replace(":4599", f":{ports['moto']}")
    code += "\nprint(answer.concepts[0].name, concept.concept.type, memory.priority)\n"
    script = tmp_path / "engine.py"
    script.write_text(code, encoding="utf-8")
    run_env = {**env, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
    result = subprocess.run([sys.executable, str(script)], env=run_env, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["frete-gratis-acima-199", "policy", "75"]  # the free-shipping policy first
    # The turn sent reached the stack's TurnCompleteQueue and was archived by the real ExtractFunction.
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{ports['moto']}", region_name="us-east-1",
                      aws_access_key_id="local", aws_secret_access_key="local")
    deadline = time.monotonic() + 30
    while True:
        keys = [item["Key"] for item in s3.list_objects_v2(Bucket="local-sessions-bucket",
                                                           Prefix="default/store-support/turns/").get("Contents", [])]
        if any(key.endswith("/sess_1/turn_1.json") for key in keys):
            break
        assert time.monotonic() < deadline, output[0][-3000:]
        time.sleep(0.5)


def test_run_mcp_serves_the_local_stack_to_an_mcp_client(local_stack):
    """`./run mcp` (knowledge_dev.mcp_local): the MCP server on the running stack, spoken to by the SDK's client."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    _, env, _ = local_stack

    async def search() -> tuple[set, dict]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "knowledge_dev.mcp_local", "--customer",
                                                                     "cus_77120", "--session", "sess_demo_01"],
                                       env=env, cwd=str(ROOT))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            found = await session.call_tool("search_knowledge", {"query": "frete grátis Campinas"})
            return tools, found.structured_content

    tools, found = anyio.run(search)
    assert tools == {"search_knowledge", "load_knowledge", "save_knowledge", "save_status", "list_knowledge",
                     "knowledge_history", "read_memory"}
    assert found["hits"][0]["name"] in {"frete-gratis-acima-199", "cep-sudeste-cd-campinas"}


def test_run_mcp_says_when_the_stack_is_not_running(tmp_path):
    env = {**os.environ, "KNOWLEDGE_LOCAL_STATE": str(tmp_path / "absent.json")}
    result = subprocess.run([sys.executable, "-m", "knowledge_dev.mcp_local"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1 and "./run local" in result.stderr
