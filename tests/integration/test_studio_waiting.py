"""The studio API lists what waits beside a concept for the operator's judgment: the pairs a policy review or
a sighting set aside with no verdict (knowledge.store.waiting), never written into the concept; for a shared
concept, those every agent of the tenant set aside, each naming its agent."""

from __future__ import annotations

from helpers.concepts import make_concept
from helpers.studio import A, BASE, T

from knowledge.store.keys import SHARED
from knowledge.store.waiting import WaitingPair

CLAIM = WaitingPair(concept="troca-em-30-dias", kind="sighting", why="unusable", since="2026-12-02",
                    description="Cliente diz que a troca leva 60 dias.", body="A troca pode ser feita em 60 dias.",
                    session_id="sess_61", turn_id="turn_0002")
REVIEW = WaitingPair(concept="troca-em-30-dias", kind="policy", why="no_model", since="2026-12-01",
                     policy="frete-gratis-acima-199")


def test_the_pairs_waiting_beside_a_concept_are_listed_oldest_first_and_never_cached(api, store):
    before = store.get(T, A, "troca-em-30-dias")
    for pair in (CLAIM, REVIEW):
        store.waiting().put(T, A, pair)
    status, body, headers = api("GET", f"{BASE}/concepts/troca-em-30-dias/waiting")
    assert status == 200 and headers.get("Cache-Control") == "no-store"
    assert [(p["kind"], p["why"], p.get("policy"), p.get("session_id")) for p in body["pairs"]] == [
        ("policy", "no_model", "frete-gratis-acima-199", None), ("sighting", "unusable", None, "sess_61")]
    assert body["pairs"][1]["description"] == CLAIM.description and body["pairs"][1]["agent"] == A
    assert store.get(T, A, "troca-em-30-dias").version_id == before.version_id  # nothing written into it
    status, body, _ = api("GET", f"{BASE}/concepts/rastreio-pedido/waiting")
    assert status == 200 and body == {"pairs": []}


def test_a_shared_concepts_pairs_are_listed_from_every_agent_that_set_one_aside(api, store):
    store.create(T, SHARED, make_concept("politica-de-devolucao", type="policy", provenance="policy",
                                         confidence=1.0, sources=()), actor="operator:ana")
    store.put_config(T, "site-chat", "knowledge:\n  shared: true\n", actor="operator:ana")
    for agent, session in ((A, "sess_1"), ("site-chat", "sess_2")):
        store.waiting().put(T, agent, WaitingPair(concept="politica-de-devolucao", kind="sighting", why="not_judged",
                                                  since="2026-12-02", description="Devolução em 10 dias.",
                                                  body="A devolução leva 10 dias.", session_id=session,
                                                  turn_id="t1", shared=True))
    status, body, _ = api("GET", f"/tenants/{T}/agents/{SHARED}/concepts/politica-de-devolucao/waiting")
    assert status == 200 and [(p["agent"], p["session_id"], p["shared"]) for p in body["pairs"]] == [
        ("site-chat", "sess_2", True), (A, "sess_1", True)]  # the same day: by agent


def test_a_concept_that_does_not_exist_is_404(api):
    status, body, _ = api("GET", f"{BASE}/concepts/nao-existe/waiting")
    assert status == 404


def test_the_list_counts_what_waits_beside_as_related_and_a_dismissal_clears_it(api, store):
    store.waiting().put(T, A, CLAIM)
    store.waiting().put(T, A, REVIEW)
    status, listed, _ = api("GET", f"{BASE}/concepts", query={"status": "related"})
    assert status == 200 and [(c["name"], c["related"]) for c in listed["concepts"]] == [("troca-em-30-dias", 2)]
    status, body, _ = api("DELETE", f"{BASE}/concepts/troca-em-30-dias/waiting")
    assert status == 200 and body == {"dismissed": 2}
    assert store.waiting().counts(T, A) == {}
    _, listed, _ = api("GET", f"{BASE}/concepts", query={"status": "related"})
    assert listed["concepts"] == []
    # Dismissed is not forgotten: a purge still finds every version of a customer's claim by its key.
    assert len(store.waiting().keys_of_sessions(T, A, frozenset({"sess_61"}))) == 1
    assert store.waiting().keys_of_sessions(T, A, frozenset({"sess_99"})) == []
