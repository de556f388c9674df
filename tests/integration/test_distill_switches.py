"""The `distill:` switch, however it is written (the studio's PUT /config, or straight into the bucket as
`aws s3 cp` or a pipeline writes it: no journal entry), holds in DistillFunction: from a new container's
first pass, at a warm container's next pass, and within a pass already running (looked at again before
each model call and before its answer is written); an empty file or one that does not parse is off."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, demo_studio

from facts.proposals import ProposalStore
from facts.sessions import record_turn
from knowledge.format.turn import Turn
from knowledge.store.archive import TurnArchive
from knowledge.store.keys import config_key

T, A = "default", "store-support"
CUSTOMER = "cust-8842-ana"
ON = "knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 3\n"
OFF = {"enabled_false": ON.replace("  idle_hours: 6\n", "  enabled: false\n  idle_hours: 6\n"),
       "block_removed": "knowledge:\n  extract: false\n",
       "empty_file": "",
       "does_not_parse": ON.replace("min_messages: 3", "min_mesages: 3")}
PIX = json.dumps([{"name": "pagamento_preferido", "value": "Pix", "evidence": [2]}])
TURNS = [[("user", "oi, quero trocar o tenis do pedido 48213"), ("assistant", "Claro! Qual numero?")],
         [("user", "43. e prefiro pagar no pix sempre"), ("assistant", "Anotei que você prefere Pix.")]]


def conversation(s3, sessions_bucket, session: str, hours_ago: float = 8) -> None:
    start = datetime.now(timezone.utc) - timedelta(hours=hours_ago)
    for i, messages in enumerate(TURNS):
        turn = Turn(tenant=T, agent=A, session_id=session, turn_id=f"turn_{i:04d}",
                    completed_at=start + timedelta(minutes=2 * i),
                    messages=[{"role": r, "content": c} for r, c in messages], customer_id=CUSTOMER)
        TurnArchive(s3, sessions_bucket).put(turn)
        record_turn(s3, sessions_bucket, turn)


@pytest.fixture
def stack(bucket, sessions_bucket, bus, model, s3):
    s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=ON.encode())
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
                UTILITY_MODEL="openai:distiller", OPENAI_BASE_URL=model.base_url, FACTS_KEY="k" * 48)


def container(monkeypatch, stack, **more):
    return load_handler("distill", monkeypatch, stack, POWERTOOLS_SERVICE_NAME=f"facts-distill-{uuid.uuid4().hex[:6]}",
                        **more)


def run(handler) -> dict:
    return handler.lambda_handler({}, LambdaContext())


def write(studio, bucket, s3, text):
    if studio is not None:  # the studio's PUT /config
        _, current, _ = studio("GET", f"{BASE}/config")
        status, _, _ = studio("PUT", f"{BASE}/config", body={"yaml": text}, headers={"if-match": current["etag"]})
        assert status == 200
    else:  # aws s3 cp
        s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=text.encode())


def proposed(s3, sessions_bucket) -> int:
    return len(ProposalStore(s3, sessions_bucket).list(T, A, CUSTOMER))


@pytest.mark.parametrize("case", sorted(OFF))
def test_a_switch_written_straight_into_the_bucket_holds_from_a_new_container_s_first_pass(
        monkeypatch, stack, s3, bucket, sessions_bucket, script, model, case):
    conversation(s3, sessions_bucket, "sess_a")
    s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=OFF[case].encode())
    script.default = PIX
    report = run(container(monkeypatch, stack))
    assert report["ok"] and report["distilled"] == 0 and model.requests == []
    assert report["skipped"] == ({"config_invalid": 1} if case == "does_not_parse" else {})


@pytest.mark.parametrize("writer", ["studio", "s3"])
def test_a_warm_container_obeys_the_switch_at_its_next_pass_and_again_once_it_is_back_on(
        monkeypatch, stack, s3, bucket, sessions_bucket, store, script, model, writer):
    studio = None
    if writer == "studio":  # the demo agent in the studio, its file then written back as ON through it
        s3.delete_object(Bucket=bucket, Key=config_key(T, A))
        studio = demo_studio(monkeypatch, store, bucket, sessions_bucket)
        write(studio, bucket, s3, ON)
    script.default = PIX
    warm = container(monkeypatch, stack)
    conversation(s3, sessions_bucket, "sess_a")
    assert run(warm)["distilled"] == 1
    write(studio, bucket, s3, OFF["enabled_false"])
    conversation(s3, sessions_bucket, "sess_b")
    asked = len(model.requests)
    assert run(warm)["distilled"] == 0 and len(model.requests) == asked
    write(studio, bucket, s3, ON)
    assert run(warm)["distilled"] == 1


@pytest.mark.parametrize("case", ["enabled_false", "empty_file", "does_not_parse"])
def test_a_switch_pulled_while_a_pass_runs_stops_it_before_anything_of_the_answer_is_written(
        monkeypatch, stack, s3, bucket, sessions_bucket, model, case):
    for n in range(3):
        conversation(s3, sessions_bucket, f"sess_{n}", hours_ago=9 - n / 10)

    def pull_then_answer(request):
        # Someone pulls the switch with `aws s3 cp` while the model is answering the first session.
        s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=OFF[case].encode())
        return PIX

    model.responder = pull_then_answer
    # Looked at again at every step here (the default, 5 s, bounds it by time on AWS).
    report = run(container(monkeypatch, stack, DISTILL_SWITCH_SECONDS="0"))
    assert report["ok"] and len(model.requests) == 1  # no model call after the switch
    assert report["distilled"] == 0 and report["skipped"] == {"switched_off": 1}
    assert proposed(s3, sessions_bucket) == 0  # the answer in flight is not written
    # Back on: the sessions were left due, and are distilled then.
    model.responder = lambda request: PIX
    s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=ON.encode())
    again = run(container(monkeypatch, stack))
    assert again["distilled"] == 3 and proposed(s3, sessions_bucket) == 1


def test_a_running_pass_looks_again_conditionally_and_only_once_its_window_passed(
        monkeypatch, stack, s3, bucket, sessions_bucket, script):
    from shared.aws import client

    for n in range(2):
        conversation(s3, sessions_bucket, f"sess_{n}", hours_ago=9 - n / 10)
    script.default = PIX
    looks: list[dict] = []

    def hook(params, model, **_):
        if model.name == "GetObject" and params.get("Key") == config_key(T, A):
            looks.append(dict(params))

    handler = container(monkeypatch, stack, DISTILL_SWITCH_SECONDS="0")
    client("s3").meta.events.register("provide-client-params.s3", hook)
    try:
        assert run(handler)["distilled"] == 2
        fast = len(looks)
        looks.clear()
        assert run(container(monkeypatch, stack))["distilled"] == 0  # nothing due: one look, the first
    finally:
        client("s3").meta.events.unregister("provide-client-params.s3", hook)
    # The pass's first read, then before each model call and before each answer is written: 304s.
    assert fast == 1 + 2 * 2
    assert len(looks) == 1
