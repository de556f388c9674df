"""Deciding many proposals at once, and undoing a decision, through FactsApiFunction's handler:
proposals from the real DistillFunction, memory read back through the real MemoryFunction, the
customer forgotten through the real PurgeFunction."""

from __future__ import annotations

import json

import pytest
from helpers.facts_page import CUSTOMER, KEY, SHOE, conversation
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import ROOT
from test_facts_studio_api import ANA, BRUNO, FACTS, A, T, act, api, distilled, memory, pending  # noqa: F401

from facts.keyed_hashes import FactKeys

OTHERS = ("cust-3001-caio", "cust-3002-dora", "cust-3003-eli")


@pytest.fixture
def shoes(api, monkeypatch, facts_stack, s3, sessions_bucket, script):
    """tamanho_calcado=43 pending for Ana and three more customers: a group of 4 of one fact name."""
    for n, customer in enumerate(OTHERS):
        conversation(s3, sessions_bucket, f"sess_shoe_{n}", customer=customer, hours_ago=7 + n / 10)
    script.replies = [json.dumps([SHOE])] * len(OTHERS)
    load_handler("distill", monkeypatch, facts_stack).lambda_handler(load_event("distill.json"), LambdaContext())
    _, listed = api("GET", f"{FACTS}/proposals", query={"name": "tamanho_calcado", "limit": "100"})
    assert listed["total"] == 4
    return listed["proposals"]


def bulk(api, action, proposals, **extra):
    items = [{"customer_id": p["customer_id"], "id": p["id"]} for p in proposals]
    return api("POST", f"{FACTS}/proposals/bulk", body={"action": action, "items": items, **extra})


def read_memory(monkeypatch, facts_stack, customer):
    handler = load_handler("memory", monkeypatch, facts_stack)
    answer = handler.lambda_handler({"action": "read", "tenant": T, "customer_id": customer}, LambdaContext())
    return {f["name"]: f["value"] for f in answer["facts"]}


def test_pending_is_grouped_and_filtered_by_fact_name_and_customer(api, shoes):
    _, everything = api("GET", f"{FACTS}/proposals", query={"limit": "100"})
    assert everything["total"] == 6
    names = {g["value"]: g["count"] for g in everything["groups"]["names"]}
    assert names == {"tamanho_calcado": 4, "pagamento_preferido": 1, "cep_entrega": 1}
    customers = {g["value"]: g["count"] for g in everything["groups"]["customers"]}
    assert customers[CUSTOMER] == 2 and customers[OTHERS[0]] == 1
    _, ana = api("GET", f"{FACTS}/proposals", query={"customer": CUSTOMER})
    assert ana["total"] == 2 and {p["customer_id"] for p in ana["proposals"]} == {CUSTOMER}
    assert ana["counts"]["pending"] == 6  # the lists' sizes stay the whole lists'


def test_a_group_of_4_approved_in_one_action_and_one_undone_leaves_the_cell_as_before(
        api, shoes, monkeypatch, facts_stack):
    status, answer = bulk(api, "approve", shoes)
    assert status == 200 and answer["counts"] == {"approved": 4} and answer["by"] == ANA["sub"]
    assert [o["id"] for o in answer["outcomes"]] == [p["id"] for p in shoes]  # in the order asked
    for customer in (CUSTOMER, *OTHERS):
        assert read_memory(monkeypatch, facts_stack, customer) == {"tamanho_calcado": "43"}
    _, recent = api("GET", f"{FACTS}/proposals", query={"state": "recent"})
    assert {p["batch"] for p in recent["proposals"]} == {answer["batch"]}  # one bulk decision
    assert {p["resolved_by"] for p in recent["proposals"]} == {ANA["sub"]}
    assert all(p["can_undo"] for p in recent["proposals"])

    undone = next(p for p in recent["proposals"] if p["customer_id"] == OTHERS[1])
    status, back = act(api, undone, "undo")
    assert status == 200 and back["status"] == "pending" and back["batch"] is None
    assert [(u["action"], u["by"]) for u in back["undos"]] == [("undo_approval", ANA["sub"])]
    assert read_memory(monkeypatch, facts_stack, OTHERS[1]) == {}  # the cell as before the approval
    assert read_memory(monkeypatch, facts_stack, OTHERS[0]) == {"tamanho_calcado": "43"}  # the others kept
    # Pending again, and approvable again by the same compare-and-swap.
    status, again = act(api, back, "approve")
    assert status == 200 and read_memory(monkeypatch, facts_stack, OTHERS[1]) == {"tamanho_calcado": "43"}


