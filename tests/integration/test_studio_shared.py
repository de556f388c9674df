"""The tenant's shared knowledge in the studio, through the real StudioApiFunction handler: the scope
`_shared` in an agent's place lists, edits, keeps history and deletions like an agent; every row says
its scope; an agent's concept is copied or moved there (409 when the name is taken); the agents
overview counts it; and one edit made there is recalled by two agents that opt in, through the real
RetrieveFunction handler."""

from __future__ import annotations

import uuid

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler, until
from helpers.paths import DEMO
from helpers.studio import ANA, BASE, A, T, demo_studio

from knowledge.store.keys import SHARED

SHARED_BASE = f"/tenants/{T}/agents/{SHARED}"
OPT_IN = (DEMO / "knowledge.yaml").read_text().replace("  retrieve: true\n", "  retrieve: true\n  shared: true\n")
POLICY = "politica-de-devolucao"
ASK = "Boa tarde! Quero devolver o produto do pedido 48213: qual a politica de devolucao de voces?"


def policy_text(days: int) -> str:
    return make_concept(POLICY, description=f"Devolucao gratis em ate {days} dias apos a entrega.",
                        type="policy", provenance="policy", confidence=1.0, sources=(),
                        body=f"A devolucao de qualquer produto e gratis em ate {days} dias.").render()


@pytest.fixture
def api(monkeypatch, store, bucket, sessions_bucket):
    call = demo_studio(monkeypatch, store, bucket, sessions_bucket)
    current = store.get_config(T, A)
    store.put_config(T, A, OPT_IN, actor="operator:demo", if_match=current.etag)
    store.put_config(T, "site-chat", OPT_IN, actor="operator:demo")
    store.create(T, "site-chat", make_concept("horario-atendimento"), actor="engine")
    return call


def test_the_shared_scope_is_listed_edited_and_kept_like_an_agent_with_its_scope_on_every_row(api, store):
    status, created, _ = api("POST", f"{SHARED_BASE}/concepts", body={"markdown": policy_text(30)})
    assert status == 201 and store.get(T, SHARED, POLICY).concept.description.startswith("Devolucao gratis em ate 30")
    status, listed, _ = api("GET", f"{SHARED_BASE}/concepts")
    assert status == 200 and [(c["name"], c["scope"]) for c in listed["concepts"]] == [(POLICY, "shared")]
    assert listed["shared_recalled"] is None and listed["config_problem"] is None
    edited = created["markdown"].replace("30 dias", "45 dias")
    status, saved, _ = api("PUT", f"{SHARED_BASE}/concepts/{POLICY}", body={"markdown": edited},
                           headers={"if-match": created["etag"]})
    assert status == 200 and "45 dias" in store.get(T, SHARED, POLICY).text
    status, stale, _ = api("PUT", f"{SHARED_BASE}/concepts/{POLICY}", body={"markdown": edited.replace("45 dias", "60 dias")},
                           headers={"if-match": created["etag"]})
    assert status == 412 and "45 dias" in stale["current"]["markdown"]
    _, history, _ = api("GET", f"{SHARED_BASE}/concepts/{POLICY}/versions")
    assert [(v["reason"], v["actor"]) for v in history["versions"]] == [("edit", f"operator:{ANA['sub']}"),
                                                                        ("created", f"operator:{ANA['sub']}")]
    status, _, _ = api("DELETE", f"{SHARED_BASE}/concepts/{POLICY}")
    assert status == 200 and store.find(T, SHARED, POLICY) is None
    _, deleted, _ = api("GET", f"{SHARED_BASE}/deleted")
    assert [d["name"] for d in deleted["deleted"]] == [POLICY]
    status, back, _ = api("POST", f"{SHARED_BASE}/deleted/{POLICY}/restore")
    assert status == 200 and "45 dias" in back["markdown"]
    # No agent's row is the shared one's, and the agent's own rows say so.
    _, own, _ = api("GET", f"{BASE}/concepts")
    assert {c["scope"] for c in own["concepts"]} == {"agent"} and POLICY not in [c["name"] for c in own["concepts"]]


