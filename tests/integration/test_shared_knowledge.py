"""A tenant's shared knowledge through the real RetrieveFunction handler on the local stack: two agents
that opt in (`knowledge: shared: true`) recall one shared policy, edited once; an agent's own concept
of the same name wins; an agent that did not opt in, and another tenant, never see it."""

from __future__ import annotations

import uuid

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler, until

from knowledge.store.keys import SHARED

T, OTHER = "loja", "outra"
REFRESH = 1.0  # KNOWLEDGE_REFRESH_SECONDS here; the template's default is 5
OPTED = "knowledge:\n  shared: true\n  stale_after_days: 0\n"
NOT_OPTED = "knowledge:\n  stale_after_days: 0\n"
POLICY = "politica-de-devolucao"
ASK = "Quero devolver o produto: qual a politica de devolucao da loja?"


def policy(description: str, body: str):
    return make_concept(POLICY, description=description, type="policy", provenance="policy", confidence=1.0,
                        sources=(), body=body)


@pytest.fixture
def tenant(store):
    for agent in ("whatsapp", "site-chat", "balcao"):
        store.put_config(T, agent, OPTED, actor="operator:ana")
    store.put_config(T, "vendas", NOT_OPTED, actor="operator:ana")
    store.put_config(OTHER, "whatsapp", OPTED, actor="operator:ana")
    for agent in ("whatsapp", "site-chat", "balcao", "vendas"):
        store.create(T, agent, make_concept("frete-gratis"), actor="engine")
    store.create(T, "balcao", policy("Devolucao so no balcao da loja fisica, com a nota.",
                                     "No balcao, a devolucao e feita na loja fisica."), actor="operator:ana")
    store.create(T, SHARED, policy("Devolucao gratis em ate 30 dias apos a entrega.",
                                   "A devolucao de qualquer produto e gratis em ate 30 dias."), actor="operator:ana")
    return store


def container(monkeypatch, bucket, bus):
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                        KNOWLEDGE_REFRESH_SECONDS=str(REFRESH),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


def ask(handler, tenant: str, agent: str, message: str = ASK) -> dict:
    return handler.lambda_handler({"tenant": tenant, "agent": agent, "session_id": "s1", "message": message},
                                  LambdaContext())


def load(handler, tenant: str, agent: str, name: str = POLICY) -> dict:
    return handler.lambda_handler({"action": "load_knowledge", "tenant": tenant, "agent": agent, "session_id": "s1",
                                   "name": name}, LambdaContext())


def test_two_opted_in_agents_recall_the_one_shared_policy_and_load_it(tenant, monkeypatch, bucket, bus):
    handler = container(monkeypatch, bucket, bus)
    for agent in ("whatsapp", "site-chat"):
        answer = ask(handler, T, agent)
        assert "Devolucao gratis em ate 30 dias" in answer["block"], agent
        assert [c["name"] for c in answer["concepts"]][0] == POLICY
        loaded = load(handler, T, agent)
        assert loaded["concept"]["body"] == "A devolucao de qualquer produto e gratis em ate 30 dias."
    # The agent's own concepts are still recalled beside it.
    assert "frete-gratis" in ask(handler, T, "whatsapp", "O frete e gratis acima de R$199?")["block"]


def test_an_agents_own_concept_of_the_name_wins(tenant, monkeypatch, bucket, bus):
    handler = container(monkeypatch, bucket, bus)
    answer = ask(handler, T, "balcao")
    assert "Devolucao so no balcao" in answer["block"] and "30 dias" not in answer["block"]
    assert load(handler, T, "balcao")["concept"]["body"] == "No balcao, a devolucao e feita na loja fisica."
    hits = handler.lambda_handler({"action": "search_knowledge", "tenant": T, "agent": "balcao", "session_id": "s1",
                                   "query": "devolucao"}, LambdaContext())["hits"]
    assert [h["description"] for h in hits if h["name"] == POLICY] == [
        "Devolucao so no balcao da loja fisica, com a nota."]


