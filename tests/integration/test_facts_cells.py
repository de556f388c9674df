"""A customer's memory cell written outside the engine, through the real MemoryFunction (the engine's
read) and FactsApiFunction (the Facts page): an over-full cell is served bounded and can be shrunk,
and an unreadable one answers what to do and can be restored or reset."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler

from facts import layout

T, A, CUSTOMER = "default", "store-support", "cust-8842-ana"
ANA = {"sub": "3f1c9a52-7d3e-4b8a-9f0e-6a2b1c4d5e6f", "cognito:groups": "[default]"}
MEMORY = f"/tenants/{T}/agents/{A}/facts/customers/{CUSTOMER}/memory"
KEY = "k" * 48


def request(method, path, *, body=None, query=None):
    event = copy.deepcopy(load_event("studio-list-conflicts.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["queryStringParameters"] = query
    event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    event["requestContext"]["authorizer"]["jwt"]["claims"] = ANA
    if body is not None:
        event["body"] = json.dumps(body, ensure_ascii=False)
    return event


@pytest.fixture
def stack(bucket, sessions_bucket):
    return {"KNOWLEDGE_BUCKET": bucket, "SESSIONS_BUCKET": sessions_bucket, "FACTS_KEY": KEY,
            "STUDIO_ORIGIN": "http://127.0.0.1:8080"}


@pytest.fixture
def page(monkeypatch, stack):
    handler = load_handler("facts_api", monkeypatch, stack, POWERTOOLS_SERVICE_NAME=f"facts-{uuid.uuid4().hex[:6]}")

    def call(method, path=MEMORY, **kwargs):
        answer = handler.lambda_handler(request(method, path, **kwargs), LambdaContext())
        return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None
    return call


@pytest.fixture
def engine(monkeypatch, stack):
    handler = load_handler("memory", monkeypatch, stack)
    return lambda event: handler.lambda_handler({"tenant": T, "customer_id": CUSTOMER, **event}, LambdaContext())


START = datetime(2026, 3, 1, tzinfo=timezone.utc)


def outside_cell(count: int) -> bytes:
    """A cell in the stored format with `count` facts, fact_00000 written first, each a second apart."""
    facts = {f"fact_{i:05d}": {"value": f"valor {i} " + "x" * 400, "origin": "legacy",
                               "at": (START + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
                               "revision": i + 1} for i in range(count)}
    return json.dumps({"v": 1, "tenant": T, "customer_id": CUSTOMER, "seq": count, "facts": facts}).encode()


# ------------------------------------------------------------------ 17: an over-full cell


def test_an_over_full_cell_serves_its_200_newest_facts_says_so_and_the_page_shrinks_it(page, engine, s3, bucket):
    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=outside_cell(5000))
    newest = {f"fact_{i:05d}" for i in range(4800, 5000)}

    read = engine({"action": "read"})
    assert {f["name"] for f in read["facts"]} == newest
    assert read["block"].count("<fact ") == 200 and len(read["block"].encode()) < 100_000  # before: 2.1 MB

    status, cell = page("GET")
    assert status == 200 and {f["name"] for f in cell["facts"]} == newest and cell["stored"] == 5000
    assert "5000 facts" in cell["problem"] and "200 most recently written" in cell["problem"]

    # Full: a new fact is refused, an existing one may be edited, and one can be removed.
    status, refused = page("PUT", f"{MEMORY}/cep_entrega", body={"value": "13010-000", "revision": None})
    assert status == 422 and "remove one first" in refused["error"]["message"]
    status, _ = page("PUT", f"{MEMORY}/fact_04999", body={"value": "44", "revision": 5000})
    assert status == 200
    status, stale = page("DELETE", f"{MEMORY}/fact_04998", query={"revision": "1"})
    assert status == 412 and stale["current"]["revision"] == 4999
    status, cell = page("DELETE", f"{MEMORY}/fact_04998", query={"revision": "4999"})
    assert status == 200 and cell["stored"] == 4999 and "fact_04998" not in {f["name"] for f in cell["facts"]}

    # The ones no read serves go in one click; what the agent was served stays.
    served = {f["name"]: f for f in page("GET")[1]["facts"]}
    status, trimmed = page("POST", f"{MEMORY}/trim")
    assert status == 200 and trimmed["removed"] == 4799 and trimmed["stored"] == 200 and trimmed["problem"] is None
    assert {f["name"]: f for f in trimmed["facts"]} == served
    assert {f["name"] for f in engine({"action": "read"})["facts"]} == set(served)

    status, cell = page("DELETE", f"{MEMORY}/fact_04801", query={"revision": "4802"})
    assert status == 200 and cell["stored"] == 199
    status, added = page("PUT", f"{MEMORY}/cep_entrega", body={"value": "13010-000", "revision": None})
    assert status == 200 and added["revision"] == 5002


def test_removing_a_fact_needs_its_revision_and_a_fact_that_is_gone_is_412_with_null(page, engine):
    engine({"action": "remember", "name": "tamanho_calcado", "value": "38"})
    status, refused = page("DELETE", f"{MEMORY}/tamanho_calcado")
    assert status == 422 and "revision" in json.dumps(refused)
    status, cell = page("DELETE", f"{MEMORY}/tamanho_calcado", query={"revision": "1"})
    [removal] = cell.pop("removals")  # who removed it is kept (issue 28): the page's operator, no reason given
    assert (removal["name"], removal["by"], removal["reason"], removal["revision"]) == (
        "tamanho_calcado", ANA["sub"], None, 1)
    assert status == 200 and cell == {"customer_id": CUSTOMER, "scope": f"{T}:{CUSTOMER}", "facts": [],
                                      "stored": 0, "problem": None}
    status, gone = page("DELETE", f"{MEMORY}/tamanho_calcado", query={"revision": "1"})
    assert status == 412 and gone["current"] is None
    assert engine({"action": "read"})["facts"] == []


# ------------------------------------------------------------------ 18: an unreadable cell


def test_an_unreadable_cell_is_a_409_that_says_what_to_do_and_restore_brings_back_its_last_good_version(
        page, engine, s3, bucket):
    engine({"action": "remember", "name": "tamanho_calcado", "value": "38"})
    engine({"action": "remember", "name": "cep_entrega", "value": "13010-000"})
    good = page("GET")[1]
    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=b'{"v": 1, "facts": "?"}')

    for method, path, body in (("GET", MEMORY, None),
                               ("PUT", f"{MEMORY}/cor_favorita", {"value": "azul", "revision": None})):
        status, refused = page(method, path, body=body)
        assert status == 409 and refused["error"]["code"] == "record_unreadable", method
        assert "restore" in refused["error"]["message"] and "reset" in refused["error"]["message"]
    assert engine({"action": "read"})["error"]["code"] == "record_unreadable"

    status, restored = page("POST", f"{MEMORY}/restore")
    assert status == 200 and restored == good
    assert [f["value"] for f in engine({"action": "read"})["facts"]] == ["13010-000", "38"]
    status, refused = page("POST", f"{MEMORY}/restore")
    assert status == 409 and refused["error"]["code"] == "cell_readable"
    status, added = page("PUT", f"{MEMORY}/cor_favorita", body={"value": "azul", "revision": None})
    assert status == 200 and added["revision"] == 3


def test_an_unreadable_cell_with_no_good_version_is_reset_only_when_the_operator_confirms(page, engine, s3, bucket):
    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=b"\xff not json")
    status, refused = page("POST", f"{MEMORY}/restore")
    assert status == 409 and refused["error"]["code"] == "no_version_to_restore"
    status, refused = page("POST", f"{MEMORY}/reset", body={"confirm": "cust-0000-outro"})
    assert status == 422 and "customer id" in refused["error"]["message"]
    assert s3.get_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER))["Body"].read() == b"\xff not json"

    status, reset = page("POST", f"{MEMORY}/reset", body={"confirm": CUSTOMER})
    assert status == 200 and reset["facts"] == [] and reset["stored"] == 0
    # Revisions go on from the clock, above anything the lost cell handed out.
    fact = engine({"action": "remember", "name": "tamanho_calcado", "value": "38"})["fact"]
    assert fact["revision"] > 10**15
    status, refused = page("POST", f"{MEMORY}/reset", body={"confirm": CUSTOMER})
    assert status == 409 and refused["error"]["code"] == "cell_readable"
    assert engine({"action": "read"})["facts"][0]["value"] == "38"


def test_a_customer_without_a_cell_has_nothing_to_repair(page):
    for action, body in (("restore", None), ("reset", {"confirm": CUSTOMER})):
        status, refused = page("POST", f"{MEMORY}/{action}", body=body)
        assert status == 409 and refused["error"]["code"] == "cell_readable", action
