"""The published request and answer schemas of the direct calls (schemas/*.request / *.answer) say
what the real handlers accept and answer: the sample events are valid requests, every answer and
refusal validates, and a request the schema refuses is refused by the function too."""

from __future__ import annotations

import json
import uuid

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO, ROOT
from jsonschema import Draft202012Validator

from knowledge.format.concept import parse

T, A, CUSTOMER = "default", "store-support", "cust-8842-ana"


def schema(name: str) -> Draft202012Validator:
    document = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(document)
    return Draft202012Validator(document)


@pytest.fixture
def retrieve(monkeypatch, store, bucket, bus):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


@pytest.fixture
def memory(monkeypatch, bucket):
    return load_handler("memory", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket))


def call(handler, event: dict) -> dict:
    return handler.lambda_handler(event, LambdaContext())


CALLS = [("retrieve", "retrieve", "retrieve.json"), ("load-knowledge", "retrieve", "load-knowledge.json"),
         ("memory-remember", "memory", "memory-remember.json"), ("memory-read", "memory", "memory-read.json")]


@pytest.mark.parametrize("call_name, function, event", CALLS)
def test_the_sample_event_is_a_valid_request_and_its_answer_validates(call_name, function, event, request):
    handler = request.getfixturevalue(function)
    sample = load_event(event)
    schema(f"{call_name}.request").validate(sample)
    answer = call(handler, sample)
    assert "error" not in answer
    schema(f"{call_name}.answer").validate(answer)


def test_a_read_of_a_customer_with_facts_validates_with_its_facts(memory):
    call(memory, load_event("memory-remember.json"))
    answer = call(memory, load_event("memory-read.json"))
    assert [fact["name"] for fact in answer["facts"]] == ["tamanho_calcado"]
    schema("memory-read.answer").validate(answer)


def test_an_empty_retrieve_validates_with_no_tool(retrieve):
    answer = call(retrieve, {**load_event("retrieve.json"), "agent": "nobody-here"})
    assert answer["tool"] is None and answer["block"] == "" and answer["reason"] == "unknown_agent"
    schema("retrieve.answer").validate(answer)


# Each broken request: refused by the published schema and, the same way, by the function.
BROKEN = [
    ("retrieve", "retrieve.json", {"messge": "typo"}),
    ("retrieve", "retrieve.json", {"message": "x" * 8001}),
    ("retrieve", "retrieve.json", {"agent": "Store Support"}),
    ("retrieve", "retrieve.json", {"session_id": ""}),
    ("load-knowledge", "load-knowledge.json", {"name": None}),
    ("load-knowledge", "load-knowledge.json", {"session_id": "has space"}),
    ("memory-read", "memory-read.json", {"customer_id": "../x"}),
    ("memory-read", "memory-read.json", {"tenant": None}),
    ("memory-remember", "memory-remember.json", {"value": ""}),
    ("memory-remember", "memory-remember.json", {"colour": "blue"}),
]


@pytest.mark.parametrize("call_name, event, change", BROKEN)
def test_a_request_the_schema_refuses_the_function_refuses(call_name, event, change, request):
    handler = request.getfixturevalue("memory" if call_name.startswith("memory") else "retrieve")
    broken = {**load_event(event), **change}
    assert not schema(f"{call_name}.request").is_valid(broken)
    answer = call(handler, broken)
    schema("refusal").validate(answer)
    assert answer["error"]["code"] == "invalid_request"


def test_a_refusal_for_an_unknown_concept_validates(retrieve):
    answer = call(retrieve, {**load_event("load-knowledge.json"), "name": "nao-existe"})
    schema("refusal").validate(answer)
    assert answer["error"]["code"] == "not_found"