def test_an_agent_that_did_not_opt_in_and_another_tenant_never_see_it(tenant, monkeypatch, bucket, bus):
    handler = container(monkeypatch, bucket, bus)
    for tenant_name, agent in ((T, "vendas"), (OTHER, "whatsapp")):
        answer = ask(handler, tenant_name, agent)
        assert POLICY not in answer["block"] and "30 dias" not in answer["block"], (tenant_name, agent)
        assert load(handler, tenant_name, agent)["error"]["code"] == "not_found"
        hits = handler.lambda_handler({"action": "search_knowledge", "tenant": tenant_name, "agent": agent,
                                       "session_id": "s1", "query": "devolucao"}, LambdaContext())["hits"]
        assert POLICY not in [h["name"] for h in hits]


def test_one_edit_of_the_shared_policy_is_recalled_by_both_agents_warm_containers(tenant, monkeypatch, bucket, bus):
    whatsapp, site = container(monkeypatch, bucket, bus), container(monkeypatch, bucket, bus)
    assert "30 dias" in ask(whatsapp, T, "whatsapp")["block"] and "30 dias" in ask(site, T, "site-chat")["block"]
    current = tenant.get(T, SHARED, POLICY)
    tenant.replace(T, SHARED, policy("Devolucao gratis em ate 45 dias apos a entrega.",
                                     "A devolucao de qualquer produto e gratis em ate 45 dias."),
                   if_match=current.etag, actor="operator:ana", reason="edit")
    assert until(lambda: "45 dias" in ask(whatsapp, T, "whatsapp")["block"])
    assert until(lambda: "45 dias" in ask(site, T, "site-chat")["block"])
    assert load(site, T, "site-chat")["concept"]["body"] == "A devolucao de qualquer produto e gratis em ate 45 dias."
    # The shared scope keeps its own history, like an agent's.
    assert [v.reason for v in tenant.versions(T, SHARED, POLICY) if not v.deleted][:2] == ["edit", "created"]


def s3_requests(handler, calls) -> list[str]:
    """The S3 operations the handler's client sends while `calls` run."""
    from shared.aws import client

    sent: list[str] = []
    record = lambda model, **kwargs: sent.append(model.name)  # noqa: E731
    s3 = client("s3")
    s3.meta.events.register("before-call.s3", record)
    try:
        calls()
    finally:
        s3.meta.events.unregister("before-call.s3", record)
    return sent


def test_between_refreshes_a_turn_sends_no_s3_request_and_a_refresh_one_listing_per_index(tenant, monkeypatch,
                                                                                        bucket, bus):
    def started(refresh: str):
        handler = load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                               KNOWLEDGE_REFRESH_SECONDS=refresh,
                               POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
        assert "30 dias" in ask(handler, T, "whatsapp")["block"]  # the cold start's reads
        return handler

    handler = started("3600")
    assert s3_requests(handler, lambda: [ask(handler, T, "whatsapp") for _ in range(5)]) == []
    handler = started("0")  # every call refreshes: what one refresh costs
    sent = s3_requests(handler, lambda: ask(handler, T, "whatsapp"))
    # The agent's journal listing and its conditional knowledge.yaml GET; the shared index's journal listing.
    assert sorted(sent) == ["GetObject", "ListObjectsV2", "ListObjectsV2"]


def test_a_claim_left_beside_a_shared_policy_before_is_never_served_to_an_agent(tenant, monkeypatch, bucket, bus):
    """Shared knowledge serves only what a human approved: a customer's claim an older release kept under the
    shared policy's `## Related claims` is not in what any agent's load_knowledge answers."""
    current = tenant.get(T, SHARED, POLICY)
    beside = current.concept.body + ("\n\n## Related claims\n\nSession sess_9 (2026-11-20): Cliente diz que a "
                                     "devolucao leva 10 dias.\n\n> A aprovacao demora 10 dias uteis.")
    tenant.replace(T, SHARED, current.concept.replace(body=beside), if_match=current.etag, actor="engine",
                   reason="kept_beside")
    handler = container(monkeypatch, bucket, bus)
    for agent in ("whatsapp", "site-chat"):
        loaded = load(handler, T, agent)
        assert loaded["concept"]["body"] == "A devolucao de qualquer produto e gratis em ate 30 dias.", agent
        assert "10 dias" not in loaded["markdown"] and "Related claims" not in loaded["markdown"]