def test_one_cas_conflict_among_several_is_reported_for_that_one_and_nothing_else_is_lost(
        api, shoes, monkeypatch, facts_stack):
    # Another operator types Dora's shoe size before the bulk approval.
    api("PUT", f"{FACTS}/customers/{OTHERS[1]}/memory/tamanho_calcado", body={"value": "38", "revision": None},
        claims=BRUNO)
    status, answer = bulk(api, "approve", shoes)
    assert status == 200 and answer["counts"] == {"approved": 3, "fact_moved": 1}
    [lost] = [o for o in answer["outcomes"] if not o["ok"]]
    assert lost["customer_id"] == OTHERS[1] and lost["proposal"]["status"] == "stale"
    assert lost["proposal"]["current"]["value"] == "38" and "changed" in lost["message"]
    assert read_memory(monkeypatch, facts_stack, OTHERS[1]) == {"tamanho_calcado": "38"}  # the operator's edit wins
    for customer in (CUSTOMER, OTHERS[0], OTHERS[2]):
        assert read_memory(monkeypatch, facts_stack, customer) == {"tamanho_calcado": "43"}


def test_undo_restores_the_value_an_approval_replaced(api, monkeypatch, facts_stack, s3, sessions_bucket, script):
    customer = "cust-4100-fabio"
    api("PUT", f"{FACTS}/customers/{customer}/memory/tamanho_calcado", body={"value": "41", "revision": None})
    conversation(s3, sessions_bucket, "sess_fabio", customer=customer, hours_ago=7)
    script.replies = [json.dumps([SHOE])]
    load_handler("distill", monkeypatch, facts_stack).lambda_handler(load_event("distill.json"), LambdaContext())
    [shoe] = api("GET", f"{FACTS}/proposals", query={"customer": customer})[1]["proposals"]
    assert act(api, shoe, "approve")[0] == 200
    assert read_memory(monkeypatch, facts_stack, customer) == {"tamanho_calcado": "43"}
    status, back = act(api, shoe, "undo")
    assert status == 200 and back["status"] == "pending"
    _, cell = api("GET", f"{FACTS}/customers/{customer}/memory")
    [fact] = cell["facts"]
    assert (fact["value"], fact["origin"]) == ("41", "operator")


def test_an_undo_after_the_fact_changed_says_why_and_keeps_the_operators_value(api, monkeypatch, facts_stack):
    shoe = pending(api)["tamanho_calcado"]
    act(api, shoe, "approve")
    _, cell = api("GET", f"{FACTS}/customers/{CUSTOMER}/memory")
    api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado",
        body={"value": "44", "revision": cell["facts"][0]["revision"]}, claims=BRUNO)
    status, body = act(api, shoe, "undo")
    assert status == 409 and body["error"]["code"] == "cannot_undo"
    assert "changed" in body["error"]["message"] and body["current"]["value"] == "44"
    assert read_memory(monkeypatch, facts_stack, CUSTOMER) == {"tamanho_calcado": "44"}
    assert api("GET", f"{FACTS}/proposals/{CUSTOMER}/{shoe['id']}")[1]["status"] == "approved"


def test_a_dismissed_proposal_reopened_is_pending_with_its_latch_lifted(api, s3, bucket, monkeypatch, facts_stack):
    pix = pending(api)["pagamento_preferido"]
    act(api, pix, "dismiss")
    latch = f"memory/{T}/{CUSTOMER}/latch/{FactKeys(KEY).tuple_id(T, CUSTOMER, 'pagamento_preferido', 'Pix')}"
    assert s3.head_object(Bucket=bucket, Key=latch)
    _, recent = api("GET", f"{FACTS}/proposals", query={"state": "recent"})
    assert recent["proposals"][0]["can_reopen"] and not recent["proposals"][0]["can_undo"]
    status, back = act(api, pix, "undo")
    assert status == 200 and back["status"] == "pending" and back["resolved_by"] is None
    assert [(u["action"], u["by"]) for u in back["undos"]] == [("reopen", ANA["sub"])] and back["evidence"]
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket, Prefix=latch)
    assert "pagamento_preferido" in pending(api)
    status, approved = act(api, back, "approve")
    assert status == 200 and read_memory(monkeypatch, facts_stack, CUSTOMER) == {"pagamento_preferido": "Pix"}
    # A pending proposal has nothing to undo.
    status, body = act(api, pending(api)["tamanho_calcado"], "undo")
    assert status == 409 and body["error"]["code"] == "not_pending"


