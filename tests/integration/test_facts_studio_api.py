"""The Facts page's API through FactsApiFunction's handler, with API Gateway HTTP API events as the JWT
authorizer passes them. Proposals come from the real DistillFunction (scripted model server);
the memory cell is read back through the real MemoryFunction, as the engine reads it."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from helpers.aws import drain
from helpers.facts_page import CONFIG, CUSTOMER, KEY, PIX, SHOE, conversation
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import ROOT

from facts.keyed_hashes import FactKeys
from shared.errors import AccessDenied

T, A = "default", "store-support"
ANA = {"sub": "3f1c9a52-7d3e-4b8a-9f0e-6a2b1c4d5e6f", "cognito:groups": "[default]"}
BRUNO = {"sub": "b7e0c2d4-1111-4c6e-8f00-aa11bb22cc33", "cognito:groups": "[default]"}
OTHER_SHOP = {"sub": "9d8c7b6a-5432-4f10-9e8d-7c6b5a4f3e2d", "cognito:groups": "[outra-loja]"}
FACTS = f"/tenants/{T}/agents/{A}/facts"
CEP = {"name": "cep_entrega", "value": "13010-000", "evidence": [0]}


def request(method, path, *, body=None, query=None, claims=ANA):
    event = copy.deepcopy(load_event("studio-list-conflicts.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["queryStringParameters"] = query
    event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    if claims is None:
        event["requestContext"].pop("authorizer", None)
        event["headers"].pop("authorization", None)
    else:
        event["requestContext"]["authorizer"]["jwt"]["claims"] = claims
    if body is not None:
        event["body"] = json.dumps(body, ensure_ascii=False)
    return event


@pytest.fixture
def distilled(monkeypatch, facts_stack, s3, sessions_bucket, script):
    """Two proposals for Ana (shoe size, Pix) and one for another customer, through DistillFunction."""
    conversation(s3, sessions_bucket, "sess_troca_01")
    conversation(s3, sessions_bucket, "sess_frete_02", customer="cust-1207-bruno", hours_ago=7)
    script.replies = [json.dumps([SHOE, PIX]), json.dumps([CEP])]
    distill = load_handler("distill", monkeypatch, facts_stack)
    report = distill.lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["proposed"] == 3, report


@pytest.fixture
def api(monkeypatch, facts_stack, distilled):
    handler = load_handler("facts_api", monkeypatch, facts_stack,
                           POWERTOOLS_SERVICE_NAME=f"facts-{uuid.uuid4().hex[:6]}")

    def call(method, path, **kwargs):
        answer = handler.lambda_handler(request(method, path, **kwargs), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else None
        return answer["statusCode"], body

    call.handler = handler
    return call


@pytest.fixture
def memory(monkeypatch, facts_stack):
    handler = load_handler("memory", monkeypatch, facts_stack)
    return lambda customer=CUSTOMER: handler.lambda_handler(
        {"action": "read", "tenant": T, "customer_id": customer}, LambdaContext())


def pending(api) -> dict[str, dict]:
    status, body = api("GET", f"{FACTS}/proposals")
    assert status == 200
    return {p["name"]: p for p in body["proposals"]}


def act(api, proposal, action, **kwargs):
    return api("POST", f"{FACTS}/proposals/{proposal['customer_id']}/{proposal['id']}/{action}", **kwargs)


# ------------------------------------------------------------------ the lists


def test_pending_lists_oldest_first_with_scope_confidence_and_the_redacted_evidence(api):
    status, body = api("GET", f"{FACTS}/proposals")
    assert status == 200 and body["total"] == 3 and body["next"] is None
    assert body["counts"] == {"pending": 3, "stale": 0, "recent": 0}
    names = [p["name"] for p in body["proposals"]]
    assert set(names[:2]) == {"tamanho_calcado", "pagamento_preferido"} and names[2] == "cep_entrega"
    shoe = next(p for p in body["proposals"] if p["name"] == "tamanho_calcado")
    assert (shoe["scope"], shoe["value"], shoe["confidence"], shoe["status"]) == (f"{T}:{CUSTOMER}", "43", 0.8,
                                                                                   "pending")
    [asked, answered] = shoe["evidence"]
    assert (asked["turn_id"], asked["message"], asked["role"]) == ("turn_0000", 1, "assistant")
    assert "no 43" in asked["excerpt"] and asked["status"] == "available"
    assert answered["role"] == "user" and answered["excerpt"].startswith("pode ser 43 sim")
    # The e-mail in the customer's message is shown redacted, never as written.
    assert "ana.souza@gmail.com" not in json.dumps(body) and "[email]" in answered["excerpt"]


def test_lists_are_paged(api):
    status, first = api("GET", f"{FACTS}/proposals", query={"limit": "2"})
    assert status == 200 and len(first["proposals"]) == 2 and first["next"] == "2"
    _, second = api("GET", f"{FACTS}/proposals", query={"limit": "2", "cursor": first["next"]})
    assert len(second["proposals"]) == 1 and second["next"] is None
    seen = [p["id"] for p in first["proposals"] + second["proposals"]]
    assert len(set(seen)) == 3
    status, body = api("GET", f"{FACTS}/proposals", query={"cursor": "2x"})  # not a `next` this API gave
    assert status == 422 and body["error"]["code"] == "invalid_request"


def test_evidence_of_an_archived_turn_that_is_gone_says_expired(api, s3, sessions_bucket):
    shoe = pending(api)["tamanho_calcado"]
    gone = [key["Key"] for key in s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/turns/")["Contents"]
            if "sess_troca_01/turn_0000" in key["Key"]]
    s3.delete_object(Bucket=sessions_bucket, Key=gone[0])
    status, body = api("GET", f"{FACTS}/proposals/{CUSTOMER}/{shoe['id']}")
    assert status == 200
    assert [(e["status"], e["excerpt"] is None) for e in body["evidence"]] == [("expired", True), ("available", False)]


# ------------------------------------------------------------------ decisions


def test_an_approval_lands_in_the_cell_the_engines_memory_read_returns(api, memory, sqs, bus):
    drain(sqs, bus["queue"])
    shoe = pending(api)["tamanho_calcado"]
    assert memory()["facts"] == []  # nothing reaches memory without a click
    status, body = act(api, shoe, "approve")
    assert status == 200 and body["status"] == "approved" and body["resolved_by"] == ANA["sub"]
    read = memory()
    assert [(f["name"], f["value"], f["origin"]) for f in read["facts"]] == [
        ("tamanho_calcado", "43", "distilled:sess_troca_01")]
    assert '<fact name="tamanho_calcado">43</fact>' in read["block"]
    _, recent = api("GET", f"{FACTS}/proposals", query={"state": "recent"})
    assert [(p["name"], p["status"]) for p in recent["proposals"]] == [("tamanho_calcado", "approved")]
    assert recent["counts"] == {"pending": 2, "stale": 0, "recent": 1}
    events = [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]
    assert [(e["detail-type"], e["detail"]["name"]) for e in events] == [("fact_approved", "tamanho_calcado")]
    assert "43" not in json.dumps([e["detail"] for e in events])


def test_a_concurrent_operator_edit_makes_the_proposal_stale_with_both_values(api, memory):
    shoe = pending(api)["tamanho_calcado"]
    # Another operator sets the customer's shoe size by hand before the approval.
    status, edited = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado",
                         body={"value": "44", "revision": None}, claims=BRUNO)
    assert status == 200 and (edited["value"], edited["origin"]) == ("44", "operator")
    status, body = act(api, shoe, "approve")
    assert status == 409 and body["error"]["code"] == "fact_moved"
    stale = body["proposal"]
    assert (stale["status"], stale["value"], stale["current"]["value"], stale["current"]["origin"]) == (
        "stale", "43", "44", "operator")
    assert [f["value"] for f in memory()["facts"]] == ["44"]  # the operator's edit wins
    _, listed = api("GET", f"{FACTS}/proposals", query={"state": "stale"})
    [row] = listed["proposals"]
    assert (row["value"], row["current"]["value"]) == ("43", "44") and row["evidence"]
    # A stale proposal is resolved by dismissal, and stays out of memory.
    status, dismissed = act(api, row, "dismiss")
    assert status == 200 and dismissed["status"] == "dismissed"
    assert [f["value"] for f in memory()["facts"]] == ["44"]


def test_reject_keeps_the_reason_and_latches_the_value(api, s3, bucket):
    pix = pending(api)["pagamento_preferido"]
    status, body = act(api, pix, "reject", body={"reason": "cliente pediu cartão na última compra"})
    assert status == 200 and (body["status"], body["reason"]) == ("rejected", "cliente pediu cartão na última compra")
    _, recent = api("GET", f"{FACTS}/proposals", query={"state": "recent"})
    assert recent["proposals"][0]["reason"] == "cliente pediu cartão na última compra"
    latch = FactKeys(KEY).tuple_id(T, CUSTOMER, "pagamento_preferido", "Pix")
    assert s3.head_object(Bucket=bucket, Key=f"memory/{T}/{CUSTOMER}/latch/{latch}")
    # Decided: it cannot be approved afterwards.
    status, body = act(api, pix, "approve")
    assert status == 409 and body["error"]["code"] == "not_pending"


def test_reject_without_a_reason_and_dismiss_latch_and_are_never_proposed_again(
        api, monkeypatch, facts_stack, s3, bucket, sessions_bucket, script):
    props = pending(api)
    assert act(api, props["pagamento_preferido"], "reject")[1]["reason"] is None
    status, body = act(api, props["tamanho_calcado"], "dismiss")
    assert status == 200 and body["status"] == "dismissed"
    # A new session says the same things again: the latched values are filtered, another value is proposed.
    conversation(s3, sessions_bucket, "sess_troca_03", hours_ago=6.8)
    conversation(s3, sessions_bucket, "sess_troca_04", hours_ago=6.5)
    script.replies = [json.dumps([SHOE, PIX]), json.dumps([{**SHOE, "value": "44"}])]
    report = load_handler("distill", monkeypatch, facts_stack).lambda_handler(
            load_event("distill.json"), LambdaContext())
    assert report["filtered"] == {"latched": 2} and report["proposed"] == 1
    fresh = pending(api)
    assert (fresh["tamanho_calcado"]["value"], "pagamento_preferido" in fresh) == ("44", False)


def test_an_operator_edits_a_fact_and_a_stale_revision_is_412_with_the_current_value(api, memory):
    shoe = pending(api)["tamanho_calcado"]
    act(api, shoe, "approve")
    status, cell = api("GET", f"{FACTS}/customers/{CUSTOMER}/memory")
    [fact] = cell["facts"]
    assert status == 200 and cell["scope"] == f"{T}:{CUSTOMER}" and fact["value"] == "43"
    status, saved = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado",
                        body={"value": "42", "revision": fact["revision"]})
    assert status == 200 and (saved["value"], saved["origin"]) == ("42", "operator")
    status, body = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado",
                       body={"value": "45", "revision": fact["revision"]}, claims=BRUNO)
    assert status == 412 and body["error"]["code"] == "stale" and body["current"]["value"] == "42"
    assert "changed this fact" in body["error"]["message"]
    assert [(f["value"], f["origin"]) for f in memory()["facts"]] == [("42", "operator")]


@pytest.mark.parametrize("edit, code", [
    ({"value": "   ", "revision": None}, "invalid_fact"),
    ({"value": "linha\nquebrada", "revision": None}, "invalid_fact"),
    ({"value": "x" * 501, "revision": None}, "invalid_request"),
    ({"value": "43"}, "invalid_request"),
])
def test_an_invalid_edit_is_422_and_writes_nothing(api, memory, edit, code):
    status, body = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado", body=edit)
    assert status == 422 and body["error"]["code"] == code and memory()["facts"] == []


# ------------------------------------------------------------------ who may, and what is refused


def test_another_tenants_operator_gets_403_and_changes_nothing(api, memory):
    shoe = pending(api)["tamanho_calcado"]
    for method, path, body in (("GET", f"{FACTS}/proposals", None),
                               ("POST", f"{FACTS}/proposals/{CUSTOMER}/{shoe['id']}/approve", None),
                               ("POST", f"{FACTS}/proposals/{CUSTOMER}/{shoe['id']}/dismiss", None),
                               ("GET", f"{FACTS}/customers/{CUSTOMER}/memory", None),
                               ("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado",
                                {"value": "40", "revision": None})):
        status, answer = api(method, path, body=body, claims=OTHER_SHOP)
        assert (status, answer["error"]["code"]) == (403, "forbidden"), path
    assert memory()["facts"] == [] and pending(api)["tamanho_calcado"]["status"] == "pending"


def test_no_token_is_401(api):
    status, body = api("GET", f"{FACTS}/proposals", claims=None)
    assert status == 401 and body["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("path", [
    f"{FACTS}/proposals/{CUSTOMER}/not-a-proposal-id/approve",
    f"{FACTS}/proposals/{CUSTOMER}/{'A' * 32}/dismiss",
    f"{FACTS}/proposals/-cust/{'a' * 32}/approve",
    f"{FACTS}/customers/{'c' * 129}/memory",
    f"/tenants/Default/agents/{A}/facts/proposals",
    f"/tenants/{T}/agents/store_support/facts/proposals",
])
def test_invalid_ids_are_400(api, path):
    status, body = api("POST" if path.endswith(("approve", "dismiss")) else "GET", path)
    assert status == 400 and body["error"]["code"] == "invalid_name"


def test_an_invalid_fact_name_is_400_and_an_unknown_proposal_404(api):
    status, body = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/Tamanho Calcado", body={"value": "1",
                                                                                               "revision": None})
    assert status == 400 and body["error"]["code"] == "invalid_name"
    status, body = api("POST", f"{FACTS}/proposals/{CUSTOMER}/{'0' * 32}/approve")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_a_too_long_reason_or_a_bad_state_is_422(api):
    pix = pending(api)["pagamento_preferido"]
    status, body = act(api, pix, "reject", body={"reason": "r" * 501})
    assert status == 422 and body["error"]["code"] == "invalid_request"
    status, body = api("GET", f"{FACTS}/proposals", query={"state": "approved"})
    assert status == 422 and pending(api)["pagamento_preferido"]["status"] == "pending"


def test_an_encoded_customer_id_is_read_decoded(api, s3, sessions_bucket, script, monkeypatch, facts_stack):
    status, body = api("GET", f"{FACTS}/customers/cust%3A8842.ana/memory")
    assert status == 200 and body["customer_id"] == "cust:8842.ana"


def test_answers_are_never_cached(api):
    answer = api.handler.lambda_handler(request("GET", f"{FACTS}/proposals"), LambdaContext())
    assert answer["headers"]["Cache-Control"] == "no-store"


def test_a_facts_event_the_bus_refuses_from_the_page_is_counted_where_an_alarm_looks(
        monkeypatch, facts_stack, distilled, capsys):
    from helpers.operations import alarms_watching, the

    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    handler = load_handler("facts_api", monkeypatch, facts_stack, EVENT_BUS_NAME="no-such-bus",
                           POWERTOOLS_SERVICE_NAME="facts-api-alarm")
    listed = json.loads(handler.lambda_handler(request("GET", f"{FACTS}/proposals"), LambdaContext())["body"])
    pix = next(p for p in listed["proposals"] if p["name"] == "pagamento_preferido")
    capsys.readouterr()
    answer = handler.lambda_handler(request("POST", f"{FACTS}/proposals/{CUSTOMER}/{pix['id']}/dismiss"),
                                    LambdaContext())
    assert answer["statusCode"] == 200  # stored; only the event is lost
    refused = the("EventPublishFailed", capsys.readouterr().out)
    assert refused.dimensions == {"service": "facts-studio-api", "event": "fact_dismissed"}
    assert alarms_watching(refused) == ["FactsEventPublishFailedAlarm"]


def test_the_facts_routes_reach_only_facts_storage():
    from knowledge_dev.template import load_template

    function = load_template()["Resources"]["FactsApiFunction"]["Properties"]
    assert {e["Properties"]["Path"] for e in function["Events"].values()} == {
        "/tenants/{tenant}/agents/{agent}/facts/{proxy+}"}
    resources = json.dumps([s["Resource"] for s in function["Policies"][0]["Statement"]])
    assert "concepts" not in resources and "knowledge.yaml" not in resources and "agents/" not in resources


# ------------------------------------------------------------------ the OpenAPI document


def test_the_openapi_document_is_kept_in_the_repo_and_describes_what_the_api_answers(api):
    import jsonschema

    document = json.loads(api.handler.openapi_document())
    kept = json.loads((ROOT / "studio_web" / "facts-openapi.json").read_text())
    assert kept == document, "run ./run script gen.openapi"
    schemas = document["components"]["schemas"]

    def check(path_template, method, status, body):
        answer = document["paths"][path_template][method]["responses"][str(status)]
        jsonschema.validate(body, {**answer["content"]["application/json"]["schema"],
                                   "components": {"schemas": schemas}})

    base = "/tenants/{tenant}/agents/{agent}/facts"
    status, listed = api("GET", f"{FACTS}/proposals")
    check(f"{base}/proposals", "get", status, listed)
    shoe = next(p for p in listed["proposals"] if p["name"] == "tamanho_calcado")
    api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado", body={"value": "44", "revision": None})
    status, moved = act(api, shoe, "approve")
    check(f"{base}/proposals/{{customer_id}}/{{proposal_id}}/approve", "post", status, moved)
    status, stale = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado",
                        body={"value": "45", "revision": 99})
    check(f"{base}/customers/{{customer_id}}/memory/{{name}}", "put", status, stale)
    status, cell = api("GET", f"{FACTS}/customers/{CUSTOMER}/memory")
    check(f"{base}/customers/{{customer_id}}/memory", "get", status, cell)
    status, refused = api("GET", f"{FACTS}/proposals", claims=OTHER_SHOP)
    check(f"{base}/proposals", "get", status, refused)


def test_a_proposal_nobody_answered_within_the_archives_retention_is_listed_as_expired_not_pending(
        monkeypatch, facts_stack, s3, bucket, sessions_bucket, script, model):
    from facts.distill import Distiller
    from shared.model import ModelCache

    s3.put_bucket_lifecycle_configuration(Bucket=sessions_bucket, LifecycleConfiguration={"Rules": [
        {"ID": "expire-after-retention", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 30}}]})
    conversation(s3, sessions_bucket, "sess_antiga_09", customer="cust-0031-carla", hours_ago=31 * 24 + 8)
    script.replies = [json.dumps([SHOE])]
    month_ago = datetime.now(timezone.utc) - timedelta(days=31)
    then = Distiller(s3, knowledge_bucket=bucket, sessions_bucket=sessions_bucket,
                     models=ModelCache({"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": ""}),
                     utility_model="openai:distiller", keys=FactKeys(KEY), events=None, clock=lambda: month_ago)
    assert then.run().proposed == 1
    handler = load_handler("facts_api", monkeypatch, facts_stack,
                           POWERTOOLS_SERVICE_NAME=f"facts-{uuid.uuid4().hex[:6]}")

    def listed(state):
        answer = handler.lambda_handler(request("GET", f"{FACTS}/proposals", query={"state": state}), LambdaContext())
        assert answer["statusCode"] == 200
        return json.loads(answer["body"])

    assert listed("pending")["proposals"] == []
    [old] = listed("recent")["proposals"]
    assert (old["customer_id"], old["name"], old["status"]) == ("cust-0031-carla", "tamanho_calcado", "expired")
    assert listed("recent")["counts"] == {"pending": 0, "stale": 0, "recent": 1}


def test_a_second_agents_approval_of_the_value_already_in_the_cell_counts_as_applied(
        api, monkeypatch, facts_stack, s3, bucket, sessions_bucket, script, memory, sqs, bus):
    from helpers.facts_page import CONVERSATION

    from facts.sessions import record_turn
    from knowledge.format.turn import Turn
    from knowledge.store.archive import TurnArchive

    sales = "store-sales"
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{sales}/knowledge.yaml", Body=CONFIG.encode())
    start = datetime.now(timezone.utc) - timedelta(hours=8)
    for index, messages in enumerate(CONVERSATION):  # Ana tells the sales agent the same shoe size
        turn = Turn(tenant=T, agent=sales, session_id="sess_venda_05", turn_id=f"turn_{index:04d}",
                    completed_at=start + timedelta(minutes=2 * index), customer_id=CUSTOMER,
                    messages=[{"role": role, "content": text} for role, text in messages])
        TurnArchive(s3, sessions_bucket).put(turn)
        record_turn(s3, sessions_bucket, turn)
    script.replies = [json.dumps([{**SHOE, "value": "43 "}])]
    report = load_handler("distill", monkeypatch, facts_stack).lambda_handler(
            {"tenant": T, "agent": sales}, LambdaContext())
    assert report["proposed"] == 1
    assert act(api, pending(api)["tamanho_calcado"], "approve")[0] == 200
    drain(sqs, bus["queue"])
    _, listed = api("GET", f"/tenants/{T}/agents/{sales}/facts/proposals")
    [second] = listed["proposals"]
    status, body = api("POST", f"/tenants/{T}/agents/{sales}/facts/proposals/{CUSTOMER}/{second['id']}/approve",
                       claims=BRUNO)
    assert status == 200 and (body["status"], body["resolved_by"]) == ("approved", BRUNO["sub"]), body
    # The cell keeps the first approval as it was: one fact, one revision.
    assert [(f["value"], f["origin"], f["revision"]) for f in memory()["facts"]] == [
        ("43", "distilled:sess_troca_01", 1)]
    assert [json.loads(m["Body"])["detail-type"] for m in drain(sqs, bus["queue"])] == ["fact_approved"]


# ------------------------------------------------------------------ at scale and by hand (issue 28, item 5)


def test_a_mistyped_agent_is_404_unknown_agent_in_words_not_an_empty_queue(api):
    status, body = api("GET", f"/tenants/{T}/agents/store-suport/facts/proposals")
    assert status == 404 and body["error"]["code"] == "unknown_agent"
    assert "there is no agent 'store-suport' in tenant 'default'" in body["error"]["message"]
    assert "?agent=" in body["error"]["message"]
    assert api("GET", f"{FACTS}/proposals")[0] == 200  # the agent that exists still answers


def test_an_agent_whose_only_concept_was_deleted_still_exists(api, s3, bucket):
    key = f"agents/{T}/solo/concepts/frete.md"
    s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    s3.delete_object(Bucket=bucket, Key=key)
    status, body = api("GET", f"/tenants/{T}/agents/solo/facts/proposals")
    assert status == 200 and body["counts"]["pending"] == 0


def test_a_bad_fact_name_is_explained_in_words_with_an_example_not_a_pattern(api, memory):
    status, body = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/Tamanho%20Cal%C3%A7ado",
                       body={"value": "43", "revision": None})
    message = body["error"]["message"]
    assert status == 400 and body["error"]["code"] == "invalid_name"
    assert "lowercase letters" in message and "for example shoe_size" in message
    assert "tamanho_calcado would do" in message and "^" not in message and "[a-z" not in message
    status, body = api("DELETE", f"{FACTS}/customers/{CUSTOMER}/memory/sapato--x", query={"revision": "1"})
    assert status == 400 and "single '-' or '_'" in body["error"]["message"]
    assert memory()["facts"] == []


def test_personal_data_typed_into_memory_is_refused_until_confirmed_and_a_card_never(api, memory):
    path = f"{FACTS}/customers/{CUSTOMER}/memory/documento"
    status, body = api("PUT", path, body={"value": "CPF 529.982.247-25, tel (11) 98765-4321", "revision": None})
    assert status == 422 and body["error"]["code"] == "personal_data"
    assert (body["kinds"], body["can_confirm"]) == (["cpf", "phone"], True)
    assert "a CPF and a phone number" in body["error"]["message"] and "529" not in json.dumps(body)
    assert memory()["facts"] == []  # nothing saved, so nothing reaches the <memory> block
    status, body = api("PUT", path, body={"value": "CPF 529.982.247-25, tel (11) 98765-4321", "revision": None,
                                          "personal_data": ["cpf"]})
    assert status == 422 and body["kinds"] == ["cpf", "phone"]  # the phone was not confirmed
    status, saved = api("PUT", path, body={"value": "CPF 529.982.247-25, tel (11) 98765-4321", "revision": None,
                                           "personal_data": ["cpf", "phone"]})
    assert status == 200 and saved["origin"] == "operator"
    status, body = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/cartao",
                       body={"value": "4111 1111 1111 1111", "revision": None, "personal_data": ["card"]})
    assert status == 422 and (body["kinds"], body["can_confirm"]) == (["card"], False)
    assert [f["name"] for f in memory()["facts"]] == ["documento"]
    status, body = api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/joana_prado_email",
                       body={"value": "sim", "revision": None})
    assert status == 422 and "must not hold personal data" in body["error"]["message"]


def test_removing_a_fact_records_who_and_why_and_its_value_stays_in_the_earlier_version(api, memory, s3, bucket):
    from facts import layout

    shoe = pending(api)["tamanho_calcado"]
    act(api, shoe, "approve")
    _, cell = api("GET", f"{FACTS}/customers/{CUSTOMER}/memory")
    [fact] = cell["facts"]
    assert cell["removals"] == []
    status, cell = api("DELETE", f"{FACTS}/customers/{CUSTOMER}/memory/tamanho_calcado",
                       query={"revision": str(fact["revision"])}, body={"reason": "cliente pediu para esquecer"})
    assert status == 200 and cell["facts"] == [] and memory()["facts"] == []
    [removal] = cell["removals"]
    assert (removal["name"], removal["by"], removal["reason"], removal["revision"]) == (
        "tamanho_calcado", ANA["sub"], "cliente pediu para esquecer", fact["revision"])
    versions = s3.list_object_versions(Bucket=bucket, Prefix=layout.cell_key(T, CUSTOMER))["Versions"]
    earlier = [s3.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])["Body"].read()
               for v in versions if not v["IsLatest"]]
    assert any(b'"tamanho_calcado"' in body and b'"43"' in body for body in earlier)
    # Without a reason too; and the reason is one line of at most 500 characters.
    api("PUT", f"{FACTS}/customers/{CUSTOMER}/memory/cor", body={"value": "azul", "revision": None})
    [cor] = api("GET", f"{FACTS}/customers/{CUSTOMER}/memory")[1]["facts"]
    status, body = api("DELETE", f"{FACTS}/customers/{CUSTOMER}/memory/cor", query={"revision": str(cor["revision"])},
                       body={"reason": "r" * 501})
    assert status == 422
    status, cell = api("DELETE", f"{FACTS}/customers/{CUSTOMER}/memory/cor", query={"revision": str(cor["revision"])})
    assert status == 200 and [(r["name"], r["reason"]) for r in cell["removals"]] == [
        ("cor", None), ("tamanho_calcado", "cliente pediu para esquecer")]


def test_an_error_the_api_maps_to_no_status_is_a_500_with_its_code_as_the_studio_api_answers_it(api, monkeypatch):
    def refused(*args, **kwargs):
        raise AccessDenied("S3 refused the function: s3:GetObject on the sessions bucket")

    monkeypatch.setattr(api.handler.facts, "memory", refused)
    status, body = api("GET", f"{FACTS}/customers/{CUSTOMER}/memory")
    assert status == 500
    assert body == {"error": {"code": "access_denied",
                              "message": "S3 refused the function: s3:GetObject on the sessions bucket"}}
