"""Backfill replays archived turns through the same extraction code a live turn uses."""

from __future__ import annotations

import gzip
import json
import math
import re
import uuid
from datetime import datetime, timezone

import pytest
from helpers.aws import drain, new_queue
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO

from knowledge.format.sighting import parse_sighting
from knowledge_cli.main import main
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
    extract = load_handler("extract", monkeypatch, dict(env, CANDIDATES_QUEUE_URL=candidates_queue))
    for session, turn, when in reversed(TURNS):  # archived out of order on purpose
        assert extract.lambda_handler(turn_event(session, turn, when), LambdaContext()) == {"batchItemFailures": []}
    live = [parse_sighting(m["Body"]) for m in drain(sqs, candidates_queue)]
    replay_queue = new_queue(sqs, fifo=True)
    backfill = load_handler("backfill", monkeypatch, dict(env, CANDIDATES_QUEUE_URL=replay_queue))
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


def test_until_bounds_the_replay_and_dry_run_asks_no_model_and_sends_nothing(world, sqs):
    answer = world["backfill"].lambda_handler(
        {"agent": A, "since": "2026-11-01T00:00:00Z", "until": "2026-11-06T00:00:00Z", "dry_run": True},
        LambdaContext())
    assert answer["ok"] and answer["dry_run"] and answer["turns"] == 2 and answer["sent"] == 0
    assert answer["model_calls"] == 2 and answer["answer_tokens_max"] == 2 * 2048
    assert world["model"].requests == [] and drain(sqs, world["queue"]) == []


