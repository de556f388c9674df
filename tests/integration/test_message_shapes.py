"""Rolling deploys: the CandidatesQueue reader takes the previous and the next shape of a sighting.

While a deploy rolls, an extractor one release ahead or behind the consolidator sends to it.
Today's message (no evidence link) and a next release's (`v` 2, fields this release does not
know) both go through the real ConsolidateFunction handler; unknown fields are dropped, never
stored or announced.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from helpers.aws import drain
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import EVENTS

from knowledge.errors import InvalidSighting
from knowledge.format.sighting import EvidenceRef, Sighting, parse_sighting

T, A = "default", "store-support"
SECRET = "cliente Ana, CPF 529.982.247-25"
MOMENT = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
LINK = {"completed_at": "2026-11-20T14:05:31.250000Z", "message": 3, "start": 5, "end": 73}


def concept_text(name: str = "despacho-no-mesmo-dia") -> str:
    return make_concept(name, type="policy",
                        description="Pedido pago até as 14h em um dia útil é despachado no mesmo dia.",
                        body="Os pedidos pagos até as 14h de um dia útil já saem no mesmo dia.",
                        sources=("sess_demo_01",), created_at=MOMENT, updated_at=MOMENT).render()


def previous_shape(**fields) -> dict:
    """A sighting exactly as the release before evidence links wrote it."""
    return {"v": 1, "tenant": T, "agent": A, "session_id": "sess_demo_01", "turn_id": "turn_0004",
            "concept": concept_text(), **fields}


def next_shape(**fields) -> dict:
    """A hypothetical next release's sighting: its version, the link, and fields this reader does not know."""
    return previous_shape(v=2, evidence=LINK, quote_sha256="ab" * 32,
                          facts={"customer_id": "cus_20931", "note": SECRET}, **fields)


def test_the_previous_shape_is_read_as_before():
    sighting = parse_sighting(json.dumps(previous_shape()))
    assert (sighting.v, sighting.evidence, sighting.name) == (1, None, "despacho-no-mesmo-dia")
    assert json.loads(sighting.body()) == previous_shape()  # written back in the previous shape


def test_the_sqs_event_of_sam_local_invoke_is_a_readable_sighting():
    body = json.loads((EVENTS / "candidate.json").read_text())["Records"][0]["body"]
    assert parse_sighting(body).name == "despacho-no-mesmo-dia"


def test_the_next_shape_is_read_and_what_is_unknown_is_dropped():
    sighting = parse_sighting(json.dumps(next_shape()))
    assert sighting.v == 2 and sighting.evidence == EvidenceRef(
        completed_at=datetime(2026, 11, 20, 14, 5, 31, 250000, tzinfo=timezone.utc), message=3, start=5, end=73)
    assert sighting.dedup_id() == parse_sighting(json.dumps(previous_shape())).dedup_id()
    kept = sighting.model_dump_json()
    assert "quote_sha256" not in kept and "cus_20931" not in kept and "529.982" not in kept


def test_a_link_is_written_with_the_sighting_and_read_back_unchanged():
    link = EvidenceRef(completed_at=datetime(2026, 11, 20, 11, 5, 31, 250000).astimezone(timezone.utc),
                       message=1, start=0, end=42)
    sighting = Sighting.of(T, A, "sess_1", "t1", make_concept(), evidence=link)
    assert parse_sighting(sighting.body()) == sighting
    assert json.loads(sighting.body())["evidence"]["completed_at"].endswith(".250000Z")