def test_an_agents_concept_is_copied_to_shared_and_its_row_says_it_shadows_it(api, store):
    status, copy, _ = api("POST", f"{BASE}/concepts/troca-em-30-dias/share", body={})
    assert status == 201 and copy["moved"] is False
    assert store.get(T, SHARED, "troca-em-30-dias").text == (DEMO / "troca-em-30-dias.md").read_text()
    assert store.get(T, A, "troca-em-30-dias").text == (DEMO / "troca-em-30-dias.md").read_text()
    latest = store.versions(T, SHARED, "troca-em-30-dias")[0]
    assert (latest.actor, latest.reason) == (f"operator:{ANA['sub']}", "created")
    _, own, _ = api("GET", f"{BASE}/concepts")
    shadows = {c["name"] for c in own["concepts"] if c["shadows_shared"]}
    assert shadows == {"troca-em-30-dias"} and own["shared_recalled"] == 0
    _, other, _ = api("GET", f"/tenants/{T}/agents/site-chat/concepts")
    assert other["shared_recalled"] == 1 and not any(c["shadows_shared"] for c in other["concepts"])
    status, taken, _ = api("POST", f"{BASE}/concepts/troca-em-30-dias/share", body={})
    assert status == 409 and taken["error"]["code"] == "name_taken" and taken["name"] == "troca-em-30-dias"
    assert "shared knowledge already has" in taken["error"]["message"]
    # The agent's concept edited since: moving it would lose the shared one's text, so it is refused.
    _, concept, _ = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    api("PUT", f"{BASE}/concepts/troca-em-30-dias", body={"markdown": concept["markdown"].replace(
        "30 dias", "15 dias")}, headers={"if-match": concept["etag"]})
    status, taken, _ = api("POST", f"{BASE}/concepts/troca-em-30-dias/share", body={"move": True})
    assert status == 409 and taken["error"]["code"] == "name_taken"
    assert "15 dias" in store.get(T, A, "troca-em-30-dias").text  # a refused move deletes nothing
    assert "15 dias" not in store.get(T, SHARED, "troca-em-30-dias").text


def test_a_move_deletes_the_agents_concept_restorably_and_finishes_when_asked_again(api, store):
    status, moved, _ = api("POST", f"{BASE}/concepts/prazo-reembolso-pix/share", body={"move": True})
    assert status == 201 and moved["moved"] is True
    assert store.find(T, A, "prazo-reembolso-pix") is None
    assert store.get(T, SHARED, "prazo-reembolso-pix").text == (DEMO / "prazo-reembolso-pix.md").read_text()
    _, deleted, _ = api("GET", f"{BASE}/deleted")
    assert [(d["name"], d["deleted_by"]) for d in deleted["deleted"]] == [("prazo-reembolso-pix",
                                                                          f"operator:{ANA['sub']}")]
    # A move whose delete never happened (S3 down after the copy): asked again, it finishes.
    api("POST", f"{BASE}/deleted/prazo-reembolso-pix/restore")
    status, again, _ = api("POST", f"{BASE}/concepts/prazo-reembolso-pix/share", body={"move": True})
    assert status == 201 and again["moved"] is True and store.find(T, A, "prazo-reembolso-pix") is None
    assert [v.reason for v in store.versions(T, SHARED, "prazo-reembolso-pix")] == ["created"]


def test_a_move_never_deletes_what_was_written_since_it_was_copied(api, store, monkeypatch):
    from knowledge.store.concepts import ConceptStore

    real = ConceptStore.create

    def engine_writes_after_the_copy(self, tenant, agent, concept, **kwargs):  # a sighting merged before the delete
        copy = real(self, tenant, agent, concept, **kwargs)
        if agent == SHARED:
            current = store.get(T, A, concept.name)
            store.replace(T, A, current.concept.replace(occurrences=current.concept.occurrences + 1),
                          if_match=current.etag, actor="engine", reason="confirmed")
        return copy

    monkeypatch.setattr(ConceptStore, "create", engine_writes_after_the_copy)
    status, answer, _ = api("POST", f"{BASE}/concepts/rastreio-pedido/share", body={"move": True})
    assert status == 201 and answer["moved"] is False
    assert store.get(T, A, "rastreio-pedido").reason == "confirmed" and store.find(T, SHARED, "rastreio-pedido")


def test_a_deleted_shared_name_is_said_and_a_retired_concept_is_shared_recallable(api, store):
    api("POST", f"{BASE}/concepts/troca-em-30-dias/share", body={})
    api("DELETE", f"{SHARED_BASE}/concepts/troca-em-30-dias")
    status, refused, _ = api("POST", f"{BASE}/concepts/troca-em-30-dias/share", body={"move": True})
    assert status == 409 and refused["error"]["code"] == "name_deleted" and refused["deleted_at"]
    assert store.find(T, A, "troca-em-30-dias") is not None and store.find(T, SHARED, "troca-em-30-dias") is None
    # Retired by this agent's policy: the policy is not the shared scope's, so the copy is recalled there.
    current = store.get(T, A, "cep-sudeste-cd-campinas")
    store.replace(T, A, current.concept.replace(retired_by="frete-gratis-acima-199"), if_match=current.etag,
                  actor="engine", reason="retired")
    status, _, _ = api("POST", f"{BASE}/concepts/cep-sudeste-cd-campinas/share", body={})
    assert status == 201 and store.get(T, SHARED, "cep-sudeste-cd-campinas").concept.retired_by is None
    _, listed, _ = api("GET", f"{SHARED_BASE}/concepts")
    assert {c["name"]: c["recall"] for c in listed["concepts"]} == {"cep-sudeste-cd-campinas": None}


