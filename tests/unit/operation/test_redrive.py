"""`knowledge redrive`: dead-lettered messages back to their source queue on moto's SQS, FIFO ids
kept, invalid bodies left where they are, and a dry run that says why without quoting content. (A turn
the real ExtractFunction failed, found in the log and redriven: tests/integration/test_redrive_dead_lettered_turn.py.)"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest
from helpers.aws import drain, new_queue
from helpers.concepts import make_concept
from helpers.turns import SECRET, turn_body

from knowledge.format.sighting import Sighting
from knowledge.errors import RedriveError
from knowledge.operation.redrive import VALID, Redrive, check_sighting, check_turn
from knowledge_cli.main import main

T, A = "default", "store-support"


def later(seconds: float = 3600):
    return lambda: time.time() + seconds


@pytest.fixture
def turns(sqs):
    """A TurnCompleteQueue and its DLQ; the DLQ holds three valid turns and two that never will be."""
    source, dlq = new_queue(sqs), new_queue(sqs)
    bodies = {
        "valid-1": turn_body(turn_id="t1"),
        "valid-2": turn_body(turn_id="t2"),
        "other-agent": turn_body(agent="loja-b", turn_id="t3"),
        "not-json": "{" + SECRET,
        "bad-role": turn_body(messages=[{"role": "customer", "content": SECRET}]),
    }
    ids = {}
    for label, body in bodies.items():
        ids[label] = sqs.send_message(QueueUrl=dlq, MessageBody=body, MessageAttributes={
            "origin": {"DataType": "String", "StringValue": label}})["MessageId"]
    return {"source": source, "dlq": dlq, "bodies": bodies, "ids": ids}


def visible(sqs, url: str) -> int:
    return int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
               ["Attributes"]["ApproximateNumberOfMessages"])


def test_a_dry_run_summarises_by_reason_and_moves_nothing(sqs, turns):
    report = Redrive(sqs, turns["dlq"], turns["source"], check_turn).run(dry_run=True)
    assert report.seen == 5 and report.moved == 0
    assert dict(report.reasons) == {VALID: 3, "invalid_turn (not JSON)": 1, "invalid_turn (messages, messages.*.role)": 1}
    assert dict(report.agents) == {f"{T}/{A}": 2, f"{T}/loja-b": 1}
    assert sorted(report.ids[VALID]) == sorted(turns["ids"][k] for k in ("valid-1", "valid-2", "other-agent"))
    # Everything is where it was, visible again at once.
    assert visible(sqs, turns["dlq"]) == 5 and visible(sqs, turns["source"]) == 0
    assert SECRET not in json.dumps(report.as_dict())


def test_valid_turns_go_back_byte_for_byte_and_invalid_ones_stay(sqs, turns):
    report = Redrive(sqs, turns["dlq"], turns["source"], check_turn).run()
    assert (report.moved, report.left, report.failed) == (3, 2, 0)
    moved = drain(sqs, turns["source"])
    assert sorted(m["Body"] for m in moved) == sorted(turns["bodies"][k] for k in ("valid-1", "valid-2", "other-agent"))
    response = sqs.receive_message(QueueUrl=turns["source"], MessageAttributeNames=["All"])
    assert "Messages" not in response
    left = drain(sqs, turns["dlq"])
    assert sorted(m["Body"] for m in left) == sorted(turns["bodies"][k] for k in ("not-json", "bad-role"))


def test_message_attributes_travel_with_the_message(sqs, turns):
    Redrive(sqs, turns["dlq"], turns["source"], check_turn).run()
    answer = sqs.receive_message(QueueUrl=turns["source"], MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    labels = {m["MessageAttributes"]["origin"]["StringValue"] for m in answer["Messages"]}
    assert labels == {"valid-1", "valid-2", "other-agent"}


def sighting(name: str, session: str) -> Sighting:
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    return Sighting.of(T, A, session, "t1", make_concept(name, sources=(session,), created_at=moment,
                                                          updated_at=moment))


@pytest.fixture
def candidates(sqs):
    source, dlq = new_queue(sqs, fifo=True), new_queue(sqs, fifo=True)
    sent = [sighting("frete-gratis", "sess_1"), sighting("frete-gratis", "sess_2"),
            sighting("cep-campinas", "sess_1"), sighting("frete-gratis", "sess_3")]
    for s in sent:
        sqs.send_message(QueueUrl=dlq, MessageBody=s.body(), MessageGroupId=s.group_id(),
                         MessageDeduplicationId=s.dedup_id())
    return {"source": source, "dlq": dlq, "sent": sent}


def test_fifo_sightings_keep_their_group_dedup_ids_and_order(sqs, candidates):
    report = Redrive(sqs, candidates["dlq"], candidates["source"], check_sighting, clock=later()).run()
    assert report.moved == 4 and report.left == 0
    moved = drain(sqs, candidates["source"])
    expected = {s.dedup_id(): s.group_id() for s in candidates["sent"]}
    assert {m["Attributes"]["MessageDeduplicationId"]: m["Attributes"]["MessageGroupId"] for m in moved} == expected
    in_group = [json.loads(m["Body"])["session_id"] for m in moved
                if m["Attributes"]["MessageGroupId"] == candidates["sent"][0].group_id()]
    assert in_group == ["sess_1", "sess_2", "sess_3"]  # the concept's sightings in their order


def test_a_fifo_message_inside_the_dedup_window_is_left_for_a_later_run(sqs, candidates):
    # Sent moments ago: re-sent with the same deduplication id, the source would drop it silently.
    report = Redrive(sqs, candidates["dlq"], candidates["source"], check_sighting).run()
    assert (report.moved, report.too_recent) == (0, report.seen) and report.seen >= 1
    assert drain(sqs, candidates["source"]) == []


def test_a_broken_sighting_names_the_concept_field_not_its_text(sqs, candidates):
    broken = sighting("frete-gratis", "sess_9").model_copy(update={"concept": "---\nname: x\n---\n\n" + SECRET})
    sqs.send_message(QueueUrl=candidates["dlq"], MessageBody=broken.body(), MessageGroupId="g",
                     MessageDeduplicationId="d")
    report = Redrive(sqs, candidates["dlq"], candidates["source"], check_sighting, clock=later()).run(dry_run=True)
    invalid = [reason for reason in report.reasons if reason != VALID]
    assert invalid and all(reason.startswith("invalid_sighting (concept.") for reason in invalid)
    assert SECRET not in json.dumps(report.as_dict())


def test_queues_that_do_not_match_are_refused(sqs, candidates, turns):
    with pytest.raises(RedriveError, match="both be FIFO"):
        Redrive(sqs, candidates["dlq"], turns["source"], check_sighting)
    with pytest.raises(RedriveError, match="not an SQS queue URL"):
        Redrive(sqs, "https://example.com/x", turns["source"], check_turn)


def test_the_cli_says_which_setting_is_missing(monkeypatch, capsys):
    monkeypatch.delenv("CANDIDATES_DLQ_URL", raising=False)
    monkeypatch.setenv("CANDIDATES_QUEUE_URL", "http://127.0.0.1:1/123456789012/q.fifo")
    assert main(["redrive", "candidates", "--dry-run"]) == 1
    assert "--dlq or CANDIDATES_DLQ_URL" in capsys.readouterr().err


def test_max_bounds_how_many_are_looked_at(sqs, turns):
    report = Redrive(sqs, turns["dlq"], turns["source"], check_turn).run(dry_run=True, limit=2)
    assert report.seen == 2 and visible(sqs, turns["dlq"]) == 5
