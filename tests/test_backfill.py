"""Backfill replays archived turns through the same extraction code a live turn uses."""

from __future__ import annotations

import json
import re

import pytest

from conftest import DEMO, LambdaContext, drain, load_event, load_handler, new_queue
from knowledge.cli import main
from knowledge.sighting import parse_sighting
from knowledge_dev.scripted_model import rules_responder

T, A = "default", "store-support"
RULES = json.loads((DEMO / "model_script.json").read_text())["rules"]


def turn_event(session: str, turn: str, when: str) -> dict:
    event = load_event("turn-complete.json")
    body = json.loads(event["Records"][0]["body"])
    body.update(session_id=session, turn_id=turn, completed_at=when)
    body["messages"].append({"role": "user", "content": f"marker {session}/{turn}"})
    event["Records"][0]["body"] = json.dumps(body, ensure_ascii=False)
    return event


TURNS = [("sess_a", "t1", "2026-10-30T23:59:59Z"), ("sess_b", "t1", "2026-11-02T10:00:00Z"),
         ("sess_c", "t7", "2026-11-05T08:30:00Z"), ("sess_b", "t2", "2026-11-09T17:45:10Z")]


@pytest.fixture
def world(monkeypatch, store, bucket, sessions_bucket, candidates_queue, sqs, model):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    model.responder = rules_responder(RULES)
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, UTILITY_MODEL="openai:test-model",
               OPENAI_BASE_URL=model.base_url)
    extract = load_handler("extract", monkeypatch, CANDIDATES_QUEUE_URL=candidates_queue, **env)
    for session, turn, when in reversed(TURNS):  # archived out of order on purpose
        assert extract.lambda_handler(turn_event(session, turn, when), LambdaContext()) == {"batchItemFailures": []}
    live = [parse_sighting(m["Body"]) for m in drain(sqs, candidates_queue)]
    replay_queue = new_queue(sqs, fifo=True)
    backfill = load_handler("backfill", monkeypatch, CANDIDATES_QUEUE_URL=replay_queue, **env)
    model.requests.clear()
    return {"live": live, "queue": replay_queue, "backfill": backfill, "model": model, "env": env}


def test_backfill_yields_the_same_sightings_as_live_processing(world, sqs):
    answer = world["backfill"].lambda_handler({"agent": A, "since": "2026-01-01T00:00:00Z"}, LambdaContext())
    assert answer["ok"] and answer["turns"] == 4 and answer["sent"] == 8 and answer["complete"]
    replayed = [parse_sighting(m["Body"]) for m in drain(sqs, world["queue"])]
    assert sorted(s.body() for s in replayed) == sorted(s.body() for s in world["live"])
    assert answer["rejected"] == {"type_not_allowed": 4, "forbidden_key": 4, "evidence_not_found": 4}


def test_the_backfill_event_replays_since_its_date_in_time_order(world, sqs):
    answer = world["backfill"].lambda_handler(load_event("backfill.json"), LambdaContext())
    assert answer["turns"] == 3  # the turn of 2026-10-30 is before `since`
    order = [re.search(r"marker (\S+?)\"", r["messages"][1]["content"]).group(1) for r in world["model"].requests]
    assert order == ["sess_b/t1", "sess_c/t7", "sess_b/t2"]  # oldest first, whatever the archive order
    replayed = {(s.session_id, s.turn_id) for s in map(lambda m: parse_sighting(m["Body"]), drain(sqs, world["queue"]))}
    assert replayed == {("sess_b", "t1"), ("sess_c", "t7"), ("sess_b", "t2")}


def test_until_bounds_the_replay_and_dry_run_sends_nothing(world, sqs):
    answer = world["backfill"].lambda_handler(
        {"agent": A, "since": "2026-11-01T00:00:00Z", "until": "2026-11-06T00:00:00Z", "dry_run": True},
        LambdaContext())
    assert answer["ok"] and answer["dry_run"] and answer["turns"] == 2 and answer["sent"] == 4
    assert drain(sqs, world["queue"]) == []


def test_a_backfill_that_runs_out_of_time_says_where_to_resume(world, sqs):
    class ShortContext(LambdaContext):
        calls = 0

        def get_remaining_time_in_millis(self):
            ShortContext.calls += 1
            return 120_000 if ShortContext.calls <= 2 else 1_000

    first = world["backfill"].lambda_handler({"agent": A, "since": "2026-01-01T00:00:00Z"}, ShortContext())
    assert first["complete"] is False and first["turns"] == 2 and first["resume_after"]
    rest = world["backfill"].lambda_handler(
        {"agent": A, "since": "2026-01-01T00:00:00Z", "start_after": first["resume_after"]}, LambdaContext())
    assert rest["complete"] and rest["turns"] == 2
    assert len(drain(sqs, world["queue"])) == 8


def test_a_turn_gone_from_the_archive_mid_replay_is_counted_failed_and_the_rest_go_on(world, s3, sessions_bucket):
    from datetime import datetime, timezone

    from knowledge.backfill import backfill
    from knowledge.errors import NotFound

    handler = world["backfill"]
    since = datetime(2026, 1, 1, tzinfo=timezone.utc)
    keys = list(handler.archive.keys(T, A, since))

    def delete_the_next_one(done, total):  # listed, then gone before it is read
        if done == 1:
            s3.delete_object(Bucket=sessions_bucket, Key=keys[1])

    report = backfill(handler.extractor, handler.archive, T, A, since, dry_run=True, progress=delete_the_next_one)
    assert report.failed == 1 and report.turns == 3 and report.complete
    with pytest.raises(NotFound):  # the archive answers in the package's errors, not botocore's
        handler.archive.get(keys[1])


@pytest.mark.parametrize("event, fragment", [
    ({"agent": A}, "since: Field required"),
    ({"agent": A, "since": "last week"}, "since: not an ISO 8601 time"),
    ({"agent": "../x", "since": "2026-01-01T00:00:00Z"}, "agent: must be lowercase"),
    ({"agent": A, "since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "until must be later"),
    ({"agent": A, "since": "2026-01-01T00:00:00Z", "start_after": "other/agent/turns/x"}, "start_after"),
])
def test_bad_backfill_events_get_a_clear_error(world, event, fragment):
    answer = world["backfill"].lambda_handler(event, LambdaContext())
    assert answer["ok"] is False and fragment in answer["error"]["message"]


def test_the_cli_prints_a_summary(world, monkeypatch, capsys):
    for key, value in world["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CANDIDATES_QUEUE_URL", world["queue"])
    code = main(["backfill", "--agent", A, "--since", "2026-11-01T00:00:00Z", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.strip() == ("replayed 3 turn(s): would send 6 candidate(s); rejected: evidence_not_found 3, "
                           "forbidden_key 3, type_not_allowed 3; skipped 0 (knowledge off); failed 0")
