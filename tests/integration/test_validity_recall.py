"""Knowledge that stops being true leaves recall, through the real handlers: a dated sighting is
stamped with the end its evidence states, and an expired, not yet started or stale concept is
kept but never injected (load_knowledge answers it, marked)."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime, timedelta, timezone

import pytest
from helpers.aws import drain
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler

T, A = "default", "store-support"
CONFIG = 'knowledge:\n  extract: true\n  retrieve: true\n  utc_offset: "-03:00"\n'
ASKED = "O frete é grátis para Campinas?"
FRETE = dict(description="Frete grátis para Campinas em qualquer pedido.",
             body="O frete é grátis para Campinas em qualquer pedido do site.")


def turn_event(completed_at: str, said: str, session: str) -> dict:
    record = load_event("turn-complete.json")["Records"][0]
    body = {"tenant": T, "agent": A, "session_id": session, "turn_id": "turn_0001",
            "completed_at": completed_at,
            "messages": [{"role": "user", "content": "Tem alguma promoção de frete?"},
                         {"role": "assistant", "content": said}]}
    return {"Records": [{**record, "messageId": "m-1", "body": json.dumps(body, ensure_ascii=False)}]}


def sqs_event(bodies: list[str]) -> dict:
    return {"Records": [{
        "messageId": f"m{i}", "receiptHandle": f"r{i}", "body": body,
        "attributes": {"MessageGroupId": "g", "MessageDeduplicationId": f"d{i}", "ApproximateReceiveCount": "1",
                       "SentTimestamp": "0", "SenderId": "x", "ApproximateFirstReceiveTimestamp": "0",
                       "SequenceNumber": str(i)},
        "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo", "awsRegion": "us-east-1",
    } for i, body in enumerate(bodies)]}


@pytest.fixture
def learn(monkeypatch, store, bucket, sessions_bucket, candidates_queue, bus, model, sqs):
    """Extract one turn (the model quoting `evidence`), then consolidate what it sent; the stored concept."""
    store.put_config(T, A, CONFIG, actor="operator:demo")
    extract = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=model.base_url))
    consolidate = load_handler("consolidate", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
        UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=model.base_url))

    def run(completed_at: str, said: str, evidence: str, name: str = "frete-gratis-site", session: str = "sess_1"):
        model.responder = lambda request: json.dumps([{
            "name": name, "type": "fact", "evidence": evidence,
            "description": "Frete grátis em todo o site.", "body": "Frete grátis em todo o site, sem valor mínimo."}],
            ensure_ascii=False)
        assert extract.lambda_handler(turn_event(completed_at, said, session), LambdaContext()) == {"batchItemFailures": []}
        bodies = [m["Body"] for m in drain(sqs, candidates_queue)]
        assert consolidate.lambda_handler(sqs_event(bodies), LambdaContext()) == {"batchItemFailures": []}
        return store.get(T, A, name).concept

    return run


def test_a_sighting_whose_evidence_states_an_end_is_stamped_with_it(learn):
    said = "Frete grátis em todo o site até domingo (29/11)! Aproveita que é por pouco tempo."
    concept = learn("2026-11-24T15:02:00-03:00", said, said)
    assert (concept.valid_from, concept.valid_until) == (None, date(2026, 11, 29))
    assert "valid_until: 2026-11-29\n" in concept.render()


def test_the_end_is_counted_from_the_turn_s_local_date_not_its_utc_date(learn):
    said = "Essa condição é só hoje, tá? Frete grátis em todo o site."
    concept = learn("2026-11-24T22:30:00-03:00", said, said)  # already the 25th in UTC
    assert concept.valid_until == date(2026, 11, 24)


def test_an_unresolvable_end_or_a_deadline_of_the_rule_stamps_no_date(learn):
    said = "Frete grátis em todo o site enquanto durarem os estoques, entregue em até 4 dias úteis."
    concept = learn("2026-11-24T15:02:00-03:00", said, said)
    assert (concept.valid_from, concept.valid_until) == (None, None)
    assert "valid_" not in concept.render()


def test_a_later_dated_sighting_moves_the_end_of_an_observed_concept(learn, store):
    first = "Frete grátis em todo o site até domingo (29/11)!"
    learn("2026-11-24T15:02:00-03:00", first, first)
    again = "Frete grátis em todo o site até 31/12!"
    assert store.get(T, A, "frete-gratis-site").concept.valid_until == date(2026, 11, 29)
    concept = learn("2026-11-30T10:00:00-03:00", again, again, session="sess_2")
    assert concept.valid_until == date(2026, 12, 31) and concept.occurrences == 2


# ------------------------------------------------------------------ retrieval

@pytest.fixture
def retrieve(monkeypatch, store, bucket, bus):
    store.put_config(T, A, CONFIG + "  stale_after_days: 180\n", actor="operator:demo")
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                        KNOWLEDGE_REFRESH_SECONDS="0",
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


def ask(handler, message: str = ASKED) -> list[str]:
    answer = handler.lambda_handler({"tenant": T, "agent": A, "session_id": "sess_1", "message": message},
                                    LambdaContext())
    return [c["name"] for c in answer["concepts"]]


def load(handler, name: str) -> dict:
    return handler.lambda_handler({"action": "load_knowledge", "tenant": T, "agent": A, "session_id": "sess_1",
                                   "name": name}, LambdaContext())


def local_today() -> date:
    return (datetime.now(timezone.utc) - timedelta(hours=3)).date()


def recent() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=2)


def test_an_expired_concept_is_not_injected_but_is_kept_and_loaded_marked_expired(retrieve, store):
    moment = recent()
    store.create(T, A, make_concept("frete-gratis-campinas", created_at=moment, updated_at=moment,
                                    valid_until=local_today() - timedelta(days=1), **FRETE), actor="engine")
    assert ask(retrieve) == []
    loaded = load(retrieve, "frete-gratis-campinas")
    assert loaded["concept"]["recall"] == "expired"
    assert loaded["concept"]["valid_until"] == (local_today() - timedelta(days=1)).isoformat()
    assert "valid_until: " in loaded["markdown"]


def test_a_concept_valid_through_today_is_injected(retrieve, store):
    moment = recent()
    store.create(T, A, make_concept("frete-gratis-campinas", created_at=moment, updated_at=moment,
                                    valid_until=local_today(), **FRETE), actor="engine")
    assert ask(retrieve) == ["frete-gratis-campinas"]
    assert load(retrieve, "frete-gratis-campinas")["concept"]["recall"] is None


def test_a_campaign_not_yet_started_is_not_injected(retrieve, store):
    moment = recent()
    store.create(T, A, make_concept("frete-gratis-campinas", created_at=moment, updated_at=moment,
                                    valid_from=local_today() + timedelta(days=2), **FRETE), actor="engine")
    assert ask(retrieve) == []
    assert load(retrieve, "frete-gratis-campinas")["concept"]["recall"] == "not_started"


def test_an_observed_concept_nothing_has_seen_for_the_configured_days_is_stale(retrieve, store):
    old = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=181)
    store.create(T, A, make_concept("frete-gratis-campinas", created_at=old, updated_at=old, **FRETE), actor="engine")
    assert ask(retrieve) == []
    assert load(retrieve, "frete-gratis-campinas")["concept"]["recall"] == "stale"


def test_a_policy_concept_never_goes_stale(retrieve, store):
    old = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=400)
    store.create(T, A, make_concept("frete-gratis-campinas", created_at=old, updated_at=old, provenance="policy",
                                    **FRETE), actor="operator:demo")
    assert ask(retrieve) == ["frete-gratis-campinas"]


def test_one_new_sighting_brings_a_stale_concept_back(retrieve, store):
    old = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=181)
    stored = store.create(T, A, make_concept("frete-gratis-campinas", created_at=old, updated_at=old, **FRETE),
                          actor="engine")
    assert ask(retrieve) == []
    seen = stored.concept.replace(updated_at=datetime.now(timezone.utc).replace(microsecond=0), occurrences=2)
    store.replace(T, A, seen, if_match=stored.etag, actor="engine", reason="confirmed")
    assert ask(retrieve) == ["frete-gratis-campinas"]