def test_the_agents_overview_counts_the_shared_scope(api, store):
    status, overview, _ = api("GET", f"/tenants/{T}/agents")
    assert status == 200 and overview["shared"]["name"] == SHARED and overview["shared"]["concepts"] == 0
    api("POST", f"{BASE}/concepts/troca-em-30-dias/share", body={})
    api("POST", f"{SHARED_BASE}/concepts", body={"markdown": policy_text(30)})
    _, overview, _ = api("GET", f"/tenants/{T}/agents")
    assert overview["shared"]["concepts"] == 2 and SHARED not in [a["name"] for a in overview["agents"]]


@pytest.mark.parametrize("method, path, body", [
    ("GET", f"{SHARED_BASE}/config", None),
    ("GET", f"{SHARED_BASE}/vocabulary", None),
    ("POST", f"{SHARED_BASE}/concepts/troca-em-30-dias/share", {}),
    ("GET", f"/tenants/{T}/agents/_other/concepts", None),
])
def test_the_shared_scope_has_no_settings_of_its_own_and_no_other_underscore_name_is_a_scope(api, method, path, body):
    status, answer, _ = api(method, path, body=body)
    assert status == 400 and answer["error"]["code"] == "invalid_name"


def test_another_tenants_operator_never_reaches_the_shared_scope(api, store):
    api("POST", f"{SHARED_BASE}/concepts", body={"markdown": policy_text(30)})
    other = {"sub": "b0b", "cognito:groups": "[loja-b]"}
    for method, path, body in (("GET", f"{SHARED_BASE}/concepts", None),
                               ("GET", f"{SHARED_BASE}/concepts/{POLICY}", None),
                               ("DELETE", f"{SHARED_BASE}/concepts/{POLICY}", None),
                               ("POST", f"{BASE}/concepts/troca-em-30-dias/share", {}),
                               ("GET", f"/tenants/{T}/agents", None)):
        status, _, _ = api(method, path, body=body, claims=other)
        assert status == 403, (method, path)
    assert store.find(T, SHARED, POLICY) is not None and store.find(T, SHARED, "troca-em-30-dias") is None
    # Its own shared scope is another prefix: empty.
    status, own, _ = api("GET", f"/tenants/loja-b/agents/{SHARED}/concepts", claims=other)
    assert status == 404 or own["concepts"] == []


def test_two_agents_recall_one_shared_policy_edited_once_in_the_studio(api, store, monkeypatch, bucket, bus):
    retrieve = load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                            KNOWLEDGE_REFRESH_SECONDS="1",
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")

    def block(agent: str) -> str:
        return retrieve.lambda_handler({"tenant": T, "agent": agent, "session_id": "s1", "message": ASK},
                                       LambdaContext())["block"]

    _, created, _ = api("POST", f"{SHARED_BASE}/concepts", body={"markdown": policy_text(30)})
    assert "30 dias" in block(A) and "30 dias" in block("site-chat")
    api("PUT", f"{SHARED_BASE}/concepts/{POLICY}", body={"markdown": created["markdown"].replace("30 dias", "45 dias")},
        headers={"if-match": created["etag"]})
    assert until(lambda: "45 dias" in block(A)) and until(lambda: "45 dias" in block("site-chat"))
    assert "30 dias" not in block("site-chat")


def test_a_claim_kept_beside_a_shared_concept_shows_its_quote_from_the_agent_whose_turn_it_came_from(
        api, store, s3, sessions_bucket):
    """Consolidation writes the claim on the shared concept with the link of the sighting, naming its
    agent (the shared scope has no archive of its own); the studio reads the quote from that agent's."""
    from helpers.studio import archive_demo_turn

    from knowledge.format.concept import parse
    from knowledge.format.evidence import EvidenceLink

    turn = archive_demo_turn(s3, sessions_bucket)
    quote = "despachados no mesmo dia"
    start = turn.messages[3].content.index(quote)
    created = store.create(T, SHARED, parse(policy_text(30)), actor="operator:ana")
    for agent, reason in ((A, "kept_beside"), (None, "kept_beside")):
        current = store.get(T, SHARED, POLICY)
        link = EvidenceLink(turn.session_id, turn.turn_id, turn.completed_at, 3, start, start + len(quote), agent)
        store.replace(T, SHARED, current.concept.replace(occurrences=current.concept.occurrences + 1),
                      if_match=current.etag, actor="engine", reason=reason, evidence=link)
    _, history, _ = api("GET", f"{SHARED_BASE}/concepts/{POLICY}/versions")
    unnamed, named = history["versions"][0]["version_id"], history["versions"][1]["version_id"]
    assert history["versions"][2]["version_id"] == created.version_id
    status, evidence, _ = api("GET", f"{SHARED_BASE}/concepts/{POLICY}/versions/{named}/evidence")
    assert status == 200 and (evidence["status"], evidence["excerpt"]) == ("available", quote)
    status, refused, _ = api("GET", f"{SHARED_BASE}/concepts/{POLICY}/versions/{unnamed}/evidence")
    assert status == 404 and refused["error"]["code"] == "no_evidence"
