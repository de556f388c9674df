"""MemoryFunction: the engine's read of a customer's memory cell and its `remember` write."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler

from facts import layout

T, CUSTOMER = "default", "cust-8842-ana"


@pytest.fixture
def memory(monkeypatch, bucket):
    return load_handler("memory", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket))


def call(handler, event: dict) -> dict:
    return handler.lambda_handler(event, LambdaContext())


def read(handler, customer=CUSTOMER, tenant=T) -> dict:
    return call(handler, {"action": "read", "tenant": tenant, "customer_id": customer})


def test_a_customer_with_no_memory_reads_an_empty_block(memory):
    assert call(memory, load_event("memory-read.json")) == {
        "customer_id": CUSTOMER, "priority": 75, "block": "", "facts": []}


def test_remember_writes_an_engine_fact_that_the_next_read_injects(memory):
    written = call(memory, load_event("memory-remember.json"))
    assert (written["fact"]["name"], written["fact"]["value"], written["fact"]["origin"],
            written["fact"]["revision"]) == ("tamanho_calcado", "43", "engine", 1)
    call(memory, {"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "entrega",
                  "value": 'depois das 18h, portão "azul" & interfone <2>'})
    answer = read(memory)
    assert answer["block"] == ('<memory>\n  <fact name="entrega">depois das 18h, portão "azul" &amp; interfone '
                               '&lt;2&gt;</fact>\n  <fact name="tamanho_calcado">43</fact>\n</memory>')
    assert [f["revision"] for f in answer["facts"]] == [2, 1]


def test_remembering_a_fact_again_gives_it_a_new_revision_and_keeps_the_others(memory):
    for value in ("42", "43"):
        call(memory, {"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "tamanho_calcado",
                      "value": value})
    call(memory, {"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "cidade", "value": "Campinas"})
    facts = {f["name"]: f for f in read(memory)["facts"]}
    assert (facts["tamanho_calcado"]["value"], facts["tamanho_calcado"]["revision"]) == ("43", 2)
    assert facts["cidade"]["revision"] == 3


def test_cells_are_per_tenant_and_customer(memory):
    call(memory, load_event("memory-remember.json"))
    assert read(memory, customer="cust-0001-outro")["facts"] == []
    assert read(memory, tenant="outra-loja")["facts"] == []


def test_concurrent_remembers_are_all_kept(memory):
    names = [f"fato_{i}" for i in range(10)]
    with ThreadPoolExecutor(5) as pool:
        list(pool.map(lambda n: call(memory, {"action": "remember", "tenant": T, "customer_id": CUSTOMER,
                                              "name": n, "value": "sim"}), names))
    facts = read(memory)["facts"]
    assert sorted(f["name"] for f in facts) == names
    assert sorted(f["revision"] for f in facts) == list(range(1, 11))


def test_every_write_is_a_new_version_of_one_object(memory, s3, bucket):
    for value in ("42", "43"):
        call(memory, {"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "tamanho_calcado",
                      "value": value})
    versions = s3.list_object_versions(Bucket=bucket, Prefix=layout.memory_prefix(T, CUSTOMER))["Versions"]
    assert {v["Key"] for v in versions} == {layout.cell_key(T, CUSTOMER)} and len(versions) == 2


@pytest.mark.parametrize("event, code, fragment", [
    ({"action": "forget", "tenant": T, "customer_id": CUSTOMER}, "invalid_request", "action"),
    ({"tenant": T, "customer_id": CUSTOMER}, "invalid_request", "action"),
    ("read", "invalid_request", "JSON object"),
    ({"action": "read", "tenant": "Outra Loja", "customer_id": CUSTOMER}, "invalid_request", "tenant"),
    ({"action": "read", "tenant": T, "customer_id": "../cust"}, "invalid_request", "customer_id"),
    ({"action": "read", "tenant": T}, "invalid_request", "customer_id"),
    ({"action": "read", "tenant": T, "customer_id": CUSTOMER, "scope": "x"}, "invalid_request", "scope: unknown key"),
    ({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "Tamanho Calçado", "value": "43"},
     "invalid_fact", "name"),
    ({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "t", "value": "a" * 501},
     "invalid_request", "value"),
    ({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "t", "value": "linha1\nlinha2"},
     "invalid_fact", "value"),
    ({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "t", "value": 43}, "invalid_request",
     "value"),
    ({"action": "remember", "tenant": T, "customer_id": CUSTOMER, "name": "t", "value": "x",
      "origin": "operator"}, "invalid_request", "origin: unknown key"),
])
def test_bad_requests_answer_a_typed_error_without_quoting_the_value(memory, event, code, fragment):
    answer = call(memory, event)
    assert answer["error"]["code"] == code and fragment in answer["error"]["message"]
    assert "linha1" not in answer["error"]["message"] and "aaaa" not in answer["error"]["message"]


def test_a_cell_that_no_longer_parses_is_refused_not_guessed(memory, s3, bucket):
    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=b'{"v": 1, "facts": "?"}')
    assert read(memory)["error"]["code"] == "record_unreadable"
    answer = call(memory, load_event("memory-remember.json"))
    assert answer["error"]["code"] == "record_unreadable"
