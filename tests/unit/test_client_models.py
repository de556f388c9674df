"""The Python client's models (clients/python) say exactly what the published schemas say: the same
fields, types, limits, patterns and required keys, so a request the client lets through is one the
service accepts, and an answer the service gives is one the client reads."""

from __future__ import annotations

import json

import pytest
from helpers.paths import ROOT
from knowledge_client import TOOLS, models

# schema file -> the client's model (answers ignore unknown fields: a client one release behind
# keeps reading while a deploy rolls, so their closedness is the one thing left out)
REQUESTS = {"turn-complete": models.TurnComplete, "retrieve.request": models.RetrieveRequest,
            "load-knowledge.request": models.LoadRequest, "memory-read.request": models.MemoryReadRequest,
            "memory-remember.request": models.RememberRequest, "search-knowledge.request": models.SearchRequest,
            "save-knowledge.request": models.SaveRequest, "list-knowledge.request": models.ListRequest,
            "knowledge-history.request": models.HistoryRequest, "save-status.request": models.StatusRequest}
ANSWERS = {"retrieve.answer": models.RetrieveAnswer, "load-knowledge.answer": models.LoadAnswer,
           "memory-read.answer": models.MemoryAnswer, "memory-remember.answer": models.RememberAnswer,
           "search-knowledge.answer": models.SearchAnswer, "save-knowledge.answer": models.SaveAnswer,
           "refusal": models.Refusal, "list-knowledge.answer": models.ListAnswer,
           "knowledge-history.answer": models.HistoryAnswer, "save-status.answer": models.StatusAnswer}
PROSE = {"title", "description", "$schema"}


def contract(schema: dict, *, answer: bool) -> dict:
    """The schema with every $ref inlined and its prose (titles, descriptions) left out."""
    defs = schema.get("$defs", {})

    def walk(node):
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
        out = {}
        for key, value in node.items():
            if key in PROSE or key == "$defs" or (answer and key == "additionalProperties" and value is False):
                continue
            # A property named "title" or "description" is a field, not prose.
            out[key] = ({k: walk(v) for k, v in value.items()} if key == "properties" else walk(value))
        return out

    return walk(schema)


def published(name: str) -> dict:
    return json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_each_request_model_is_its_published_schema(name):
    model = REQUESTS[name].model_json_schema(mode="validation")
    assert contract(model, answer=False) == contract(published(name), answer=False)


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_each_answer_model_is_its_published_schema(name):
    model = ANSWERS[name].model_json_schema(mode="serialization")
    assert contract(model, answer=True) == contract(published(name), answer=True)


def test_every_published_call_schema_has_a_client_model():
    calls = {path.name.removesuffix(".schema.json") for path in (ROOT / "schemas").glob("*.schema.json")}
    assert calls - {"sighting"} == set(REQUESTS) | set(ANSWERS)


def test_a_drifted_model_is_caught():
    class Drifted(models.RetrieveRequest):
        message: str = models.Field(max_length=9000)

    assert contract(Drifted.model_json_schema(), answer=False) != contract(published("retrieve.request"),
                                                                           answer=False)


def test_the_clients_tool_definitions_are_the_published_ones():
    assert TOOLS == json.loads((ROOT / "schemas" / "tools.json").read_text())["tools"]


def test_every_refusal_code_the_contract_lists_has_a_typed_client_error():
    from knowledge_client.errors import REFUSALS, Refused

    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    table = text[text.index("| code | answered by |"):text.index("## Faults, deadlines")]
    codes = {line.split("|")[1].strip().strip("`") for line in table.splitlines()
             if line.startswith("| `") and line.count("|") == 5}
    assert {"invalid_request", "not_found", "gated", "busy"} <= codes
    assert codes <= set(REFUSALS)
    assert all(issubclass(REFUSALS[code], Refused) and REFUSALS[code].code == code for code in codes)
