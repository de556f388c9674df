"""An agent's vocabulary.yaml through the real handlers on the local AWS: saved in the studio
(validated at its line, compare-and-swap by ETag), obeyed by a warm RetrieveFunction container
within its refresh, never applied to another tenant's agent, and shown as not in force when a
file written by hand does not parse."""

from __future__ import annotations

import time
import uuid

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.operations import alarms_watching, the
from helpers.studio import BASE, demo_studio

from knowledge.store.keys import vocabulary_key

T, A = "default", "store-support"
REFRESH = 1.0
ASKED = "vocês aceitam alelo?"
READING = "readings:\n  - customers: [alelo, sodexo, ticket restaurante]\n    store: vale-alimentação vale-refeição\n"
CONCEPT = make_concept("vale-alimentacao", description="Aceitamos vale-alimentação e vale-refeição.",
                       body="Os cartões de vale-alimentação e vale-refeição valem no caixa e no site.")


@pytest.fixture
def studio(monkeypatch, store, bucket, sessions_bucket):
    call = demo_studio(monkeypatch, store, bucket, sessions_bucket)
    # A grocery of its own (as in tests/unit/recall/test_vocabulary_recall.py): what the demo's
    # wording does to the floor is not what these tests are about, the reading being in force is.
    for listed in store.list(T, A):
        store.delete(T, A, listed.name, actor="operator:ana")
    for name, said in (("entrega-bairros", "Entregamos em todos os bairros da cidade em até 2 horas."),
                       ("troca-produtos", "Trocas de produtos com a nota fiscal em até 7 dias.")):
        store.create(T, A, make_concept(name, description=said, body=said), actor="operator:ana")
    store.create(T, A, CONCEPT, actor="operator:ana")
    return call


def retrieve(monkeypatch, bucket, bus):
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                        KNOWLEDGE_REFRESH_SECONDS=str(REFRESH),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


def names(handler, tenant=T, message=ASKED):
    event = {"tenant": tenant, "agent": A, "session_id": "sess_vocab", "message": message}
    return [c["name"] for c in handler.lambda_handler(event, LambdaContext())["concepts"] if not c["linked"]]


def eventually(check, seconds=30.0):
    """Ask until `check()` holds (a warm container's refresh window passing), failing after `seconds`."""
    ends = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < ends, "not in force in time"
        time.sleep(0.1)


def test_a_reading_saved_in_the_studio_is_obeyed_by_a_warm_container_and_never_by_another_tenant(
        studio, monkeypatch, store, bucket, bus):
    handler = retrieve(monkeypatch, bucket, bus)
    assert "vale-alimentacao" not in names(handler)  # the customer's word is none of the store's
    status, empty, _ = studio("GET", f"{BASE}/vocabulary")
    assert status == 200 and empty["yaml"] is None and empty["starters"] == ["varejo-br"]
    status, saved, _ = studio("PUT", f"{BASE}/vocabulary", body={"yaml": READING})
    assert status == 200 and saved["readings"] == 1 and saved["phrases"] == 3 and saved["in_force"]
    eventually(lambda: names(handler)[:1] == ["vale-alimentacao"])
    assert names(handler, message="aceitam ticket restaurante?")[:1] == ["vale-alimentacao"]
    # Another tenant's agent of the same name, with the same concepts and no vocabulary of its own.
    other = "outra-loja"
    store.put_config(other, A, "knowledge:\n  retrieve: true\n", actor="operator:ana")
    for stored in store.load_all(T, A):
        store.create(other, A, stored.concept, actor="operator:ana")
    assert "vale-alimentacao" not in names(handler, tenant=other)
    # Edited again (compare-and-swap on the ETag read): the reading removed is no longer read.
    status, _, _ = studio("PUT", f"{BASE}/vocabulary", body={"yaml": "readings: []\n"})
    assert status == 412  # no If-Match: it exists
    status, _, _ = studio("PUT", f"{BASE}/vocabulary", body={"yaml": "readings: []\n"},
                          headers={"if-match": saved["etag"]})
    assert status == 200
    eventually(lambda: "vale-alimentacao" not in names(handler))


def test_the_studio_refuses_an_invalid_file_at_its_line_and_shows_a_hand_written_one_is_not_in_force(
        studio, s3, bucket):
    status, refused, _ = studio("PUT", f"{BASE}/vocabulary",
                                body={"yaml": "readings:\n  - customers: [alelo]\n    stor: vale\n"})
    assert status == 422 and refused["error"]["code"] == "invalid_vocabulary" and refused["line"] == 2
    assert "(reading 1): 'stor': unknown key" in refused["error"]["message"]
    assert studio("GET", f"{BASE}/vocabulary")[1]["yaml"] is None  # nothing written
    s3.put_object(Bucket=bucket, Key=vocabulary_key(T, A), Body=b"readings:\n  - customers: [alelo]\n")
    status, shown, _ = studio("GET", f"{BASE}/vocabulary")
    assert status == 200 and shown["in_force"] is False and shown["problem"]["line"] == 2
    assert "`store` is missing" in shown["problem"]["message"]
    status, starter, _ = studio("GET", "/vocabulary-starters/varejo-br")
    assert status == 200 and starter["yaml"].startswith("# A starter vocabulary for Brazilian retail")
    assert studio("GET", "/vocabulary-starters/moveis")[0] == 404


def test_a_hand_written_file_that_does_not_parse_is_counted_where_an_alarm_looks(studio, monkeypatch, s3, bucket,
                                                                                 bus, capsys):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    s3.put_object(Bucket=bucket, Key=vocabulary_key(T, A), Body=b"readings:\n  - customers: [alelo]\n")
    capsys.readouterr()
    handler = retrieve(monkeypatch, bucket, bus)  # a cold container reads it once
    assert "vale-alimentacao" not in names(handler)  # recalls without it
    invalid = the("VocabularyInvalid", capsys.readouterr().out)
    assert invalid.dimensions == {"service": "knowledge-retrieve", "tenant": T, "agent": A}
    assert alarms_watching(invalid) == ["VocabularyInvalidAlarm"]
