"""The turn path feeds Facts: ExtractFunction archives a distilling agent's turns (even with
`extract: false`) and keeps each session's state, and DistillFunction then finds the session
idle and proposes from it — through the real handlers."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler

from facts.proposals import ProposalStore
from facts.sessions import SessionStates

T, A = "default", "store-support"
CUSTOMER = "cus_20931"
EIGHT_HOURS_AGO = datetime.now(timezone.utc) - timedelta(hours=8)


def turns_event(*turn_ids: str, customer: str | None = CUSTOMER) -> dict:
    record = load_event("turn-complete.json")["Records"][0]
    records = []
    for index, turn_id in enumerate(turn_ids):
        body = json.loads(record["body"])
        body.update(turn_id=turn_id, session_id="sess_facts_01",
                    completed_at=(EIGHT_HOURS_AGO + timedelta(minutes=index)).isoformat())
        if customer:
            body["customer_id"] = customer
        records.append({**copy.deepcopy(record), "messageId": f"m{index}", "body": json.dumps(body)})
    return {"Records": records}


@pytest.fixture
def handlers(monkeypatch, bucket, sessions_bucket, candidates_queue, bus, model):
    stack = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
                 EVENT_BUS_NAME=bus["name"], UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=model.base_url,
                 FACTS_KEY="k" * 48)
    return load_handler("extract", monkeypatch, stack), load_handler("distill", monkeypatch, stack)


def learning_only(demo) -> str:
    """The demo agent's knowledge.yaml without its `distill:` block (the last block in the file)."""
    return (demo / "knowledge.yaml").read_text().split("\ndistill:")[0].rstrip("\n") + "\n"


def configure(s3, bucket, text: str) -> None:
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml", Body=text.encode())


def test_a_distilling_agent_that_learns_nothing_still_archives_and_its_idle_session_is_proposed_from(
        handlers, s3, bucket, sessions_bucket, script, model):
    extract, distill = handlers
    configure(s3, bucket, "knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 3\n")
    assert extract.lambda_handler(turns_event("turn_0001", "turn_0002"), LambdaContext()) == {"batchItemFailures": []}
    assert model.requests == []  # nothing is learned for the knowledge loop
    archived = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/turns/")["KeyCount"]
    state = SessionStates(s3, sessions_bucket).get(T, A, "sess_facts_01")
    assert archived == 2 and state is not None and state.state.customer_id == CUSTOMER

    script.replies = [json.dumps([{"name": "pagamento_preferido", "value": "Pix", "evidence": [1]}])]
    report = distill.lambda_handler(load_event("distill.json"), LambdaContext())
    assert (report["scanned"], report["proposed"]) == (1, 1)
    [stored] = ProposalStore(s3, sessions_bucket).list(T, A, CUSTOMER)
    assert (stored.proposal.name, stored.proposal.status, stored.proposal.session_id) == (
        "pagamento_preferido", "pending", "sess_facts_01")


def test_an_agent_without_a_distill_block_keeps_no_session_state(handlers, s3, bucket, sessions_bucket):
    extract, _ = handlers
    configure(s3, bucket, "knowledge:\n  extract: false\n")
    extract.lambda_handler(turns_event("turn_0001"), LambdaContext())
    assert s3.list_objects_v2(Bucket=sessions_bucket).get("KeyCount") == 0


def test_a_learning_and_distilling_agent_does_both_from_one_turn(handlers, s3, bucket, sessions_bucket, sqs,
                                                                 candidates_queue, model):
    from helpers.aws import drain
    from helpers.paths import DEMO

    from knowledge_dev.scripted_model import rules_responder

    extract, _ = handlers
    model.responder = rules_responder(json.loads((DEMO / "model_script.json").read_text())["rules"])
    configure(s3, bucket, learning_only(DEMO) + "distill:\n  idle_hours: 6\n")
    assert extract.lambda_handler(turns_event("turn_0001"), LambdaContext()) == {"batchItemFailures": []}
    assert drain(sqs, candidates_queue)
    assert SessionStates(s3, sessions_bucket).get(T, A, "sess_facts_01") is not None


def test_a_learning_agent_that_does_not_distill_still_indexes_a_tagged_turn_under_its_customer(
        handlers, s3, bucket, sessions_bucket, sqs, candidates_queue, model):
    """forget_customer finds a customer's archived turns through that index, whether or not the agent distils."""
    from helpers.aws import drain
    from helpers.paths import DEMO

    from knowledge_dev.scripted_model import rules_responder

    extract, _ = handlers
    model.responder = rules_responder(json.loads((DEMO / "model_script.json").read_text())["rules"])
    configure(s3, bucket, learning_only(DEMO))
    assert extract.lambda_handler(turns_event("turn_0001"), LambdaContext()) == {"batchItemFailures": []}
    drain(sqs, candidates_queue)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/").get("Contents", [])]
    assert f"{T}/{A}/facts/customers/{CUSTOMER}/sess_facts_01" in keys
    assert SessionStates(s3, sessions_bucket).get(T, A, "sess_facts_01") is None  # nothing to distil
    assert any("/turns/" in key for key in keys)
