"""A knowledge.yaml switch, written by the studio or straight into the bucket (`aws s3 cp`, a pipeline:
no journal entry), is in force in a warm RetrieveFunction container at its next refresh and in a new
container from its first call, whatever the snapshot it starts from says; a file that does not parse
turns the agent off, counted where an alarm looks."""

from __future__ import annotations

import time
import uuid

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.operations import alarms_watching, the
from helpers.paths import DEMO
from helpers.studio import BASE, demo_studio

from knowledge.store.keys import config_key, snapshot_key

T, A = "default", "store-support"
REFRESH = 1.0  # KNOWLEDGE_REFRESH_SECONDS here; the template's default is 5
ON = (DEMO / "knowledge.yaml").read_text()
CASES = {
    "retrieve_off": ON.replace("retrieve: true", "retrieve: false"),
    "empty_file": "",
}


@pytest.fixture
def studio(monkeypatch, store, bucket, sessions_bucket):
    return demo_studio(monkeypatch, store, bucket, sessions_bucket)


def retrieve(monkeypatch, bucket, bus):
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                        KNOWLEDGE_REFRESH_SECONDS=str(REFRESH),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


def block(handler) -> str:
    return handler.lambda_handler(load_event("retrieve.json"), LambdaContext())["block"]


def write(writer: str, studio, s3, bucket: str, text: str) -> None:
    if writer == "studio":
        status, body, _ = studio("GET", f"{BASE}/config")
        status, _, _ = studio("PUT", f"{BASE}/config", body={"yaml": text}, headers={"if-match": body["etag"]})
        assert status == 200
    else:  # aws s3 cp: the object, and no journal entry
        s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=text.encode())


@pytest.mark.parametrize("writer", ["studio", "s3"])
@pytest.mark.parametrize("case", ["retrieve_off", "empty_file"])
def test_a_switch_holds_in_a_warm_container_at_its_next_refresh(studio, monkeypatch, s3, bucket, bus, writer, case):
    handler = retrieve(monkeypatch, bucket, bus)
    assert block(handler).startswith("<knowledge>")
    write(writer, studio, s3, bucket, CASES[case])
    time.sleep(REFRESH + 0.1)
    assert block(handler) == ""
    write(writer, studio, s3, bucket, ON)  # and back on, the same way
    time.sleep(REFRESH + 0.1)
    assert block(handler).startswith("<knowledge>")


@pytest.mark.parametrize("writer", ["studio", "s3"])
@pytest.mark.parametrize("case", ["retrieve_off", "empty_file"])
def test_a_new_container_obeys_a_switch_from_its_first_call_not_its_snapshots_copy(studio, monkeypatch, s3, bucket,
                                                                                   bus, writer, case):
    assert block(retrieve(monkeypatch, bucket, bus)).startswith("<knowledge>")
    assert s3.head_object(Bucket=bucket, Key=snapshot_key(T, A))  # written with the config that was on
    write(writer, studio, s3, bucket, CASES[case])
    assert block(retrieve(monkeypatch, bucket, bus)) == ""


def test_a_file_that_does_not_parse_turns_the_agent_off_where_an_alarm_looks(studio, monkeypatch, s3, bucket, bus,
                                                                            capsys):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    warm = retrieve(monkeypatch, bucket, bus)
    assert block(warm).startswith("<knowledge>")
    write("s3", studio, s3, bucket, ON.replace("top_k: 5", "topk: 5"))  # an unknown key
    time.sleep(REFRESH + 0.1)
    capsys.readouterr()
    assert block(warm) == ""
    invalid = the("ConfigInvalid", capsys.readouterr().out)
    assert invalid.dimensions == {"service": "knowledge-retrieve", "tenant": T, "agent": A}
    assert alarms_watching(invalid) == ["ConfigInvalidAlarm"]
    assert block(retrieve(monkeypatch, bucket, bus)) == ""  # and a new container, from its first call
    write("s3", studio, s3, bucket, ON)
    time.sleep(REFRESH + 0.1)
    assert block(warm).startswith("<knowledge>")


def test_a_refresh_asks_for_the_config_once_and_conditionally(studio, monkeypatch, s3, bucket, bus):
    from shared.aws import client

    handler = retrieve(monkeypatch, bucket, bus)
    block(handler)
    seen: list[tuple[str, dict]] = []

    def hook(params, model, **_):
        seen.append((model.name, dict(params)))

    client("s3").meta.events.register("provide-client-params.s3", hook)
    try:
        block(handler)  # inside the window: no request at all
        assert seen == []
        time.sleep(REFRESH + 0.1)
        block(handler)
    finally:
        client("s3").meta.events.unregister("provide-client-params.s3", hook)
    assert [name for name, _ in seen] == ["ListObjectsV2", "GetObject"]
    assert seen[1][1]["Key"] == config_key(T, A) and seen[1][1]["IfNoneMatch"]


def test_extract_false_written_straight_into_the_bucket_stops_learning_at_the_next_turn(studio, monkeypatch, s3,
                                                                                       bucket, sessions_bucket,
                                                                                       candidates_queue, model,
                                                                                       capsys):
    extract = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url),
        POWERTOOLS_SERVICE_NAME=f"knowledge-extract-{uuid.uuid4().hex[:6]}")
    write("s3", studio, s3, bucket, ON.replace("extract: true", "extract: false"))
    assert extract.lambda_handler(load_event("turn-complete.json"), LambdaContext()) == {"batchItemFailures": []}
    assert model.requests == []