def test_after_forget_customer_no_undo_is_offered_and_the_api_answers_gone(api, monkeypatch, facts_stack):
    props = pending(api)
    act(api, props["tamanho_calcado"], "approve")
    act(api, props["pagamento_preferido"], "reject")
    purge = load_handler("purge", monkeypatch, facts_stack)
    purge.lambda_handler({"action": "forget_customer", "tenant": T, "customer_id": CUSTOMER}, LambdaContext())
    _, recent = api("GET", f"{FACTS}/proposals", query={"state": "recent"})
    assert recent["proposals"] == []  # nothing left to offer an undo on
    for name in ("tamanho_calcado", "pagamento_preferido"):
        status, body = act(api, props[name], "undo")
        assert status == 410 and body["error"]["code"] == "gone" and "forgotten" in body["error"]["message"]
    assert read_memory(monkeypatch, facts_stack, CUSTOMER) == {}


def test_bulk_input_is_refused_clearly_and_decides_nothing(api, shoes, monkeypatch, facts_stack):
    many = [{"customer_id": CUSTOMER, "id": f"{n:032x}"} for n in range(51)]
    status, body = api("POST", f"{FACTS}/proposals/bulk", body={"action": "approve", "items": many})
    assert status == 422 and "at most 50" in body["error"]["message"] and "51" in body["error"]["message"]
    unknown = {"customer_id": CUSTOMER, "id": "f" * 32}
    status, body = bulk(api, "approve", [*shoes, unknown])
    assert status == 404 and body["error"]["code"] == "not_found"
    assert "items[4]" in body["error"]["message"] and "nothing was decided" in body["error"]["message"]
    assert read_memory(monkeypatch, facts_stack, CUSTOMER) == {}
    status, body = bulk(api, "approve", [shoes[0], shoes[0]])
    assert status == 422 and "twice" in body["error"]["message"]
    status, body = bulk(api, "promote", shoes)
    assert status == 422 and body["error"]["code"] == "invalid_request"
    status, body = api("POST", f"{FACTS}/proposals/bulk", body={"action": "approve", "items": []})
    assert status == 422
    status, body = bulk(api, "reject", shoes, reason="x" * 501)
    assert status == 422
    assert api("GET", f"{FACTS}/proposals")[1]["counts"]["pending"] == 6


def test_bulk_reject_records_one_decision_with_its_reason_and_latches_each(api, shoes, s3, bucket, capsys):
    status, answer = bulk(api, "reject", shoes[:2], reason="tamanho do pedido, não do cliente")
    assert status == 200 and answer["counts"] == {"rejected": 2}
    _, recent = api("GET", f"{FACTS}/proposals", query={"state": "recent"})
    assert {(p["batch"], p["reason"]) for p in recent["proposals"]} == {
        (answer["batch"], "tamanho do pedido, não do cliente")}
    for p in shoes[:2]:
        latch = FactKeys(KEY).tuple_id(T, p["customer_id"], "tamanho_calcado", "43")
        assert s3.head_object(Bucket=bucket, Key=f"memory/{T}/{p['customer_id']}/latch/{latch}")
    # Nothing of a customer's reaches the function's log.
    logged = capsys.readouterr()
    assert CUSTOMER not in logged.out + logged.err and "tamanho do pedido" not in logged.out + logged.err


def test_the_openapi_document_describes_the_bulk_and_undo_answers(api, shoes):
    import jsonschema

    document = json.loads(api.handler.openapi_document())
    assert json.loads((ROOT / "studio_web" / "facts-openapi.json").read_text()) == document
    schemas = document["components"]["schemas"]
    base = "/tenants/{tenant}/agents/{agent}/facts"

    def check(path, status, body):
        answer = document["paths"][path]["post"]["responses"][str(status)]
        jsonschema.validate(body, {**answer["content"]["application/json"]["schema"],
                                   "components": {"schemas": schemas}})

    status, answer = bulk(api, "approve", shoes)
    check(f"{base}/proposals/bulk", status, answer)
    check(f"{base}/proposals/{{customer_id}}/{{proposal_id}}/undo", *act(api, shoes[0], "undo"))
    check(f"{base}/proposals/{{customer_id}}/{{proposal_id}}/undo", *act(api, shoes[0], "undo"))  # 409 not_pending