@pytest.mark.parametrize("data, fragment", [
    (previous_shape(v=3), "v:"),
    (previous_shape(v="2"), "v:"),
    (previous_shape(tenant=SECRET), "tenant"),
    (previous_shape(evidence={**LINK, "quote": SECRET}), "evidence.quote: unknown key"),
    (previous_shape(evidence={**LINK, "end": 5}), "end must be greater than start"),
    (previous_shape(evidence={**LINK, "start": "5"}), "evidence.start"),
    (previous_shape(evidence={**LINK, "message": True}), "evidence.message"),
    (previous_shape(evidence={**LINK, "message": 200}), "evidence.message"),
    (previous_shape(evidence={**LINK, "end": 32_001}), "evidence.end"),
    (previous_shape(evidence={**LINK, "completed_at": "2026-11-20T14:05:31"}), "must carry a time zone"),
    (previous_shape(evidence=SECRET), "evidence"),
    (next_shape(padding=SECRET * 3000), "larger than"),
    (previous_shape(echo="yes"), "echo"),
    (previous_shape(echo=1), "echo"),
])
def test_known_fields_stay_strict_and_the_size_limit_holds(data, fragment):
    with pytest.raises(InvalidSighting) as caught:
        parse_sighting(json.dumps(data))
    assert fragment in str(caught.value)
    assert "529.982" not in str(caught.value) and "Ana" not in str(caught.value)


def test_an_echo_flag_is_written_only_when_true_and_read_back_unchanged():
    echoed = Sighting.of(T, A, "sess_1", "t1", make_concept(), echo=True)
    assert json.loads(echoed.body())["echo"] is True and parse_sighting(echoed.body()) == echoed
    assert "echo" not in json.loads(Sighting.of(T, A, "sess_1", "t1", make_concept()).body())
    assert parse_sighting(json.dumps(previous_shape(echo=False))).echo is False


def test_a_deeply_nested_unknown_field_is_an_invalid_sighting_not_a_crash():
    body = json.dumps(previous_shape())[:-1] + ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    with pytest.raises(InvalidSighting):
        parse_sighting(body)


# ------------------------------------------------------------------ through the real handler


def record(index: int, body: str, sighting: Sighting) -> dict:
    return {"messageId": f"m{index}", "receiptHandle": f"r{index}", "body": body,
            "attributes": {"MessageGroupId": sighting.group_id(), "MessageDeduplicationId": sighting.dedup_id(),
                           "ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                           "ApproximateFirstReceiveTimestamp": "0", "SequenceNumber": str(index)},
            "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo", "awsRegion": "us-east-1"}


def event(*bodies: dict) -> dict:
    return {"Records": [record(i, json.dumps(body), parse_sighting(json.dumps({**body, "v": 1})))
                        for i, body in enumerate(bodies)]}


@pytest.fixture
def consolidate(monkeypatch, bucket, sessions_bucket, bus, model):
    return load_handler("consolidate", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
        UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url))


def test_the_consolidator_takes_a_previous_and_a_next_shape_sighting_of_one_concept(consolidate, store, sqs, bus,
                                                                                     s3, bucket):
    older = previous_shape()
    newer = next_shape(session_id="sess_demo_02", concept=concept_text().replace("sess_demo_01", "sess_demo_02"))
    answer = consolidate.lambda_handler(event(older, newer), LambdaContext())
    assert answer == {"batchItemFailures": []}
    concept = store.get(T, A, "despacho-no-mesmo-dia").concept
    assert (concept.occurrences, concept.sources) == (2, ("sess_demo_01", "sess_demo_02"))
    announced = [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]
    assert [e["detail"]["outcome"] for e in announced] == ["created", "confirmed"]
    stored = json.dumps([e["detail"] for e in announced]) + json.dumps([
        s3.head_object(Bucket=bucket, Key=f"agents/{T}/{A}/concepts/despacho-no-mesmo-dia.md",
                       VersionId=v["VersionId"])["Metadata"]
        for v in s3.list_object_versions(Bucket=bucket, Prefix=f"agents/{T}/{A}/concepts/")["Versions"]])
    assert "cus_20931" not in stored and "529.982" not in stored and "quote_sha256" not in stored


def test_a_sighting_of_an_unknown_version_fails_alone(consolidate, store):
    answer = consolidate.lambda_handler(event(previous_shape(v=3), next_shape(
        concept=concept_text("outro-conceito"))), LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert store.get(T, A, "outro-conceito").concept.occurrences == 1
