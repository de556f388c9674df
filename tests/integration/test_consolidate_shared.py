"""ConsolidateFunction and a tenant's shared concepts: a sighting whose name is a shared concept's is kept
beside it for a human, counted, and never creates the agent's own concept that would shadow it."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from test_consolidate_handler import event

from knowledge.format.sighting import Sighting
from knowledge.learning.claims import RELATED_HEADING
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
    return load_handler("consolidate", monkeypatch, KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                        EVENT_BUS_NAME=bus["name"], UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url)


def run(handler, *sightings):
    return handler.lambda_handler(event(*sightings), LambdaContext())


def test_a_sighting_of_a_shared_name_is_kept_beside_the_shared_concept_never_shadowing_it(consolidate, store,
                                                                                         model, capsys):
    assert run(consolidate, sighting("sess_1")) == {"batchItemFailures": []}
    assert store.find(T, A, "politica-de-devolucao") is None  # no agent concept shadows the shared one
    stored = store.get(T, SHARED, "politica-de-devolucao")
    assert (stored.actor, stored.reason) == ("engine", "kept_beside")
    concept = stored.concept
    assert concept.body.startswith(POLICY_BODY) and RELATED_HEADING in concept.body
    assert "10 dias" in concept.body.split(RELATED_HEADING, 1)[1]
    assert (concept.occurrences, concept.confidence) == (1, 1.0)
    assert concept.description == "Devolucao gratis em ate 30 dias."
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"SightingBesideShared"' in line]
    assert metrics and metrics[0]["tenant"] == T and metrics[0]["agent"] == A
    assert model.requests == []


def test_a_redelivered_or_repeated_sighting_writes_the_shared_concept_once(consolidate, store):
    run(consolidate, sighting("sess_1"))
    run(consolidate, sighting("sess_1"))  # redelivered
    run(consolidate, sighting("sess_2"))  # the same claim from another session: already waiting there
    assert [v.reason for v in store.versions(T, SHARED, "politica-de-devolucao")] == ["kept_beside", "created"]
    assert store.find(T, A, "politica-de-devolucao") is None


def test_an_agent_that_does_not_recall_shared_knowledge_learns_the_name_as_its_own(consolidate, store):
    run(consolidate, sighting("sess_1", agent="vendas"))
    assert store.get(T, "vendas", "politica-de-devolucao").reason == "created"
    assert [v.reason for v in store.versions(T, SHARED, "politica-de-devolucao")] == ["created"]


def test_the_claim_kept_beside_links_its_evidence_naming_the_agent_whose_turn_it_came_from(consolidate, store):
    from knowledge.format.sighting import EvidenceRef

    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    seen = sighting("sess_7")
    seen = Sighting.of(T, A, "sess_7", "t1", seen.parsed(), evidence=EvidenceRef(completed_at=moment, message=0,
                                                                                   start=0, end=20))
    assert run(consolidate, seen) == {"batchItemFailures": []}
    link = store.versions(T, SHARED, "politica-de-devolucao")[0].evidence
    assert (link.session_id, link.turn_id, link.agent, link.start, link.end) == ("sess_7", "t1", A, 0, 20)

