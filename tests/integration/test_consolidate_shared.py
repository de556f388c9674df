"""ConsolidateFunction and a tenant's shared concepts: a sighting whose name is a shared concept's waits
beside it, in the agent's own waiting pairs, for a human, counted; it is never written into the shared
concept (other agents are served only what a human approved) and never creates the agent's own
concept that would shadow it."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from test_consolidate_handler import event

from knowledge.format.sighting import Sighting
from knowledge.store.keys import SHARED

T, A = "loja", "whatsapp"
POLICY_BODY = "A devolucao de qualquer produto e gratis em ate 30 dias."


def sighting(session: str, agent: str = A, name: str = "politica-de-devolucao") -> Sighting:
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    concept = make_concept(name, sources=(session,), created_at=moment, updated_at=moment,
                           description="Cliente diz que a devolucao leva 10 dias para ser aprovada.",
                           body="A aprovacao da devolucao demora 10 dias uteis.")
    return Sighting.of(T, agent, session, "t1", concept)


@pytest.fixture
def consolidate(monkeypatch, store, bucket, sessions_bucket, bus, model):
    store.put_config(T, A, "knowledge:\n  shared: true\n", actor="operator:ana")
    store.put_config(T, "vendas", "knowledge:\n  extract: true\n", actor="operator:ana")
    store.create(T, SHARED, make_concept("politica-de-devolucao", description="Devolucao gratis em ate 30 dias.",
                                         type="policy", provenance="policy", confidence=1.0, sources=(),
                                         body=POLICY_BODY), actor="operator:ana")
    return load_handler("consolidate", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
        UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url))


def run(handler, *sightings):
    return handler.lambda_handler(event(*sightings), LambdaContext())


def test_a_sighting_of_a_shared_name_waits_beside_the_shared_concept_never_written_into_it(consolidate, store,
                                                                                           model, capsys):
    assert run(consolidate, sighting("sess_1")) == {"batchItemFailures": []}
    assert store.find(T, A, "politica-de-devolucao") is None  # no agent concept shadows the shared one
    # Every agent that recalls it is served only what the operator wrote: the shared concept is untouched.
    assert [(v.actor, v.reason) for v in store.versions(T, SHARED, "politica-de-devolucao")] == [
        ("operator:ana", "created")]
    assert store.get(T, SHARED, "politica-de-devolucao").concept.body == POLICY_BODY
    [pair] = store.waiting().of(T, A, "politica-de-devolucao")
    assert (pair.kind, pair.shared, pair.session_id, pair.why) == ("sighting", True, "sess_1", "not_judged")
    assert "10 dias" in pair.body
    assert store.waiting().counts(T, "vendas") == {}  # only in the agent whose turn it came from
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"SightingBesideShared"' in line]
    assert metrics and metrics[0]["tenant"] == T and metrics[0]["agent"] == A
    assert model.requests == []


def test_a_redelivered_sighting_waits_once_and_the_shared_concept_is_never_written(consolidate, store):
    run(consolidate, sighting("sess_1"))
    run(consolidate, sighting("sess_1"))  # redelivered
    run(consolidate, sighting("sess_2"))  # the same claim from another session: its own evidence
    assert [v.reason for v in store.versions(T, SHARED, "politica-de-devolucao")] == ["created"]
    assert sorted(p.session_id for p in store.waiting().of(T, A, "politica-de-devolucao")) == ["sess_1", "sess_2"]
    assert store.find(T, A, "politica-de-devolucao") is None


def test_an_agent_that_does_not_recall_shared_knowledge_learns_the_name_as_its_own(consolidate, store):
    run(consolidate, sighting("sess_1", agent="vendas"))
    assert store.get(T, "vendas", "politica-de-devolucao").reason == "created"
    assert [v.reason for v in store.versions(T, SHARED, "politica-de-devolucao")] == ["created"]


def test_the_claim_waiting_beside_links_its_evidence_naming_the_agent_whose_turn_it_came_from(consolidate, store):
    from knowledge.format.evidence import EvidenceLink
    from knowledge.format.sighting import EvidenceRef

    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    seen = sighting("sess_7")
    seen = Sighting.of(T, A, "sess_7", "t1", seen.parsed(), evidence=EvidenceRef(completed_at=moment, message=0,
                                                                                   start=0, end=20))
    assert run(consolidate, seen) == {"batchItemFailures": []}
    [pair] = store.waiting().of(T, A, "politica-de-devolucao")
    link = EvidenceLink.decode(pair.evidence)
    assert (link.session_id, link.turn_id, link.agent, link.start, link.end) == ("sess_7", "t1", A, 0, 20)