def test_the_dry_runs_token_estimate_is_what_the_replay_then_sends(world):
    event = {"agent": A, "since": "2026-01-01T00:00:00Z"}
    estimate = world["backfill"].lambda_handler({**event, "dry_run": True}, LambdaContext())
    assert world["model"].requests == []
    world["backfill"].lambda_handler(event, LambdaContext())
    sent_chars = sum(len(m["content"]) for r in world["model"].requests for m in r["messages"])
    assert estimate["model_calls"] == len(world["model"].requests) == 4
    assert estimate["prompt_tokens_estimate"] == math.ceil(sent_chars / 4)


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

    from knowledge.operation.backfill import backfill
    from shared.errors import NotFound

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
    code = main(["backfill", "--agent", A, "--since", "2026-11-01T00:00:00Z"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.strip() == ("replayed 3 turn(s): sent 6 candidate(s); rejected: evidence_not_found 3, "
                           "forbidden_key 3, type_not_allowed 3; skipped 0 (knowledge off); failed 0; "
                           "3 recorded for Facts")  # the demo agent distils: its replayed turns reach Facts
    monkeypatch.setenv("KNOWLEDGE_TENANT_DAILY_MODEL_CALLS", "2")
    assert main(["backfill", "--agent", A, "--since", "2026-11-01T00:00:00Z", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert re.fullmatch(r"would replay 3 turn\(s\): 3 model call\(s\), about \d+ prompt tokens \(characters/4 of "
                        r"each extraction prompt\) and at most 6144 answer tokens; skipped 0 \(knowledge off\); "
                        r"failed 0; at the daily cap of 2 call\(s\), 2 day\(s\)", out.strip())


# ------------------------------------------------------------------ from the engine's session exports


def export_line(session: str, turn: str, when: str, **overrides) -> str:
    body = json.loads(turn_event(session, turn, when)["Records"][0]["body"])
    body.update(overrides)
    return json.dumps(body, ensure_ascii=False)


EXPORTED = [("exp_1", "t1", "2026-11-03T09:00:00Z"), ("exp_1", "t2", "2026-11-03T09:01:10Z"),
            ("exp_2", "t1", "2026-11-04T12:00:00Z"), ("exp_3", "t1", "2026-11-07T18:30:00Z")]


@pytest.fixture
def engine_export(s3, world):
    """The engine's exports: a plain and a gzipped object of one JSON line per turn, with a line that is
    not a turn, a turn of another agent and one from before `since`."""
    bucket = f"engine-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    first = [export_line(*EXPORTED[0]), "{not a turn", export_line(*EXPORTED[1]),
             export_line("exp_9", "t1", "2026-11-03T10:00:00Z", agent="loja-b"),
             export_line("exp_0", "t1", "2026-10-01T10:00:00Z")]
    second = [export_line(*EXPORTED[2]), "", export_line(*EXPORTED[3])]
    s3.put_object(Bucket=bucket, Key="sessions/2026-11/part-0001.jsonl", Body="\n".join(first).encode() + b"\n")
    s3.put_object(Bucket=bucket, Key="sessions/2026-11/part-0002.jsonl.gz",
                  Body=gzip.compress("\n".join(second).encode()))
    s3.put_object(Bucket=bucket, Key="elsewhere/part-0001.jsonl", Body=export_line("exp_8", "t1", "2026-11-05T00:00:00Z").encode())
    return f"s3://{bucket}/sessions/"


def test_an_export_is_replayed_archived_and_linked_end_to_end(world, engine_export, sqs, s3, sessions_bucket):
    from knowledge.store.archive import TurnArchive

    answer = world["backfill"].lambda_handler(
        {"agent": A, "since": "2026-11-01T00:00:00Z", "from_export": engine_export}, LambdaContext())
    assert answer["ok"] and answer["complete"] and answer["from_export"] == engine_export
    assert (answer["turns"], answer["archived"], answer["invalid"], answer["elsewhere"]) == (4, 4, 1, 1)
    sightings = [parse_sighting(m["Body"]) for m in drain(sqs, world["queue"])]
    assert {(s.session_id, s.turn_id) for s in sightings} == {(s, t) for s, t, _ in EXPORTED}
    assert len(sightings) == 8  # the same two survivors per turn as a live turn
    archive = TurnArchive(s3, sessions_bucket)
    for s in sightings:  # every evidence link resolves in the archive the export was copied into
        turn = archive.get(TurnArchive.key_for(T, A, s.evidence.completed_at, s.session_id, s.turn_id))
        assert s.evidence.end <= len(turn.messages[s.evidence.message].content)
    order = [re.search(r"marker (\S+?)\"", r["messages"][1]["content"]).group(1) for r in world["model"].requests]
    assert order == ["exp_1/t1", "exp_1/t2", "exp_2/t1", "exp_3/t1"]  # key order, then line order

    again = world["backfill"].lambda_handler(
        {"agent": A, "since": "2026-11-01T00:00:00Z", "from_export": engine_export}, LambdaContext())
    assert again["turns"] == 4 and again["archived"] == 0  # written once; the sightings dedupe downstream
    assert {parse_sighting(m["Body"]).dedup_id() for m in drain(sqs, world["queue"])} == {
        s.dedup_id() for s in sightings}


def test_an_export_replay_that_runs_out_of_time_resumes_at_its_line(world, engine_export, sqs):
    class ShortContext(LambdaContext):
        calls = 0

        def get_remaining_time_in_millis(self):
            ShortContext.calls += 1
            return 120_000 if ShortContext.calls <= 1 else 1_000

    event = {"agent": A, "since": "2026-11-01T00:00:00Z", "from_export": engine_export}
    first = world["backfill"].lambda_handler(event, ShortContext())
    assert first["complete"] is False and first["turns"] == 1
    assert first["resume_after"] == engine_export.replace("s3://", "").split("/", 1)[1] + "2026-11/part-0001.jsonl#1"
    rest = world["backfill"].lambda_handler({**event, "start_after": first["resume_after"]}, LambdaContext())
    assert rest["complete"] and rest["turns"] == 3
    assert {(parse_sighting(m["Body"]).session_id, parse_sighting(m["Body"]).turn_id)
            for m in drain(sqs, world["queue"])} == {(s, t) for s, t, _ in EXPORTED}


def test_the_daily_cap_stops_a_backfill_where_it_can_resume_tomorrow(world, engine_export, monkeypatch, sqs):
    capped = load_handler("backfill", monkeypatch, dict(world["env"], CANDIDATES_QUEUE_URL=world["queue"]),
                          KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="2")
    event = {"agent": A, "since": "2026-11-01T00:00:00Z", "from_export": engine_export}
    answer = capped.lambda_handler(event, LambdaContext())
    assert (answer["complete"], answer["stopped"], answer["turns"]) == (False, "daily_cap_reached", 2)
    assert answer["resume_after"].endswith("part-0001.jsonl#3") and len(world["model"].requests) == 2
    assert len(drain(sqs, world["queue"])) == 4  # nothing of the deferred turns was sent or dropped


def test_an_export_replay_reaching_past_the_markers_retention_is_refused(world, engine_export, s3, sessions_bucket):
    s3.put_bucket_lifecycle_configuration(Bucket=sessions_bucket, LifecycleConfiguration={"Rules": [
        {"ID": "expire-after-retention", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}]})
    answer = world["backfill"].lambda_handler(
        {"agent": A, "since": "2026-11-01T00:00:00Z", "from_export": engine_export}, LambdaContext())
    assert answer["ok"] is False and answer["error"]["code"] == "beyond_retention"
    assert "raise RetentionDays" in answer["error"]["message"] and world["model"].requests == []
    # The archive itself is never older than its markers: its replay is not refused.
    assert world["backfill"].lambda_handler({"agent": A, "since": "2026-11-01T00:00:00Z"}, LambdaContext())["ok"]


def test_the_horizon_is_the_retention_less_a_day():
    from knowledge.errors import BeyondRetention
    from knowledge.operation.backfill import check_horizon

    now = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
    check_horizon(datetime(2026, 9, 1, 12, tzinfo=timezone.utc), 90, now)  # 89 days back: kept
    with pytest.raises(BeyondRetention):
        check_horizon(datetime(2026, 9, 1, 11, 59, tzinfo=timezone.utc), 90, now)
    check_horizon(datetime(2000, 1, 1, tzinfo=timezone.utc), None, now)  # nothing expires


@pytest.mark.parametrize("event, fragment", [
    ({"from_export": "https://bucket/prefix/"}, "s3://bucket/prefix/"),
    ({"from_export": "s3://Bad_Bucket/x/"}, "bucket name"),
    ({"from_export": "s3://engine-bucket/sessions/", "start_after": "other/key#3"}, "position in this export"),
    ({"from_export": "s3://engine-bucket/sessions/", "start_after": "sessions/a.jsonl"}, "position in this export"),
])
def test_bad_export_events_get_a_clear_error(world, event, fragment):
    answer = world["backfill"].lambda_handler({"agent": A, "since": "2026-11-01T00:00:00Z", **event}, LambdaContext())
    assert answer["ok"] is False and fragment in answer["error"]["message"]


def test_a_line_too_long_for_a_turn_is_counted_without_being_held(world, s3, sqs):
    bucket = f"engine-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    huge = "x" * (300 * 1024)
    s3.put_object(Bucket=bucket, Key="e/1.jsonl",
                  Body=(huge + "\n" + export_line(*EXPORTED[0]) + "\n" + huge).encode())
    answer = world["backfill"].lambda_handler(
        {"agent": A, "since": "2026-11-01T00:00:00Z", "from_export": f"s3://{bucket}/e/"}, LambdaContext())
    assert (answer["turns"], answer["invalid"]) == (1, 2)


# ------------------------------------------------------------------ Facts is told of replayed turns

CUSTOMER_EXPORT = DEMO / "conversa-cliente.jsonl"  # the demo customer's conversation, as the engine exports it
SESSION, CUSTOMER = "sess_demo_facts_01", "cus_77120"


@pytest.fixture
def customer_export(s3):
    bucket = f"engine-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="sessions/2026-11/part-0007.jsonl.gz",
                  Body=gzip.compress(CUSTOMER_EXPORT.read_bytes()))
    return f"s3://{bucket}/sessions/"


def replay(world, s3, sessions_bucket, export_url=None, **options):
    """The backfill with Facts' session state wired in, as ExtractFunction's extractor has it."""
    from facts.sessions import SessionStates
    from knowledge.operation.backfill import backfill
    from knowledge.store.session_export import ExportLocation, SessionExport

    handler = world["backfill"]
    export = SessionExport(s3, ExportLocation.parse(export_url)) if export_url else None
    return backfill(handler.extractor, handler.archive, T, A, datetime(2026, 11, 1, tzinfo=timezone.utc),
                    export=export, sessions=SessionStates(s3, sessions_bucket), **options)


def session_state(s3, sessions_bucket):
    from facts.sessions import SessionStates

    stored = SessionStates(s3, sessions_bucket).get(T, A, SESSION)
    return stored.state if stored else None


def test_a_replayed_customer_session_comes_due_for_the_next_distill_pass_and_is_not_distilled_inline(
        world, customer_export, monkeypatch, s3, sessions_bucket):
    from facts.proposals import ProposalStore

    dry = replay(world, s3, sessions_bucket, customer_export, dry_run=True)
    assert (dry.turns, dry.recorded) == (3, 0)
    assert session_state(s3, sessions_bucket) is None  # a dry run writes nothing

    report = replay(world, s3, sessions_bucket, customer_export)
    assert (report.turns, report.archived, report.recorded, report.failed) == (3, 3, 3, 0)
    assert "; 3 recorded for Facts" in report.summary(dry_run=False)
    state = session_state(s3, sessions_bucket)
    assert (state.customer_id, len(state.turns), state.messages, state.distilled) == (CUSTOMER, 3, 6, False)
    prompts = [m["content"] for r in world["model"].requests for m in r["messages"]]
    assert len(world["model"].requests) == 3 and not any("You distill durable facts" in p for p in prompts)
    assert ProposalStore(s3, sessions_bucket).list(T, A) == []  # proposing is the schedule's job

    # The conversation ended on 2026-11-21: long idle. The next scheduled pass distils it.
    distill = load_handler("distill", monkeypatch, dict(world["env"], FACTS_KEY="k" * 48))
    answer = distill.lambda_handler({}, LambdaContext())
    assert answer["ok"] and (answer["distilled"], answer["proposed"]) == (1, 4)
    assert answer["skipped"] == {"untagged": 3}  # the fixture's live sessions name no customer
    proposed = {p.proposal.name: p.proposal for p in ProposalStore(s3, sessions_bucket).list(T, A, CUSTOMER)}
    assert sorted(proposed) == ["animais_de_estimacao", "janela_entrega", "orcamento_sofa", "pagamento_preferido"]
    assert {p.session_id for p in proposed.values()} == {SESSION}
    # Evidence points into the turns the replay archived (message 4: turn_0003's first message).
    assert [(e.turn_id, e.message) for e in proposed["pagamento_preferido"].evidence] == [("turn_0003", 0)]

    again = replay(world, s3, sessions_bucket, customer_export)  # a re-run: the state already holds every turn
    assert again.recorded == 3 and session_state(s3, sessions_bucket).distilled
    assert distill.lambda_handler({}, LambdaContext())["scanned"] == 0


def test_a_replay_for_an_agent_that_does_not_distil_keeps_no_session_state_but_indexes_the_customer(
        world, customer_export, s3, bucket, sessions_bucket):
    knowledge_only = (DEMO / "knowledge.yaml").read_text().split("\ndistill:")[0] + "\n"
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml", Body=knowledge_only.encode())
    report = replay(world, s3, sessions_bucket, customer_export)
    assert (report.turns, report.archived, report.recorded) == (3, 3, 0)
    assert session_state(s3, sessions_bucket) is None  # nothing will be distilled
    indexed = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/facts/customers/{CUSTOMER}/")
    assert [o["Key"].rsplit("/", 1)[1] for o in indexed["Contents"]] == [SESSION]  # forget_customer finds the turns
    idle = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/facts/idle/").get("Contents", [])
    assert not [o for o in idle if o["Key"].endswith(f"/{SESSION}")]


def test_turns_archived_before_the_agent_distilled_are_told_to_facts_by_an_archive_replay(
        world, s3, sessions_bucket):
    from knowledge.format.turn import parse_turn
    from knowledge.store.archive import TurnArchive

    archive = TurnArchive(s3, sessions_bucket)
    for line in CUSTOMER_EXPORT.read_bytes().splitlines():  # archived while only `knowledge:` was on
        archive.put(parse_turn(line))
    assert session_state(s3, sessions_bucket) is None
    report = replay(world, s3, sessions_bucket)
    assert report.turns == 6 and report.recorded == 6  # three live turns since November 1st, the customer's three
    state = session_state(s3, sessions_bucket)
    assert (state.customer_id, len(state.turns)) == (CUSTOMER, 3)


def test_backfill_function_and_cli_tell_facts_of_a_replayed_customer_session(world, customer_export, monkeypatch,
                                                                              s3, sessions_bucket, capsys):
    """Both entry points wire Facts in: the session comes due for DistillFunction, nothing is distilled inline."""
    event = {"agent": A, "since": "2026-11-01T00:00:00Z", "from_export": customer_export}
    answer = world["backfill"].lambda_handler(event, LambdaContext())
    assert answer["ok"] and (answer["turns"], answer["recorded"]) == (3, 3)
    state = session_state(s3, sessions_bucket)
    assert (state.customer_id, len(state.turns), state.distilled) == (CUSTOMER, 3, False)

    from knowledge_cli import main as cli

    for name, value in world["env"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CANDIDATES_QUEUE_URL", world["queue"])
    code = cli.main(["backfill", "--tenant", T, "--agent", A, "--since", "2026-11-01T00:00:00Z",
                     "--from-export", customer_export])
    assert code == 0 and "3 recorded for Facts" in capsys.readouterr().out
